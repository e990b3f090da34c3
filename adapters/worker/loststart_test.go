package worker

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// A start decided on a state a stop overtook loses its check, and the
// attach that was in flight beside it opened the command's entry: the
// entry is closed again (no worker started the command), nothing runs.
// A start lost to another worker's leaves the entry to that worker.
func TestWorker_LostStartSettlesItsEntry(t *testing.T) {
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
