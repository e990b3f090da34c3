package sandbox

import (
	"os"
	"testing"
	"time"
)

// A workspace_write command in a real project tree named by
// LOGBOOK_REAL_TREE (a pnpm or uv install, say): how long the search and
// start take, and how many files and directories were made read-only for
// their hard links. Skipped without the variable.
func TestStart_RealTree(t *testing.T) {
	ws := os.Getenv("LOGBOOK_REAL_TREE")
	if ws == "" {
		t.Skip("LOGBOOK_REAL_TREE not set")
	}
	requireBwrap(t)
	s := Spec{Argv: []string{"sh", "-c", "true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace}
	begin := time.Now()
	res, r := run(t, s)
	t.Logf("exit %d in %v; limits: %v; stderr %q", res.ExitCode, time.Since(begin), res.Limits, r.text(Stderr))
}
