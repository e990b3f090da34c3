// Package reducertest holds what the tests of several reducers share:
// deciding commands and folding what they decide as the executor would.
// It is imported by tests only.
package reducertest

import (
	"encoding/json"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// Aggregate names one reducer for its tests: the aggregate kind it
// decides for, its pure Decide and Evolve, and where its state keeps the
// aggregate's id and last version. All fields are required.
type Aggregate[S, C any] struct {
	Kind   string // an events.Kind* constant
	Reg    *events.Registry
	Decide func(S, C) (events.Decision, error)
	Evolve func(S, events.Envelope) S
	Pos    func(S) (id string, ver uint64) // the state's aggregate id and last version
}

// Apply decides cmd on s and folds each event it decides, stamped as the
// executor stamps it: the aggregate (Kind, the state's id), the next
// version, and an id whose first byte is that version. Each stamped event
// must pass Reg.Validate. It returns the state after the last event and
// the decision as Decide returned it (unstamped). A refusal or an invalid
// event fails t.
func (a Aggregate[S, C]) Apply(t testing.TB, s S, cmd C) (S, events.Decision) {
	t.Helper()
	d, err := a.Decide(s, cmd)
	if err != nil {
		t.Fatalf("decide %T: %v", cmd, err)
	}
	for i, e := range d {
		id, ver := a.Pos(s)
		e.Agg = events.Aggregate{Kind: a.Kind, ID: id}
		e.Ver = ver + 1
		e.ID[0] = byte(e.Ver)
		if err := a.Reg.Validate(e); err != nil {
			t.Fatalf("%T: event %d: %v", cmd, i, err)
		}
		s = a.Evolve(s, e)
	}
	return s, d
}

// Run applies cmds in turn (see Apply) and returns the state after the
// last and the types of all the events they decided, in order.
func (a Aggregate[S, C]) Run(t testing.TB, s S, cmds ...C) (S, []string) {
	t.Helper()
	var types []string
	for _, cmd := range cmds {
		var d events.Decision
		s, d = a.Apply(t, s, cmd)
		for _, e := range d {
			types = append(types, e.Type)
		}
	}
	return s, types
}

// PhaseAfter returns the phase a session is in after event d and true
// when d is one that sets it (session.started: ready; session.transitioned
// or an entry event carrying a move, events.TransitionOf: its To;
// session.ended: ended), else "" and false. It is for tests that
// read a session's arc of phases from its events.
func PhaseAfter(d events.Payload) (string, bool) {
	if mv, ok := events.TransitionOf(d); ok {
		return mv.To, true
	}
	switch d.(type) {
	case events.SessionStarted:
		return events.PhaseReady, true
	case events.SessionEnded:
		return events.PhaseEnded, true
	}
	return "", false
}

// RoundTrip returns v encoded as JSON and decoded again into a new T; a
// failure either way fails the test.
func RoundTrip[T any](t testing.TB, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}
