package datadir

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestLockOver_WaitsForAKilledWriter: a serve started just after the
// last one was killed (SIGKILL) waits for the killed one's lock to go
// rather than refusing because a writer holds it. The holder here is
// a real process that takes the lock as "logbook serve", with a heap
// large enough that freeing it takes a while after the kill, and is
// killed just before the lock is asked for.
func TestLockOver_WaitsForAKilledWriter(t *testing.T) {
	if os.Getenv("LOGBOOK_TEST_HOLD_LOCK") != "" {
		return
	}
	d := Dir(t.TempDir())
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cmd := startLockHolder(t, d)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		f, err := d.LockOver(t.Context(), "logbook serve", func(string) {})
		cmd.Wait()
		if err != nil {
			t.Fatalf("lock after its holder was killed: %v", err)
		}
		f.Close()
	}
	// A writer that lives is still refused at once.
	cmd := startLockHolder(t, d)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if _, err := d.LockOver(t.Context(), "logbook serve", func(string) {}); err == nil {
		t.Fatal("took the lock of a live writer")
	}
}

// startLockHolder starts TestLockHolderProcess on data dir d and returns
// it once it holds the lock; one that does not is killed and the test
// fails.
func startLockHolder(t *testing.T, d Dir) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "LOGBOOK_TEST_HOLD_LOCK="+string(d))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("holder: %q, %v", line, err)
	}
	return cmd
}

// TestLockHolderProcess is the holder TestLockOver_WaitsForAKilledWriter
// starts: it fills 256 MiB, takes the data dir's lock as "logbook
// serve", says "held" and waits to be killed.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv("LOGBOOK_TEST_HOLD_LOCK")
	if dir == "" {
		t.Skip("run by TestLockOver_WaitsForAKilledWriter")
	}
	holderHeap = make([]byte, 256<<20)
	for i := range len(holderHeap) / 4096 {
		holderHeap[i*4096] = 1
	}
	var err error
	holderLock, err = Dir(dir).TryLock("logbook serve")
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	select {}
}

// The holder's lock file and heap, reachable until it is killed.
var (
	holderLock *os.File
	holderHeap []byte
)

// TestWaitEnding: with no writer holding the lock, or once a killed
// writer's lock is gone, WaitEnding says the writer's things are free; a
// writer that lives makes it say no at once.
func TestWaitEnding(t *testing.T) {
	if os.Getenv("LOGBOOK_TEST_HOLD_LOCK") != "" {
		return
	}
	d := Dir(t.TempDir())
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	if !d.WaitEnding(t.Context()) {
		t.Fatal("WaitEnding with no holder = false, want true")
	}
	cmd := startLockHolder(t, d)
	start := time.Now()
	if d.WaitEnding(t.Context()) {
		t.Fatal("WaitEnding with a live writer = true, want false")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("WaitEnding with a live writer took %v, want at once", took)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ok := d.WaitEnding(t.Context())
	cmd.Wait()
	if !ok {
		t.Fatal("WaitEnding after the writer was killed = false, want true")
	}
}
