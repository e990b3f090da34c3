package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// warmMoves moves the calling thread only into the cgroup it is in
// already: every thread of the process stays where it was, whichever
// thread runs it.
func TestWarmMoves_LeavesThreadsWhereTheyAre(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes to a cgroup v1 tasks file, which takes root")
	}
	if _, ok := selfCgroups()["pids"]; !ok {
		t.Skip("no cgroup v1 pids hierarchy")
	}
	before := threadPids(t)
	for range 20 {
		warmMoves()
	}
	after := threadPids(t)
	same := 0
	for tid, was := range before {
		now, ok := after[tid]
		if !ok {
			continue // the thread has exited meanwhile
		}
		same++
		if now != was {
			t.Errorf("thread %s: pids cgroup %q, want %q (where it was)", tid, now, was)
		}
	}
	if same == 0 {
		t.Fatal("no thread of the process was seen twice")
	}
}

// threadPids returns the pids cgroup of each thread of this process.
func threadPids(t *testing.T) map[string]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range tasks {
		if p, ok := cgroupsIn(filepath.Join("/proc/self/task", e.Name(), "cgroup"))["pids"]; ok {
			m[e.Name()] = p
		}
	}
	return m
}
