package diskfull

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A Guard on a real file system (a tmpfs): appends are held, and the
// writes paused with the reason, once another file leaves less than the
// reserve free; let go, and the pause over, once it has a quarter more
// again. The first look says what it finds (let go) even when nothing
// changed: a hold left by a serve that was killed ends.
func TestGuard_HoldsUnderTheReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a file system of a known size is a tmpfs mounted for the test: needs root")
	}
	t.Parallel()
	dir := t.TempDir()
	const size = 128 << 20
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	reserve, err := Reserve(dir)
	if err != nil || reserve != MinReserve {
		t.Fatalf("Reserve of a %d MiB file system: %d (%v), want %d", size>>20, reserve, err, MinReserve)
	}

	var mu sync.Mutex
	var calls []bool
	said := make(chan string, 16)
	p := NewPause(func(format string, args ...any) {
		select {
		case said <- fmt.Sprintf(format, args...):
		default:
		}
	})
	g := &Guard{Dir: dir, Hold: func(_ context.Context, held bool) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, held)
		return nil
	}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, []string{dir}, g) }()
	t.Cleanup(func() { cancel(); <-done; p.Close() })

	waitCalls := func(want ...bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			got := fmt.Sprint(calls)
			mu.Unlock()
			if got == fmt.Sprint(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Hold calls %s, want %v", got, want)
			}
		}
	}
	waitCalls(false)
	if s := p.String(); s != "" {
		t.Fatalf("paused with the reserve free: %s", s)
	}

	// A file leaving less than the reserve free, but more than MinFree:
	// the disk is not full, the log's appends are held.
	filler := filepath.Join(dir, "filler")
	fill(t, filler, size-reserve+reserve/2)
	waitCalls(false, true)
	if s := p.String(); !strings.Contains(s, "under the log's reserve of 16 MiB") {
		t.Errorf("pause while held: %q", s)
	}
	if line := <-said; !strings.HasPrefix(line, "WARN: appends paused") {
		t.Errorf("said: %q", line)
	}
	// Watch's own probe, which finds the disk taking writes, does not
	// end the Guard's pause.
	time.Sleep(2 * WatchEvery)
	if p.String() == "" {
		t.Error("the pause ended while appends are held")
	}

	// Freed, but to less than a quarter above the reserve: still held.
	// (Shrunk in place: a file made again would free the whole disk for
	// a moment.)
	if err := os.Truncate(filler, size-reserve-reserve/8); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * GuardEvery)
	waitCalls(false, true)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitCalls(false, true, false)
	for deadline := time.Now().Add(5 * time.Second); p.String() != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still paused once let go: %s", p.String())
		}
	}
}

// fill makes path a file of n bytes (allocated: tmpfs counts them used).
func fill(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		t.Fatalf("fallocate %s %d: %v", path, n, err)
	}
}
