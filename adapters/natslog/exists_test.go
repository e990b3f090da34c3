package natslog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestLog_AggregateExists: an aggregate with events exists, one without
// (another of its kind, or an id that begins another's) does not, and an
// id that is no single subject token (a wildcard) is refused, not looked
// up as a pattern.
func TestLog_AggregateExists(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	mustAppend(t, l, decision(events.NewRegistry(), session("s12"), 0, 1, 2))
	for id, want := range map[string]bool{"s12": true, "s1": false, "s123": false, "s2": false} {
		got, err := l.AggregateExists(t.Context(), session(id))
		if err != nil || got != want {
			t.Errorf("AggregateExists(session %s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if got, err := l.AggregateExists(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: "s12"}); err != nil || got {
		t.Errorf("AggregateExists(command s12) = %v, %v; want false: only a session s12 has events", got, err)
	}
	for _, id := range []string{"s*", ">", "s1.>"} {
		if got, err := l.AggregateExists(t.Context(), session(id)); !errors.Is(err, events.ErrMalformed) || got {
			t.Errorf("AggregateExists(session %q) = %v, %v; want refused as malformed", id, got, err)
		}
	}
}

// TestLog_NewAggregates: of many aggregates (more than one request's
// subjects, of two kinds), those without a message are returned, in
// order; one with only a message the log leaves out of its loads (a
// stored copy that does not decode) is not new; an invalid one is
// refused.
func TestLog_NewAggregates(t *testing.T) {
	t.Parallel()
	l, srv := newLog(t)
	nc := srv.Conn()
	reg := events.NewRegistry()
	var aggs, want []events.Aggregate
	for i := range 700 {
		agg := session(fmt.Sprintf("n%d", i))
		if i%2 == 1 {
			agg = events.Aggregate{Kind: events.KindCommand, ID: agg.ID}
		}
		aggs = append(aggs, agg)
		switch {
		case i%5 == 0 && i%2 == 0:
			mustAppend(t, l, decision(reg, agg, 0, 1, 1))
		case i == 3:
			// Not an event: the log leaves it out of loads.
			if _, err := nc.Request(agg.Subject(), []byte("not json"), 5*time.Second); err != nil {
				t.Fatal(err)
			}
		default:
			want = append(want, agg)
		}
	}
	got, err := l.NewAggregates(t.Context(), aggs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("NewAggregates: got %d aggregates, want %d (%v…)", len(got), len(want), got[:min(len(got), 5)])
	}
	if _, err := l.NewAggregates(t.Context(), []events.Aggregate{session("ok"), session("s*")}); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("NewAggregates with a wildcard id: %v, want refused as malformed", err)
	}
}

// TestExecutorStateUnlessNew: a session the log holds nothing of is
// given its Init state without a load, and a decision on it appends at
// version 1; once another writer appended to it, the same (now stale)
// answer still leads to a correct decision: the append conflicts and is
// decided again on the log's state. An aggregate that exists is loaded.
func TestExecutorStateUnlessNew(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &loadCounter{Log: l, loads: map[string]int{}}
	reg := events.NewRegistry()
	x := countingExecutor(lc, reg, 0)
	ctx := t.Context()
	n, err := x.StateUnlessNew(ctx, session("u1"), l.AggregateExists)
	if err != nil || n != 0 || lc.loads["u1"] != 0 {
		t.Fatalf("StateUnlessNew(new u1) = %d, %v after %d loads; want 0, nil, no load", n, err, lc.loads["u1"])
	}
	if got := execNext(t, x, reg, "u1"); got != 1 {
		t.Fatalf("decision on new u1: state %d, want 1", got)
	}
	// u2 is found new, then written by another writer before this
	// executor decides on it.
	stale := func(context.Context, events.Aggregate) (bool, error) { return false, nil }
	if n, err := x.StateUnlessNew(ctx, session("u2"), stale); err != nil || n != 0 {
		t.Fatalf("StateUnlessNew(u2) = %d, %v", n, err)
	}
	other := countingExecutor(l, reg, 0)
	execNext(t, other, reg, "u2")
	execNext(t, other, reg, "u2")
	if got := execNext(t, x, reg, "u2"); got != 3 {
		t.Fatalf("decision on u2 found new, written since: state %d, want 3", got)
	}
	recs, _, err := l.Load(ctx, session("u2"))
	if err != nil || len(recs) != 3 || recs[2].Ver != 3 {
		t.Fatalf("u2 holds %d events (%v); want 3, the last at ver 3", len(recs), err)
	}
	// A state cached is not replaced by an answer of "new".
	if n, err := x.StateUnlessNew(ctx, session("u2"), stale); err != nil || n != 3 {
		t.Fatalf("StateUnlessNew(cached u2) = %d, %v; want 3", n, err)
	}
	// An aggregate that exists is read from the log.
	y := countingExecutor(lc, reg, 0)
	if n, err := y.StateUnlessNew(ctx, session("u1"), l.AggregateExists); err != nil || n != 1 || lc.loads["u1"] != 1 {
		t.Fatalf("StateUnlessNew(existing u1) = %d, %v after %d loads; want 1, nil, 1 load", n, err, lc.loads["u1"])
	}
}
