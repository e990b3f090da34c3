package hookgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
