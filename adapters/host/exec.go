package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/execsock"
)

// ExecRunner runs one request of the exec socket for the process peer
// (its credentials as the kernel gave them when it connected) as
// `logbook exec` would run, writing what that would print to stdout and
// stderr, and returns the exit status it would exit with (0 to 255).
// ctx ends when the client interrupts (it shut down its writing half or
// went away) or serve stops. It runs on a goroutine of the connection's
// own; stdout and stderr are safe for concurrent use.
type ExecRunner func(ctx context.Context, req execsock.Request, peer unix.Ucred, stdout, stderr io.Writer) int

// MaxExecs is how many exec socket connections are worked on at once;
// others wait in the listener's backlog. Each holds a command being
// waited for, up to its --wait.
const MaxExecs = 256

// ServeExec is logbook-exec's way in (adapters/execsock): it listens on
// the Unix socket at path (api.ListenSocket: mode 0600) and runs each
// request with run, on a goroutine of its own per connection, until
// stop is called; stop closes the socket, interrupts the execs under way
// (their commands go on in the background, as when `logbook exec` is
// interrupted) and returns once every connection is answered.
//
// A connection is refused (an error on its standard error, exit status
// 1) unless its peer runs as this process's effective user or as root
// (SO_PEERCRED), as on the hook socket. The request line must arrive
// within api.SocketReadTimeout and hold at most execsock.MaxRequest
// bytes; one that does not, or is not a Request, is answered with an
// error naming what is wrong, exit status 2, and nothing is run.
// Failures to answer go to logf.
func ServeExec(ctx context.Context, path string, run ExecRunner, logf func(format string, args ...any)) (stop func(), err error) {
	sock, err := api.ListenSocket(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		serveExec(ctx, sock.UnixListener, run, logf)
	}()
	return func() { cancel(); <-done; sock.Close() }, nil
}

// serveExec accepts connections on l until ctx ends.
func serveExec(ctx context.Context, l *net.UnixListener, run ExecRunner, logf func(format string, args ...any)) {
	uid := uint32(os.Geteuid())
	api.AcceptEach(ctx, l, MaxExecs, "exec socket", logf, func(c *net.UnixConn) {
		execConn(ctx, c, uid, run, logf)
	})
}

// execConn answers one connection.
func execConn(ctx context.Context, c *net.UnixConn, uid uint32, run ExecRunner, logf func(format string, args ...any)) {
	ctx = execsock.Traced(ctx)
	execsock.Mark(ctx, execsock.StageAccepted)
	out := &frameWriter{c: c}
	stdout, stderr := out.stream(execsock.KindStdout), out.stream(execsock.KindStderr)
	finish := func(code int) {
		if err := out.frame(execsock.KindExit, []byte(strconv.Itoa(code))); err != nil {
			logf("exec socket: exit status %d not sent: %v", code, err)
		}
		execsock.Mark(ctx, execsock.StageAnswered)
	}
	cred, err := connCred(c)
	if err != nil {
		fmt.Fprintf(stderr, "logbook: exec socket: peer credentials: %v\n", err)
		finish(1)
		return
	}
	if cred.Uid != uid && cred.Uid != 0 {
		fmt.Fprintf(stderr, "logbook: exec socket: connection refused: it answers only its server's user (uid %d) and root, not uid %d\n", uid, cred.Uid)
		finish(1)
		return
	}
	req, err := readExecRequest(c)
	if err != nil {
		fmt.Fprintf(stderr, "logbook: exec socket: %v\n", err)
		finish(2)
		return
	}
	execsock.Mark(ctx, execsock.StageRead)
	// The client's writing half ends (EOF, or the connection is gone)
	// when it is interrupted: the exec is, as by Ctrl-C.
	rctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	go func() {
		_ = c.SetReadDeadline(time.Time{})
		io.Copy(io.Discard, c)
		interrupt()
	}()
	finish(run(rctx, req, *cred, stdout, stderr))
}

// readExecRequest reads and decodes the request line on c.
func readExecRequest(c *net.UnixConn) (execsock.Request, error) {
	var req execsock.Request
	_ = c.SetReadDeadline(time.Now().Add(api.SocketReadTimeout))
	line, err := bufio.NewReaderSize(io.LimitReader(c, execsock.MaxRequest), 4096).ReadBytes('\n')
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return req, fmt.Errorf("malformed request: no newline-ended request line within %s", api.SocketReadTimeout)
	case errors.Is(err, io.EOF) && len(line) >= execsock.MaxRequest:
		return req, fmt.Errorf("malformed request: a request line over %d bytes", execsock.MaxRequest)
	case errors.Is(err, io.EOF):
		return req, fmt.Errorf("malformed request: the connection ended after %d bytes, before the request line's newline", len(line))
	case err != nil:
		return req, fmt.Errorf("read the request: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("malformed request: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errors.New("malformed request: more than one JSON value on the request line")
	}
	if len(req.Args) == 0 {
		return req, errors.New(`malformed request: no "args": want exec's arguments`)
	}
	return req, nil
}

// connCred returns the credentials of c's peer process (SO_PEERCRED).
func connCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return nil, cerr
	}
	return cred, err
}

// frameWriter writes an answer's frames to c, one at a time. After a
// write fails every later one fails with the same error.
type frameWriter struct {
	mu  sync.Mutex
	c   *net.UnixConn
	err error
}

// frame writes one frame of kind holding b (at most a few KiB over
// 32 KiB: callers split).
func (w *frameWriter) frame(kind byte, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	buf := make([]byte, 5, 5+len(b))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(b)))
	buf = append(buf, b...)
	_ = w.c.SetWriteDeadline(time.Now().Add(socketWriteTimeout))
	if _, err := w.c.Write(buf); err != nil {
		w.err = err
	}
	return w.err
}

// socketWriteTimeout bounds the write of one frame: a client that stops
// reading does not hold a connection for ever.
const socketWriteTimeout = 30 * time.Second

// stream returns a writer whose bytes go out as frames of kind, at most
// 32 KiB each.
func (w *frameWriter) stream(kind byte) io.Writer {
	return streamWriter{w, kind}
}

type streamWriter struct {
	w    *frameWriter
	kind byte
}

func (s streamWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), 32<<10)]
		if err := s.w.frame(s.kind, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		b = b[len(chunk):]
	}
	return n, nil
}
