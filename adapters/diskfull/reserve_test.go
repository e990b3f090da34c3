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

// A Guard on a real file system (a tmpfs): the writes are paused, with
// the reason, once another file leaves less than the reserve free, and
// the pause is over once it has a quarter more again; nothing is said
// while the reserve is free. The writers' Room of the same directory
// refuses commits exactly while the pause says so.
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

	// What the pause says, a line at each change: "p" paused, "r"
	// resumed.
	var mu sync.Mutex
	var said []string
	p := NewPause(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		switch line := fmt.Sprintf(format, args...); {
		case strings.HasPrefix(line, "WARN: appends paused"):
			said = append(said, "p")
		case strings.HasPrefix(line, "appends resumed"):
			said = append(said, "r")
		default:
			said = append(said, line)
		}
	})
	g := &Guard{Dir: dir}
	ctx, cancel := context.WithCancel(t.Context())
	g.First(ctx, p)
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, []string{dir}, g) }()
	t.Cleanup(func() { cancel(); <-done; p.Close() })

	waitSaid := func(want ...string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			got := fmt.Sprint(said)
			mu.Unlock()
			if got == fmt.Sprint(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pause said %s, want %v", got, want)
			}
		}
	}
	waitSaid()
	if s := p.String(); s != "" {
		t.Fatalf("paused with the reserve free: %s", s)
	}
	room := Room(dir)
	if err := room(); err != nil {
		t.Fatalf("Room with the reserve free: %v", err)
	}

	// A file leaving less than the reserve free, but more than MinFree:
	// the disk is not full, the log's appends are held.
	filler := filepath.Join(dir, "filler")
	fill(t, filler, size-reserve+reserve/2)
	waitSaid("p")
	if s := p.String(); !strings.Contains(s, "under the log's reserve of 16 MiB") {
		t.Errorf("pause while held: %q", s)
	}
	if err := room(); err == nil || !strings.Contains(err.Error(), "under the log's reserve of 16 MiB") {
		t.Errorf("Room while held: %v", err)
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
	waitSaid("p")
	if err := room(); err == nil || !strings.Contains(err.Error(), "held until a quarter more than the log's reserve of 16 MiB is free") {
		t.Errorf("Room while the pause says held, above the reserve: %v", err)
	}
	// The pause says the free space now, not at its start.
	if s := p.String(); !strings.Contains(s, "not yet a quarter above the log's reserve of 16 MiB") {
		t.Errorf("pause held above the reserve: %q", s)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSaid("p", "r")
	for deadline := time.Now().Add(5 * time.Second); p.String() != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still paused once let go: %s", p.String())
		}
	}
	if err := room(); err != nil {
		t.Errorf("Room once let go: %v", err)
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
