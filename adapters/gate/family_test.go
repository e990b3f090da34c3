package gate

import (
	"encoding/json"
	"testing"
)

// TestPolicy_FileRulesCoverTheirFamily: an Edit path rule speaks of
// every built-in tool that edits files (Edit, MultiEdit, Write,
// NotebookEdit) and a Read path rule of every one that reads them
// (Read, NotebookRead; Grep, Glob and LS by the tree they search, for
// deny and review), as Claude Code's permission rules do: a deny of one
// wins over an allow of another.
func TestPolicy_FileRulesCoverTheirFamily(t *testing.T) {
	p, err := ParsePolicy("p", []byte(`
deny  = ["Edit(**/.env)", "Edit(/etc/**)", "Read(/root/**)"]
allow = ["Write(/work/p/**)", "Read(/work/p/**)", "Grep", "Glob", "LS", "Edit(src/**)"]
`))
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool string, in map[string]any) Call {
		b, _ := json.Marshal(in)
		return Call{Tool: tool, Input: b, Dir: "/work/p"}
	}
	for _, tc := range []struct {
		name string
		c    Call
		want string
	}{
		{"write/.env", file("Write", "/work/p/.env"), ActionDeny},
		{"multiedit/.env", file("MultiEdit", "/work/p/.env"), ActionDeny},
		{"notebookedit/.env", call("NotebookEdit", map[string]any{"notebook_path": "/work/p/.env"}), ActionDeny},
		{"multiedit/etc", file("MultiEdit", "/etc/passwd"), ActionDeny},
		{"notebookedit/etc", call("NotebookEdit", map[string]any{"notebook_path": "/etc/x.ipynb"}), ActionDeny},
		{"write/etc", file("Write", "/etc/hosts"), ActionDeny},
		{"notebookread/root", call("NotebookRead", map[string]any{"notebook_path": "/root/n.ipynb"}), ActionDeny},
		{"grep/root", call("Grep", map[string]any{"pattern": "key", "path": "/root"}), ActionDeny},
		{"grep/under-root", call("Grep", map[string]any{"pattern": "key", "path": "/root/.ssh"}), ActionDeny},
		{"grep/slash", call("Grep", map[string]any{"pattern": "key", "path": "/"}), ActionDeny},
		{"glob/root", call("Glob", map[string]any{"pattern": "**/*", "path": "/root"}), ActionDeny},
		{"glob/abs-pattern", call("Glob", map[string]any{"pattern": "/root/**/*.json"}), ActionDeny},
		{"glob/dotdot", call("Glob", map[string]any{"pattern": "../../root/*"}), ActionDeny},
		{"ls/root", call("LS", map[string]any{"path": "/root"}), ActionDeny},
		{"plain/write", file("Write", "/work/p/main.go"), ActionAllow},
		{"plain/multiedit-src", file("MultiEdit", "/work/p/src/a.go"), ActionAllow},
		{"plain/grep", call("Grep", map[string]any{"pattern": "key", "path": "/work/p/src"}), ActionAllow},
		{"plain/grep-cwd", call("Grep", map[string]any{"pattern": "key"}), ActionAllow},
		{"plain/glob", call("Glob", map[string]any{"pattern": "**/*.go"}), ActionAllow},
		{"plain/ls", call("LS", map[string]any{"path": "/work/p"}), ActionAllow},
		{"other/multiedit", file("MultiEdit", "/tmp/x"), ""},
	} {
		if got := p.Decide(tc.c); got.Action != tc.want {
			t.Errorf("%s: got %q by %q, want %q", tc.name, got.Action, got.Pattern, tc.want)
		}
	}
	nb := call("NotebookRead", map[string]any{"notebook_path": "/proc/self/root/tmp/n.ipynb"})
	if m := Decide([]*Policy{builtinFor(""), p}, nb); m.Action != ActionReview || m.Pattern != LinkGuardPattern {
		t.Errorf("NotebookRead through a magic link: %+v, want review by %q", m, LinkGuardPattern)
	}
}
