package session_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestDecide_AttachDetachOneEvent: attaching work to a ready session and
// detaching the last of it are one event each, the entry event carrying
// the phase move, so the log appends them in one publish. The state they
// fold to is the one the older pair of events (entry, then
// session.transitioned) folds to, but for Ver.
func TestDecide_AttachDetachOneEvent(t *testing.T) {
	cause := events.Cause{Kind: "worker", Event: "command.started", Ref: "c1"}
	reg := events.NewRegistry()
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigTurnEnd))
	if h.s.Phase != events.PhaseReady {
		t.Fatalf("phase %s, want ready", h.s.Phase)
	}
	old := h.s // folds the older shape alongside
	for _, tt := range []struct {
		cmd  session.Command
		want events.SessionTransitioned
	}{
		{session.Attach{EntryID: "cmd-1", Activity: "command:true", At: t0, Cause: cause},
			events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "background", EntryID: "cmd-1"}},
		{session.Detach{EntryID: "cmd-1", Outcome: "exit 0", At: t0, Cause: cause},
			events.SessionTransitioned{From: events.PhaseWorking, To: events.PhaseReady}},
	} {
		evs, err := session.Decide(h.s, tt.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("%T: %d events %v, want 1", tt.cmd, len(evs), types(evs))
		}
		mv, ok := events.TransitionOf(evs[0].Data)
		if diff := cmp.Diff(tt.want, mv); !ok || diff != "" {
			t.Errorf("%T: move %v (-want +got):\n%s", tt.cmd, ok, diff)
		}
		e := h.stamp(evs[0])
		if err := reg.Validate(e); err != nil {
			t.Errorf("%T: %v", tt.cmd, err)
		}
		h.apply(e)
		// The same decision as two events.
		split := []events.Envelope{evs[0], evs[0]}
		split[1].Type, split[1].Data = events.SessionTransitioned{}.EventType(), mv
		switch p := evs[0].Data.(type) {
		case events.SessionEntryOpened:
			p.Moves = nil
			split[0].Data = p
		case events.SessionEntryClosed:
			p.Moves = nil
			split[0].Data = p
		}
		for _, e := range split {
			e.Ver = old.Ver + 1
			old = session.Evolve(old, e)
		}
		want, got := old, h.s
		want.Ver, got.Ver = 0, 0
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T: one event folds otherwise than two (-two +one):\n%s", tt.cmd, diff)
		}
	}
}

// TestDecide_AttachDetachNoMove: where attach or detach moves no phase
// (an open turn keeps the session working) the entry event carries none.
func TestDecide_AttachDetachNoMove(t *testing.T) {
	cause := events.Cause{Kind: "worker", Event: "command.started", Ref: "c1"}
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt)) // working, turn open
	decide := func(cmd session.Command) []events.Envelope {
		t.Helper()
		evs, err := session.Decide(h.s, cmd)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			h.apply(h.stamp(e))
		}
		return evs
	}
	for _, cmd := range []session.Command{
		session.Attach{EntryID: "cmd-1", Activity: "command:sleep", At: t0, Cause: cause},
		session.Detach{EntryID: "cmd-1", Outcome: "exit 0", At: t0, Cause: cause},
	} {
		evs := decide(cmd)
		if len(evs) != 1 {
			t.Fatalf("%T: %v", cmd, types(evs))
		}
		if _, ok := events.TransitionOf(evs[0].Data); ok {
			t.Errorf("%T in an open turn moves the phase: %+v", cmd, evs[0].Data)
		}
	}
}
