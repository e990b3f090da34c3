package settings

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChange_InstallThenUninstall: install writes the hooks and backs
// up nothing for a new file; again it changes nothing; uninstall backs
// the file up and takes the hooks out.
func TestChange_InstallThenUninstall(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	c, err := Plan(path, Wires{Recorder: "logbook-hook claude"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Unchanged() || c.Existed {
		t.Fatalf("install into no file: Unchanged %v, Existed %v; want a change to a new file", c.Unchanged(), c.Existed)
	}
	var diff bytes.Buffer
	c.WriteDiff(&diff)
	if !strings.HasPrefix(diff.String(), "--- "+path+"\n+++ "+path+"\n+{") {
		t.Errorf("diff of a new file:\n%s", diff.String())
	}
	if backup, err := c.Write(); err != nil || backup != "" {
		t.Fatalf("Write = %q, %v; want no backup", backup, err)
	}
	// Into a file that holds "{}": the line removed comes before the
	// lines that replace it, as diff(1) prints a change.
	other := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(other, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c2, err := Plan(other, Wires{Recorder: "logbook-hook claude"}, "")
	if err != nil {
		t.Fatal(err)
	}
	diff.Reset()
	c2.WriteDiff(&diff)
	if !strings.HasPrefix(diff.String(), "--- "+other+"\n+++ "+other+"\n-{}\n+{") {
		t.Errorf("diff of {} to the hooks:\n%s", diff.String())
	}
	c, err = Plan(path, Wires{Recorder: "logbook-hook claude"}, "")
	if err != nil || !c.Unchanged() {
		t.Fatalf("install again: %v, Unchanged %v; want unchanged", err, c != nil && c.Unchanged())
	}
	c, err = Plan(path, Wires{}, "")
	if err != nil || c.Unchanged() {
		t.Fatalf("uninstall: %v; want a change", err)
	}
	backup, err := c.Write()
	if err != nil || backup == "" {
		t.Fatalf("Write = %q, %v; want a backup", backup, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(b), "logbook-hook") {
		t.Errorf("after uninstall: %q, %v; want no Logbook hook", b, err)
	}
}

// TestChange_UninstallNoFile changes nothing.
func TestChange_UninstallNoFile(t *testing.T) {
	c, err := Plan(filepath.Join(t.TempDir(), "settings.json"), Wires{}, "")
	if err != nil || !c.Unchanged() {
		t.Errorf("uninstall from no file: %v; want unchanged", err)
	}
}

func TestBudgetFlag(t *testing.T) {
	for d, want := range map[time.Duration]string{90 * time.Second: "90s", 1500 * time.Millisecond: "1.5s", 250 * time.Millisecond: "250ms"} {
		if got := BudgetFlag(d); got != want {
			t.Errorf("BudgetFlag(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRecorderCommand_Data(t *testing.T) {
	if got := RecorderCommand("/tmp/a b"); !strings.Contains(got, " --data '/tmp/a b' claude") {
		t.Errorf("RecorderCommand(/tmp/a b) = %q; want --data quoted before claude", got)
	}
	if got := GateCommand("", 90*time.Second); !strings.HasSuffix(got, " hook claude --gate --budget 90s") {
		t.Errorf("GateCommand = %q", got)
	}
}
