package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
)

func TestTransitionOf(t *testing.T) {
	mv := events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "background", EntryID: "cmd-1"}
	tests := []struct {
		name string
		in   events.Payload
		want events.SessionTransitioned
		ok   bool
	}{
		{"transition", mv, mv, true},
		{"opened with a move", events.SessionEntryOpened{EntryID: "cmd-1", Moves: &mv}, mv, true},
		{"closed with a move", events.SessionEntryClosed{EntryID: "cmd-1", Moves: &mv}, mv, true},
		{"opened", events.SessionEntryOpened{EntryID: "cmd-1"}, events.SessionTransitioned{}, false},
		{"closed", events.SessionEntryClosed{EntryID: "cmd-1"}, events.SessionTransitioned{}, false},
		{"activity", events.SessionActivityChanged{From: "a", To: "b"}, events.SessionTransitioned{}, false},
		{"ended", events.SessionEnded{From: events.PhaseReady}, events.SessionTransitioned{}, false},
	}
	for _, tt := range tests {
		got, ok := events.TransitionOf(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" || ok != tt.ok {
			t.Errorf("%s: ok %v, want %v (-want +got):\n%s", tt.name, ok, tt.ok, diff)
		}
	}
}

// TestEntryMoves_RoundTrip: an entry event carrying a move comes back
// from the wire as it went, and one without keeps the wire form of
// events stored before the field existed.
func TestEntryMoves_RoundTrip(t *testing.T) {
	reg := events.NewRegistry()
	mv := events.SessionTransitioned{From: events.PhaseWorking, To: events.PhaseReady}
	for _, p := range []events.Payload{
		events.SessionEntryOpened{EntryID: "cmd-1", Activity: "command:go", Lane: events.LaneBackground, Moves: &events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "background", EntryID: "cmd-1"}},
		events.SessionEntryClosed{EntryID: "cmd-1", Outcome: "exit 0", Moves: &mv},
	} {
		e := envelope(reg, p)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"moves":{`) {
			t.Errorf("%s: no moves on the wire: %s", e.Type, b)
		}
		got, err := reg.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", e.Type, diff)
		}
		d := reg.NewDecoder()
		if got, err = d.Decode(b); err != nil || cmp.Diff(e, got) != "" {
			t.Errorf("%s: Decoder: %v %s", e.Type, err, cmp.Diff(e, got))
		}
	}
	b, err := json.Marshal(envelope(reg, events.SessionEntryClosed{EntryID: "cmd-1", Outcome: "ok"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "moves") {
		t.Errorf("an entry without a move names one: %s", b)
	}
}

// TestEntryMoves_NeedCause: a move inside an entry event needs a complete
// cause, as a session.transitioned does; the entry alone does not.
func TestEntryMoves_NeedCause(t *testing.T) {
	reg := events.NewRegistry()
	mv := events.SessionTransitioned{From: events.PhaseWorking, To: events.PhaseReady}
	for _, tt := range []struct {
		p    events.Payload
		want error
	}{
		{events.SessionEntryClosed{EntryID: "cmd-1", Outcome: "ok", Moves: &mv}, events.ErrMissingCause},
		{events.SessionEntryOpened{EntryID: "cmd-1", Lane: events.LaneBackground, Moves: &mv}, events.ErrMissingCause},
		{events.SessionEntryClosed{EntryID: "cmd-1", Outcome: "ok"}, nil},
	} {
		e := envelope(reg, tt.p)
		e.Cause = &events.Cause{Kind: "worker"}
		if err := reg.Validate(e); !errors.Is(err, tt.want) {
			t.Errorf("%+v: Validate = %v, want %v", tt.p, err, tt.want)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Decode(b); !errors.Is(err, tt.want) {
			t.Errorf("%+v: Decode = %v, want %v", tt.p, err, tt.want)
		}
	}
}
