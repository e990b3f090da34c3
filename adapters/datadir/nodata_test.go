package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDataError_SaysWhatWaits: a data dir with no store says how to
// make one, or, when hooks ran with no server, that serve delivers what
// its spool holds.
func TestNoDataError_SaysWhatWaits(t *testing.T) {
	d := Dir(t.TempDir())
	if err := d.NoDataError(); !strings.Contains(err.Error(), "create it with `logbook serve`") {
		t.Errorf("empty data dir: %v", err)
	}
	spool := filepath.Join(string(d), "spool")
	if err := os.MkdirAll(filepath.Join(spool, "rejected"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"01M8VWMYZ5KR6EN9YKYKVWG2W9.json", "01M8VWMYZ5KR6EN9YKYKVWG2WA.json", "01M8VWMYZ5KR6EN9YKYKVWG2W9.process", "notes.json"} {
		if err := os.WriteFile(filepath.Join(spool, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.NoDataError(); !strings.Contains(err.Error(), "2 hook payloads wait in its spool; start `logbook serve` to deliver them") {
		t.Errorf("data dir with a spool: %v", err)
	}
}

// TestNoDataError_LogGoneOrForeign: a data dir whose log is gone but
// whose projection is there is not called new; one holding another
// project's files is named for what it holds.
func TestNoDataError_LogGoneOrForeign(t *testing.T) {
	d := Dir(t.TempDir())
	if err := os.Mkdir(d.Path("views"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.LogGone(); err != nil {
		t.Errorf("an empty views/ (a mount point) is no projection: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d.Path("views"), "MANIFEST-000001"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.NoDataError(); !strings.Contains(err.Error(), "has no log ("+d.Path("jetstream")+" is missing) but holds "+d.Path("views")) || strings.Contains(err.Error(), "create it with") {
		t.Errorf("data dir with views and no log: %v", err)
	}
	f := Dir(t.TempDir())
	if err := os.WriteFile(f.Path("main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.NoDataError(); !strings.Contains(err.Error(), "holds files that are not Logbook's (main.go)") {
		t.Errorf("a project's directory: %v", err)
	}
}

// TestLogGone: a data dir with views/ (or stream.json, or merkle/) and no
// jetstream/ has lost its log; one with its log, or with neither, has not.
func TestLogGone(t *testing.T) {
	d := Dir(t.TempDir())
	if err := d.LogGone(); err != nil {
		t.Errorf("empty data dir: %v", err)
	}
	if err := os.WriteFile(d.Path("stream.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.LogGone(); err == nil || !strings.Contains(err.Error(), "--accept-stream-loss") {
		t.Errorf("stream.json and no log: %v", err)
	}
	if err := os.Mkdir(d.Path("jetstream"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.LogGone(); err != nil {
		t.Errorf("with its log: %v", err)
	}
}
