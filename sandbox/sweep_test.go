package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A dead worker's cgroup, with a process its command left in it, is
// killed and removed; one whose worker lives, and the sweeping process's
// own, are left alone. Every sweep on the host run by root (another test
// binary's, a worker's) takes a dead worker's cgroup beside its own
// cgroup, the one made here too: the sweep runs in a helper process in
// a cgroup of this test's own, which is no command's (no cgPrefix), so
// that the cgroups made in it are this sweep's alone to take.
func TestSweepCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups beside this process's own needs root")
	}
	parent := ""
	if p, ok := selfCgroups()["pids"]; ok {
		parent = filepath.Join("/sys/fs/cgroup/pids", p)
	} else if p, ok := selfCgroups()[""]; ok {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
				parent = filepath.Join(root, p)
				break
			}
		}
	}
	if parent == "" {
		t.Skip("no cgroup hierarchy")
	}
	own := filepath.Join(parent, fmt.Sprintf("logbook-sweeptest-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(own) }) // last: once the sweeper and the cgroups in it are gone
	// A pid that ran and is gone: the dead worker.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := gone.Process.Pid
	dead := filepath.Join(own, cgPrefix+strconv.Itoa(deadPid)+"-1")
	live := filepath.Join(own, cgPrefix+strconv.Itoa(os.Getpid())+"-1") // this process: the live worker
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = KillCgroup(live); _, _ = KillCgroup(dead) })
	// What the dead worker's command left: a process of its own session.
	left := exec.Command("sleep", "300")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- left.Wait() }()
	if err := os.WriteFile(filepath.Join(dead, "cgroup.procs"), []byte(strconv.Itoa(left.Process.Pid)), 0); err != nil {
		_ = left.Process.Kill()
		t.Fatal(err)
	}
	if alive(deadPid) {
		t.Skipf("pid %d was reused already", deadPid)
	}
	// The sweeper waits for its standard input to close, by when it is
	// in own.
	sweeper := exec.Command(os.Args[0], "-test.run=^TestHelperSweepCgroups$")
	sweeper.Env = append(os.Environ(), helperSweep+"=after stdin")
	in, err := sweeper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sweeper.Stdout, sweeper.Stderr = &out, &out
	if err := sweeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.procs"), []byte(strconv.Itoa(sweeper.Process.Pid)), 0); err != nil {
		_ = sweeper.Process.Kill()
		_ = sweeper.Wait()
		t.Fatal(err)
	}
	in.Close()
	if err := sweeper.Wait(); err != nil {
		t.Fatalf("sweeper: %v\n%s", err, out.String())
	}
	var ms, removed, killed int
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "swept in %d ms: removed %d, killed %d", &ms, &removed, &killed); err != nil {
		t.Fatalf("sweeper said %q: %v", out.String(), err)
	}
	// Two sweeps at once (the helper's): the dead cgroup and its one
	// process are killed, removed and told of once, naming the dead
	// worker. (Where the helper's cgroup is own in one hierarchy only,
	// cgroup v1's pids, its sweeps also take the dead cgroups beside it
	// in the others: removed counts them too.)
	if removed < 1 || killed < 1 || strings.Count(out.String(), dead+" ") != 1 || !strings.Contains(out.String(), fmt.Sprintf("%s owner %d processes 1\n", dead, deadPid)) {
		t.Errorf("swept %d cgroups, %d processes; want the dead worker's cgroup and its process, once, named: %s", removed, killed, out.String())
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = left.Process.Kill()
		t.Fatal("the process left in the dead worker's cgroup still runs")
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead worker's cgroup is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live worker's cgroup was removed: %v", err)
	}
}

func TestCgroupOwner(t *testing.T) {
	for name, want := range map[string]int{
		"logbook-cmd-123-4": 123, "logbook-cmd-1-1": 1,
		"logbook-cmd-x-1": 0, "logbook-cmd-12": 0, "logbook-cmd--1": 0, "other-12-1": 0, "logbook-cmd-0-1": 0,
	} {
		got, ok := cgroupOwner(name)
		if (want != 0) != ok || got != want {
			t.Errorf("cgroupOwner(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}
