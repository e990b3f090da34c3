package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// In FullAccess too, Stop takes a descendant that called setsid: it is
// still a descendant of the leader when Stop looks.
func TestStop_FullAccessSetsidGrandchildDies(t *testing.T) {
	t.Parallel()
	eachTTY(t, func(t *testing.T, tty bool) {
		token := uniqueSleep()
		t.Cleanup(func() { killAll(token) })
		r := newRecorder("ready")
		p := start(t, newSpec(t, FullAccess, tty, "sh", "-c", `setsid sleep "$0" >/dev/null 2>&1 </dev/null & echo ready; sleep "$0"`, token), r)
		r.awaitOutput(t, "ready")
		waitFor(t, "the setsid grandchild to run", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 2 })
		p.Stop()
		res, err := p.Wait()
		if err != nil || !res.Stopped {
			t.Fatalf("Wait = %+v, %v; want stopped", res, err)
		}
		waitFor(t, "the whole tree to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
	})
}

// KillTree kills what a dead leader left in its session and group, found
// from the recorded pid, start time and boot id alone; a wrong start time
// (a recycled pid) or another boot kills nothing.
func TestKillTree(t *testing.T) {
	t.Parallel()
	token := uniqueSleep()
	t.Cleanup(func() { killAll(token) })
	// A leader outside any Process, as a dead worker's command is: the
	// test process is not its parent's waiter, so it is started plainly.
	cmd := exec.Command("sh", "-c", `sleep "$0" & sleep "$0" & wait`, token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := ProcStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the children to run", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 2 })

	if n, err := KillTree(pid, start+1, BootID()); n != 0 || err != nil {
		t.Errorf("KillTree with another start time = %d, %v; want 0 (a recycled pid)", n, err)
	}
	if n, err := KillTree(pid, start, "another-boot"); n != 0 || err != nil {
		t.Errorf("KillTree with another boot = %d, %v; want 0", n, err)
	}
	// The leader dies first, as by its parent-death signal: its children
	// run on, re-parented, in its session.
	_ = syscall.Kill(pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if got := len(sandboxtest.ProcessesWith("sleep " + token)); got != 2 {
		t.Fatalf("%d children left after the leader died, want 2", got)
	}
	n, err := KillTree(pid, start, BootID())
	if err != nil || n < 2 {
		t.Errorf("KillTree = %d, %v; want the 2 children", n, err)
	}
	waitFor(t, "the children to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
}

func killAll(token string) {
	for _, pid := range sandboxtest.ProcessesWith(token) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// readStat reads a live process's stat as the kernel writes it (its
// parent, group, session and start time); a gone process, and a file
// larger than the buffer given, are errors.
func TestReadStat(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	st, err := readStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if st.pid != pid || st.ppid != os.Getpid() || st.pgrp != pid || st.sid != pid || st.start == 0 || st.dead {
		t.Errorf("readStat(%d) = %+v, want its pid, this process as parent, its own group and session, a start time", pid, st)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := readStat(pid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readStat of a reaped process: %v, want not exist", err)
	}
	var small [8]byte
	if _, err := readProcFile("/proc/self/stat", small[:]); err == nil || !strings.Contains(err.Error(), "larger than 8 bytes") {
		t.Errorf("readProcFile into 8 bytes: %v, want it refused as larger", err)
	}
}

// lonelyLeader: a leader alone in its session and group is lonely; one
// with a child in its group, or a job of its session in a group of its
// own (a job-control shell's), is not, nor is one whose job outlived
// it.
func TestLonelyLeader(t *testing.T) {
	t.Parallel()
	token := uniqueSleep()
	t.Cleanup(func() { killAll(token) })
	lead := func(script string, want int) *exec.Cmd {
		cmd := exec.Command("bash", "-c", script, token) // bash: set -m works without a terminal
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitFor(t, "the script's sleeps to run", func() bool {
			n := 0
			for _, pid := range sandboxtest.ProcessesWith("sleep " + token) {
				if sid, err := unix.Getsid(pid); err == nil && sid == cmd.Process.Pid {
					n++
				}
			}
			return n == want
		})
		return cmd
	}
	alone := lead(`exec sleep "$0"`, 1)
	if !lonelyLeader(alone.Process.Pid) {
		t.Errorf("a leader alone in its session: not lonely")
	}
	child := lead(`sleep "$0" & exec sleep "$0"`, 2)
	if lonelyLeader(child.Process.Pid) {
		t.Errorf("a leader with a child in its group: lonely")
	}
	job := lead(`set -m; sleep "$0" & exec sleep "$0"`, 2)
	if lonelyLeader(job.Process.Pid) {
		t.Errorf("a leader with a job in a group of its own: lonely")
	}
	// The leader exits (a zombie until reaped), its job lives on.
	outlived := lead(`set -m; sleep "$0" & echo`, 1)
	waitExited(outlived.Process.Pid)
	if lonelyLeader(outlived.Process.Pid) {
		t.Errorf("a dead leader whose job lives on: lonely")
	}
}
