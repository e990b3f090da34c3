package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// watchRig opens a log and an ingester on it and makes a sessions tree
// root in a temporary directory holding the day directory day
// (2026/05/23) that rollouts are written to.
func watchRig(t *testing.T) (l events.Log, in *Ingester, root, day string) {
	t.Helper()
	l = ingesttest.OpenLog(t)
	in = newIngester(t, l, false)
	root = filepath.Join(t.TempDir(), "sessions")
	day = filepath.Join(root, "2026", "05", "23")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	return l, in, root, day
}

// TestWatch_SpecialFiles: with real inotify, a FIFO and a symlink to
// /dev/zero named like rollouts are each reported once and never opened;
// a rollout written beside them is imported; the watcher stops at once.
func TestWatch_SpecialFiles(t *testing.T) {
	l, in, root, day := watchRig(t)
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
	ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "make hello.txt"))
	waitFor("the rollout beside them", func() bool { return ingesttest.StateOf(t, l, tid).Phase == events.PhaseWorking })

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

// TestWatch_LiveRolloutLaggingClock: a rollout that appears under a
// watched sessions tree is followed live: each line appended after it
// appeared carries its receipt,
// the agent clock's offset (here months behind: the lines are dated
// May) is learned, and the session, still working, is not stale however
// old its own timestamps look (issue case claude-phase/75, Codex CLI).
func TestWatch_LiveRolloutLaggingClock(t *testing.T) {
	l, in, root, day := watchRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Watch(ctx, WatchConfig{Roots: []string{root}, Rescan: 20 * time.Millisecond}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	}()
	time.Sleep(100 * time.Millisecond) // the watcher has started: the file is new
	path := filepath.Join(day, "rollout-2026-05-23T18-54-05-"+tid+".jsonl")
	// The rollout appears with its session_meta, dated months back: more
	// than ingest.HistoryAge before its receipt, it is history (a copied
	// rollout's lines would be). The lines Codex writes after it are live.
	ingesttest.AppendFile(t, path, meta(tid, ""))
	for deadline := time.Now().Add(20 * time.Second); ingesttest.StateOf(t, l, tid).Lines != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("waited 20s for the session_meta")
		}
	}
	ingesttest.AppendFile(t, path, turnStart(1, "t1"), userMsg(1, "build it"))
	ingesttest.AppendFile(t, path, call(2, "call_1", "shell", `{"command":["make"]}`))
	var st session.State
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st = ingesttest.StateOf(t, l, tid); st.Lines == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for 4 lines; have %d", st.Lines)
		}
	}
	if st.Phase != events.PhaseWorking || st.ClockOffsetAt.IsZero() || st.ClockOffsetMS < (24*time.Hour).Milliseconds() {
		t.Fatalf("phase %s, clock offset %d ms (learned %v); want working, the agent's clock months behind", st.Phase, st.ClockOffsetMS, !st.ClockOffsetAt.IsZero())
	}
	if idle := time.Since(st.ObservedAt); idle > time.Minute {
		t.Errorf("observed_at %s (%s ago); want the last line's receipt", st.ObservedAt, idle)
	}
	if ok, err := in.base.WouldReconcile(st, time.Now().Add(ingest.Quiet), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile = %v, %v; want false: lines arrived seconds ago", ok, err)
	}
}
