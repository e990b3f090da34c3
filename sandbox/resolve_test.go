package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// A Resolver answers as filepath.EvalSymlinks does, path by path,
// where the paths share directories, links (relative, absolute, with
// "..", chained) and missing parts included.
func TestResolverAsEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("home/.config/gh")
	mk("home/.cache")
	mk("store/pkg")
	if err := os.WriteFile(filepath.Join(root, "home/.netrc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln("../store", "home/store")                     // relative, with ..
	ln(filepath.Join(root, "store/pkg"), "home/pkg") // absolute
	ln("store", "home/chain")                        // to another link
	ln("missing", "home/dangling")                   // to nothing
	ln(".config", "home/cfg")                        // a sibling directory
	ln("loop2", "home/loop1")                        // a loop
	ln("loop1", "home/loop2")
	paths := []string{
		"home", "home/.config", "home/.config/gh", "home/.config/gh/hosts.yml",
		"home/.netrc", "home/.netrc/x", "home/store", "home/store/pkg", "home/store/pkg/../pkg",
		"home/pkg", "home/pkg/x", "home/chain", "home/chain/pkg", "home/dangling", "home/dangling/x",
		"home/cfg", "home/cfg/gh", "home/loop1", "home/loop1/x", "home/.ssh", "home/.ssh/id_ed25519",
		"nothing/at/all", "",
	}
	var abs []string
	for _, p := range paths {
		abs = append(abs, filepath.Join(root, p))
	}
	for _, listed := range []bool{false, true} {
		var r Resolver
		if listed {
			// The directories most paths lie in read whole: a name not
			// there costs no lstat, and answers the same.
			r.List(abs)
			if len(r.dirs) == 0 {
				t.Fatalf("list read no directory of %q", abs)
			}
		}
		resolverAsEvalSymlinks(t, &r, root, paths)
	}
	// A ".." after a link goes up from where the link leads, not
	// lexically from the link; "." and a relative path as EvalSymlinks.
	var r Resolver
	r.List([]string{root + "/home/a", root + "/home/b", root + "/home/c", root + "/home/d", root + "/home/e", root + "/home/f"})
	for _, p := range []string{root + "/home/pkg/../pkg", root + "/home/chain/../store", root + "/home/./pkg", "rel/x", "."} {
		want, werr := filepath.EvalSymlinks(p)
		got, gerr := r.EvalSymlinks(p)
		if (werr == nil) != (gerr == nil) || got != want {
			t.Errorf("EvalSymlinks(%s) = %q, %v; filepath.EvalSymlinks: %q, %v", p, got, gerr, want, werr)
		}
	}
}

func resolverAsEvalSymlinks(t *testing.T, r *Resolver, root string, paths []string) {
	t.Helper()
	for range 2 { // the second time from what it remembers
		for _, p := range paths {
			abs := filepath.Join(root, p)
			want, werr := filepath.EvalSymlinks(abs)
			got, gerr := r.EvalSymlinks(abs)
			if (werr == nil) != (gerr == nil) || got != want {
				t.Errorf("EvalSymlinks(%s) = %q, %v; EvalSymlinks: %q, %v", p, got, gerr, want, werr)
			}
			if gerr == nil {
				fi, err := r.stat(got)
				sfi, serr := os.Stat(got)
				if err != nil || serr != nil || fi.IsDir() != sfi.IsDir() || fi.Mode() != sfi.Mode() {
					t.Errorf("stat(%s) = %v, %v; os.Stat: %v, %v", got, fi, err, sfi, serr)
				}
			}
		}
	}
}

// Two starts of one Spec, the file system changed between them: the
// second covers what its own start finds. A credential file made in the
// allowlisted home after the first start is unreadable in the second, as
// is one made in a hidden data dir around a kept workspaces root, and a
// credential directory swapped for a link to a readable one still
// covers what it leads to.
func TestBoundary_HiddenChangedBetweenStarts(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home := filepath.Join(outsideDir(t), "home")
	must(t, os.MkdirAll(filepath.Join(home, ".config"), 0o755))
	data := filepath.Join(home, "data")
	keep := filepath.Join(data, "workspaces")
	ws := filepath.Join(keep, "project")
	must(t, os.MkdirAll(ws, 0o755))
	files := []string{".netrc", ".config/gh/hosts.yml", "data/new-secret", ".ssh/id_ed25519"}
	script := `for f in "$@"; do grep -qs ` + credentialMark + ` "$HOME/$f" && echo "read $f"; done; true`
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		s := Spec{Argv: append([]string{"sh", "-c", script, "sh"}, files...),
			Env: append(testEnv(), "HOME="+home), Workspace: ws, Mode: m, Grace: testGrace,
			Allow:  []Allow{{Path: home}},
			Hidden: append([]string{data}, CredentialPaths(home)...), Keep: []string{keep}, Etc: NewEtcWatch()}
		_, r := run(t, s)
		if out := r.text(Stdout); out != "" {
			t.Errorf("%s, nothing there yet: %s", m, out)
		}
		for _, f := range files[:3] {
			p := filepath.Join(home, f)
			must(t, os.MkdirAll(filepath.Dir(p), 0o700))
			must(t, os.WriteFile(p, []byte(credentialMark+"\n"), 0o600))
		}
		// ~/.ssh a link to a directory of keys the allowlist shows.
		keys := filepath.Join(home, "keys")
		must(t, os.MkdirAll(keys, 0o700))
		must(t, os.WriteFile(filepath.Join(keys, "id_ed25519"), []byte(credentialMark+"\n"), 0o600))
		must(t, os.Symlink("keys", filepath.Join(home, ".ssh")))
		_, r = run(t, s)
		if out := r.text(Stdout); out != "" {
			t.Errorf("%s, made between the starts: %s", m, out)
		}
		s.Etc.Close()
		for _, p := range []string{".netrc", ".config/gh", "data/new-secret", ".ssh", "keys"} {
			must(t, os.RemoveAll(filepath.Join(home, p)))
		}
	}
}
