package gate

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// TestGate_RelativeCwdIsNoDirectory: a request whose cwd is not an
// absolute path (or holds a NUL byte) is read in the session's directory.
// Read against the relative one, `cat <data dir>/creds.json` named from
// the session's directory would be a path nowhere near the data dir, and
// the allow rule would answer it.
func TestGate_RelativeCwdIsNoDirectory(t *testing.T) {
	for _, cwd := range []string{"relative/path", "/tmp\x00/elsewhere"} {
		t.Run(filepath.Base(cwd), func(t *testing.T) {
			r := newRig(t, `allow = ["Bash(cat:*)"]`)
			r.gate.Budget = 300 * time.Millisecond
			rel, err := filepath.Rel("/tmp", r.gate.Policies.DataDir) // the session's cwd is /tmp
			if err != nil {
				t.Fatal(err)
			}
			r.hook("UserPromptSubmit", map[string]any{"prompt": "read it"})
			input := map[string]any{"command": "cat " + filepath.Join(rel, "creds.json")}
			ref := r.hook("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": input, "tool_use_id": "toolu_1"})
			b, _ := json.Marshal(input)
			v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: "Bash", Input: b, ID: "toolu_1", Cwd: cwd, Ref: ref})
			if err != nil {
				t.Fatal(err)
			}
			if v.Decision == DecideAllow {
				t.Errorf("cwd %q: the data dir's creds.json allowed: %+v", cwd, v)
			}
		})
	}
}
