package natscluster

import (
	"testing"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/events"
)

// An aggregate loaded right after an append, through another node, holds
// that append: on an R3 stream every replica answers direct gets, and a
// follower can answer before it has applied what the leader acknowledged,
// so the log loads from the leader there.
func TestReadYourWritesAcrossNodes(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	reg := events.NewRegistry()
	w := e.openLog(e.connectURL("writer", e.c.Nodes[0].URL()), reg)
	var readers []*natslog.Log
	for _, nd := range e.c.Nodes[1:] {
		readers = append(readers, e.openLog(e.connectURL("reader", nd.URL()), reg))
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "ryw-1"}
	var expect uint64
	for i := range 200 {
		ev := lincheck.SessionEvent(reg, agg, uint64(i+1), "ryw", "t")
		app, err := w.Append(t.Context(), events.Batch{Agg: agg, Expect: expect, Events: []events.Envelope{ev}})
		if err != nil {
			t.Fatal(err)
		}
		before := expect
		expect = app.Last
		r := readers[i%len(readers)]
		_, last, err := r.LoadAfter(t.Context(), agg, before)
		if err != nil {
			t.Fatal(err)
		}
		if last != app.Last {
			t.Fatalf("append %d acknowledged at seq %d; a load through node %d right after ends at %d", i+1, app.Last, i%len(readers)+2, last)
		}
		if les, err := r.LastEventSeq(t.Context()); err != nil || les != app.Last {
			t.Fatalf("append %d at seq %d; LastEventSeq through node %d: %d, %v", i+1, app.Last, i%len(readers)+2, les, err)
		}
	}
}
