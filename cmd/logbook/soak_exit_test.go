package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// A soak whose test binary ends without its cleanups (a -timeout panic;
// here SIGQUIT, which ends it the same way: stacks printed, exit 2, no
// t.Cleanup, no code of TestMain after m.Run) leaves nothing behind: its
// serve child and every other child die with it, and the binary built
// for it is removed. The test binary runs TestSoak with its temporary
// folder in one of this test's, which names every process and file of
// that run; each wait is for a condition. The soak copies the binary
// this package's soaks share rather than building its own.
func TestSoak_EndedWithoutCleanupLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a soak: not with -short")
	}
	t.Parallel()
	tmp := t.TempDir()
	c := exec.Command(os.Args[0], "-test.run=^TestSoak$", "-test.count=1", "-test.timeout=1h")
	c.Env = append(os.Environ(), "TMPDIR="+tmp, "LOGBOOK_SOAK_CYCLES=1000", "LOGBOOK_SOAK_BIN_FROM="+soakBuild(t))
	out, err := os.Create(filepath.Join(t.TempDir(), "soak.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	c.Stdout, c.Stderr = out, out
	sandboxtest.DieWithTest(c)
	if err := sandboxtest.Start(c); err != nil {
		t.Fatal(err)
	}
	ended := false
	t.Cleanup(func() {
		if !ended {
			c.Process.Kill()
			c.Wait()
		}
		for _, pid := range sandboxtest.ProcessesWith(tmp) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	end, bounded := t.Deadline()
	end = end.Add(-min(time.Until(end)/10, time.Minute))
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			if bounded && time.Now().After(end) {
				b, _ := os.ReadFile(out.Name())
				t.Fatalf("%s, near the test's deadline; the soak said:\n%s", what, tailString(string(b), 3000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	bins, _ := filepath.Glob(filepath.Join(tmp, "logbook-soak-bin-*"))
	waitFor("no serve child of the soak runs yet", func() bool {
		bins, _ = filepath.Glob(filepath.Join(tmp, "logbook-soak-bin-*"))
		return len(bins) == 1 && len(sandboxtest.ProcessesWith(filepath.Join(bins[0], "logbook")+" --data")) > 0
	})
	if err := c.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	ended = true
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("the soak's test binary ended %v, want exit status 2 (a Go program's on SIGQUIT)", err)
	}
	waitFor("a process of the soak outlives its test binary", func() bool { return len(sandboxtest.ProcessesWith(tmp)) == 0 })
	waitFor("the soak's binary outlives its test binary", func() bool {
		_, err := os.Stat(bins[0])
		return os.IsNotExist(err)
	})
}
