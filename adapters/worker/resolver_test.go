package worker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/sandbox"
)

// TestResolver_AsEvalSymlinks: resolvedBy answers for every path what
// resolved (filepath.EvalSymlinks, else the path cleaned) does, through
// directories, files, missing paths, absolute and relative links, links
// to links, links out through .., and a file taken for a directory,
// whatever order the paths come in.
func TestResolver_AsEvalSymlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("home/u/.config/gh")
	mk("real/ssh")
	mk("ws/a/b")
	if err := os.WriteFile(filepath.Join(root, "home/u/.netrc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(root, "real/ssh"), "home/u/.ssh") // absolute
	link("../../real", "home/u/.cfg")                    // relative, out through ..
	link(".ssh", "home/u/.ssh2")                         // a link to a link
	link("missing", "home/u/.dangling")                  // nowhere
	link(filepath.Join(root, "home/u"), "h")             // a link along the way
	link(filepath.Join(root, "ws/a"), "ws/la")           // a workspace through a link
	paths := []string{
		"home/u/.ssh", "home/u/.ssh/id", "home/u/.ssh2", "home/u/.ssh2/known_hosts", "home/u/.cfg/ssh",
		"home/u/.config/gh", "home/u/.config/gcloud", "home/u/.config/gh/hosts.yml", "home/u/.netrc",
		"home/u/.netrc/x", "home/u/.dangling", "home/u/.dangling/x", "h/.ssh", "h/.config/gh", "h/missing/x",
		"ws/la/b", "ws/a/b", "ws/la/../a", "nowhere/at/all", "", "home/u/./.ssh",
	}
	var rs sandbox.Resolver
	for pass := 0; pass < 2; pass++ { // the second from what the first remembered
		for _, p := range paths {
			abs := filepath.Join(root, p)
			if got, want := resolvedBy(&rs, abs), resolved(abs); got != want {
				t.Errorf("pass %d: resolvedBy(%s) = %s, want %s", pass, abs, got, want)
			}
		}
		for i := len(paths) - 1; i >= 0; i-- { // and in the other order, afresh
			abs := filepath.Join(root, paths[i])
			var fresh sandbox.Resolver
			if got, want := resolvedBy(&fresh, abs), resolved(abs); got != want {
				t.Errorf("resolvedBy(%s) afresh = %s, want %s", abs, got, want)
			}
		}
	}
	// With the directories most paths lie in read whole (List).
	var abs []string
	for _, p := range paths {
		abs = append(abs, filepath.Join(root, p))
	}
	var listed sandbox.Resolver
	listed.List(abs)
	for _, p := range abs {
		if got, want := resolvedBy(&listed, p), resolved(p); got != want {
			t.Errorf("resolvedBy(%s) listed = %s, want %s", p, got, want)
		}
	}
	for _, p := range []string{"rel/x", filepath.Join(root, "h") + "/../u/.ssh", filepath.Join(root, "ws/la") + "/../a"} {
		if got, want := resolvedBy(&rs, p), resolved(p); got != want {
			t.Errorf("resolvedBy(%s) = %s, want %s", p, got, want)
		}
	}
}
