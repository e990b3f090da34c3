package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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

// TestLock_HeldByAChildStarting: a child this process starts holds a
// copy of every descriptor between its fork and its exec, and with them
// a data dir lock this process has just let go of. Lock waits for such a
// holder (the lock names this process, which holds no descriptor of the
// file itself) rather than calling the data dir busy; a lock this
// process does hold is busy at once.
func TestLock_HeldByAChildStarting(t *testing.T) {
	d := Dir(t.TempDir())
	held, err := d.Lock("logbook import claude")
	if err != nil {
		t.Fatal(err)
	}
	// A child that keeps a copy of the locked descriptor a while (a
	// fork-to-exec window stretched): the flock lives until it exits.
	child := exec.Command("sleep", "0.3")
	child.ExtraFiles = []*os.File{held}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	// This process still holds it: busy, naming this process.
	if _, err := d.Lock("logbook serve"); !errors.Is(err, ErrBusy) || !strings.HasSuffix(err.Error(), fmt.Sprintf("is held by logbook import claude pid %d", os.Getpid())) {
		t.Fatalf("lock held by this process: %v, want busy naming pid %d", err, os.Getpid())
	}
	held.Close() // let go; the child still holds its copy
	f, err := d.Lock("logbook serve")
	if err != nil {
		t.Fatalf("lock held only by this process's child: %v", err)
	}
	defer f.Close()
	if err := <-done; err != nil { // it had exited: its copy held the flock
		t.Fatalf("child: %v", err)
	}
	// Another process's holder is busy at once, as before.
	if err := os.WriteFile(d.Path("lock"), []byte("logbook serve pid 4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock("logbook sessions"); !errors.Is(err, ErrBusy) || !strings.HasSuffix(err.Error(), "is held by logbook serve pid 4242") {
		t.Errorf("lock of another process: %v", err)
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

// TestTryLock_NoSymlink: a lock file that is a symbolic link is refused,
// naming it, and what it names is not written.
func TestTryLock_NoSymlink(t *testing.T) {
	t.Parallel()
	d := Dir(t.TempDir())
	victim := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, d.Path("lock")); err != nil {
		t.Fatal(err)
	}
	f, err := d.TryLock("test")
	if err == nil {
		f.Close()
		t.Fatal("a symlinked lock file was taken")
	}
	if !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), d.Path("lock")) {
		t.Errorf("TryLock: %v, want it to name the link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
