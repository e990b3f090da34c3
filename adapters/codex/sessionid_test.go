package codex

import (
	"encoding/json"
	"strings"
	"testing"
)

// A session_meta whose id is no session id (a control character, a
// megabyte) is read, and its id is not recorded as the session's own: a
// problem says so, with its length but none of its bytes.
func TestSessionMetaIDChecked(t *testing.T) {
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1\x1b[31m", strings.Repeat("s", 1<<20)} {
		q, _ := json.Marshal(id)
		line := ev(0, "session_meta", `{"id":`+string(q)+`,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.130.0","source":"cli"}`)
		o, err := p.Line(&FileState{}, "r.jsonl", 1, []byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatal(err)
		}
		probs := strings.Join(o.Problems, "; ")
		if o.Meta.SessionID != "" || !strings.Contains(probs, "session_meta id") || !strings.Contains(probs, "not recorded") || strings.Contains(probs, "\x1b") || len(probs) > 200 {
			t.Errorf("id of %d bytes: session id %.20q, problems %.300q; want none recorded, a short problem", len(id), o.Meta.SessionID, probs)
		}
	}
	o, err := p.Line(&FileState{}, "r.jsonl", 1, []byte(strings.TrimSpace(meta("019a-ok", ""))))
	if err != nil || o.Meta.SessionID != "019a-ok" || len(o.Problems) != 0 {
		t.Errorf("a valid id: %q, problems %q, %v", o.Meta.SessionID, o.Problems, err)
	}
}
