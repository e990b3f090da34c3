package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTreeOf(t *testing.T) {
	t.Parallel()
	proj, _ := repo(t)
	tree := func() Tree {
		t.Helper()
		tr, err := TreeOf(t.Context(), proj)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	base := tree()
	head := run(t, proj, "git", "rev-parse", "HEAD")
	if base.Commit != head || !base.Clean || base.Files != 2 {
		t.Fatalf("clean tree: %+v, HEAD %s", base, head)
	}
	if again := tree(); again != base {
		t.Errorf("same tree, another answer: %+v", again)
	}
	// An ignored file changes nothing.
	write(t, filepath.Join(proj, ".env"), "X=1\n")
	if got := tree(); got != base {
		t.Errorf("an ignored file changed the tree: %+v", got)
	}
	// Nor do the empty .envrc and .mcp.json a running restricted
	// command's boundary leaves at the top; one that holds bytes does.
	write(t, filepath.Join(proj, ".envrc"), "")
	write(t, filepath.Join(proj, ".mcp.json"), "")
	if got := tree(); got != base {
		t.Errorf("empty placeholders changed the tree: %+v", got)
	}
	write(t, filepath.Join(proj, ".envrc"), "export X=1\n")
	if got := tree(); got.Clean || got.Digest == base.Digest {
		t.Errorf("an .envrc with bytes left the tree clean: %+v", got)
	}
	os.Remove(filepath.Join(proj, ".envrc"))
	os.Remove(filepath.Join(proj, ".mcp.json"))
	steps := []struct {
		name string
		do   func()
	}{
		{"a tracked file edited", func() { write(t, filepath.Join(proj, "README"), "one\nTWO\n") }},
		{"an untracked file", func() { write(t, filepath.Join(proj, "new.go"), "package x\n") }},
		{"its content", func() { write(t, filepath.Join(proj, "new.go"), "package y\n") }},
		{"a mode", func() { os.Chmod(filepath.Join(proj, "new.go"), 0o755) }},
		{"a deletion", func() { os.Remove(filepath.Join(proj, ".gitignore")) }},
		{"a staged change alone", func() { run(t, proj, "git", "add", "-A") }},
	}
	seen := map[string]string{base.Digest: "the clean tree"}
	for _, s := range steps {
		s.do()
		got := tree()
		if got.Clean {
			t.Errorf("%s: still clean", s.name)
		}
		if prev, ok := seen[got.Digest]; ok && s.name != "a staged change alone" {
			t.Errorf("%s: digest equals that of %s", s.name, prev)
		}
		seen[got.Digest] = s.name
	}
	// Staging changes no file on disk: the same digest as before it.
	if got := tree(); seen[got.Digest] != "a staged change alone" {
		t.Errorf("digest moved: %+v %v", got, seen)
	}
	// Back to HEAD: the clean tree's fingerprint again; a commit moves it.
	run(t, proj, "git", "reset", "--quiet", "--hard")
	os.Remove(filepath.Join(proj, "new.go"))
	if got := tree(); got != base {
		t.Errorf("back to HEAD: %+v, want %+v", got, base)
	}
	// What makes a tree not clean is named: changed and added paths,
	// then those gone from disk, the first MaxChanged quoted.
	write(t, filepath.Join(proj, "README"), "one\nTWO\n")
	write(t, filepath.Join(proj, "new\nline.go"), "package x\n")
	os.Remove(filepath.Join(proj, ".gitignore"))
	if got := tree(); got.Changed != `"README", "new\nline.go", ".gitignore"` {
		t.Errorf("changed: %q", got.Changed)
	}
	for i := range 4 {
		write(t, filepath.Join(proj, "z"+string(rune('a'+i))), "z\n")
	}
	if got := tree(); got.Changed != `"README", "new\nline.go", "za", "zb", "zc" and 2 more` {
		t.Errorf("changed: %q", got.Changed)
	}
	run(t, proj, "git", "reset", "--quiet", "--hard")
	for _, f := range []string{"new\nline.go", "za", "zb", "zc", "zd"} {
		os.Remove(filepath.Join(proj, f))
	}
	if got := tree(); got != base {
		t.Errorf("back to HEAD again: %+v, want %+v", got, base)
	}
	write(t, filepath.Join(proj, "c.txt"), "c\n")
	run(t, proj, "git", "add", "c.txt")
	run(t, proj, "git", "commit", "--quiet", "-m", "c")
	got := tree()
	if !got.Clean || got.Commit == base.Commit || got.Fingerprint() == base.Fingerprint() {
		t.Errorf("after a commit: %+v", got)
	}
	// A file behind a symbolic link is not read through it.
	os.Rename(filepath.Join(proj, "c.txt"), filepath.Join(t.TempDir(), "c.txt"))
	os.Mkdir(filepath.Join(proj, "real"), 0o755)
	if got := tree(); got.Clean {
		t.Error("a deleted file left the tree clean")
	}
	if _, err := TreeOf(t.Context(), filepath.Join(proj, "real")); err == nil {
		t.Error("a subdirectory taken for a work tree")
	}
}
