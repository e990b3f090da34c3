package natslog

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// call is one Append call of TestLog_GroupCommitContended, as its
// caller saw it.
type call struct {
	writer     int
	b          events.Batch
	app        events.Appended
	err        error
	start, end time.Time
	resend     *call // for a re-send: the call that stored b first
}

// TestLog_GroupCommitContended runs many concurrent writers through the
// committer, several of them racing on each of a few shared aggregates
// (so merged batches carry decisions that conflict and must be split),
// the rest on aggregates of their own; decisions hold one to three
// events, and some committed ones are sent again. Afterwards the log
// must hold exactly the decisions their callers were told were stored,
// each where its Appended says, per aggregate in the order of its
// expected sequences, and nothing of a refused one. Every refusal must be
// a conflict that another decision's success explains: one that won the
// same expected sequence and began before the loser's answer (a
// linearizable compare-and-set per aggregate). A re-sent decision must
// answer Duplicate with the first copy's sequences.
func TestLog_GroupCommitContended(t *testing.T) {
	t.Parallel() // servers of its own; it mostly waits on fsyncs
	for _, mergeMin := range []int{1, DefaultMergeMin} {
		t.Run(fmt.Sprintf("MergeMin=%d", mergeMin), func(t *testing.T) {
			testGroupCommitContended(t, mergeMin)
		})
	}
}

func testGroupCommitContended(t *testing.T, mergeMin int) {
	const (
		shared   = 6  // aggregates written by several writers
		racers   = 48 // writers on the shared aggregates, 8 on each
		loners   = 16 // writers on an aggregate of their own
		attempts = 8  // Append calls per writer, re-sends included
	)
	s := startServer(t, t.TempDir())
	l := openLogWith(t, s, Config{MergeMin: mergeMin})
	reg := events.NewRegistry()

	aggOf := func(w int) events.Aggregate {
		if w < racers {
			return session(fmt.Sprintf("shared%d", w%shared))
		}
		return session(fmt.Sprintf("own%d", w))
	}
	logs := make([][]*call, racers+loners)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range racers + loners {
		wg.Go(func() {
			<-start
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			agg := aggOf(w)
			var expect, ver uint64 // what this writer believes agg holds
			do := func(a *call) {
				a.writer = w
				a.start = time.Now()
				a.app, a.err = l.Append(t.Context(), a.b)
				a.end = time.Now()
				logs[w] = append(logs[w], a)
			}
			for len(logs[w]) < attempts {
				a := &call{b: decision(reg, agg, expect, ver+1, 1+rng.IntN(3)*rng.IntN(2))}
				do(a)
				switch {
				case a.err == nil:
					expect, ver = a.app.Last, ver+uint64(len(a.b.Events))
					if rng.IntN(4) == 0 && len(logs[w]) < attempts {
						do(&call{b: a.b, resend: a})
					}
				case errors.Is(a.err, events.ErrConflict):
					recs, last, err := l.Load(t.Context(), agg)
					if err != nil {
						t.Errorf("writer %d: Load: %v", w, err)
						return
					}
					expect, ver = last, uint64(len(recs))
				default:
					return // reported below
				}
			}
		})
	}
	close(start)
	wg.Wait()

	var all []*call
	for _, as := range logs {
		all = append(all, as...)
	}
	won := map[events.Aggregate][]*call{}
	var total uint64
	conflicts := 0
	for _, a := range all {
		switch {
		case a.resend != nil:
			if want := (events.Appended{First: a.resend.app.First, Last: a.resend.app.Last, Duplicate: true}); a.err != nil || a.app != want {
				t.Errorf("writer %d: re-send of %s expect %d = %+v, %v; want %+v", a.writer, a.b.Agg, a.b.Expect, a.app, a.err, want)
			}
		case a.err == nil:
			if a.app.Duplicate || a.app.Last-a.app.First+1 != uint64(len(a.b.Events)) {
				t.Errorf("writer %d: %s expect %d, %d events: Appended %+v", a.writer, a.b.Agg, a.b.Expect, len(a.b.Events), a.app)
			}
			won[a.b.Agg] = append(won[a.b.Agg], a)
			total += uint64(len(a.b.Events))
		case errors.Is(a.err, events.ErrConflict):
			conflicts++
		default:
			t.Errorf("writer %d: %s expect %d: %v; want success or a conflict", a.writer, a.b.Agg, a.b.Expect, a.err)
		}
	}
	if t.Failed() {
		return
	}

	// The log holds exactly the winners, each where its caller was told,
	// chained per aggregate by expected sequence.
	inLog := map[ulid.ULID]bool{}
	for agg, ws := range won {
		slices.SortFunc(ws, func(x, y *call) int { return cmp.Compare(x.app.First, y.app.First) })
		recs, last, err := l.Load(t.Context(), agg)
		if err != nil {
			t.Fatalf("Load(%s): %v", agg, err)
		}
		if last != ws[len(ws)-1].app.Last {
			t.Errorf("%s: last sequence %d, want %d", agg, last, ws[len(ws)-1].app.Last)
		}
		i := 0
		var prev *call
		for _, w := range ws {
			want := uint64(0) // a new aggregate
			if prev != nil {
				want = prev.app.Last
			}
			if w.b.Expect != want {
				t.Errorf("%s: decision at %d expected %d, want %d (the previous decision's last)", agg, w.app.First, w.b.Expect, want)
			}
			if prev != nil && w.end.Before(prev.start) {
				t.Errorf("%s: decision at %d was answered before the one at %d began", agg, w.app.First, prev.app.First)
			}
			for j, e := range w.b.Events {
				if i >= len(recs) {
					t.Fatalf("%s: %d records, the winners hold more", agg, len(recs))
				}
				r := recs[i]
				inLog[r.ID] = true
				if r.ID != e.ID || r.Seq != w.app.First+uint64(j) || r.Ver != uint64(i+1) {
					t.Errorf("%s record %d: id %s seq %d ver %d; want id %s seq %d ver %d", agg, i, r.ID, r.Seq, r.Ver, e.ID, w.app.First+uint64(j), i+1)
				}
				i++
			}
			prev = w
		}
		if i != len(recs) {
			t.Errorf("%s: %d records, the winners hold %d", agg, len(recs), i)
		}
	}
	// Each refusal is explained by a winner of the same expected
	// sequence that began before the refusal was answered.
	for _, a := range all {
		if a.err == nil {
			continue
		}
		i := slices.IndexFunc(won[a.b.Agg], func(x *call) bool { return x.b.Expect == a.b.Expect })
		if i < 0 {
			t.Errorf("writer %d: %s expect %d refused (%v), but no decision with that expectation was stored", a.writer, a.b.Agg, a.b.Expect, a.err)
			continue
		}
		if w := won[a.b.Agg][i]; !w.start.Before(a.end) {
			t.Errorf("writer %d: %s expect %d refused before writer %d's winning append of it began", a.writer, a.b.Agg, a.b.Expect, w.writer)
		}
		for _, e := range a.b.Events {
			if inLog[e.ID] {
				t.Errorf("writer %d: event %s of a refused decision is in the log", a.writer, e.ID)
			}
		}
	}

	if seq := lastSeq(t, l); seq != total {
		t.Errorf("LastSeq = %d, want %d: the events of the winning decisions", seq, total)
	}
	st := l.Stats()
	t.Logf("%d appends, %d conflicts; stats %+v", len(all), conflicts, st)
	if conflicts == 0 {
		t.Errorf("no conflicts among %d racing writers on %d aggregates", racers, shared)
	}
	if st.Merged+st.Pipelined == 0 {
		t.Errorf("Stats = %+v: no decisions were sent together", st)
	}
}
