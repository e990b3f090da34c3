package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServe_StartIsInfoWhateverTheNames starts serve on a data dir whose
// name holds every word that marks a line as a fault, and a newline:
// what serve starts and loads (the data dir, its server, its
// checkpoints) is logged at INFO all the same, and the
// newline starts no record of its own.
func TestServe_StartIsInfoWhateverTheNames(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "error failed refused not sent gone cannot denied lost\nlevel=ERROR msg=forged", "data")
	logs, stop := serveStoppable(t, data, "--workers", "0", "--http", "off", "--reconcile-every", "0")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "checkpoints of ") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say its checkpoints:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.HasPrefix(line, "level=ERROR msg=forged") || !strings.HasPrefix(line, "time=") {
			t.Errorf("a record the data dir's name started: %q", line)
		}
		if !strings.Contains(line, " level=INFO ") {
			t.Errorf("not INFO: %s", line)
		}
	}
}
