// Package specialtest makes, for tests, the special files a reader of
// regular files (a transcript, a rollout, a tokens or credentials file)
// must refuse at once: a FIFO with no writer, on which an open blocks,
// and a symbolic link to /dev/zero, which reads without end.
package specialtest

import (
	"os"
	"syscall"
	"testing"
)

// Make creates a FIFO with no writer at fifo and, unless zero is "", a
// symbolic link to /dev/zero at zero (both absolute or relative to the
// working directory, in a directory that exists), failing t when either
// cannot be made. The FIFO is mode 0600.
func Make(t testing.TB, fifo, zero string) {
	t.Helper()
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", fifo, err)
	}
	if zero == "" {
		return
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatalf("symlink /dev/zero %s: %v", zero, err)
	}
}

// Kind is one file that is not a regular one, which a reader of small
// regular files (hookspool.ReadRegular) refuses without reading: its
// name, the words its refusal names it with (hookspool.NotRegular:
// "(a FIFO)"), and how to make it at a path.
type Kind struct {
	Name string
	Says string
	Make func(path string) error
}

// Kinds are a FIFO with no writer (an open for reading blocks), a
// symbolic link to /dev/zero (a read never ends) and a directory.
var Kinds = []Kind{
	{"fifo", "(a FIFO)", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	{"device", "(a character device)", func(p string) error { return os.Symlink("/dev/zero", p) }},
	{"directory", "(a directory)", func(p string) error { return os.Mkdir(p, 0o700) }},
}
