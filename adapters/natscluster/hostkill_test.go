package natscluster

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Host kill: a writer's serve and the worker host running a command are
// killed with SIGKILL mid-command; a worker on another host marks the
// command abandoned, a surviving writer sees it, and the restarted serve
// catches up to the same state hash.
func TestHostKill(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	a, b := e.writers()
	w1 := e.newHost("worker-1", "worker", "worker", "--heartbeat-ttl", "2s")
	w2 := e.newHost("worker-2", "worker", "worker")
	w1.start()
	const sid = "hostkill-1"
	startSessions(t, a, []string{sid}, ws)
	a.verifyAt(e.lastSeq())
	out, stderr, err := a.cli("exec", "--session", sid, "--mode", "workspace_write", "--workspace", ws, "--id", "doomed", "--wait", "1s",
		"--", "sh", "-c", "echo one; while :; do sleep 0.1; done")
	// Its wait ends first: it goes on in the background, exit 124.
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 124 {
		t.Fatalf("exec: %v, want exit status 124 (its wait ended first)\n%s%s", err, out, stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w1.output(), "msg=started"); {
		if time.Now().After(deadline) {
			t.Fatalf("worker-1 did not start the command in 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // its first output is stored
	// Mid-command: the worker host and the writer that asked both die.
	w1.stop(syscall.SIGKILL)
	a.stop(syscall.SIGKILL)
	w2.start()

	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, err := b.cli("audit", sid)
		// worker_gone when the live worker sees the dead one's process
		// gone first, worker_lost when its heartbeat lapses first.
		if err == nil && strings.Contains(out, "command.abandoned") && strings.Contains(out, "reason=worker_") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no abandonment after 60 s:\n%s", out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	out, stderr, err = b.cli("command", "output", "doomed", "--follow")
	if !strings.Contains(out, "one") || !strings.Contains(stderr, "abandoned: worker_") {
		t.Errorf("command output on writer-b: %v\n%s%s", err, out, stderr)
	}
	a.start()
	sameState(t, a, b)
}
