package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestDetach_SessionMovingUnderIt: while another writer moves the
// session without pause (an agent's hooks, other workers' entries),
// every command's entry is still closed once it exits: a detach that
// meets a moved session time after time tries again, and the session is
// not left working for good.
func TestDetach_SessionMovingUnderIt(t *testing.T) {
	e := newEnv(t, false)
	startOneAttemptWorker(t, e)
	agg := events.Aggregate{Kind: events.KindSession, ID: e.session}
	// The commands run until the test lets them exit, however long the
	// twelve take to start on a loaded machine.
	release := filepath.Join(t.TempDir(), "exit")
	var ids []string
	for range 12 {
		ids = append(ids, e.submit(e.request(events.ModeFullAccess, "sh", "-c", `while [ ! -e "$0" ]; do sleep 0.05; done`, release)))
	}
	// The entries are opened on a quiet session; the session moves
	// without pause while the commands exit.
	e.waitFor("every command's entry open", func() bool { return len(e.sessionState().Entries) == len(ids) })
	stop := moveSession(t, e, agg)
	defer stop()
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if st, _ := e.follow(id, 30*time.Second); st.Status != "exited" {
			t.Fatalf("command %s ended %s, want exited", id, st.Status)
		}
	}
	stop()
	// Every entry a command opened is closed (a detach may still be
	// pausing between its tries as the session stops moving).
	openEntries := func() (int, map[string]bool) {
		recs, _, err := e.log.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]bool{}
		opened := 0
		for _, r := range recs {
			switch d := r.Data.(type) {
			case events.SessionEntryOpened:
				if strings.HasPrefix(d.EntryID, "cmd-") {
					open[d.EntryID] = true
					opened++
				}
			case events.SessionEntryClosed:
				delete(open, d.EntryID)
			}
		}
		return opened, open
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		opened, open := openEntries()
		if opened == len(ids) && len(open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d command entries opened, %d left open 15 s after the session stopped moving: %v", opened, len(open), open)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAttach_SessionMovingUnderIt: while other writers move the
// session without pause, every command taken meanwhile still opens its
// entry on the session before it runs: an attach that meets a moved
// session time after time tries again rather than let the command run
// with the session not working.
func TestAttach_SessionMovingUnderIt(t *testing.T) {
	e := newEnv(t, false)
	startOneAttemptWorker(t, e)
	agg := events.Aggregate{Kind: events.KindSession, ID: e.session}
	stop := moveSession(t, e, agg)
	defer stop()
	var ids []string
	for range 8 {
		ids = append(ids, e.submit(e.request(events.ModeFullAccess, "true")))
	}
	// The commands are taken while the session moves; it moves for a
	// while longer than eight attempts of an attach last, then stops.
	// Under writers that never pause, an attach waits for as long as
	// its append may (DefaultAppendTimeout) before its command runs
	// without it.
	time.AfterFunc(1500*time.Millisecond, func() { stop() })
	for _, id := range ids {
		if st, _ := e.follow(id, 30*time.Second); st.Status != "exited" {
			t.Fatalf("command %s ended %s, want exited", id, st.Status)
		}
	}
	stop()
	recs, _, err := e.log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	opened := map[string]bool{}
	for _, r := range recs {
		if d, ok := r.Data.(events.SessionEntryOpened); ok {
			opened[d.EntryID] = true
		}
	}
	for _, id := range ids {
		if !opened[EntryID(id)] {
			t.Errorf("command %s ran without its entry opened on its session", id)
		}
	}
}

// startOneAttemptWorker starts a worker for e whose session decisions
// make one attempt a round (its Executor's Attempts): every round that
// meets a moved session ends in a conflict, as eight in a row do on a
// busy host. It returns once the worker is registered; it stops with
// the test.
func startOneAttemptWorker(t *testing.T, e *testEnv) {
	t.Helper()
	w, err := New(e.workerConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.sessions.Attempts = 1
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.waitFor("worker registered", func() bool {
		ws, _ := e.client.Workers(t.Context())
		for _, id := range ws {
			if id.ID == w.Identity().ID {
				return true
			}
		}
		return false
	})
}

// moveSession moves session agg without pause, from four writers with
// Executors of their own (one Executor takes turns on an aggregate,
// writers apart do not), until the returned func is called; that func
// returns once they have stopped, and may be called more than once.
func moveSession(t *testing.T, e *testEnv, agg events.Aggregate) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var hogs sync.WaitGroup
	for range 4 {
		hog := &events.Executor[session.State]{
			Log: e.log, Reg: e.reg, Init: session.Init, Evolve: session.Evolve,
			IDs: ulid.Make, Host: "h", Actor: "hog", Attempts: 1000,
		}
		hogs.Go(func() {
			for ctx.Err() == nil {
				_, _, _ = hog.Execute(ctx, agg, func(session.State) (events.Decision, error) {
					return events.One(events.SessionActivityChanged{From: "thinking", To: "thinking"}, time.Now().UTC(), events.Cause{Kind: "cli", Event: "test", Ref: "hog"}), nil
				})
			}
		})
	}
	return func() { cancel(); hogs.Wait() }
}
