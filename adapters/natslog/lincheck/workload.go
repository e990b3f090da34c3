package lincheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// Workload is one randomized multi-writer history: each client runs Ops
// operations on a few session aggregates of its own history, each a load
// or an append whose expected sequence is what that client last saw of
// the aggregate (often stale, so appends conflict).
type Workload struct {
	// Clients holds one log per client, e.g. each on its own connection
	// to a different node; one log may appear more than once.
	Clients []events.Log
	// Final reads the final state; Clients[0] if nil.
	Final events.Log
	// Prefix names this history's aggregates: session <Prefix>-<i>.
	Prefix string
	// Aggs is the number of aggregates (≥ 1), Ops the operations per
	// client, Seed the random source's seed.
	Aggs, Ops int
	Seed      uint64
	// OpTimeout bounds each operation; an append that runs out is
	// Unknown (or Failed if not sent).
	OpTimeout time.Duration
	// Pause, when not nil, is called between a client's operations
	// (e.g. to wait while a fault is injected). It may be nil.
	Pause func(ctx context.Context)
}

// Run runs w's clients concurrently and returns the recorder of their
// operations once all have stopped.
func (w Workload) Run(ctx context.Context) *Recorder {
	reg := events.NewRegistry()
	aggs := w.aggs()
	rec := New()
	var wg sync.WaitGroup
	for c, l := range w.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, rec, reg, c, l, aggs)
		}()
	}
	wg.Wait()
	return rec
}

// FinalState loads each of w's aggregates from w.Final (Clients[0] if
// nil), retrying every 200 ms until it succeeds or ctx ends (a cluster
// may be electing a leader). Call it once every fault has healed, so that
// no append is still in flight.
func (w Workload) FinalState(ctx context.Context) (Final, error) {
	final := w.Final
	if final == nil {
		final = w.Clients[0]
	}
	for {
		f, err := LoadFinal(ctx, final, w.aggs())
		if err == nil {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w Workload) aggs() []events.Aggregate {
	aggs := make([]events.Aggregate, w.Aggs)
	for i := range aggs {
		aggs[i] = events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("%s-%d", w.Prefix, i)}
	}
	return aggs
}

// view is what one client last saw of an aggregate.
type view struct{ last, ver uint64 }

func (w Workload) client(ctx context.Context, rec *Recorder, reg *events.Registry, c int, l events.Log, aggs []events.Aggregate) {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c)))
	seen := make([]view, len(aggs))
	for range w.Ops {
		if ctx.Err() != nil {
			return
		}
		if w.Pause != nil {
			w.Pause(ctx)
		}
		i := rng.IntN(len(aggs))
		agg := aggs[i]
		octx, cancel := context.WithTimeout(ctx, w.OpTimeout)
		if rng.IntN(3) == 0 {
			recs, last, err := rec.Load(octx, c, l, agg)
			if err == nil {
				seen[i] = view{last: last, ver: uint64(len(recs))}
			}
			cancel()
			continue
		}
		n := 1 + rng.IntN(3)
		b := events.Batch{Agg: agg, Expect: seen[i].last}
		for k := range n {
			v := seen[i].ver + 1 + uint64(k)
			b.Events = append(b.Events, SessionEvent(reg, agg, v, "lincheck", w.Prefix))
		}
		app, err := rec.Append(octx, c, l, b)
		cancel()
		if err == nil && app.Last != 0 {
			seen[i] = view{last: app.Last, ver: seen[i].ver + uint64(n)}
		}
	}
}

// SessionEvent returns the event of session agg at version ver (from 1)
// that a workload appends: its start at 1, else an activity change to
// "tool:<ver>"; with a new id, dated now (µs, as stored), caused by the
// CLI event named event with reference ref.
func SessionEvent(reg *events.Registry, agg events.Aggregate, ver uint64, event, ref string) events.Envelope {
	var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:%d", ver)}
	if ver == 1 {
		p = events.SessionStarted{Agent: "cli", Cwd: "/work"}
	}
	e := reg.New(p)
	e.ID, e.Agg, e.Ver = ulid.Make(), agg, ver
	e.At = time.Now().UTC().Truncate(time.Microsecond)
	e.Cause = &events.Cause{Kind: "cli", Event: event, Ref: ref}
	return e
}
