package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatch_SpecialFiles: with real inotify, a FIFO and a symlink to
// /dev/zero named like rollouts are each reported once and never opened;
// a rollout written beside them is imported; the watcher stops at once.
func TestWatch_SpecialFiles(t *testing.T) {
	l := openLog(t)
	in := newIngester(t, l, false)
	root := filepath.Join(t.TempDir(), "sessions")
	day := filepath.Join(root, "2026", "05", "23")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reports []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- in.Watch(ctx, WatchConfig{Roots: []string{root}, Rescan: time.Hour, Report: func(m string) {
			mu.Lock()
			reports = append(reports, m)
			mu.Unlock()
		}})
	}()
	count := func(sub string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range reports {
			if strings.Contains(m, sub) {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 20s for %s (reports %q)", what, reports)
			}
		}
	}
	// Let the watcher start before the files appear: inotify sees them.
	time.Sleep(100 * time.Millisecond)
	fifo := filepath.Join(day, "rollout-2026-05-23T18-00-00-"+tid2+".jsonl")
	zero := filepath.Join(day, "rollout-2026-05-23T18-00-01-019e55eb-cdbc-78a1-84a6-c98c8e34a496.jsonl")
	specialtest.Make(t, fifo, zero)
	waitFor("both reported", func() bool {
		return count(fifo+": not a regular file (a FIFO)") == 1 && count(zero+": not a regular file (a character device)") == 1
	})
	path := filepath.Join(day, "rollout-2026-05-23T18-54-05-"+tid+".jsonl")
	write(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "make hello.txt"))
	waitFor("the rollout beside them", func() bool { return stateOf(t, l, tid).Phase == events.PhaseWorking })

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("watch: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop within 5s of its context's end")
	}
	if n := count("not a regular file"); n != 2 {
		t.Errorf("%d reports of a file that is not regular, want 2: %q", n, reports)
	}
}
