package projections

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A store opened on a disk with no room: Pebble fails writing its
// MANIFEST and reports it as fatal (its logger's Fatalf, a panic); Open
// returns a *DiskError naming the directory and the fix instead.
func TestOpen_DiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test: needs root")
	}
	t.Parallel()
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=1048576,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	dir := filepath.Join(root, "views")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 512, 1} {
		for _, err := f.Write(make([]byte, n)); err == nil; _, err = f.Write(make([]byte, n)) {
		}
	}
	f.Close()
	s, err := Open(dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open on a full disk: no error")
	}
	de, ok := errors.AsType[*DiskError](err)
	if !ok || !errors.Is(err, syscall.ENOSPC) || de.Dir != dir || !strings.Contains(err.Error(), "free space there") {
		t.Fatalf("Open on a full disk: %v (%T); want a *DiskError of %s wrapping ENOSPC", err, err, dir)
	}
}
