package codex

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// A redaction rule never rewrites a Codex id: a notify payload whose
// thread-id or turn-id a rule matches is refused, and so is a rollout
// line whose session id it matches (an invalid line without ids), each
// naming the field but not the id; other ids are kept verbatim.
func TestSecretIDsAreRefusedNotRewritten(t *testing.T) {
	p, err := NewParser(Config{RedactPatterns: []string{"zz[0-9]"}})
	if err != nil {
		t.Fatal(err)
	}
	for field, payload := range map[string]string{
		"thread-id": `{"type":"agent-turn-complete","thread-id":"t-zz1","turn-id":"u1","last-assistant-message":"done"}`,
		"turn-id":   `{"type":"agent-turn-complete","thread-id":"t-1","turn-id":"u-zz2","last-assistant-message":"done"}`,
	} {
		_, err := p.Notify([]byte(payload))
		if !errors.Is(err, ingest.ErrSecretID) || !strings.Contains(err.Error(), field) || strings.Contains(err.Error(), "zz") {
			t.Errorf("%s: got %v, want ErrSecretID naming the field, not the id", field, err)
		}
	}
	o, err := p.Notify([]byte(`{"type":"agent-turn-complete","thread-id":"t-1","turn-id":"u1","last-assistant-message":"zz3"}`))
	if err != nil || o.Meta.SessionID != "t-1" || o.Key != "notify:agent-turn-complete:u1" || strings.Contains(o.Raw, "zz3") {
		t.Errorf("got %+v, %v; want ids verbatim and the text redacted", o, err)
	}

	st := &FileState{}
	lo, err := p.Line(st, "r.jsonl", 1, []byte(strings.TrimSpace(meta("s-zz4", ""))))
	if !errors.Is(err, ingest.ErrSecretID) || strings.Contains(err.Error(), "zz4") {
		t.Fatalf("line: got %v, want ErrSecretID without the id", err)
	}
	if lo.Kind != "invalid" || lo.Meta.SessionID != "" || len(lo.Signals) != 0 {
		t.Errorf("line: got %+v, want an invalid line without ids", lo)
	}
	st = &FileState{}
	ok, err := p.Line(st, "r.jsonl", 1, []byte(strings.TrimSpace(meta(tid, ""))))
	if err != nil || ok.Meta.SessionID != tid {
		t.Errorf("line: got %+v, %v; want the session id verbatim", ok, err)
	}
}
