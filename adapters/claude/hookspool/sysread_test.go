package hookspool

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"
)

// TestReadRegular_Proc: a file that says size 0 and holds more than the
// first buffer (/proc/self/status) is read whole; a missing file is an
// error wrapping fs.ErrNotExist that names it; a symlink to a FIFO is
// refused, naming what it is.
func TestReadRegular_Proc(t *testing.T) {
	want, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	got, err := ReadRegular("/proc/self/status", 1<<20)
	// Two reads of one process's status differ in its memory figures:
	// the first line (its name) and the line count stay.
	if err != nil || len(got) <= 512 || !bytes.HasPrefix(got, want[:bytes.IndexByte(want, '\n')+1]) || bytes.Count(got, []byte("\n")) != bytes.Count(want, []byte("\n")) {
		t.Fatalf("ReadRegular(/proc/self/status) = %d bytes, %v; want %d bytes like it", len(got), err, len(want))
	}
	if _, err := ReadRegular("/proc/self/status", 100); !errors.Is(err, ErrFileTooLarge) {
		t.Errorf("ReadRegular(/proc/self/status, 100): %v, want ErrFileTooLarge", err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := ReadRegular(missing, 64); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadRegular(missing): %v, want fs.ErrNotExist naming it", err)
	}
	fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(link, 64); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("ReadRegular(link to a FIFO): %v, want ErrNotRegular saying a FIFO", err)
	}
}

// TestReadDirents: the listing of a directory with more entries than one
// getdents buffer holds, of every type, is os.ReadDir's (names and
// types), and it stops when asked.
func TestReadDirents(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		name := filepath.Join(dir, strings.Repeat("f", 20)+string(rune('a'+i%26))+ulid.Make().String())
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	type ent struct {
		name string
		typ  fs.FileMode
	}
	var want []ent
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		want = append(want, ent{e.Name(), e.Type()})
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var got []ent
	if err := readDirents(fd, dir, func(name string, typ fs.FileMode) bool {
		got = append(got, ent{name, typ})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b ent) int { return strings.Compare(a.name, b.name) })
	if !slices.Equal(got, want) {
		t.Fatalf("readDirents listed %d entries, os.ReadDir %d:\n%v\n%v", len(got), len(want), got, want)
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := readDirents(fd, dir, func(string, fs.FileMode) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Errorf("readDirents stopped after %d calls (%v), want 3", n, err)
	}
}

// TestSpool_HasPendingMany: an entry listed after many foreign names
// (more than one getdents buffer) is found; a spool of foreign names
// alone has none pending.
func TestSpool_HasPendingMany(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		name := filepath.Join(s.Dir(), tmpPrefix+ulid.Make().String()+spoolExt)
		if i%2 == 1 {
			name = filepath.Join(s.Dir(), ulid.Make().String()+processExt)
		}
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if pending, err := s.HasPending(); err != nil || pending {
		t.Fatalf("HasPending with foreign names only = %v, %v; want false", pending, err)
	}
	if _, err := s.Put([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.HasPending(); err != nil || !pending {
		t.Fatalf("HasPending with an entry = %v, %v; want true", pending, err)
	}
	if _, err := (&Spool{dir: filepath.Join(s.Dir(), "missing")}).HasPending(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("HasPending of a missing dir: %v, want fs.ErrNotExist", err)
	}
}

// TestAgentProcess_Self: from the process itself (its parent read from
// getppid, not its stat), the walk finds what it finds from its parent's
// children: the parent, unless that is a shell or a wrapper.
func TestAgentProcess_Self(t *testing.T) {
	p, err := AgentProcess(os.Getpid(), "h", "b")
	if err != nil {
		t.Fatal(err)
	}
	parent, err := readStat(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	if passThrough(parent.comm) {
		t.Skipf("the test's parent is %s, a pass-through", parent.comm)
	}
	if p == nil || p.PID != os.Getppid() || p.Start != parent.start || p.Comm != parent.comm {
		t.Fatalf("AgentProcess(self) = %+v, want the parent %d (%s)", p, os.Getppid(), parent.comm)
	}
}

// TestTopStr: a top-level string member reads as encoding/json decodes
// it (escapes, surrogate pairs, a lone surrogate); a member of another
// type, null or absent reads "".
func TestTopStr(t *testing.T) {
	b := []byte(`{"a":"plain","b":"t\u00e9\n\"\\\/\ud83c\udf89\ud800x","c":12,"d":null,"e":{"x":"y"}}`)
	s, err := scanHook(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "missing"} {
		want := ""
		if r, ok := s.top[k]; ok && r[0] == '"' {
			if err := json.Unmarshal(r, &want); err != nil {
				t.Fatal(err)
			}
		}
		if got := topStr(s.top, k); got != want {
			t.Errorf("topStr(%s) = %q, want %q", k, got, want)
		}
	}
}
