package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestSpoolKicks: an entry renamed into the spool, as Put does, kicks
// serve's drain; a temporary file or a rejected entry does not.
func TestSpoolKicks(t *testing.T) {
	dir := t.TempDir()
	sp, err := claude.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	kick, stop, err := SpoolKicks(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := os.WriteFile(filepath.Join(dir, ".tmp-x.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, claude.RejectedDir), 0o700); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
		t.Fatal("kicked by a temporary file or the rejected folder")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := sp.Put([]byte(`{"session_id":"s","hook_event_name":"Stop"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
	case <-time.After(30 * time.Second):
		t.Fatal("no kick for a spooled entry")
	}
}

// TestSpoolReport: a drain that fails is said at WARN; while appends
// stay held, once, not a line a second; a delivery, or another fault,
// is said again, and the held pause after it once more.
func TestSpoolReport(t *testing.T) {
	var said []string
	var told []int
	report := SpoolReport(func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }, func(n int) { told = append(told, n) })
	held := fmt.Errorf("deliver spooled hook 01J: %w", &natslog.HeldError{Room: "8388608 bytes free"})
	other := errors.New("deliver spooled hook 01K: connection closed")
	report(0, held)
	report(0, held)
	report(0, held)
	report(2, nil)
	report(0, held)
	report(0, other)
	report(0, held)
	report(0, held)
	want := []string{
		"WARN: spool: " + held.Error(),
		"delivered 2 spooled hook payloads",
		"WARN: spool: " + held.Error(),
		"WARN: spool: " + other.Error(),
		"WARN: spool: " + held.Error(),
	}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("said (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2}, told); diff != "" {
		t.Errorf("delivered told (-want +got):\n%s", diff)
	}
}
