package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

func TestDataDir(t *testing.T) {
	dir := t.TempDir()
	dd := datadir.Dir(filepath.Join(dir, "data"))
	if c := DataDir(dd, false); c.Status != Warn || !strings.Contains(c.Detail, "does not exist yet") {
		t.Errorf("absent data dir: %+v; want warn, does not exist yet", c)
	}
	if err := os.Mkdir(string(dd), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := DataDir(dd, false); c.Status != Warn || !strings.Contains(c.Detail, "others may read it") {
		t.Errorf("data dir 0755: %+v; want warn, others may read it", c)
	}
	if err := os.Chmod(string(dd), 0o700); err != nil {
		t.Fatal(err)
	}
	if c := DataDir(dd, false); c.Status != Warn || !strings.Contains(c.Detail, "holds no Logbook data yet") {
		t.Errorf("empty data dir: %+v; want warn, no data yet", c)
	}
	if c := DataDir(dd, true); c.Status != OK {
		t.Errorf("data dir with data: %+v; want ok", c)
	}
	file := datadir.Dir(filepath.Join(dir, "file"))
	if err := os.WriteFile(string(file), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if c := DataDir(file, false); c.Status != Fail {
		t.Errorf("data dir that is a file: %+v; want fail", c)
	}
}

func TestJournal_None(t *testing.T) {
	dd := datadir.Dir(t.TempDir())
	if c, ok := Journal(dd, dd.Path("hooks.journal")); ok {
		t.Errorf("Journal without a journal = %+v, true; want no line", c)
	}
}

func TestProcessAlive(t *testing.T) {
	if !ProcessAlive(os.Getpid()) {
		t.Error("ProcessAlive(own pid) = false")
	}
	if ProcessAlive(0) || ProcessAlive(-1) {
		t.Error("ProcessAlive(0 or -1) = true")
	}
}

func TestFailed(t *testing.T) {
	if n := Failed([]Check{{Status: OK}, {Status: Fail}, {Status: Warn}, {Status: Fail}}); n != 2 {
		t.Errorf("Failed = %d, want 2", n)
	}
}

// Reporter is ok with an executable logbook-reporter beside logbook,
// and warns, with the go install line, without one or with one that is
// not executable.
func TestReporter(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "logbook")
	if c := Reporter(exe); c.Status != Warn || !strings.Contains(c.Detail, exe) || !strings.Contains(c.Fix, "go install ./cmd/logbook-reporter") {
		t.Errorf("none beside: %+v; want a warning naming %s, with the go install line", c, exe)
	}
	rep := filepath.Join(dir, "logbook-reporter")
	if err := os.WriteFile(rep, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := Reporter(exe); c.Status != Warn {
		t.Errorf("not executable: %+v; want a warning", c)
	}
	if err := os.Chmod(rep, 0o755); err != nil {
		t.Fatal(err)
	}
	if c := Reporter(exe); c.Status != OK || !strings.Contains(c.Detail, rep) {
		t.Errorf("beside: %+v; want ok naming %s", c, rep)
	}
}

// TestDataDir_UnderReserve: a data dir whose file system has room for
// every probe's write but less free than the log's reserve, where serve
// holds every append, fails the check, saying the reserve.
func TestDataDir_UnderReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a file system of a known size is a tmpfs mounted for the test: needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=20m,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	dd := datadir.Dir(filepath.Join(dir, "data"))
	for _, p := range []string{string(dd), dd.Path("jetstream"), dd.Path("views"), dd.Path("spool")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if c := DataDir(dd, true); c.Status != OK {
		t.Fatalf("data dir on an empty 20 MiB tmpfs: %+v; want ok (20 MiB free, over the 16 MiB reserve)", c)
	}
	// 6 MiB taken: 14 MiB free, every probe's 256 KiB still there.
	if err := os.WriteFile(dd.Path("jetstream/fill"), make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DataDir(dd, true)
	if c.Status != Fail || !strings.Contains(c.Detail, "under the log's reserve of 16 MiB") || !strings.Contains(c.Detail, dd.Path("jetstream")) || !strings.Contains(c.Fix, "free space") {
		t.Errorf("data dir with 14 MiB free: %+v; want fail naming jetstream/ and the 16 MiB reserve", c)
	}
}
