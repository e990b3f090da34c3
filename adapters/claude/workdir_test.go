package claude

import (
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// A hook payload or a transcript line whose cwd names no directory (a
// relative path, a NUL byte) leaves the session's directory unset, and
// its observation says so.
func TestCwdNamingNoDirectory_IsAProblem(t *testing.T) {
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "5e551011-0000-4000-8000-0000000000c1"
	for _, cwd := range []string{`src`, `/home/a\u0000/src`, `/home/a/src`} {
		hook := `{"session_id":"` + sid + `","transcript_path":"/tmp/x.jsonl","cwd":"` + cwd + `","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
		line := `{"type":"user","uuid":"u1","sessionId":"` + sid + `","cwd":"` + cwd + `","timestamp":"2026-11-25T10:00:00Z","message":{"role":"user","content":"hi"}}`
		ho, err := p.Hook([]byte(hook))
		if err != nil {
			t.Fatalf("hook with cwd %s: %v", cwd, err)
		}
		lo, err := p.Line("t.jsonl", 1, []byte(line))
		if err != nil {
			t.Fatalf("line with cwd %s: %v", cwd, err)
		}
		for what, o := range map[string]events.Observation{"hook": ho, "transcript line": lo} {
			has := slices.ContainsFunc(o.Problems, func(p string) bool { return strings.HasPrefix(p, events.WorkDirRefused) })
			if want := cwd != "/home/a/src"; has != want {
				t.Errorf("%s with cwd %s: problems %q; want a %q problem: %v", what, cwd, o.Problems, events.WorkDirRefused, want)
			}
		}
	}
}
