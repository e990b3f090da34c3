package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockHints_FreshEachStart: starts of one spec after the first plan
// once, under the locks the one before took (lockHints), and each sees
// the workspace and the hidden paths as they are at its own start: a
// repository, a nested one and a hidden path made between two commands
// are protected or covered on the second.
func TestLockHints_FreshEachStart(t *testing.T) {
	t.Parallel()
	s := newSpec(t, WorkspaceWrite, false, "sh", "-c", `
		for f in .git/config .git/hooks/pre-commit vend/.git/config vend/.git/hooks/post-checkout; do
			echo x >> "$f" 2>/dev/null && echo "wrote $f"
		done
		mkdir .git/new vend/.git/new 2>/dev/null && echo "made a directory in .git"
		cat secret/key 2>/dev/null && echo "read secret"
		echo x > file && echo file-ok`)
	ws, err := filepath.EvalSymlinks(s.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	s.Workspace = ws
	s.Hidden = []string{filepath.Join(ws, "secret")}
	s.Env = append(s.Env, "HOME="+ws)
	want := "file-ok\n"
	runOnce := func(what string) {
		t.Helper()
		if s.Busy() {
			t.Fatalf("%s: busy", what)
		}
		_, r := run(t, s)
		if got := r.text(Stdout); got != want {
			t.Errorf("%s: stdout = %q, want %q (stderr %q)", what, got, want, r.text(Stderr))
		}
	}
	runOnce("first, nothing to protect")
	hits := lockHints.hits.Load()

	// Made on the host between two commands.
	for _, dir := range []string{ws, filepath.Join(ws, "vend")} {
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v: %s", dir, err, out)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secret", "key"), []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	runOnce("second, after git init and a hidden path made")
	if lockHints.hits.Load() == hits {
		t.Errorf("the second start planned more than once: its hint was not taken")
	}
	if after, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(after) != string(config) {
		t.Errorf(".git/config changed:\n%s", after)
	}
	for _, hook := range []string{".git/hooks/pre-commit", "vend/.git/hooks/post-checkout"} {
		if _, err := os.Stat(filepath.Join(ws, hook)); err == nil {
			t.Errorf("%s was created", hook)
		}
	}
}

// TestLockHints_StaleHint: a hint whose locks are not those of the plan
// made under them (a hidden path made since, in a directory that was
// not locked) is let go, and the start plans as without one: the new
// hidden path is covered.
func TestLockHints_StaleHint(t *testing.T) {
	t.Parallel()
	s := newSpec(t, ReadOnly, false, "sh", "-c", `cat "$1"/key 2>/dev/null && echo read; echo done`, "sh")
	outside := t.TempDir() // allowlisted, so that it is in sight
	hidden := filepath.Join(outside, "deeper", "creds")
	s.Argv = append(s.Argv, hidden)
	s.Allow = []Allow{{Path: outside}}
	s.Hidden = []string{hidden}
	if _, r := run(t, s); r.text(Stdout) != "done\n" {
		t.Fatalf("first: stdout = %q (stderr %q)", r.text(Stdout), r.text(Stderr))
	}
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "key"), []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, r := run(t, s)
	if got := r.text(Stdout); strings.Contains(got, "read") || got != "done\n" {
		t.Errorf("second: stdout = %q, want the hidden path covered (stderr %q)", got, r.text(Stderr))
	}
}
