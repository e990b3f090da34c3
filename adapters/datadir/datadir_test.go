package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLock_HolderNotYetWritten: a command that finds the data dir's lock
// taken by a process that has not yet written (or not all of) its
// "ROLE pid N" line says so in words, never "held by ;".
func TestLock_HolderNotYetWritten(t *testing.T) {
	d := Dir(t.TempDir())
	held, err := d.Lock("logbook serve")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, text := range []string{"", "logbook ser", "logbook serve pid ", "logbook serve pid 12"} {
		// The holder writes its line after it takes the lock: what a
		// racing command reads is empty or cut short.
		if err := os.WriteFile(d.Path("lock"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := d.Lock("logbook sessions")
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("lock held, text %q: err = %v, want busy", text, err)
		}
		if msg := err.Error(); !strings.HasSuffix(msg, "is held by another logbook process (its pid not yet written)") {
			t.Errorf("lock file %q: %s", text, msg)
		}
	}
	if err := os.WriteFile(d.Path("lock"), []byte("logbook serve pid 4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("logbook sessions"); err == nil || !strings.HasSuffix(err.Error(), "is held by logbook serve pid 4242") {
		t.Errorf("written holder: %v", err)
	}
}

// TestWriteFileNew: a new file is written whole with its mode; one that
// exists (a symlink included, not followed) is refused with fs.ErrExist.
func TestWriteFileNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFileNew(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "one" {
		t.Fatalf("read %s: %q, %v", p, b, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if err := WriteFileNew(p, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second WriteFileNew: %v, want fs.ErrExist", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "absent"), link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileNew(link, []byte("x"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteFileNew over a symlink: %v, want fs.ErrExist", err)
	}
	if err := WriteFileAtomic(p, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "three" {
		t.Errorf("after WriteFileAtomic: %q", b)
	}
}

// TestWritesInto: a file under the dir, through "..", or through a
// symlink into it, writes into it; one beside it does not.
func TestWritesInto(t *testing.T) {
	root := t.TempDir()
	dd := filepath.Join(root, "data")
	if err := os.Mkdir(dd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dd, filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		want bool
	}{
		{filepath.Join(dd, "admin.json"), true},
		{filepath.Join(dd, "sub", "admin.json"), true},
		{filepath.Join(root, "other", "..", "data", "admin.json"), true},
		{filepath.Join(root, "alias", "admin.json"), true},
		{filepath.Join(root, "admin.json"), false},
		{filepath.Join(root, "data2", "admin.json"), false},
	} {
		if got := WritesInto(tc.file, dd); got != tc.want {
			t.Errorf("WritesInto(%s, %s) = %v, want %v", tc.file, dd, got, tc.want)
		}
	}
}
