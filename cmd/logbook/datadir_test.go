package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/datadir"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
)

// TestDefaultWorkspacesOutsideDataDir: by default workspaces lie beside
// the data dir, never in it, so the gate's data-dir guard does not take a
// session working in one for a session reaching into the data dir.
func TestDefaultWorkspacesOutsideDataDir(t *testing.T) {
	for _, xdg := range []string{"", t.TempDir()} {
		t.Setenv("HOME", t.TempDir())
		t.Setenv("XDG_DATA_HOME", xdg)
		t.Setenv("LOGBOOK_DATA", "")
		t.Setenv(wsadapter.EnvRoot, "")
		dd, err := resolveDataDir("")
		if err != nil {
			t.Fatal(err)
		}
		root, err := wsadapter.DefaultRoot()
		if err != nil {
			t.Fatal(err)
		}
		if datadir.Inside(root, string(dd)) || datadir.Inside(string(dd), root) {
			t.Errorf("XDG_DATA_HOME=%q: workspaces root %s and data dir %s overlap", xdg, root, dd)
		}
	}
}

// TestSessions_WaitsForAnImport: a read while an import works on the
// data dir directly says what holds it and waits for it to end, then
// answers; a holder that does not end within the wait is an error
// naming it and what to do.
func TestSessions_WaitsForAnImport(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	data := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	fixture := "../../testdata/claude/projects/-home-user-project/5e551011-0000-4000-8000-000000000001.jsonl"
	if err := runCLI(ctx, []string{"--data", data, "import", "claude", fixture}, strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	d := datadir.Dir(data)
	held, err := d.Lock("logbook import")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCLI(ctx, []string{"--data", data, "sessions"}, strings.NewReader(""), &stdout, &stderr)
	}()
	for !strings.Contains(stderr.String(), "waiting up to") {
		select {
		case err := <-done:
			t.Fatalf("sessions ended before the import did: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got := stderr.String(); !strings.Contains(got, "is held by logbook import pid") {
		t.Errorf("stderr %q does not name the holder", got)
	}
	held.Close()
	if err := <-done; err != nil {
		t.Fatalf("sessions after the import ended: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "5e551011") {
		t.Errorf("sessions: %q, want the imported session", stdout.String())
	}

	// A holder that does not end: the error names it and what to do.
	held, err = lockAgain(d, "logbook import")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	err = runCLI(ctx, []string{"--data", data, "sessions"}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is held by logbook import pid") || !strings.Contains(err.Error(), "try again when it ends") {
		t.Errorf("sessions while an import holds the data dir: %v, want an error naming it and what to do", err)
	}
}
