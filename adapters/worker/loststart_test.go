package worker

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/sandbox"
)

// A start decided on a state a stop overtook loses its check, and the
// attach that was in flight beside it opened the command's entry: the
// entry is closed again (no worker started the command), nothing runs.
// A start lost to another worker's leaves the entry to that worker.
func TestWorker_LostStartSettlesItsEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	w, err := New(e.workerConfig()) // not run: this test takes the requests itself
	if err != nil {
		t.Fatal(err)
	}
	open := func(id string) bool {
		for _, en := range e.sessionState().Entries {
			if en.EntryID == EntryID(id) {
				return true
			}
		}
		return false
	}
	stale := func(id string) (command.State, uint64) {
		st, last, err := w.loadAt(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return st, last
	}

	t.Run("stopped before the start", func(t *testing.T) {
		id := e.submit(e.request(events.ModeFullAccess, "true"))
		st, last := stale(id)
		if err := e.client.Stop(t.Context(), id, "test", "test"); err != nil {
			t.Fatal(err)
		}
		spec, reason := w.spec(st)
		if reason != "" {
			t.Fatal(reason)
		}
		v, err := w.start(t.Context(), t.Context(), st, last, spec)
		if v != verdictDone || err != nil {
			t.Fatalf("start = %v, %v; want done", v, err)
		}
		if now, _ := e.client.Command(t.Context(), id); now.Status != command.StatusRefused || now.Pid != 0 {
			t.Errorf("status %s pid %d; want refused, never run", now.Status, now.Pid)
		}
		if open(id) {
			t.Error("the lost start's entry is left open")
		}
		// The entry's cause names the command, not the command.started
		// that lost its check and so was never stored.
		srecs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: e.session})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]bool{id: true}
		crecs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range crecs {
			stored[r.ID.String()] = true
		}
		for _, r := range srecs {
			if d, ok := r.Data.(events.SessionEntryOpened); ok && d.EntryID == EntryID(id) {
				if r.Cause == nil || !stored[r.Cause.Ref] {
					t.Errorf("entry_opened's cause %+v names neither the command nor a stored event of it", r.Cause)
				}
			}
		}
		if s := e.sessionState(); s.Phase == events.PhaseWorking {
			t.Errorf("session phase %s; want it settled", s.Phase)
		}
	})

	// A restricted command's boundary is built, held, while its start is
	// appended: a start that loses kills it unreleased, so the command
	// never runs, and what the boundary made in the workspace is gone.
	t.Run("restricted, stopped before the start", func(t *testing.T) {
		needBwrap(t)
		before, err := os.ReadDir(e.ws)
		if err != nil {
			t.Fatal(err)
		}
		id := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo ran > ran"))
		st, last := stale(id)
		if err := e.client.Stop(t.Context(), id, "test", "test"); err != nil {
			t.Fatal(err)
		}
		spec, reason := w.spec(st)
		if reason != "" {
			t.Fatal(reason)
		}
		if v, err := w.start(t.Context(), t.Context(), st, last, spec); v != verdictDone || err != nil {
			t.Fatalf("start = %v, %v; want done", v, err)
		}
		if now, _ := e.client.Command(t.Context(), id); now.Status != command.StatusRefused || now.Pid != 0 {
			t.Errorf("status %s pid %d; want refused, never run", now.Status, now.Pid)
		}
		after, err := os.ReadDir(e.ws)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("workspace holds %d entries after the lost start, %d before: %v", len(after), len(before), after)
		}
		// Its locks are let go: the workspace is free for the next start.
		if sandbox.Busy(spec) {
			t.Error("the lost start's workspace is still locked")
		}
	})

	// A lost start whose held boundary still waits for its workspace
	// (another command holds it) stops waiting: it does not wait for
	// that command to end.
	t.Run("restricted, lost while its workspace is held", func(t *testing.T) {
		needBwrap(t)
		id := e.submit(e.request(events.ModeWorkspaceWrite, "true"))
		st, last := stale(id)
		if err := e.client.Stop(t.Context(), id, "test", "test"); err != nil {
			t.Fatal(err)
		}
		spec, reason := w.spec(st)
		if reason != "" {
			t.Fatal(reason)
		}
		holder := spec
		holder.Argv = []string{"sleep", "600"}
		hp, err := sandbox.Start(t.Context(), holder, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hp.Wait()
		defer hp.Stop()
		if v, err := w.start(t.Context(), t.Context(), st, last, spec); v != verdictDone || err != nil {
			t.Fatalf("start = %v, %v; want done", v, err)
		}
	})

	t.Run("started by another worker", func(t *testing.T) {
		id := e.submit(e.request(events.ModeFullAccess, "true"))
		st, last := stale(id)
		agg := events.Aggregate{Kind: events.KindCommand, ID: id}
		if _, _, err := w.cmds.Execute(t.Context(), agg, func(s command.State) (events.Decision, error) {
			return command.Decide(s, command.Start{Worker: "other", Host: "h", At: w.now(), Cause: events.Cause{Kind: "worker", Event: "command.requested", Ref: id}})
		}); err != nil {
			t.Fatal(err)
		}
		sagg := events.Aggregate{Kind: events.KindSession, ID: e.session}
		if _, _, err := w.sessions.Execute(t.Context(), sagg, func(s session.State) (events.Decision, error) {
			return session.Decide(s, session.Attach{EntryID: EntryID(id), Activity: "command:true", At: w.now(), Cause: events.Cause{Kind: "worker", Event: "command.started", Ref: id}})
		}); err != nil {
			t.Fatal(err)
		}
		spec, _ := w.spec(st)
		if v, err := w.start(t.Context(), t.Context(), st, last, spec); v != verdictDone || err != nil {
			t.Fatalf("start = %v, %v; want done", v, err)
		}
		if !open(id) {
			t.Error("the other worker's entry was closed")
		}
	})
}
