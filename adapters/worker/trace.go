package worker

import (
	"sync/atomic"
	"time"
)

// Stage is a point on a command's way through the worker that takes it,
// as SetTrace reports it. The stages of one command come in this order;
// a command refused or lost on the way stops reporting where it left.
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
	// StageProcess: the process runs (sandbox.Start returned and, in a
	// restricted mode, the boundary was released).
	StageProcess
	// StageOutput: the first chunk of the command's output was read.
	StageOutput
	// StageExit: the process has exited and all its output was read.
	StageExit
	// StageExited: command.exited is stored.
	StageExited
	numStages
)

var stageNames = [numStages]string{"delivered", "admitted", "started", "process", "output", "exit", "exited"}

// String returns the stage's name, e.g. "delivered".
func (s Stage) String() string {
	if s < numStages {
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

// mark reports stage s of command id to the observer, if any.
func mark(id string, s Stage) {
	if fn := trace.Load(); fn != nil {
		(*fn)(id, s, time.Now())
	}
}
