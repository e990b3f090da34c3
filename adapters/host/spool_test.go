package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
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
