package task

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
)

var (
	t0    = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cause = events.Cause{Kind: "hook", Event: "SessionStart", Ref: "o1"}
)

// run decides each command in turn, folding what it decides, and
// returns the state and the event types; it fails on a refusal.
func run(t *testing.T, s State, cmds ...Command) (State, []string) {
	t.Helper()
	return reducertest.Aggregate[State, Command]{
		Kind: events.KindTask, Reg: events.NewRegistry(), Decide: Decide, Evolve: Evolve,
		Pos: func(s State) (string, uint64) { return s.ID, s.Ver },
	}.Run(t, s, cmds...)
}

func TestDecide_Lifecycle(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindTask, ID: "t1"})
	if _, err := Decide(s, Observe{Session: "c"}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("observe before delegate: %v", err)
	}
	s, types := run(t, s,
		Delegate{Workspace: "w1", Parent: "p", Title: "fix", At: t0, Cause: cause},
		Delegate{Workspace: "w1", Parent: "p", Title: "fix", At: t0, Cause: cause},
		Observe{Session: "p", At: t0, Cause: cause}, // the parent is not the child
		End{Session: "c", At: t0, Cause: cause},     // no child yet: a launch receipt is no end
		Observe{Session: "c", At: t0, Cause: cause}, // running
		Observe{Session: "c", At: t0, Cause: cause}, // again: nothing
		End{Session: "other", At: t0, Cause: cause}, // another session's end: nothing
		Interrupt{Reason: "host_restarted", At: t0, Cause: cause},
		Observe{Session: "c", At: t0, Cause: cause},                  // not seen since the interruption
		Observe{Session: "c", At: t0.Add(time.Second), Cause: cause}, // seen again: resumed
		End{Session: "c", Failed: true, Reason: "error", At: t0, Cause: cause},
		End{Session: "c", At: t0, Cause: cause})
	want := []string{"task.delegated", "task.running", "task.interrupted", "task.resumed", "task.ended"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.Status != StatusFailed || s.Session != "c" || s.Reason != "error" {
		t.Errorf("state %+v", s)
	}
}

func TestDecide_Completed(t *testing.T) {
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindTask, ID: "t1"}),
		Delegate{Workspace: "w1", Parent: "p", At: t0, Cause: cause},
		Observe{Session: "c", At: t0, Cause: cause},
		End{Session: "c", Reason: "exit", At: t0, Cause: cause},
		Interrupt{Reason: "host_restarted", At: t0, Cause: cause})
	if s.Status != StatusCompleted {
		t.Errorf("status %s", s.Status)
	}
	if _, err := Decide(Init(events.Aggregate{Kind: events.KindTask, ID: "t2"}), Delegate{Parent: "p", At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("delegate without workspace: %v", err)
	}
}

// TestDecide_ObserveOutsideTheTasksLife: a session seen working before
// the task was delegated, or at or after its workspace began archiving,
// does not make it running; one seen in between does, at its own time.
func TestDecide_ObserveOutsideTheTasksLife(t *testing.T) {
	archived := t0.Add(time.Hour)
	s, types := run(t, Init(events.Aggregate{Kind: events.KindTask, ID: "t1"}),
		Delegate{Workspace: "w1", Parent: "p", At: t0, Cause: cause},
		Observe{Session: "c", At: t0.Add(-time.Minute), Cause: cause},
		Observe{Session: "c", At: archived, ArchivedAt: archived, Cause: cause},
		Observe{Session: "c", At: archived.Add(time.Minute), ArchivedAt: archived, Cause: cause})
	if s.Status != StatusDelegated || len(types) != 1 {
		t.Fatalf("status %s, events %v: want delegated only", s.Status, types)
	}
	s, _ = run(t, s, Observe{Session: "c", At: t0.Add(time.Minute), ArchivedAt: archived, Cause: cause})
	if s.Status != StatusRunning || s.UpdatedAt.Before(s.DelegatedAt) {
		t.Errorf("status %s at %s (delegated %s): want running, not before the delegation", s.Status, s.UpdatedAt, s.DelegatedAt)
	}
}
