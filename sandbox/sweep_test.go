package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A dead worker's cgroup, with a process its command left in it, is
// killed and removed; one whose worker lives, and this process's own, are
// left alone.
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
	// A pid that ran and is gone: the dead worker.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := gone.Process.Pid
	dead := filepath.Join(parent, cgPrefix+strconv.Itoa(deadPid)+"-1")
	live := filepath.Join(parent, cgPrefix+strconv.Itoa(os.Getppid())+"-1")
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot make a cgroup here: %v", err)
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
	removed, killed, err := SweepCgroups()
	if err != nil {
		t.Fatal(err)
	}
	if removed < 1 || killed < 1 {
		t.Errorf("swept %d cgroups, %d processes; want the dead worker's cgroup and its process", removed, killed)
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
