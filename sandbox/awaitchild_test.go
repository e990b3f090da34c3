package sandbox

import (
	"os/exec"
	"testing"
	"time"
)

// A sandbox whose command ends at once takes its pid 1 with it; until its
// parent reaps it, that process is a zombie with no children. awaitChild
// must take it for gone, or a reader's locks wait out releaseWait.
func TestAwaitChild_ZombieIsGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for !exited(cmd.Process.Pid) { // not reaped: it stays a zombie until Wait
		time.Sleep(time.Millisecond)
	}
	if !awaitChild(cmd.Process.Pid, time.Minute) {
		t.Fatal("awaitChild: a zombie without children counted as a live sandbox")
	}
}

// A live process without children is neither: awaitChild waits out d.
func TestAwaitChild_LiveWithoutChildren(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if exited(cmd.Process.Pid) {
		t.Fatal("exited: a sleeping process counted as exited")
	}
	if awaitChild(cmd.Process.Pid, 50*time.Millisecond) {
		t.Fatal("awaitChild: a live process without children counted as started or gone")
	}
}
