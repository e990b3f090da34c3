package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGrowPipe: a pipe audit writes to is given the buffer asked for
// (up to fs.pipe-max-size, which an unprivileged user cannot pass); a
// file and a writer that is no file are left alone.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	growPipe(w, auditPipeSize)
	got, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got != auditPipeSize && (got != before || os.Geteuid() == 0) {
		t.Errorf("pipe buffer %d bytes after growPipe (%d before), want %d", got, before, auditPipeSize)
	}
	// A pipe already as large is not made smaller.
	growPipe(w, before)
	if again, _ := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0); again != got {
		t.Errorf("pipe buffer %d bytes after asking for less, want it left at %d", again, got)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "timeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f, auditPipeSize) // a regular file: nothing to grow
	if _, err := f.WriteString("#1\n"); err != nil {
		t.Errorf("write after growPipe on a file: %v", err)
	}
	growPipe(&bytes.Buffer{}, auditPipeSize) // no file at all
}
