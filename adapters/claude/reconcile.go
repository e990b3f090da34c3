package claude

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

// Reconcile looks at session agg once at time now: when the session has
// an agent process, check reports whether it still runs; abandonAfter
// (0: never) is how long a session without a known process may go
// unobserved before its open entries are marked stale. What it saw is an
// events.Tick; when session.Decide finds that the tick means something
// (an agent_gone end, stale marks), the tick is appended as a
// TickObserved with those decisions in one batch, so replay --rederive
// reproduces them. A tick that decides nothing appends nothing (Appended
// is zero). check may run more than once (once per optimistic-concurrency
// attempt). Errors: the log's.
func (in *Ingester) Reconcile(ctx context.Context, agg events.Aggregate, now time.Time, abandonAfter time.Duration, check func(events.Process) events.ProcessCheck) (events.Appended, session.State, error) {
	now = now.UTC().Truncate(time.Microsecond)
	return in.x.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		if !s.Exists() || s.Phase == events.PhaseEnded {
			return nil, nil
		}
		t := events.Tick{Now: now, LastObserved: s.ObservedAt, AbandonAfter: abandonAfter.Milliseconds()}
		if s.AgentProcess != nil && check != nil {
			c := check(*s.AgentProcess)
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
	})
}
