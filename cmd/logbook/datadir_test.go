package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
)

// TestLock_HolderNotYetWritten: a command that finds the data dir's lock
// taken by a process that has not yet written (or not all of) its
// "ROLE pid N" line says so in words, never "held by ;".
func TestLock_HolderNotYetWritten(t *testing.T) {
	d := dataDir(t.TempDir())
	held, err := d.lock("logbook serve")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, text := range []string{"", "logbook ser", "logbook serve pid ", "logbook serve pid 12"} {
		// The holder writes its line after it takes the lock: what a
		// racing command reads is empty or cut short.
		if err := os.WriteFile(d.path("lock"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := d.lock("logbook sessions")
		if !errors.Is(err, errBusy) {
			t.Fatalf("lock held, text %q: err = %v, want busy", text, err)
		}
		if msg := err.Error(); !strings.HasSuffix(msg, "is held by another logbook process (its pid not yet written)") {
			t.Errorf("lock file %q: %s", text, msg)
		}
	}
	if err := os.WriteFile(d.path("lock"), []byte("logbook serve pid 4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.lock("logbook sessions"); err == nil || !strings.HasSuffix(err.Error(), "is held by logbook serve pid 4242") {
		t.Errorf("written holder: %v", err)
	}
}

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
		if inside(root, string(dd)) || inside(string(dd), root) {
			t.Errorf("XDG_DATA_HOME=%q: workspaces root %s and data dir %s overlap", xdg, root, dd)
		}
	}
}
