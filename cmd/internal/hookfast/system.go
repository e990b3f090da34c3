package hookfast

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/hooksock"
)

// systemSocketName is the system socket's name in serve's --socket-dir
// (adapters/api.SystemSocketName).
const systemSocketName = "logbook.sock"

// viaSystem delivers payload to the system socket sock ($LOGBOOK_SOCKET: a
// serve in system mode, or its directory) and returns the exit code: 0
// once serve has it in its intake journal. When serve took nothing (a
// payload this binary does not send, such as one to cut; no socket; an
// error answer, such as this user not let in) the payload goes to
// `logbook hook claude` with the same arguments, which says why and exits
// 1: in system mode a hook has no spool. When the answer does not come
// (serve may have journaled it) it exits 1 saying whether serve kept it
// is unknown, sending nothing again.
func viaSystem(args []string, payload []byte, stderr io.Writer, logbook, sock string) int {
	prepared, err := hookspool.PrepareHook(payload, nil)
	if err != nil {
		return handOver(args, payload, stderr, logbook, nil)
	}
	if st, err := os.Stat(sock); err == nil && st.IsDir() {
		sock = filepath.Join(sock, systemSocketName)
	}
	host, _ := os.Hostname()
	agent, _ := hookspool.AgentProcess(os.Getpid(), host, hookspool.BootID())
	req := hookRequest{ID: hookspool.NewID(), Text: string(prepared), Process: agent}.appendJSON(nil)
	b, err := hooksock.CallSystem(sock, "hook", req, time.Now().Add(timeout))
	switch {
	case err == nil && bytes.HasPrefix(b, []byte(dataPrefix)):
		return 0
	case err == nil, errors.Is(err, hooksock.ErrNoSocket), errors.Is(err, hooksock.ErrRefused):
		// Nothing was taken: logbook asks again and says why not.
		return handOver(args, payload, stderr, logbook, nil)
	}
	// Serve may have taken it: sent again, it would be recorded twice.
	fmt.Fprintf(stderr, "logbook-hook: %v (%s)\n", err, hooksock.UnknownIfKept)
	return 1
}
