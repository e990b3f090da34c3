package projections_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logbook-dev/logbook/projections"
)

// corruptStore builds a projection of many sessions in a directory of its
// own, closed, with its rows in table files (a reopen flushes the
// write-ahead log), then overwrites n bytes at offset off of each table
// (off < 0: from the middle) and returns the directory.
func corruptStore(t *testing.T, off int64, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "views")
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := history(t, 11, 600, 40)
	apply(t, s, h.Records, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = projections.Open(dir, projections.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatalf("no table files in %s", dir)
	}
	for _, f := range tables {
		fh, err := os.OpenFile(f, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		at := off
		if at < 0 {
			info, _ := fh.Stat()
			at = info.Size() / 2
		}
		_, err = fh.WriteAt(bytes.Repeat([]byte{0xA5}, n), at)
		if err := errors.Join(err, fh.Close()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkCorrupt checks that err reports the corruption of a table file
// of the store in dir, with the fix.
func checkCorrupt(t *testing.T, what string, dir string, err error) {
	t.Helper()
	var ce *projections.CorruptError
	if !errors.Is(err, projections.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("%s = %v, want a *CorruptError", what, err)
	}
	if ce.Dir != dir || !strings.HasSuffix(ce.File, ".sst") || filepath.Dir(ce.File) != dir {
		t.Errorf("%s: CorruptError{Dir: %q, File: %q}, want the store's dir and a table in it", what, ce.Dir, ce.File)
	}
	if msg := err.Error(); !strings.Contains(msg, ce.File) || !strings.Contains(msg, "checksum mismatch") ||
		!strings.Contains(msg, "(remove "+dir+" to rebuild it from the log)") || strings.Contains(msg, "\n") {
		t.Errorf("%s: message %q, want one line naming the file, what is wrong and the fix", what, msg)
	}
}

// A table damaged where the checkpoint is kept fails Open with an error
// naming the file and the fix: never a panic (Pebble's default reaction
// to corruption is to end the process).
func TestOpen_CorruptTable(t *testing.T) {
	t.Parallel()
	dir := corruptStore(t, 100, 200)
	s, err := projections.Open(dir, projections.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a store with a damaged table succeeded")
	}
	checkCorrupt(t, "Open", dir, err)
}

// A table damaged away from the checkpoint: the store opens, and every
// query that reaches the damage (a point read, a scan, the hash, a
// snapshot's rows, a batch reading rows it updates) fails with an error
// naming the file, as does the store's next use; nothing panics.
func TestStore_CorruptTableQueries(t *testing.T) {
	t.Parallel()
	dir := corruptStore(t, -1, 200)
	s := open(t, dir, projections.Options{})
	if _, _, err := s.Hash(); err != nil {
		checkCorrupt(t, "Hash", dir, err)
	} else {
		t.Fatal("Hash of a store with a damaged table succeeded")
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var rowsErr error
	for _, err := range snap.Rows() {
		if err != nil {
			rowsErr = err
			break
		}
	}
	snap.Close()
	checkCorrupt(t, "Rows", dir, rowsErr)
	_, err = s.Sessions("")
	checkCorrupt(t, "Sessions", dir, err)
	h := history(t, 11, 600, 40)
	failed := false
	for _, id := range h.Sessions {
		if _, err := s.Session(id); err != nil {
			checkCorrupt(t, "Session("+id+")", dir, err)
			failed = true
		}
	}
	if !failed {
		t.Error("no Session read reached the damaged block")
	}
}

// guard turns a panic whose value is Pebble's corruption error into the
// function's error, and lets every other panic go on.
func TestGuard(t *testing.T) {
	t.Parallel()
	f := func(v any) (err error) {
		defer projections.Guard("/d/views", &err)
		panic(v)
	}
	err := f(fmt.Errorf("read block: %w", pebble.ErrCorruption))
	var ce *projections.CorruptError
	if !errors.As(err, &ce) || ce.Dir != "/d/views" {
		t.Errorf("corruption panic: err = %v, want a *CorruptError of /d/views", err)
	}
	for _, v := range []any{"pebble: invariant violation", errors.New("index out of range"), fmt.Errorf("wrapped: %w", pebble.ErrNotFound)} {
		func() {
			defer func() {
				if r := recover(); r != v {
					t.Errorf("panic(%v): recovered %v outside, want the same value", v, r)
				}
			}()
			err := f(v)
			t.Errorf("panic(%v) was swallowed: f returned %v", v, err)
		}()
	}
	g := func() (err error) {
		defer projections.Guard("/d/views", &err)
		return fmt.Errorf("get x: %w", pebble.ErrCorruption)
	}
	if err := g(); !errors.Is(err, projections.ErrCorrupt) {
		t.Errorf("corruption error: %v, want it marked ErrCorrupt", err)
	}
}
