package hookgate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/claude"
)

func TestFault(t *testing.T) {
	a := &Asker{Budget: 3 * time.Second}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "the gate gave no verdict: none came within the budget of 3s"},
		{fmt.Errorf("call: %w", nats.ErrNoResponders), "the gate gave no verdict: the Logbook server named in the data dir's serve.json does not answer (it is not running); the call is kept in the spool"},
		{nats.ErrConnectionClosed, "the gate gave no verdict: the Logbook server went away (it stopped or restarted) before it decided; the call is kept in the spool"},
		{errors.New("nats: something else"), "the gate gave no verdict: the hook could not reach the Logbook server; the call is kept in the spool"},
		{errors.New("odd"), "the gate gave no verdict: odd"},
	} {
		if got := a.Fault(tc.err); got != tc.want {
			t.Errorf("Fault(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestAskNoServerKeeps: with no server to ask, the payload is kept in
// the spool with the deny, and the error is the Server func's.
func TestAskNoServerKeeps(t *testing.T) {
	dir := t.TempDir()
	a := &Asker{
		SpoolDir:   dir,
		MaxPayload: 1 << 20,
		Server:     func() (Server, error) { return Server{}, errors.New("no server") },
	}
	payload := []byte(`{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/tmp","transcript_path":"/tmp/t.jsonl"}`)
	_, err := a.Ask(t.Context(), payload)
	if err == nil || err.Error() != "no server" {
		t.Fatalf("Ask: err %v, want no server", err)
	}
	sp, err := claude.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if waiting, err := sp.HasPending(); err != nil || !waiting {
		t.Errorf("spool pending %v, %v: want the payload kept", waiting, err)
	}
	if _, err := a.Ask(t.Context(), []byte(strings.Repeat("x", 2<<20))); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Ask of an oversize payload: err %v, want refused", err)
	}
}

// TestAskFullSpoolSaysNotKept: with no server to ask and a spool that
// takes no write (its disk full), the deny's reason says the call is not
// kept, rather than that it is in the spool.
func TestAskFullSpoolSaysNotKept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full spool is a tmpfs mounted for the test: needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if _, err := claude.Open(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4096, 1} {
		for {
			if _, err := f.Write(make([]byte, n)); err != nil {
				break
			}
		}
	}
	f.Close()
	a := &Asker{
		SpoolDir:   dir,
		MaxPayload: 1 << 20,
		Server: func() (Server, error) {
			return Server{}, errors.New("no Logbook server is running, so no verdict can be made" + keptNote)
		},
	}
	payload := []byte(`{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/tmp","transcript_path":"/tmp/t.jsonl"}`)
	_, err = a.Ask(t.Context(), payload)
	if err == nil || strings.Contains(err.Error(), "kept in the spool") || !strings.Contains(err.Error(), "the call is not kept: the spool took no write") {
		t.Errorf("Ask with a full spool: %v, want it to say the call is not kept", err)
	}
}
