package ingest

import (
	"context"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// ParserTick names the reconciler's observations and their version.
const ParserTick = "logbook-reconciler/1"

// ActorReconciler is the actor stamped on a reconciler tick and its
// decisions.
const ActorReconciler = "logbook-reconciler"

// Quiet is how long after the last observation a session took in (its
// ReceivedAt, by the appending host's clock) a tick marks nothing stale:
// lines still arriving, as from an import in progress, are not silence.
const Quiet = 2 * time.Second

// QuietImporting is Quiet for a session an import is under way in (its
// last line taken in says the import read on past it: State.Importing):
// the import may pause between its runs for longer than Quiet on a loaded
// host, and its next run may hold the results of the entries it left
// open. An import that stopped for good (killed) leaves the session to
// be marked once QuietImporting has passed.
const QuietImporting = 2 * time.Minute

// quietFor returns the quiet period a tick on s waits after its last
// receipt: QuietImporting while an import is under way, else Quiet.
func quietFor(s session.State) time.Duration {
	if s.Importing {
		return QuietImporting
	}
	return Quiet
}

// Reconcile looks at session agg once at time now: when the session has
// an agent process (or, before its hooks agree on one, the process its
// newest hook found: session.State.HookProcess), check reports whether
// it still runs; abandonAfter
// (0: never) is how long a session without a known process may go
// unobserved before its open entries are marked stale; nothing is marked
// stale within Quiet of the session's last receipt (QuietImporting while
// an import is under way). What it saw is an
// events.Tick; when session.Decide finds that the tick means something
// (an agent_gone end, stale marks), the tick is appended as a
// TickObserved with those decisions in one batch, so replay --rederive
// reproduces them. A tick that decides nothing appends nothing (Appended
// is zero). check may run more than once (once per optimistic-concurrency
// attempt). Errors: the log's.
func (in *Ingester) Reconcile(ctx context.Context, agg events.Aggregate, now time.Time, abandonAfter time.Duration, check func(events.Process) events.ProcessCheck) (events.Appended, session.State, error) {
	now = now.UTC().Truncate(time.Microsecond)
	return in.x.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		return in.tick(s, agg, now, abandonAfter, check)
	})
}

// WouldReconcile reports whether Reconcile at now would append anything
// to a session in state s, deciding on s alone: no log read, no append.
// A reconciler looks at a projected state with it first, and calls
// Reconcile (which decides again on the log's state) only when it says
// yes, so that a pass over thousands of quiet sessions reads none of
// them from the log. check may run. Errors: session.Decide's.
func (in *Ingester) WouldReconcile(s session.State, now time.Time, abandonAfter time.Duration, check func(events.Process) events.ProcessCheck) (bool, error) {
	agg := events.Aggregate{Kind: events.KindSession, ID: s.ID}
	decs, err := in.tick(s, agg, now.UTC().Truncate(time.Microsecond), abandonAfter, check)
	return len(decs) > 0, err
}

// tick is the reconciler's decision on session agg in state s at now:
// the tick observation followed by its decisions, or nothing when the
// tick decides nothing.
func (in *Ingester) tick(s session.State, agg events.Aggregate, now time.Time, abandonAfter time.Duration, check func(events.Process) events.ProcessCheck) (events.Decision, error) {
	if !s.Exists() || s.Phase == events.PhaseEnded {
		return nil, nil
	}
	t := events.Tick{
		Now: now, LastObserved: s.ObservedAt, LastRef: s.ObservedRef, LastReceived: s.ReceivedAt,
		AbandonAfter: abandonAfter.Milliseconds(), QuietMS: quietFor(s).Milliseconds(),
	}
	if !s.ClockOffsetAt.IsZero() {
		t.ClockOffsetMS = s.ClockOffsetMS
	}
	switch {
	case check == nil:
	case s.AgentProcess != nil:
		c := check(*s.AgentProcess)
		t.Check = &c
	case s.HookProcess != nil:
		// No agent agreed on yet: the process the newest hook found is
		// checked, whose life holds off a stale mark (never an
		// agent_gone end).
		p := *s.HookProcess
		p.Chain = nil
		c := check(p)
		t.Check = &c
	}

	obs := in.reg.New(events.TickObserved{})
	obs.ID, obs.Agg, obs.At, obs.Actor = in.x.IDs(), agg, now, ActorReconciler
	obs.Data = events.TickObserved{Observation: events.Observation{
		Key: "tick:" + obs.ID.String(), Parser: ParserTick, Kind: "tick", Tick: &t,
	}}
	decs, err := session.Decide(s, session.Observe{Obs: obs})
	if err != nil || len(decs) == 0 {
		return nil, err
	}
	for i := range decs {
		decs[i].Actor = ActorReconciler
	}
	return append([]events.Envelope{obs}, decs...), nil
}
