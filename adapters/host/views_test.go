package host

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/projections"
)

// TestOpenViews_CannotCreate: projections that cannot be made (the data
// dir is a file) are named as such, with no advice to remove a folder
// that is not there.
func TestOpenViews_CannotCreate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenViews(t.Context(), Views{Dir: datadir.Dir(file)})
	if err == nil || !strings.Contains(err.Error(), "create projections in "+filepath.Join(file, "views")) || strings.Contains(err.Error(), "remove it") {
		t.Errorf("views under a file: %v, want that they could not be made", err)
	}
}

// TestHelperHoldViews is not a test: run as a child process by
// TestOpenViews_HeldByAnother, it opens the projections in
// $LOGBOOK_TEST_HOLD_VIEWS, says so, and holds them until its stdin ends.
func TestHelperHoldViews(t *testing.T) {
	dir := os.Getenv("LOGBOOK_TEST_HOLD_VIEWS")
	if dir == "" {
		t.Skip("helper process for TestOpenViews_HeldByAnother")
	}
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Close()
	os.Exit(0)
}

// TestOpenViews_HeldByAnother: projections another process holds open
// (Pebble's LOCK taken) are said to be in use, with no advice to remove
// them.
func TestOpenViews_HeldByAnother(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestHelperHoldViews$")
	child.Env = append(os.Environ(), "LOGBOOK_TEST_HOLD_VIEWS="+filepath.Join(dir, "views"))
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = child.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	_, err = OpenViews(t.Context(), Views{Dir: datadir.Dir(dir)})
	if err == nil || !strings.Contains(err.Error(), "another process has them open") || strings.Contains(err.Error(), "remove it") {
		t.Errorf("views held by another process: %v, want them said to be in use", err)
	}
}
