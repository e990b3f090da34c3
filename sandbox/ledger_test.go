package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Environment of TestHelperPlaceholderWorker.
const (
	helperWorkspace = "LOGBOOK_TEST_PLACEHOLDER_WS"
	helperLedger    = "LOGBOOK_TEST_PLACEHOLDER_LEDGER"
)

// TestHelperPlaceholderWorker is not a test: run as a child process by
// TestSweepPlaceholders_KilledWorker, it starts a WorkspaceWrite command
// that sleeps, says so, and waits to be killed.
func TestHelperPlaceholderWorker(t *testing.T) {
	ws := os.Getenv(helperWorkspace)
	if ws == "" {
		t.Skip("helper process for TestSweepPlaceholders_KilledWorker")
	}
	s := Spec{Argv: []string{"sleep", "300"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Ledger: os.Getenv(helperLedger)}
	p, err := Start(context.Background(), s, nil)
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	fmt.Println("running", p.Pid())
	_, _ = p.Wait()
	os.Exit(1)
}

// placeholderNames are the top-level names a WorkspaceWrite start keeps
// missing in an empty workspace.
func placeholderNames() []string {
	return []string{".git", ".claude", ".codex", ".agents", ".logbook", ".mcp.json", ".envrc"}
}

// A worker process killed by SIGKILL while its WorkspaceWrite command
// runs leaves its placeholders in the workspace; the sweep of its ledger
// removes them, but for the entries a person made under the same names
// meanwhile (another inode, content, another mode), and deletes the
// record. A record whose process runs is left alone.
func TestSweepPlaceholders_KilledWorker(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	ledger := filepath.Join(t.TempDir(), "ledger")
	child := exec.Command(os.Args[0], "-test.run=^TestHelperPlaceholderWorker$")
	child.Env = append(os.Environ(), helperWorkspace+"="+ws, helperLedger+"="+ledger)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "running") {
		t.Fatalf("helper worker: %q, %v", line, err)
	}
	for _, n := range placeholderNames() {
		if fi, err := os.Lstat(filepath.Join(ws, n)); err != nil || !isPlaceholder(fi) {
			t.Fatalf("placeholder %s while the command runs: %v", n, err)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	// The command dies with its worker (parent-death signal); its
	// placeholders stay.
	waitFor(t, "the killed worker's command to end", func() bool {
		return !Busy(Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite})
	})
	for _, n := range placeholderNames() {
		if _, err := os.Lstat(filepath.Join(ws, n)); err != nil {
			t.Fatalf("placeholder %s is gone before the sweep: %v", n, err)
		}
	}

	// A person's own entries under two of the names: an empty directory
	// of mode 0000 made before the placeholder went (another inode), and
	// a file with content.
	mine := filepath.Join(ws, "mine")
	if err := os.Mkdir(mine, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(mine, filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, ".envrc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A live command's record in another workspace is left alone.
	live := newSpec(t, WorkspaceWrite, false, "sleep", "300")
	live.Ledger = ledger
	p := start(t, live, newRecorder(""))
	defer func() { p.Stop(); _, _ = p.Wait() }()

	removed, err := SweepPlaceholders(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(placeholderNames()) - 2; removed != want {
		t.Errorf("removed %d placeholders, want %d", removed, want)
	}
	for _, n := range placeholderNames() {
		_, err := os.Lstat(filepath.Join(ws, n))
		switch n {
		case ".agents", ".envrc":
			if err != nil {
				t.Errorf("the person's own %s was removed: %v", n, err)
			}
		default:
			if !os.IsNotExist(err) {
				t.Errorf("placeholder %s is still there after the sweep: %v", n, err)
			}
		}
	}
	for _, n := range placeholderNames() {
		if _, err := os.Lstat(filepath.Join(live.Workspace, n)); err != nil {
			t.Errorf("the live command's placeholder %s was removed: %v", n, err)
		}
	}
	recs, _ := filepath.Glob(filepath.Join(ledger, "*"))
	if len(recs) != 1 {
		t.Errorf("ledger holds %q; want the live command's record only", recs)
	}
	p.Stop()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if recs, _ := filepath.Glob(filepath.Join(ledger, "*")); len(recs) != 0 {
		t.Errorf("ledger holds %q after the live command ended", recs)
	}
	if n, err := SweepPlaceholders(ledger); n != 0 || err != nil {
		t.Errorf("second sweep: %d, %v", n, err)
	}
}

// A WorkspaceWrite start that makes its seven placeholders records them
// in two writes, not two each: all names before any is made, then their
// inodes. The record then names each placeholder with its device and
// inode; the command's end removes the placeholders and the record.
func TestLedger_TwoWritesPerStart(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ledger")
	s := Spec{Argv: []string{"true"}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Ledger: dir, Hold: true}
	before := ledgerWrites.Load()
	p, err := Start(t.Context(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	writes := ledgerWrites.Load() - before
	recs, _ := filepath.Glob(filepath.Join(dir, "*"+ledgerSuffix))
	if len(recs) != 1 {
		p.Stop()
		p.Wait()
		t.Fatalf("records %v, want one", recs)
	}
	b, rerr := os.ReadFile(recs[0])
	p.Release()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	// No other test of this process writes records (the killed worker's
	// is a process of its own).
	if writes != 2 {
		t.Errorf("the start wrote its record %d times, want 2", writes)
	}
	var rec ledgerRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("record %s: %v", b, err)
	}
	var names []string
	for _, e := range rec.Made {
		names = append(names, e.Name)
		if e.Ino == 0 || e.Since == 0 {
			t.Errorf("entry %+v: want its inode and the time it was about to be made", e)
		}
	}
	if want := placeholderNames(); !slices.Equal(names, want) {
		t.Errorf("record names %v, want %v", names, want)
	}
	left, _ := os.ReadDir(ws)
	recs, _ = filepath.Glob(filepath.Join(dir, "*"+ledgerSuffix))
	if len(left) != 0 || len(recs) != 0 {
		t.Errorf("after the end: workspace holds %v, ledger %v; want both empty", left, recs)
	}
}
