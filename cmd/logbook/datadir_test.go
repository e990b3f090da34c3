package main

import (
	"testing"

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
