package api

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logbook-dev/logbook/adapters/hooksock"
)

// TestListenSocket_NotASocket: any file but a socket in the socket's
// place is left as it is, and named in the error with its kind.
func TestListenSocket_NotASocket(t *testing.T) {
	for _, c := range []struct {
		kind string
		make func(path string) error
	}{
		{"regular file", func(p string) error { return os.WriteFile(p, []byte("keep"), 0o600) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"symbolic link", func(p string) error { return os.Symlink("/nonexistent", p) }},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		path := filepath.Join(t.TempDir(), hooksock.Name)
		if err := c.make(path); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(path)
		s, err := ListenSocket(path)
		if err == nil {
			s.Close()
		}
		if want := "listen on " + path + ": a " + c.kind + " is in the socket's place; move it away"; err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", c.kind, err, want)
		}
		if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
			t.Errorf("%s: not left in place (%v)", c.kind, err)
		}
	}
}

// TestListenSocket_Stale: a socket left by a server that is gone is
// replaced; the new one is 0600; Close removes it.
func TestListenSocket_Stale(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{t.TempDir(), long} {
		path := filepath.Join(dir, hooksock.Name)
		old, err := ListenSocket(path)
		if err != nil {
			t.Fatal(err)
		}
		old.UnixListener.Close() // killed: the file stays
		s, err := ListenSocket(path)
		if err != nil {
			t.Fatalf("dir of %d bytes: %v", len(dir), err)
		}
		st, err := os.Lstat(path)
		if err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
			t.Errorf("dir of %d bytes: %v (%v), want a socket, 0600", len(dir), st.Mode(), err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("dir of %d bytes: socket left after Close (%v)", len(dir), err)
		}
	}
}
