package codex

import (
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// A rollout's session_meta or turn_context, or a notify payload, whose
// cwd names no directory (relative, or holding a NUL byte) leaves the
// session's directory unset, and its observation says so.
func TestCwdNamingNoDirectory_IsAProblem(t *testing.T) {
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{`p`, `/home/user\u0000/p`, `/home/user/p`} {
		lines := map[string]string{
			"session_meta": ev(0, "session_meta", `{"id":"019a-cwd","cwd":"`+cwd+`","originator":"codex-tui","cli_version":"0.130.0","source":"cli"}`),
			"turn_context": ev(1, "turn_context", `{"turn_id":"t1","cwd":"`+cwd+`","model":"gpt-5"}`),
		}
		obs := map[string]events.Observation{}
		for what, line := range lines {
			o, err := p.Line(&FileState{}, "r.jsonl", 1, []byte(strings.TrimSpace(line)))
			if err != nil {
				t.Fatalf("%s with cwd %s: %v", what, cwd, err)
			}
			obs[what] = o
		}
		o, err := p.Notify([]byte(`{"type":"agent-turn-complete","thread-id":"019a-cwd","turn-id":"t1","cwd":"` + cwd + `"}`))
		if err != nil {
			t.Fatalf("notify with cwd %s: %v", cwd, err)
		}
		obs["notify"] = o
		for what, o := range obs {
			has := slices.ContainsFunc(o.Problems, func(p string) bool { return strings.HasPrefix(p, events.WorkDirRefused) })
			if want := cwd != "/home/user/p"; has != want {
				t.Errorf("%s with cwd %s: problems %q; want a %q problem: %v", what, cwd, o.Problems, events.WorkDirRefused, want)
			}
		}
	}
}
