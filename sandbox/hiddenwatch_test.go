package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Starts that share a HiddenWatch resolve the hidden paths once while
// nothing changes, and never cover less than a start that resolves them
// itself: a credential file made in the allowlisted home after the watch
// resolved it, a credential directory renamed into place, one made a
// symbolic link to a directory the allowlist shows, a secret made in the
// hidden data dir around a kept workspaces root, and ~/.config swapped
// for a link to another directory each stay unreadable at the next
// start, while a file of the home nothing hides stays readable.
func TestHiddenWatch_ChangesAfterResolution(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			home := filepath.Join(outsideDir(t), "home")
			must(t, os.MkdirAll(filepath.Join(home, ".config"), 0o755))
			data := filepath.Join(home, "data")
			keep := filepath.Join(data, "workspaces")
			ws := filepath.Join(keep, "project")
			must(t, os.MkdirAll(ws, 0o755))
			must(t, os.WriteFile(filepath.Join(home, "visible"), []byte(credentialMark+"\n"), 0o644))
			files := []string{"visible", ".netrc", ".config/gh/hosts.yml", ".ssh/id_ed25519", "keys/id_ed25519", "data/new-secret", ".aws/credentials", "cfg/gh/hosts.yml"}
			script := `for f in "$@"; do grep -qs ` + credentialMark + ` "$HOME/$f" && echo "read $f"; done; true`
			w := NewHiddenWatch()
			defer w.Close()
			s := Spec{Argv: append([]string{"sh", "-c", script, "sh"}, files...),
				Env: append(testEnv(), "HOME="+home), Workspace: ws, Mode: m, Grace: testGrace,
				Allow:  []Allow{{Path: home}},
				Hidden: append([]string{data}, CredentialPaths(home)...), Keep: []string{keep},
				Etc: NewEtcWatch(), HiddenWatch: w, Reporter: testReporter(t)}
			defer s.Etc.Close()
			checkWant := func(step, want string) {
				t.Helper()
				_, r := run(t, s)
				if out := r.text(Stdout); out != want {
					t.Errorf("%s: read %q, want %q", step, out, want)
				}
			}
			check := func(step string) { t.Helper(); checkWant(step, "read visible\n") }
			// Resolutions made for a change of the mount table alone
			// (another test's mount) are not counted.
			resolutions := func() int {
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.resolutions - w.remounts
			}
			check("nothing there yet")
			// Held while nothing changes, a name made beside the
			// home's own (in its parent) among it: a start that
			// resolves nothing.
			n := resolutions()
			must(t, os.WriteFile(filepath.Join(filepath.Dir(home), "beside"), nil, 0o644))
			check("nothing changed")
			if resolutions() != n {
				t.Errorf("nothing changed, yet the hidden paths were resolved again")
			}
			write := func(p string) {
				must(t, os.MkdirAll(filepath.Dir(p), 0o700))
				must(t, os.WriteFile(p, []byte(credentialMark+"\n"), 0o600))
			}
			// Made in place.
			write(filepath.Join(home, ".netrc"))
			check("~/.netrc made")
			// Made elsewhere, renamed into place.
			write(filepath.Join(home, "staging", "hosts.yml"))
			must(t, os.Rename(filepath.Join(home, "staging"), filepath.Join(home, ".config", "gh")))
			check("~/.config/gh renamed into place")
			// A link to a directory of keys the allowlist shows.
			write(filepath.Join(home, "keys", "id_ed25519"))
			checkWant("a directory of keys, no link to it yet", "read visible\nread keys/id_ed25519\n")
			must(t, os.Symlink("keys", filepath.Join(home, ".ssh")))
			n = resolutions()
			_, r := run(t, s)
			if out := r.text(Stdout); out != "read visible\n" {
				t.Errorf("~/.ssh made a link to ~/keys: read %q, want only the file nothing hides", out)
			}
			if resolutions() == n {
				t.Errorf("a link made in a watched directory did not end the resolution held")
			}
			// Made in the hidden data dir, read for its kept root.
			write(filepath.Join(data, "new-secret"))
			check("a secret made in the data dir")
			// A directory above a hidden path swapped for a link.
			write(filepath.Join(home, "cfg", "gh", "hosts.yml"))
			must(t, os.Rename(filepath.Join(home, ".config"), filepath.Join(home, "config-old")))
			must(t, os.Symlink("cfg", filepath.Join(home, ".config")))
			check("~/.config made a link to ~/cfg")
			// Made after a resolution that followed a link (not held).
			write(filepath.Join(home, ".aws", "credentials"))
			check("~/.aws made")
		})
	}
}

// A HiddenWatch answers as a fresh resolution does, and again after a
// change: each hidden path resolved (else cleaned), and the plan's
// paths with the kept directories hidden around.
func TestHiddenWatch_SameAsFresh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	data := filepath.Join(dir, "data")
	keep := filepath.Join(data, "workspaces")
	must(t, os.MkdirAll(keep, 0o755))
	must(t, os.MkdirAll(filepath.Join(home, ".config"), 0o755))
	must(t, os.MkdirAll(filepath.Join(data, "spool"), 0o755))
	hide := append([]string{data}, CredentialPaths(home)...)
	w := NewHiddenWatch()
	defer w.Close()
	same := func(step string) {
		t.Helper()
		fresh, _ := resolveHiddenSnap(hide, []string{keep}, nil, nil)
		for range 2 {
			paths, aliases := w.Resolved(hide, []string{keep})
			var r Resolver
			all, _ := w.plan(hide, []string{keep}, &r)
			if strings.Join(paths, "\n") != strings.Join(fresh.paths, "\n") || strings.Join(aliases, "\n") != strings.Join(fresh.pathAliases, "\n") {
				t.Errorf("%s: Resolved = %q, %q; fresh %q, %q", step, paths, aliases, fresh.paths, fresh.pathAliases)
			}
			if strings.Join(all, "\n") != strings.Join(fresh.all, "\n") {
				t.Errorf("%s: plan = %q; fresh %q", step, all, fresh.all)
			}
			for _, h := range all {
				got, gerr := r.EvalSymlinks(h)
				want, werr := filepath.EvalSymlinks(h)
				if got != want || (gerr == nil) != (werr == nil) {
					t.Errorf("%s: %s resolves through the plan's Resolver to %q, %v; EvalSymlinks %q, %v", step, h, got, gerr, want, werr)
				}
			}
		}
	}
	same("first")
	must(t, os.Mkdir(filepath.Join(home, ".ssh"), 0o700))
	same("~/.ssh made")
	must(t, os.Mkdir(filepath.Join(data, "logs"), 0o700))
	same("a directory made in the data dir")
	must(t, os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(home, ".aws")))
	must(t, os.Mkdir(filepath.Join(dir, "elsewhere"), 0o700))
	same("~/.aws a link, made before its target")
	must(t, os.RemoveAll(filepath.Join(home, ".ssh")))
	same("~/.ssh removed")
}

// A HiddenWatch keeps no resolution that looked into a file system
// outside the few whose every change the kernel makes itself: /proc
// stands for a remote one here (its entries change with no event).
func TestHiddenWatch_OnlyLocalFileSystems(t *testing.T) {
	t.Parallel()
	if err := localFS(t.TempDir()); err != nil {
		t.Skipf("the test directory is not on a file system HiddenWatch keeps: %v", err)
	}
	if err := localFS("/proc"); !errors.Is(err, errRemoteFS) {
		t.Errorf("localFS(/proc) = %v, want errRemoteFS", err)
	}
	w := NewHiddenWatch()
	defer w.Close()
	hide := []string{"/proc/self/environ", filepath.Join(t.TempDir(), "secret")}
	for range 2 {
		w.Resolved(hide, nil)
	}
	w.mu.Lock()
	n := w.resolutions
	w.mu.Unlock()
	if n != 2 {
		t.Errorf("%d resolutions for 2 calls, a hidden path in /proc among them: want 2, none kept", n)
	}
}

// An event on a name a resolution never looked up leaves it standing;
// one on a name it looked up, in any case, ends it.
func TestHiddenWatch_EventsOnOtherNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	must(t, os.Mkdir(home, 0o755))
	hide := []string{filepath.Join(home, ".netrc")} // one name: home is not read whole
	w := NewHiddenWatch()
	defer w.Close()
	resolutions := func() int { // not those for another test's mount
		w.Resolved(hide, nil)
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.resolutions - w.remounts
	}
	n := resolutions()
	must(t, os.WriteFile(filepath.Join(home, "notes"), nil, 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "beside"), 0o755))
	if got := resolutions(); got != n {
		t.Errorf("resolved again after events on other names (%d, then %d)", n, got)
	}
	for _, name := range []string{".NETRC", ".netrc"} {
		n = resolutions()
		must(t, os.WriteFile(filepath.Join(home, name), nil, 0o644))
		if got := resolutions(); got == n {
			t.Errorf("%s made, and the resolution held stands", name)
		}
		if paths, _ := w.Resolved(hide, nil); len(paths) != 1 || paths[0] != hide[0] {
			t.Errorf("Resolved = %q", paths)
		}
	}
	n = resolutions()
	must(t, os.Rename(home, filepath.Join(dir, "home2")))
	if got := resolutions(); got == n {
		t.Errorf("the home renamed, and the resolution held stands")
	}
}
