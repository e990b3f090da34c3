package worker

import (
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/sandbox"
)

// Stage is a point on a command's way through the worker that takes it,
// as SetTrace reports it. The stages of one command come in this order,
// except StageAttached, which in a restricted mode comes once bubblewrap
// runs (it builds the boundary meanwhile), and StageOutput, which comes
// whenever the first output does; a command refused or lost on the way
// stops reporting where it left.
type Stage uint8

// The stages a worker reports.
const (
	// StageDelivered: the request came off the workers' consumer.
	StageDelivered Stage = iota
	// StageAdmitted: claimed, loaded and admitted; command.started is
	// decided and appended next.
	StageAdmitted
	// StageStarted: command.started is stored (its optimistic check won).
	StageStarted
	// StageAttached: the command's entry is open on its session (or the
	// session was found ended, or the attach failed).
	StageAttached
	// StagePrepared: the sandbox is ready to fork (sandbox.StepPrepared:
	// spec checked, pipes, cgroup, bubblewrap's arguments).
	StagePrepared
	// StageForked: the process runs its program, bubblewrap in a
	// restricted mode (sandbox.StepForked).
	StageForked
	// StageProcess: the process runs (sandbox.Start returned and, in a
	// restricted mode, the boundary was released).
	StageProcess
	// StageOutput: the first chunk of the command's output was read.
	StageOutput
	// StageExitSeen: the process has exited, not yet reaped
	// (sandbox.StepExitSeen).
	StageExitSeen
	// StageReaped: what was left of its tree is killed and it is
	// reaped, a restricted command's whole sandbox with it
	// (sandbox.StepReaped); what it left on the host goes meanwhile.
	StageReaped
	// StageExit: the process has exited and all its output was read.
	StageExit
	// StageExited: command.exited is stored.
	StageExited
	// NumStages is the number of stages: each is below it.
	NumStages
)

var stageNames = [NumStages]string{"delivered", "admitted", "started", "attached", "prepared", "forked", "process", "output", "exit_seen", "reaped", "exit", "exited"}

// String returns the stage's name, e.g. "delivered".
func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "unknown"
}

// TraceFunc observes one stage of command id, reached at at (the
// worker's monotonic clock). It runs on the worker's goroutines, on the
// command's path: it must be quick and safe for concurrent use.
type TraceFunc func(id string, s Stage, at time.Time)

// trace is the observer SetTrace installed; nil: none.
var trace atomic.Pointer[TraceFunc]

// SetTrace makes fn the observer of every stage of every command the
// workers of this process take, from now on; nil removes it. It is how
// `logbook bench` breaks a command's time down, with serve running in
// its own process; without an observer a stage costs one atomic load.
func SetTrace(fn TraceFunc) {
	if fn == nil {
		trace.Store(nil)
		return
	}
	trace.Store(&fn)
}

// sandboxTrace returns, while an observer is installed, a
// sandbox.Spec.Trace that reports the sandbox's steps of command id as
// its stages; else nil.
func sandboxTrace(id string) func(sandbox.Step, time.Time) {
	if trace.Load() == nil {
		return nil
	}
	return func(s sandbox.Step, at time.Time) {
		st, ok := stepStages[s]
		if fn := trace.Load(); fn != nil && ok {
			(*fn)(id, st, at)
		}
	}
}

// stepStages maps the sandbox's steps onto the stages they are.
var stepStages = map[sandbox.Step]Stage{
	sandbox.StepPrepared: StagePrepared, sandbox.StepForked: StageForked,
	sandbox.StepExitSeen: StageExitSeen, sandbox.StepReaped: StageReaped,
}

// mark reports stage s of command id to the observer, if any.
func mark(id string, s Stage) {
	if fn := trace.Load(); fn != nil {
		(*fn)(id, s, time.Now())
	}
}
