package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// The homes whose credential paths a worker hides: the accounts' own
// directories, not the system's directories system accounts name as
// their home, nor / or a relative path, nor one that is not there.
func TestAccountHomes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "me")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	other := uid + 1
	passwd := fmt.Sprintf(`root:x:0:0:root:/:/bin/sh
me:x:%d:%d::%s:/bin/sh
daemon:x:%d:1::%s:/usr/sbin/nologin
rel:x:%d:1::home/rel:/bin/sh
gone:x:%d:1::%s/gone:/bin/sh
me2:x:%d:1::%s/:/bin/sh
# a comment
short:x
`, uid, uid, mine, other, mine, uid, uid, dir, uid, mine)
	p := filepath.Join(dir, "passwd")
	if err := os.WriteFile(p, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{mine}, AccountHomes(p)); diff != "" {
		t.Errorf("AccountHomes (-want +got):\n%s", diff)
	}
	if got := AccountHomes(filepath.Join(dir, "none")); got != nil {
		t.Errorf("AccountHomes of a missing file: %q", got)
	}
}

// A worker hides the credential paths of every local account's home, not
// only its own: run as root, it serves sessions whose directories are
// other users' homes.
func TestHiddenPaths_OtherAccounts(t *testing.T) {
	t.Parallel()
	u, err := user.Lookup("lbtest")
	if err != nil {
		t.Skipf("no user lbtest on this host (.ci/run makes it): %v", err)
	}
	var st os.FileInfo
	if st, err = os.Stat(u.HomeDir); err != nil || !st.IsDir() {
		t.Skipf("lbtest has no home: %v", err)
	}
	if uid, _ := strconv.Atoi(u.Uid); !ownedBy(st, uid) {
		t.Skipf("%s is not lbtest's", u.HomeDir)
	}
	hide, _ := HiddenPaths(t.TempDir())
	for _, p := range []string{".ssh", ".aws", ".config/gh", ".claude.json", ".local/share/logbook", ".bash_history", ".m2/settings.xml"} {
		if !slices.Contains(hide, filepath.Join(u.HomeDir, p)) {
			t.Errorf("HiddenPaths leaves %s in sight", filepath.Join(u.HomeDir, p))
		}
	}
	if err := CheckHidden(filepath.Join(u.HomeDir, ".ssh"), hide, nil); err == nil {
		t.Errorf("a workspace in lbtest's .ssh is not refused")
	}
}

// ownedBy reports whether fi's owner is uid.
func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// A HiddenSet covers an account made after it was first asked, and a
// home made after its account; with the homes unchanged, it answers with
// the paths it built before.
func TestHiddenSet_NewAccount(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	uid := os.Getuid()
	first, later := filepath.Join(dir, "first"), filepath.Join(dir, "later")
	for _, d := range []string{first, later} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "passwd")
	line := func(name, home string) string { return fmt.Sprintf("%s:x:%d:%d::%s:/bin/sh\n", name, uid, uid, home) }
	if err := os.WriteFile(p, []byte(line("first", first)), 0o644); err != nil {
		t.Fatal(err)
	}
	h := NewHiddenSet(filepath.Join(dir, "data"))
	h.passwd = p
	hide, _ := h.Paths()
	if !slices.Contains(hide, filepath.Join(first, ".ssh")) || slices.Contains(hide, filepath.Join(later, ".ssh")) {
		t.Fatalf("before: hide = %q", hide)
	}
	if again, _ := h.Paths(); &again[0] != &hide[0] {
		t.Errorf("the hidden paths were built again for the same homes")
	}
	if err := os.WriteFile(p, []byte(line("first", first)+line("later", later)), 0o644); err != nil {
		t.Fatal(err)
	}
	hide, _ = h.Paths()
	if !slices.Contains(hide, filepath.Join(later, ".ssh")) {
		t.Errorf("an account added to passwd has its credential paths in sight: hide = %q", hide)
	}
	if err := CheckHidden(filepath.Join(later, ".ssh", "x"), hide, nil); err == nil {
		t.Errorf("a workspace in the new account's .ssh is not refused")
	}
	// An account whose home is made after it (useradd -M, then mkdir):
	// passwd is as it was, the home is covered once it is there.
	made := filepath.Join(dir, "made")
	if err := os.WriteFile(p, []byte(line("first", first)+line("later", later)+line("made", made)), 0o644); err != nil {
		t.Fatal(err)
	}
	if hide, _ = h.Paths(); slices.Contains(hide, filepath.Join(made, ".ssh")) {
		t.Errorf("a home that is not there yet is hidden: hide = %q", hide)
	}
	if err := os.Mkdir(made, 0o755); err != nil {
		t.Fatal(err)
	}
	if hide, _ = h.Paths(); !slices.Contains(hide, filepath.Join(made, ".ssh")) {
		t.Errorf("a home made after its account has its credential paths in sight: hide = %q", hide)
	}
}

// CheckHidden reads a directory most hidden paths lie in whole rather
// than looking each name up; its answers are those of resolving each
// path alone (filepath.EvalSymlinks), for names that are there, are not,
// are links out of the directory, links to links, and dangling links.
func TestCheckHidden_ListedAsResolved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	elsewhere := filepath.Join(dir, "elsewhere")
	for _, d := range []string{home, elsewhere, filepath.Join(elsewhere, "aws"), filepath.Join(elsewhere, "ws"), filepath.Join(home, ".ssh"), filepath.Join(home, ".config"), filepath.Join(elsewhere, "gh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(home, ".aws"):           filepath.Join(elsewhere, "aws"),
		filepath.Join(home, ".kube"):          filepath.Join(home, ".aws"), // a link to a link
		filepath.Join(home, ".docker"):        filepath.Join(dir, "nowhere"),
		filepath.Join(home, ".config", "gh"):  filepath.Join(elsewhere, "gh"),
		filepath.Join(home, ".config", "gcp"): "../.ssh",
	}
	for from, to := range links {
		if err := os.Symlink(to, from); err != nil {
			t.Fatal(err)
		}
	}
	var hide []string
	for _, n := range []string{".ssh", ".aws", ".kube", ".docker", ".gnupg", ".netrc", ".npmrc", ".config/gh", ".config/gcp", ".config/a", ".config/b", ".config/c", ".config/d", ".config/e"} {
		hide = append(hide, filepath.Join(home, n))
	}
	for _, ws := range []string{
		filepath.Join(elsewhere, "aws"), filepath.Join(elsewhere, "aws", "x"), filepath.Join(elsewhere, "gh"),
		filepath.Join(home, ".ssh", "k"), filepath.Join(home, ".gnupg", "x"), filepath.Join(home, ".config", "a"),
		filepath.Join(elsewhere, "ws"), home, filepath.Join(home, ".config"), filepath.Join(dir, "nowhere"),
	} {
		var want error
		real := resolved(ws)
		for _, h := range hide {
			if within(real, resolved(h)) {
				want = fmt.Errorf("in %s", resolved(h))
				break
			}
		}
		got := CheckHidden(ws, hide, nil)
		if (got == nil) != (want == nil) {
			t.Errorf("CheckHidden(%s) = %v, resolving each alone: %v", ws, got, want)
		}
	}
}

// BenchmarkCheckHidden checks one workspace against the credential
// paths of six homes (sandbox.CredentialPaths), most of them not there,
// as a worker does at each command.
func BenchmarkCheckHidden(b *testing.B) {
	dir := b.TempDir()
	hide := []string{filepath.Join(dir, "data")}
	for i := range 6 {
		home := filepath.Join(dir, fmt.Sprintf("home%d", i))
		for _, d := range []string{".config", ".ssh", ".local/share"} {
			if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		hide = append(hide, sandbox.CredentialPaths(home)...)
	}
	ws := filepath.Join(dir, "home0", "work", "app")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(hide)), "paths")
	for b.Loop() {
		if err := CheckHidden(ws, hide, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// A workspace that is a bind mount of the data dir, or lies in one, is
// refused in every mode as the data dir itself is. Making mounts needs
// root.
func TestCheckHidden_BindMount(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("making bind mounts needs root")
	}
	dir := t.TempDir()
	data, ws := filepath.Join(dir, "data"), filepath.Join(dir, "work", "data")
	for _, d := range []string{filepath.Join(data, "views"), ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(data, ws, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ws, unix.MNT_DETACH) })
	for _, w := range []string{ws, filepath.Join(ws, "views")} {
		if err := CheckHidden(w, []string{data}, nil); err == nil {
			t.Errorf("CheckHidden(%s), a mount of the data dir: nil", w)
		}
	}
	if err := CheckHidden(filepath.Join(dir, "work"), []string{data}, nil); err != nil {
		t.Errorf("CheckHidden of the directory holding the mount: %v", err)
	}
}

// A worker resolves the hidden paths once for many commands (its
// sandbox.HiddenWatch), and a secret made after it did, in place, renamed
// into place or reached through a symbolic link made in the home, is
// still unreadable to the next restricted command, while a file of the
// allowlisted home nothing hides stays readable.
func TestWorker_HiddenMadeAfterStart(t *testing.T) {
	needBwrap(t)
	const mark = "LB-SECRET-5d1c"
	dir, err := os.MkdirTemp("/var/tmp", "logbook-hidden-") // /tmp is private in the boundary
	if err != nil {
		t.Skipf("no directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(mark+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, "visible"))
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.Hidden = hiddenPaths(filepath.Join(dir, "data"), []string{home}, "")
	cfg.Allow = []sandbox.Allow{{Path: home}}
	e.startWorker(cfg)
	files := []string{"visible", ".netrc", ".config/gh/hosts.yml", ".ssh/id_ed25519", "keys/id_ed25519"}
	script := `for f in "$@"; do grep -qs ` + mark + ` "$HOME/$f" && echo "read $f"; done; true`
	check := func(step, want string) {
		t.Helper()
		req := e.request(events.ModeWorkspaceWrite, append([]string{"sh", "-c", script, "sh"}, files...)...)
		req.Env = append(req.Env, "HOME="+home)
		st, out := e.follow(e.submit(req), 20*time.Second)
		if st.Status != command.StatusExited {
			t.Fatalf("%s: status %s, output %q", step, st.Status, out.all.String())
		}
		if got := out.stream("stdout"); got != want {
			t.Errorf("%s: read %q, want %q", step, got, want)
		}
	}
	check("nothing there yet", "read visible\n")
	check("nothing changed", "read visible\n")
	write(filepath.Join(home, ".netrc"))
	check("~/.netrc made", "read visible\n")
	write(filepath.Join(home, "staging", "hosts.yml"))
	if err := os.Rename(filepath.Join(home, "staging"), filepath.Join(home, ".config", "gh")); err != nil {
		t.Fatal(err)
	}
	check("~/.config/gh renamed into place", "read visible\n")
	write(filepath.Join(home, "keys", "id_ed25519"))
	check("keys no link leads to", "read visible\nread keys/id_ed25519\n")
	if err := os.Symlink("keys", filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	check("~/.ssh made a link to ~/keys", "read visible\n")
}
