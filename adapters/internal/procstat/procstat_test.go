package procstat

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestRead: this process's own name and a running state; a real child
// stopped with SIGSTOP reads as stopped, and as running once continued;
// a pid no process has is fs.ErrNotExist.
func TestRead(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil || st.Comm == "" || st.Stopped() {
		t.Fatalf("Read(self) = %+v, %v", st, err)
	}
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, c.Process.Pid, true)
	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, c.Process.Pid, false)
	if st, err := Read(c.Process.Pid); err != nil || st.Comm != "sleep" {
		t.Errorf("Read(sleep) = %+v, %v", st, err)
	}
	if _, err := Read(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(no such pid): %v, want fs.ErrNotExist", err)
	}
}

// waitState waits up to 10 s for pid's Stopped to be stopped.
func waitState(t *testing.T, pid int, stopped bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := Read(pid)
		if err == nil && st.Stopped() == stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: %+v, %v; want stopped %v", pid, st, err, stopped)
		}
	}
}

// A process that has exited and is not yet reaped is Ending; a running
// one is not.
func TestRead_Ending(t *testing.T) {
	if st, err := Read(os.Getpid()); err != nil || st.Ending() {
		t.Fatalf("Read(self) = %+v, %v: want not ending", st, err)
	}
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Skipf("no true: %v", err)
	}
	defer c.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := Read(c.Process.Pid)
		if err == nil && st.Ending() && st.State == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an exited child not reaped: %+v, %v; want a zombie, ending", st, err)
		}
	}
}
