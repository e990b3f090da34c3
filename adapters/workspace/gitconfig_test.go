package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestChangesOf_RunsNoConfiguredProgram: measuring a workspace's changes
// runs no program the repository's configuration names — a file-system
// monitor, an external diff, a text conversion — in this process, and
// still measures the change.
func TestChangesOf_RunsNoConfiguredProgram(t *testing.T) {
	t.Parallel()
	_, m, proj, _, p := withProject(t, nil)
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "cfg", ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	script := filepath.Join(marks, "ran.sh")
	write(t, script, "#!/bin/sh\necho \"$0 $*\" >> "+filepath.Join(marks, "ran")+"\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"core.fsmonitor", script},
		{"diff.external", script},
		{"diff.evil.textconv", script},
	} {
		run(t, proj, "git", "config", kv[0], kv[1])
	}
	write(t, filepath.Join(ws.Path, ".gitattributes"), "* diff=evil\n")
	write(t, filepath.Join(ws.Path, "README"), "one\n2\nthree\n")
	ch, err := ChangesOf(t.Context(), ws.Path, p.Trunk)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(marks, "ran")); err == nil {
		t.Fatalf("measuring ran a configured program:\n%s", b)
	}
	if ch.Added != 3 || ch.Removed != 1 {
		t.Errorf("changes +%d -%d, want +3 -1 (README +2 -1, .gitattributes +1)", ch.Added, ch.Removed)
	}
}
