// Package check decides and folds one run of a workspace's pre-push
// check (lb.ev.check.<id>, kind events.KindCheck):
//
//	running → passed | failed | error | cancelled
//
// Start opens it with the tree it judges (HEAD's commit and a digest of
// the work tree); End gives its verdict; Cancel records a person's ask to
// stop it; AllowPush records that the pre-push hook allowed a push on its
// strength (a permission: whether git then sent the push is not known here).
// The rules that keep a verdict from passing by accident are here, where
// replay checks them too: a run killed at its timeout is failed, never
// passed; passed needs exit status 0; a push is allowed only on a passed
// run that judged a clean work tree whose commit is the one pushed.
//
// Decide and Evolve are pure: time arrives inside commands, nothing reads
// a clock, draws randomness or does I/O.
package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Triggers of a run, as in events.CheckStarted.Trigger.
const (
	TriggerPush   = "push"   // the workspace's pre-push hook
	TriggerManual = "manual" // `logbook workspace check`
)

// State is what the reducer knows of one check run. Its JSON form is the
// run's projection row: field names are a stored format. Durations are
// in ms, times UTC from the envelopes.
type State struct {
	ID  string `json:"id"`
	Ver uint64 `json:"ver"` // 0: never started

	// The run's spec as check.started recorded it (its fields sit flat
	// in the JSON row); zero before the start.
	events.CheckRunSpec

	Status string `json:"status"` // an events.Check* status; "" before the start

	CancelBy string `json:"cancel_by,omitempty"` // who asked to stop it; "" when nobody did

	// The verdict, as in events.CheckEnded; ExitCode is nil until it ends.
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timed_out"`
	Reason      string `json:"reason,omitempty"`
	DurationMS  int64  `json:"duration_ms,omitempty"`
	OutputBytes int64  `json:"output_bytes"`
	OutputTail  string `json:"output_tail,omitempty"`

	// Pushes are the pushes the pre-push hook allowed on this run, oldest
	// first: permissions, not pushes known to have reached the remote.
	Pushes []Push `json:"pushes,omitempty"`

	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Push is one push a passed run allowed: events.CheckPushAllowed and
// when it was recorded (git sends the push after that, or fails it).
type Push struct {
	Remote string           `json:"remote"`
	Refs   []events.PushRef `json:"refs"`
	Reused bool             `json:"reused,omitempty"`
	At     time.Time        `json:"at"`
}

// Init returns the state of agg before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// Exists reports whether the run was started.
func (s State) Exists() bool { return s.Status != "" }

// Ended reports whether the run has its verdict.
func (s State) Ended() bool { return s.Exists() && s.Status != events.CheckRunning }

// Judged reports whether s is a passed run of command, in sandbox mode,
// over the tree fingerprint: the run a push of that tree may go on
// without running the check again. A pass in another mode judges
// nothing here: a check that passed with write access may fail read
// only, and the project's check_mode says which it must pass in.
func (s State) Judged(command, mode, fingerprint string) bool {
	return s.Status == events.CheckPassed && s.Command == command && s.Mode == mode && s.Fingerprint == fingerprint
}

// Command is an input to Decide; each carries the decision time At and
// the Cause its events record (complete: every check event needs one).
type Command interface{ command() }

// Start opens a run with the spec and tree of events.CheckStarted.
type Start struct {
	Spec  events.CheckStarted
	At    time.Time
	Cause events.Cause
}

// Cancel asks to stop a running run on behalf of By (non-empty).
type Cancel struct {
	By     string
	Reason string
	At     time.Time
	Cause  events.Cause
}

// End records the verdict of a running run, as events.CheckEnded.
type End struct {
	Verdict events.CheckEnded
	At      time.Time
	Cause   events.Cause
}

// AllowPush records that the pre-push hook let a push of Refs to Remote
// go on this run; Reused says the run was not made for this push.
type AllowPush struct {
	Remote string
	Refs   []events.PushRef
	Reused bool
	At     time.Time
	Cause  events.Cause
}

// Vanish ends a running run whose runner vanished: At (the decision
// time) is at least Grace past the run's deadline (its start plus its
// timeout), by when a live runner, which kills the check's whole tree at
// the timeout, has recorded a verdict; Evidence says what else shows the
// runner gone (its process found gone on its host, or no verdict seen
// while the deciding process watched for the timeout and the grace). The
// run ends error, never passed or failed: nothing is known of the tree.
type Vanish struct {
	Grace    time.Duration
	Evidence string
	At       time.Time
	Cause    events.Cause
}

// VanishedPrefix starts the reason of a run ended by Vanish.
const VanishedPrefix = "runner vanished: "

// Deadline returns when a running run's runner has killed its check at
// the timeout: its start plus its timeout.
func (s State) Deadline() time.Time {
	return s.StartedAt.Add(time.Duration(s.TimeoutMS) * time.Millisecond)
}

func (Start) command()     {}
func (Vanish) command()    {}
func (Cancel) command()    {}
func (End) command()       {}
func (AllowPush) command() {}

// Decide returns the events cmd causes in state s, or an error wrapping
// events.ErrNotFound (any command but Start on a run never started) or
// events.ErrRejected that says why cmd is refused:
//   - Start: a run that exists, or a spec with a missing or malformed
//     field (workspace, command, argv, mode, timeout ≤ 0, commit, tree,
//     fingerprint, trigger, by, runner);
//   - Cancel: a run that has ended, a second cancel, no By;
//   - End: a run that has ended; a status that is not passed, failed,
//     error or cancelled; passed with a non-zero exit status or timed
//     out; timed out with any status but failed; failed with exit status
//     0 and no timeout; error without a reason;
//   - Vanish: a run that has ended, no evidence, a decision time before
//     the run's deadline plus the grace;
//   - AllowPush: a run that has not passed, one that judged a work tree
//     that was not clean, no refs, a ref whose local commit is not the
//     run's (a deleted ref, 40 zeros, included), no remote.
//
// s is not modified.
func Decide(s State, cmd Command) (events.Decision, error) {
	if _, ok := cmd.(Start); !ok && !s.Exists() {
		return nil, fmt.Errorf("check run %s: %w", s.ID, events.ErrNotFound)
	}
	switch c := cmd.(type) {
	case Start:
		if s.Exists() {
			return nil, fmt.Errorf("start check run %s: %w: it exists (status %s)", s.ID, events.ErrRejected, s.Status)
		}
		if err := validSpec(c.Spec); err != nil {
			return nil, fmt.Errorf("start check run %s: %w: %v", s.ID, events.ErrRejected, err)
		}
		sp := c.Spec
		sp.Argv = slices.Clone(sp.Argv)
		return events.One(sp, c.At, c.Cause), nil
	case Cancel:
		if c.By == "" {
			return nil, fmt.Errorf("cancel check run %s: %w: no one asked (By)", s.ID, events.ErrRejected)
		}
		if s.Ended() {
			return nil, fmt.Errorf("cancel check run %s: %w: it has ended (%s)", s.ID, events.ErrRejected, s.Status)
		}
		if s.CancelBy != "" {
			return nil, fmt.Errorf("cancel check run %s: %w: %s asked already", s.ID, events.ErrRejected, s.CancelBy)
		}
		return events.One(events.CheckCancelRequested{By: c.By, Reason: c.Reason}, c.At, c.Cause), nil
	case End:
		if s.Ended() {
			return nil, fmt.Errorf("end check run %s: %w: it has ended (%s)", s.ID, events.ErrRejected, s.Status)
		}
		if err := validVerdict(c.Verdict); err != nil {
			return nil, fmt.Errorf("end check run %s: %w: %v", s.ID, events.ErrRejected, err)
		}
		return events.One(c.Verdict, c.At, c.Cause), nil
	case Vanish:
		if s.Ended() {
			return nil, fmt.Errorf("end check run %s: %w: it has ended (%s)", s.ID, events.ErrRejected, s.Status)
		}
		if c.Evidence == "" || c.Grace < 0 {
			return nil, fmt.Errorf("end check run %s: %w: a vanished runner needs evidence and a grace of 0 or more", s.ID, events.ErrRejected)
		}
		by := s.Deadline().Add(c.Grace)
		if c.At.Before(by) {
			return nil, fmt.Errorf("end check run %s: %w: its runner may still record a verdict until %s (start %s, timeout %s, grace %s)",
				s.ID, events.ErrRejected, by.Format(time.RFC3339), s.StartedAt.Format(time.RFC3339), time.Duration(s.TimeoutMS)*time.Millisecond, c.Grace)
		}
		v := events.CheckEnded{Status: events.CheckError, ExitCode: -1, DurationMS: c.At.Sub(s.StartedAt).Milliseconds(),
			Reason: fmt.Sprintf("%sno verdict by %s (start %s, timeout %s, grace %s): %s", VanishedPrefix, by.Format(time.RFC3339),
				s.StartedAt.Format(time.RFC3339), time.Duration(s.TimeoutMS)*time.Millisecond, c.Grace, c.Evidence)}
		return events.One(v, c.At, c.Cause), nil
	case AllowPush:
		if s.Status != events.CheckPassed {
			return nil, fmt.Errorf("push on check run %s: %w: it is %s, not passed", s.ID, events.ErrRejected, s.Status)
		}
		if !s.Clean {
			return nil, fmt.Errorf("push on check run %s: %w: it judged a work tree with uncommitted changes, not commit %s alone", s.ID, events.ErrRejected, s.Commit)
		}
		if c.Remote == "" || len(c.Refs) == 0 {
			return nil, fmt.Errorf("push on check run %s: %w: no remote or no refs", s.ID, events.ErrRejected)
		}
		for _, r := range c.Refs {
			if r.LocalSHA != s.Commit {
				return nil, fmt.Errorf("push on check run %s: %w: %s pushes commit %s, the run judged %s", s.ID, events.ErrRejected, r.LocalRef, r.LocalSHA, s.Commit)
			}
		}
		return events.One(events.CheckPushAllowed{Remote: c.Remote, Refs: slices.Clone(c.Refs), Reused: c.Reused}, c.At, c.Cause), nil
	default:
		return nil, fmt.Errorf("%w: unknown command %T", events.ErrRejected, cmd)
	}
}

// validSpec reports what is wrong with a run's spec, or nil.
func validSpec(sp events.CheckStarted) error {
	switch {
	case events.ValidID(sp.Workspace) != nil:
		return fmt.Errorf("workspace %q", sp.Workspace)
	case strings.TrimSpace(sp.Command) == "" || len(sp.Argv) == 0 || sp.Argv[0] == "":
		return fmt.Errorf("no command")
	case sp.Mode != events.ModeReadOnly && sp.Mode != events.ModeWorkspaceWrite:
		return fmt.Errorf("mode %q: want %s or %s", sp.Mode, events.ModeReadOnly, events.ModeWorkspaceWrite)
	case sp.TimeoutMS <= 0:
		return fmt.Errorf("timeout %d ms: want more than 0", sp.TimeoutMS)
	case sp.Commit != "" && !isHex(sp.Commit, 40) && !isHex(sp.Commit, 64):
		return fmt.Errorf("commit %q: want 40 or 64 hex digits", sp.Commit)
	case !strings.HasPrefix(sp.Tree, "sha256:") || !isHex(sp.Tree[len("sha256:"):], 64):
		return fmt.Errorf("tree %q: want sha256: and 64 hex digits", sp.Tree)
	case sp.Fingerprint != sp.Commit+":"+sp.Tree:
		return fmt.Errorf("fingerprint %q is not <commit>:<tree>", sp.Fingerprint)
	case sp.Trigger != TriggerPush && sp.Trigger != TriggerManual:
		return fmt.Errorf("trigger %q: want %s or %s", sp.Trigger, TriggerPush, TriggerManual)
	case sp.By == "" || sp.Runner == "":
		return fmt.Errorf("by %q and runner %q are required", sp.By, sp.Runner)
	}
	return nil
}

// validVerdict reports a verdict that contradicts itself, or nil.
func validVerdict(v events.CheckEnded) error {
	switch v.Status {
	case events.CheckPassed:
		if v.ExitCode != 0 || v.TimedOut || v.Signal != "" {
			return fmt.Errorf("passed with exit status %d, signal %q, timed out %t", v.ExitCode, v.Signal, v.TimedOut)
		}
	case events.CheckFailed:
		if v.ExitCode == 0 && !v.TimedOut && v.Signal == "" {
			return fmt.Errorf("failed with exit status 0")
		}
	case events.CheckError:
		if v.Reason == "" {
			return fmt.Errorf("error without a reason")
		}
	case events.CheckCancelled:
	default:
		return fmt.Errorf("status %q: want passed, failed, error or cancelled", v.Status)
	}
	if v.TimedOut && v.Status != events.CheckFailed {
		return fmt.Errorf("timed out yet %s: a run killed at its timeout is failed", v.Status)
	}
	if v.DurationMS < 0 || v.OutputBytes < 0 || len(v.OutputTail) > events.CheckTailBytes {
		return fmt.Errorf("duration %d ms, output %d bytes, tail %d bytes (cap %d)", v.DurationMS, v.OutputBytes, len(v.OutputTail), events.CheckTailBytes)
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Evolve returns s after e. It only applies facts and never fails:
// events of other aggregates leave s unchanged. s is not modified.
func Evolve(s State, e events.Envelope) State {
	if e.Agg.Kind != events.KindCheck {
		return s
	}
	s.ID, s.Ver = e.Agg.ID, e.Ver
	switch d := e.Data.(type) {
	case events.CheckStarted:
		s.Status = events.CheckRunning
		s.CheckRunSpec = d.CheckRunSpec
		s.Argv = slices.Clone(d.Argv)
		s.StartedAt = e.At
	case events.CheckCancelRequested:
		s.CancelBy = d.By
	case events.CheckEnded:
		s.Status = d.Status
		code := d.ExitCode
		s.ExitCode = &code
		s.Signal, s.TimedOut, s.Reason = d.Signal, d.TimedOut, d.Reason
		s.DurationMS, s.OutputBytes, s.OutputTail = d.DurationMS, d.OutputBytes, d.OutputTail
		s.EndedAt = e.At
	case events.CheckPushAllowed:
		s.Pushes = append(slices.Clone(s.Pushes), Push{Remote: d.Remote, Refs: slices.Clone(d.Refs), Reused: d.Reused, At: e.At})
	}
	return s
}
