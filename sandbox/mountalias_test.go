package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestParseMountinfo(t *testing.T) {
	b := []byte(`21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
40 26 8:1 /home/u/data /home/u/my\040proj/data rw - ext4 /dev/sda1 rw
short line
`)
	want := []mountEntry{
		{dev: "0:20", root: "/", point: "/proc"},
		{dev: "8:1", root: "/", point: "/"},
		{dev: "8:1", root: "/home/u/data", point: "/home/u/my proj/data"},
	}
	if diff := cmp.Diff(want, parseMountinfo(b), cmp.AllowUnexported(mountEntry{})); diff != "" {
		t.Errorf("parseMountinfo (-want +got):\n%s", diff)
	}
	for in, want := range map[string]string{`a\040b`: "a b", `a\134b`: `a\b`, `a\04`: `a\04`, `\011x\012`: "\tx\n", `plain`: "plain"} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every place a mount table shows a hidden path: a bind mount of it, of
// a directory above it, or of one inside it; not a mount of another file
// system, nor one of the same file system that shows something else.
func TestMountAliases(t *testing.T) {
	ms := []mountEntry{
		{dev: "8:1", root: "/", point: "/"},
		{dev: "0:30", root: "/", point: "/tmp"},
		{dev: "8:2", root: "/", point: "/home"},
		{dev: "8:2", root: "/u/.local/share/logbook", point: "/home/u/proj/bind"},      // the data dir
		{dev: "8:2", root: "/", point: "/srv/homes"},                                   // all the homes
		{dev: "8:2", root: "/u/.local/share/logbook/keys", point: "/home/u/proj/keys"}, // inside it
		{dev: "8:2", root: "/u/proj", point: "/home/u/proj2"},                          // something else
		{dev: "8:1", root: "/home/u/.local/share/logbook", point: "/mnt/x"},            // the same path on another disk
	}
	got := mountAliases(ms, "/home/u/.local/share/logbook")
	want := []string{"/home/u/proj/bind", "/srv/homes/u/.local/share/logbook", "/home/u/proj/keys"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mountAliases (-want +got):\n%s", diff)
	}
	if got := mountAliases(ms, "/tmp/x"); got != nil {
		t.Errorf("mountAliases of a path mounted once = %q", got)
	}
	// Stacked mounts: the last made at a point is the one p lies on.
	stacked := []mountEntry{
		{dev: "8:1", root: "/", point: "/"},
		{dev: "8:3", root: "/", point: "/data"},
		{dev: "8:4", root: "/", point: "/data"},
		{dev: "8:4", root: "/creds", point: "/w/creds"},
	}
	if diff := cmp.Diff([]string{"/w/creds"}, mountAliases(stacked, "/data/creds")); diff != "" {
		t.Errorf("mountAliases under stacked mounts (-want +got):\n%s", diff)
	}
}

// A bind mount of the data dir, or of a home, inside the workspace shows
// the credentials no more than their own places do: a restricted command
// reads neither through it, and a workspace that is such a mount is
// refused. Making mounts needs root.
func TestBoundary_HiddenThroughBindMount(t *testing.T) {
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("making bind mounts needs root")
	}
	base := outsideDir(t)
	home := filepath.Join(base, "home")
	data := filepath.Join(home, ".local", "share", "logbook")
	ws := filepath.Join(base, "work", "project")
	for _, d := range []string{data, filepath.Join(home, ".ssh"), ws, filepath.Join(ws, "data"), filepath.Join(ws, "home"), filepath.Join(ws, "keys")} {
		must(t, os.MkdirAll(d, 0o700))
	}
	must(t, os.MkdirAll(filepath.Join(data, "keys"), 0o700))
	for _, f := range []string{filepath.Join(data, "creds.json"), filepath.Join(data, "keys", "local.key"), filepath.Join(home, ".ssh", "id_ed25519")} {
		must(t, os.WriteFile(f, []byte(credentialMark+"\n"), 0o600))
	}
	bind := func(from, to string) {
		t.Helper()
		if err := unix.Mount(from, to, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("bind mount %s on %s: %v", from, to, err)
		}
		t.Cleanup(func() { unix.Unmount(to, unix.MNT_DETACH) })
	}
	must(t, os.MkdirAll(filepath.Join(ws, "etc"), 0o700))
	bind("/etc", filepath.Join(ws, "etc"))
	bind(data, filepath.Join(ws, "data"))
	bind(home, filepath.Join(ws, "home"))
	bind(filepath.Join(data, "keys"), filepath.Join(ws, "keys"))
	files := []string{"data/creds.json", "home/.ssh/id_ed25519", "home/.local/share/logbook/creds.json", "keys/local.key"}
	script := `cd "$1"; shift; for f in "$@"; do grep -qs ` + credentialMark + ` "$f" && echo "read $f"; done; true`
	hidden := append([]string{data}, CredentialPaths(home)...)
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		s := Spec{Argv: append([]string{"sh", "-c", script, "sh", ws}, files...), Env: testEnv(),
			Workspace: ws, Mode: m, Grace: testGrace, Hidden: hidden, Etc: NewEtcWatch()}
		_, r := run(t, s)
		if out := r.text(Stdout); out != "" {
			t.Errorf("%s: through bind mounts in the workspace:\n%s", m, out)
		}
		// /etc's secrets, covered at /etc, are covered where a bind
		// mount of /etc shows them.
		s.Argv = []string{"sh", "-c", `cd "$1" && head -c 16 etc/shadow`, "sh", ws}
		if _, err := os.Stat("/etc/shadow"); err == nil {
			_, r = run(t, s)
			if out := r.text(Stdout); out != "" {
				t.Errorf("%s: /etc/shadow through a bind mount of /etc: %q", m, out)
			}
		}
		s.Etc.Close()
		// The workspace a bind mount of the data dir: refused, as the
		// data dir itself is.
		s = Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: filepath.Join(ws, "data"), Mode: m, Grace: testGrace, Hidden: hidden}
		if p, err := Start(t.Context(), s, newRecorder("").emit); !errors.Is(err, ErrRefused) {
			if err == nil {
				p.Wait()
			}
			t.Errorf("%s: a workspace that is a bind mount of the data dir: %v, want refused", m, err)
		}
	}
}
