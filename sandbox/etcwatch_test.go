package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestEtcWatch: what an EtcWatch gives is what a search gives, after
// each change that decides it (a new search) and after one that does
// not (none).
func TestEtcWatch(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	mk := func(p string, perm os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), perm); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ssl", "ssl/certs", "deep/er/still"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("hosts", 0o644)
	mk("shadow", 0o640)
	mk("ssl/certs/ca.pem", 0o644)
	mk("deep/er/still/key", 0o644)
	if err := os.Link(filepath.Join(root, "deep/er/still/key"), filepath.Join(outside, "key")); err != nil {
		t.Fatal(err)
	}
	w := newEtcWatch(root)
	defer w.Close()
	searches := 0
	check := func(what string, searched bool) {
		t.Helper()
		dirs, files := w.secrets()
		wantDirs, wantFiles := etcSecrets(root)
		if diff := cmp.Diff([][]string{wantDirs, wantFiles}, [][]string{dirs, files}); diff != "" {
			t.Errorf("%s: secrets (-search +watch):\n%s", what, diff)
		}
		if searched {
			searches++
		}
		// Another test's mount (packages run side by side) changes this
		// process's mount table, which rightly makes a search.
		if w.searches-w.remounts != searches {
			t.Errorf("%s: %d searches (%d for the mount table alone), want %d", what, w.searches, w.remounts, searches)
		}
	}
	check("first", true)
	check("nothing changed", false)
	check("nothing changed again", false)

	if err := os.WriteFile(filepath.Join(root, "hosts"), []byte("127.0.0.1 here\n"), 0); err != nil {
		t.Fatal(err)
	}
	check("contents written", false)

	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"FileMode", func() error { return os.Chmod(filepath.Join(root, "hosts"), 0o600) }},
		{"DeepFileMode", func() error { return os.Chmod(filepath.Join(root, "ssl/certs/ca.pem"), 0o600) }},
		{"ModeThroughAnotherLink", func() error { return os.Chmod(filepath.Join(outside, "key"), 0o600) }},
		{"NewLink", func() error { return os.Link(filepath.Join(root, "shadow"), filepath.Join(outside, "shadow")) }},
		{"DirMode", func() error { return os.Chmod(filepath.Join(root, "ssl"), 0o700) }},
		{"DirModeBack", func() error { return os.Chmod(filepath.Join(root, "ssl"), 0o755) }},
		{"NewPrivateDir", func() error { return os.Mkdir(filepath.Join(root, "deep/er/private"), 0o700) }},
		{"NewPrivateFile", func() error {
			return os.WriteFile(filepath.Join(root, "deep/er/still/new"), nil, 0o600)
		}},
		{"RenamedIn", func() error {
			if err := os.WriteFile(filepath.Join(outside, "in"), nil, 0o600); err != nil {
				return err
			}
			return os.Rename(filepath.Join(outside, "in"), filepath.Join(root, "ssl/in"))
		}},
		{"RenamedOut", func() error { return os.Rename(filepath.Join(root, "shadow"), filepath.Join(outside, "shadow-out")) }},
		{"Removed", func() error { return os.RemoveAll(filepath.Join(root, "deep/er/private")) }},
		{"DirMoved", func() error { return os.Rename(filepath.Join(root, "deep/er"), filepath.Join(root, "deep/moved")) }},
	} {
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		check(c.name, true)
		check(c.name+", then nothing", false)
	}
}

// TestEtcWatch_Mount: a file system mounted over a part of the searched
// tree (no inotify event) makes the next start search again. Root only.
func TestEtcWatch_Mount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting takes root")
	}
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newEtcWatch(root)
	defer w.Close()
	w.secrets()
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer unix.Unmount(sub, unix.MNT_DETACH)
	dirs, _ := w.secrets()
	if w.searches != 2 {
		t.Errorf("%d searches after a mount, want 2", w.searches)
	}
	if want := []string{sub}; !cmp.Equal(dirs, want) {
		t.Errorf("dirs %q after a private tmpfs was mounted there, want %q", dirs, want)
	}
	// Another in its place, which may take the same mount id and device.
	if err := unix.Unmount(sub, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "mode=0700"); err != nil {
		t.Fatal(err)
	}
	w.secrets()
	if w.searches != 3 {
		t.Errorf("%d searches after a mount replaced, want 3", w.searches)
	}
	if err := unix.Unmount(sub, 0); err != nil {
		t.Fatal(err)
	}
	if dirs, _ := w.secrets(); w.searches != 4 || len(dirs) != 0 {
		t.Errorf("%d searches, dirs %q after the unmount, want 4 and none", w.searches, dirs)
	}
}

// TestEtcWatch_Nil: a nil EtcWatch searches /etc, at every call.
func TestEtcWatch_Nil(t *testing.T) {
	var w *EtcWatch
	dirs, files := w.secrets()
	wantDirs, wantFiles := etcSecrets("/etc")
	if diff := cmp.Diff([][]string{wantDirs, wantFiles}, [][]string{dirs, files}); diff != "" {
		t.Errorf("nil watch (-search +watch):\n%s", diff)
	}
}
