package claude

import (
	"errors"
	"strings"
	"testing"
)

// A redaction rule never rewrites an id: an id it matches is refused,
// naming the field and the rule but not the id; ids it does not match,
// and the kinds this package knows, are kept verbatim while the text
// beside them is still redacted.
func TestSecretIDsAreRefusedNotRewritten(t *testing.T) {
	t.Parallel()
	p, err := NewParser(Config{RedactPatterns: []string{"e"}}) // broad on purpose
	if err != nil {
		t.Fatal(err)
	}
	hooks := []struct {
		name, payload, field string
	}{
		{"session id", `{"session_id":"s-test1","hook_event_name":"UserPromptSubmit","prompt":"hi"}`, "session id"},
		{"tool use id", `{"session_id":"s-abc","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_e1","tool_input":{"command":"ls"}}`, "tool_use id"},
		{"prompt id", `{"session_id":"s-abc","hook_event_name":"UserPromptSubmit","prompt_id":"p-e","prompt":"hi"}`, "prompt id"},
		{"agent id", `{"session_id":"s-abc","hook_event_name":"Stop","agent_id":"ae1"}`, "agent id"},
	}
	for _, h := range hooks {
		_, err := p.Hook([]byte(h.payload))
		if !errors.Is(err, ErrSecretID) {
			t.Fatalf("%s: got %v, want ErrSecretID", h.name, err)
		}
		for _, id := range []string{"s-test1", "toolu_e1", "p-e", "ae1"} {
			if strings.Contains(err.Error(), id) {
				t.Errorf("%s: error %q echoes the id %s", h.name, err, id)
			}
		}
		if msg := err.Error(); !strings.Contains(msg, h.field+" looks like a secret") || !strings.Contains(msg, "custom-1") {
			t.Errorf("%s: error %q does not name the field and rule", h.name, msg)
		}
	}

	o, err := p.Hook([]byte(`{"session_id":"s-abc","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_x1","tool_input":{"command":"echo"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind != "PreToolUse" || o.Meta.SessionID != "s-abc" || o.Key != "hook:PreToolUse:toolu_x1" {
		t.Errorf("got kind %q, session %q, key %q; want them verbatim", o.Kind, o.Meta.SessionID, o.Key)
	}
	if len(o.Signals) == 0 || o.Signals[0].ID != "toolu_x1" {
		t.Fatalf("got signals %+v, want tool_use toolu_x1", o.Signals)
	}
	if strings.Contains(o.Signals[0].Text, "echo") || strings.Contains(o.Raw, "echo") {
		t.Errorf("text not redacted: signal %q, raw %q", o.Signals[0].Text, o.Raw)
	}

	// An unknown hook event is text: redacted, in the key too, and two
	// such payloads keep distinct keys.
	a, err := p.Hook([]byte(`{"session_id":"s-abc","hook_event_name":"Secret1"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Hook([]byte(`{"session_id":"s-abc","hook_event_name":"Secret2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(a.Kind+a.Key, "Secret1") || a.Key == b.Key {
		t.Errorf("unknown event: got kinds %q %q, keys %q %q", a.Kind, b.Kind, a.Key, b.Key)
	}

	// A transcript line whose id a rule matches is an invalid line: no
	// ids, no signals, the error in Problems.
	line := `{"type":"user","uuid":"u-e","sessionId":"s-abc","message":{"role":"user","content":"hi"}}`
	lo, err := p.Line("t.jsonl", 3, []byte(line))
	if !errors.Is(err, ErrSecretID) || strings.Contains(err.Error(), "u-e") {
		t.Fatalf("line: got %v, want ErrSecretID without the id", err)
	}
	if lo.Kind != "invalid" || lo.UUID != "" || lo.Meta.SessionID != "" || len(lo.Signals) != 0 || len(lo.Problems) != 1 {
		t.Errorf("line: got %+v, want an invalid line without ids", lo)
	}
	ok, err := p.Line("t.jsonl", 4, []byte(`{"type":"user","uuid":"u-1","sessionId":"s-abc","message":{"role":"user","content":"hi"}}`))
	if err != nil || ok.UUID != "u-1" || ok.Meta.SessionID != "s-abc" || ok.Kind != "user" {
		t.Errorf("line: got %+v, %v; want ids and kind verbatim", ok, err)
	}
}
