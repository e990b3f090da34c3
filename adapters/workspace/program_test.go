package workspace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// A program serve writes (a synced script, the pre-push hook) runs at
// once, whatever serve forks meanwhile: a child forked while the file is
// open for writing would hold it until the child's exec, and running it
// then fails with "text file busy". Here goroutines fork all along while
// scripts are copied (copyTree) and the hook written (InstallHook), each
// run right after.
func TestProgramsWrittenWhileForking(t *testing.T) {
	t.Parallel()
	sandboxtest.ForkAlongside(t, 4)
	src, dst := t.TempDir(), t.TempDir()
	script := filepath.Join(src, "tool.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	busy := 0
	for i := range 150 {
		to := filepath.Join(dst, fmt.Sprintf("tool-%d.sh", i))
		if err := copyTree(script, to, false); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(to).Run(); errors.Is(err, syscall.ETXTBSY) {
			busy++
		} else if err != nil {
			t.Fatalf("run %s: %v", to, err)
		}
	}
	if busy > 0 {
		t.Errorf("%d of 150 scripts copyTree copied were busy when run", busy)
	}
}
