package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data dir whose jetstream/ is gone but whose projection is there:
// serve, import and doctor refuse it, naming what to restore, and none
// makes a new, empty log in the old one's place.
func TestLogGone_NoNewLog(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(data, "views"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--workers", "0", "--http", "off", "--listen", "127.0.0.1:0"},
		{"import", "claude", "../../testdata/claude/projects"},
		{"sessions"},
		{"doctor"},
	} {
		out, errOut, code := cliExit(t, data, args...)
		if code == 0 || !strings.Contains(out+errOut, "has no log ("+filepath.Join(data, "jetstream")+" is missing) but holds") {
			t.Errorf("%v on a data dir whose log is gone: exit %d\n%s%s", args, code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(data, "jetstream")); err == nil {
			t.Fatalf("%v made a new log in the old one's place", args)
		}
	}
}
