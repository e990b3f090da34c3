// Package task decides and folds one task aggregate (lb.ev.task.<id>,
// kind events.KindTask): work a session delegated to a workspace, as the
// harnesses that run agents in parallel do it.
//
//	delegated → running → completed | failed
//	running → interrupted → resumed → completed | failed
//
// A task runs once a session is observed working in its workspace; that
// session is then the task's. Only that session's real end completes or
// fails it (a launch receipt is no end). A host restart that finds the
// session neither ended nor seen again interrupts it, and the same
// session seen again resumes it.
//
// Decide and Evolve are pure: time arrives inside commands, nothing reads
// a clock, draws randomness or does I/O.
package task

import (
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Statuses of a task.
const (
	StatusDelegated   = "delegated"
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusResumed     = "resumed"
)

// State is what the reducer knows of one task. Its JSON form is the
// task's projection row: field names are a stored format.
type State struct {
	ID          string    `json:"id"`
	Ver         uint64    `json:"ver"`
	Workspace   string    `json:"workspace"`
	Parent      string    `json:"parent"`
	Title       string    `json:"title"`
	Status      string    `json:"status"`
	Session     string    `json:"session,omitempty"` // the child session, once seen
	Reason      string    `json:"reason,omitempty"`  // why it ended or was interrupted
	DelegatedAt time.Time `json:"delegated_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Init returns the state of a task before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// Exists reports whether the task was delegated.
func (s State) Exists() bool { return s.Ver > 0 && s.Status != "" }

// Ended reports whether the task completed or failed.
func (s State) Ended() bool { return s.Status == StatusCompleted || s.Status == StatusFailed }

// Command is an input to Decide.
type Command interface{ command() }

// Delegate opens the task. Delegating it again decides nothing.
type Delegate struct {
	Workspace, Parent, Title string
	At                       time.Time
	Cause                    events.Cause
}

// Observe records that Session was seen working in the task's workspace,
// its last activity at At. Only activity at or after the delegation, and
// before ArchivedAt (when the workspace began archiving; zero while it
// lives), counts: a session seen earlier worked there before the task
// existed, and one seen later works in a workspace that is gone. An
// interrupted task resumes only for activity after the interruption.
type Observe struct {
	Session    string
	At         time.Time
	ArchivedAt time.Time
	Cause      events.Cause
}

// End records the real end of Session: Failed when it ended in failure.
type End struct {
	Session string
	Failed  bool
	Reason  string
	At      time.Time
	Cause   events.Cause
}

// Interrupt records a host restart that found the task's session neither
// ended nor seen again.
type Interrupt struct {
	Reason string
	At     time.Time
	Cause  events.Cause
}

func (Delegate) command()  {}
func (Observe) command()   {}
func (End) command()       {}
func (Interrupt) command() {}

// Decide returns the events cmd causes in s, or an error wrapping
// events.ErrRejected (events.ErrNotFound for a task never delegated)
// that says why cmd is refused. Inputs that change nothing (a session
// seen again while running, the end of another session) decide nothing.
func Decide(s State, cmd Command) (events.Decision, error) {
	if _, ok := cmd.(Delegate); !ok && !s.Exists() {
		return nil, fmt.Errorf("task %s: %w", s.ID, events.ErrNotFound)
	}
	switch c := cmd.(type) {
	case Delegate:
		if s.Exists() {
			return nil, nil
		}
		if c.Workspace == "" || c.Parent == "" {
			return nil, fmt.Errorf("delegate task %s: %w: workspace and parent session are required", s.ID, events.ErrRejected)
		}
		return events.One(events.TaskDelegated{Workspace: c.Workspace, Parent: c.Parent, Title: c.Title}, c.At, c.Cause), nil
	case Observe:
		if c.Session == "" || c.Session == s.Parent || c.At.Before(s.DelegatedAt) ||
			!c.ArchivedAt.IsZero() && !c.At.Before(c.ArchivedAt) {
			return nil, nil
		}
		switch s.Status {
		case StatusDelegated:
			return events.One(events.TaskRunning{Session: c.Session}, c.At, c.Cause), nil
		case StatusInterrupted:
			// Seen again: activity of its session after the interruption.
			if c.Session == s.Session && c.At.After(s.UpdatedAt) {
				return events.One(events.TaskResumed{Session: c.Session}, c.At, c.Cause), nil
			}
		}
		return nil, nil
	case End:
		if s.Ended() || s.Session == "" || c.Session != s.Session {
			return nil, nil
		}
		outcome := StatusCompleted
		if c.Failed {
			outcome = StatusFailed
		}
		return events.One(events.TaskEnded{Session: c.Session, Outcome: outcome, Reason: c.Reason}, c.At, c.Cause), nil
	case Interrupt:
		if s.Status != StatusRunning && s.Status != StatusResumed {
			return nil, nil
		}
		return events.One(events.TaskInterrupted{Reason: c.Reason}, c.At, c.Cause), nil
	default:
		return nil, fmt.Errorf("%w: unknown task command %T", events.ErrRejected, cmd)
	}
}

// Evolve returns s after e. It only applies facts and never fails;
// events of other aggregates leave s unchanged.
func Evolve(s State, e events.Envelope) State {
	if e.Agg.Kind != events.KindTask {
		return s
	}
	s.ID, s.Ver, s.UpdatedAt = e.Agg.ID, e.Ver, e.At
	switch d := e.Data.(type) {
	case events.TaskDelegated:
		s.Workspace, s.Parent, s.Title = d.Workspace, d.Parent, d.Title
		s.Status, s.DelegatedAt = StatusDelegated, e.At
	case events.TaskRunning:
		s.Status, s.Session = StatusRunning, d.Session
	case events.TaskEnded:
		s.Status, s.Reason = d.Outcome, d.Reason
	case events.TaskInterrupted:
		s.Status, s.Reason = StatusInterrupted, d.Reason
	case events.TaskResumed:
		s.Status, s.Reason = StatusResumed, ""
	}
	return s
}
