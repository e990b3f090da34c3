package execsock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Stage is a point on an exec's way through the server that serves it
// on its socket, as SetTrace reports it. The stages of one exec come in
// this order; an exec refused on the way stops reporting where it left,
// and one that needs no journal settle skips StageSettled.
type Stage uint8

// The stages a served exec reports.
const (
	// StageAccepted: the server accepted the connection.
	StageAccepted Stage = iota
	// StageRead: the peer's credentials are checked and the request
	// line is read and decoded.
	StageRead
	// StageParsed: exec's arguments are parsed and checked, the actor
	// is named from the peer's uid.
	StageParsed
	// StageSettled: the hooks the server took before the exec are in
	// the log (only when the session was not found at first).
	StageSettled
	// StageResolved: the session id is resolved.
	StageResolved
	// StageSubmit: the request is built; next the server's answers it
	// needs (session, workspace, a live worker, active commands) are
	// asked for, and it is decided and appended.
	StageSubmit
	// StageSeen: the exec saw the command's end (or its wait expired).
	StageSeen
	// StageAnswered: the exit status frame is written.
	StageAnswered
	// NumStages is the number of stages.
	NumStages
)

var stageNames = [NumStages]string{"accepted", "read", "parsed", "settled", "resolved", "submit", "seen", "answered"}

// String returns the stage's name, e.g. "accepted".
func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "unknown"
}

// TraceFunc observes the stage s of the exec of command id, reached at
// at (the server's monotonic clock). Stages reached before the command
// id was known (parsed from the request's arguments) are reported once it
// is. It runs on the exec's goroutines: it must be quick and safe for
// concurrent use.
type TraceFunc func(id string, s Stage, at time.Time)

// trace is the observer SetTrace installed; nil: none.
var trace atomic.Pointer[TraceFunc]

// SetTrace makes fn the observer of every stage of every exec served in
// this process from now on; nil removes it. It is how `logbook bench`
// breaks a command's time down, with serve running in its own process;
// without an observer a stage costs one atomic load.
func SetTrace(fn TraceFunc) {
	if fn == nil {
		trace.Store(nil)
		return
	}
	trace.Store(&fn)
}

// tracer collects one exec's stages until its command id is known.
type tracer struct {
	fn    TraceFunc
	mu    sync.Mutex
	id    string
	early [NumStages]time.Time
}

type tracerKey struct{}

// Traced returns ctx carrying the trace of one served exec when an
// observer is installed (SetTrace), else ctx itself. The server calls it
// once per connection, before Mark.
func Traced(ctx context.Context) context.Context {
	fn := trace.Load()
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, tracerKey{}, &tracer{fn: *fn})
}

// Mark reports stage s of the exec that ctx (from Traced) traces, now:
// to the observer once the exec's command id is known (TraceID), kept
// until then. Without a trace in ctx it does nothing.
func Mark(ctx context.Context, s Stage) {
	t, _ := ctx.Value(tracerKey{}).(*tracer)
	if t == nil || s >= NumStages {
		return
	}
	at := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.id == "" {
		t.early[s] = at
		return
	}
	t.fn(t.id, s, at)
}

// TraceID names the command of the exec ctx traces (Traced) and reports
// the stages marked so far; later ones are reported as they are marked.
// Without a trace in ctx, or once named, it does nothing.
func TraceID(ctx context.Context, id string) {
	t, _ := ctx.Value(tracerKey{}).(*tracer)
	if t == nil || id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.id != "" {
		return
	}
	t.id = id
	for s, at := range t.early {
		if !at.IsZero() {
			t.fn(id, Stage(s), at)
		}
	}
}
