package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data dir whose jetstream/ is gone but whose projection is there: a
// read and doctor say the log was removed and how to go on, not that the
// data dir is new, and neither makes a new log in the old one's place.
func TestLogGone_SaidNotNew(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(data, "views"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "views", "MANIFEST-000001"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sessions"}, {"doctor"}} {
		out, errOut, code := cliExit(t, data, args...)
		if code == 0 || !strings.Contains(out+errOut, "has no log ("+filepath.Join(data, "jetstream")+" is missing) but holds") || !strings.Contains(out+errOut, "--accept-stream-loss") {
			t.Errorf("%v on a data dir whose log is gone: exit %d\n%s%s", args, code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(data, "jetstream")); err == nil {
			t.Fatalf("%v made a new log in the old one's place", args)
		}
	}
}
