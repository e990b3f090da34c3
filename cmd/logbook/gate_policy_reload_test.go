package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGate_PolicyReload: with serve running, a policy.toml saved with a
// syntax error keeps the policy read before in force, and serve says so
// on stderr when it is saved (no call needed), naming the line; fixed,
// the new policy is in force and serve says so; broken again, it is
// reported again. A project's policy file that has never parsed denies
// the call (unavailable) and is reported too. A policy in force with a
// warning (a pattern that may not mean what it seems to) is reported at
// WARN.
func TestGate_PolicyReload(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	r := newGateRig(t, "5e551011-0000-4000-8000-0000000009b1", map[string]string{
		"policy.toml": "allow = [\"Bash(git status)\"]\n",
	})
	pol := filepath.Join(r.data, "policy.toml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(pol, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	waitLog := func(what string, n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); strings.Count(r.stderr.String(), what) < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("serve did not say %q %d times:\n%s", what, n, r.stderr.String())
			}
		}
	}
	const broken = "deny = [\"Bash(ls)\"\n"
	write(broken)
	waitLog("the policy read before stays in force", 1)
	if log := r.stderr.String(); !strings.Contains(log, pol+":1:") || !strings.Contains(log, "not valid TOML") {
		t.Errorf("serve's log does not name the file, line and fault:\n%s", log)
	}
	if out := r.bash("p1", "git status"); !strings.Contains(out, `"permissionDecision":"allow"`) || !strings.Contains(out, "Bash(git status)") {
		t.Errorf("git status under a broken edit: %s, want the allow of the policy read before", out)
	} else if !strings.Contains(out, "policy.toml as last read (the file no longer parses: the version read before it is in force)") {
		t.Errorf("git status under a broken edit: %s, want the rule named as of the file as last read", out)
	}
	// A fault is a warning in serve's log, its fix news.
	levelOf := func(what string) string {
		for l := range strings.Lines(r.stderr.String()) {
			if strings.Contains(l, what) {
				return l
			}
		}
		return ""
	}
	if l := levelOf("stays in force"); !strings.Contains(l, "level=WARN") {
		t.Errorf("the fault is not logged at WARN: %s", l)
	}
	if n := strings.Count(r.stderr.String(), "stays in force"); n != 1 {
		t.Errorf("serve reported the fault %d times, want once:\n%s", n, r.stderr.String())
	}
	write("deny = [\"Bash(ls)\"]\n")
	waitLog("parses again", 1)
	if l := levelOf("parses again"); !strings.Contains(l, "level=INFO") {
		t.Errorf("the fix is not logged at INFO: %s", l)
	}
	if out := r.bash("p2", "ls"); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "rule Bash(ls)") {
		t.Errorf("ls under the fixed policy: %s, want its deny", out)
	}
	r.prompt("go on")
	if out := r.bash("p3", "git status"); out != "" {
		t.Errorf("git status under the fixed policy: %s, want no answer", out)
	}
	write(broken)
	waitLog("the policy read before stays in force", 2)

	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".logbook"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".logbook", "policy.toml"), []byte("allow = [\"Bash\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "cwd": ws, "tool_name": "Bash", "tool_use_id": "p4", "tool_input": map[string]any{"command": "git status"}})
	if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "unavailable") {
		t.Errorf("a project policy that never parsed: %s, want deny unavailable", out)
	}
	waitLog("no version of it has parsed", 1)
	if l := levelOf("no version of it has parsed"); !strings.Contains(l, "level=WARN") {
		t.Errorf("a policy that never parsed is not logged at WARN: %s", l)
	}

	// A policy in force with a warning: logged at WARN, naming the line.
	write("deny = [\"Bash(ls)\", \"Bash(git:*push)\"]\n")
	waitLog("inside a pattern matches a colon", 1)
	if l := levelOf("inside a pattern matches a colon"); !strings.Contains(l, "level=WARN") || !strings.Contains(l, pol+":1:") {
		t.Errorf("a policy's warning is not logged at WARN naming its line: %s", l)
	}
}
