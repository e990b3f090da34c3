package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestProbe_CancelledLeavesNoProcess cancels probes at moments spread
// over bubblewrap's start and then looks for any process left of them.
// bubblewrap's child (pid 1 of the boundary's pid namespace) waits on an
// eventfd for its parent to write its uid map: a parent killed before it
// writes leaves that child waiting for good, outside every wait of the
// worker, --die-with-parent notwithstanding (bubblewrap 0.8.0 sets the
// parent-death signal after that wait). The probe runs bubblewrap in a
// session of its own and kills the whole session.
func TestProbe_CancelledLeavesNoProcess(t *testing.T) {
	bw := probeCopy(t)
	const tries = 80
	for i := range tries {
		// From 0 to 4 ms after the start, in steps of 50 µs.
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%80)*50*time.Microsecond)
		_ = probe(ctx, bw)
		cancel()
	}
	// A process being torn down goes within moments; one left waiting
	// stays.
	var left []int
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = processesOf(t, bw)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range left {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if len(left) > 0 {
		t.Fatalf("%d of %d cancelled probes left a process of bubblewrap behind (pids %v)", len(left), tries, left)
	}
}

// probeCopy returns a copy of bubblewrap at a path of the test's own,
// which the probe's arguments name, so that its processes are the
// test's; it skips the test where bubblewrap cannot build the boundary.
func probeCopy(t *testing.T) string {
	t.Helper()
	requireBwrap(t)
	sys, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bw := filepath.Join(dir, "bwrap")
	if err := sandboxtest.CopyExecutable(sys, bw); err != nil {
		t.Fatal(err)
	}
	if err := probe(context.Background(), bw); err != nil {
		t.Skipf("bubblewrap cannot build the boundary here: %v", err)
	}
	return bw
}

// processesOf returns the pids of the processes with exe among their
// arguments: a probe's bubblewrap (argv[0] its marker, exe bound and run
// in the boundary) and what it forks, until one execs.
func processesOf(t *testing.T, exe string) []int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if string(arg) == exe {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
