package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

func TestLog_AppendLoadRead(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	s1, w1 := session("s1"), events.Aggregate{Kind: events.KindWorkspace, ID: "w1"}

	b1 := decision(reg, s1, 0, 1, 3)
	a1 := mustAppend(t, l, b1)
	if want := (events.Appended{First: 1, Last: 3}); a1 != want {
		t.Fatalf("first append = %+v, want %+v", a1, want)
	}
	bw := decision(reg, w1, 0, 1, 1)
	aw := mustAppend(t, l, bw)
	b2 := decision(reg, s1, a1.Last, 4, 2)
	a2 := mustAppend(t, l, b2)
	if want := (events.Appended{First: 5, Last: 6}); a2 != want {
		t.Fatalf("second append = %+v, want %+v", a2, want)
	}

	var want []events.Record
	for i, e := range append(b1.Events, b2.Events...) {
		seq := uint64(i + 1)
		if i >= 3 {
			seq++ // the workspace event sits at 4
		}
		want = append(want, events.Record{Seq: seq, Subject: "lb.ev.session.s1", Envelope: e})
	}
	got, last, err := l.Load(t.Context(), s1)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(s1) records (-want +got):\n%s", diff)
	}
	if last != 6 {
		t.Errorf("Load(s1) last = %d, want 6", last)
	}

	got, last, err = l.Load(t.Context(), session("nobody"))
	if err != nil || len(got) != 0 || last != 0 {
		t.Errorf("Load(nobody) = %d records, last %d, %v; want none, 0, nil", len(got), last, err)
	}

	all := readAll(t, l, 0)
	if len(all) != 6 {
		t.Fatalf("Read(0) = %d records, want 6", len(all))
	}
	for i, r := range all {
		if r.Seq != uint64(i+1) {
			t.Errorf("Read(0)[%d].Seq = %d, want %d", i, r.Seq, i+1)
		}
	}
	if diff := cmp.Diff(events.Record{Seq: aw.First, Subject: "lb.ev.workspace.w1", Envelope: bw.Events[0]}, all[3]); diff != "" {
		t.Errorf("Read(0)[3] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[3:], readAll(t, l, 5)); diff != "" {
		t.Errorf("Read(5) (-want +got):\n%s", diff)
	}
	if got := readAll(t, l, 7); len(got) != 0 {
		t.Errorf("Read(7) = %d records, want none", len(got))
	}
	if seq := lastSeq(t, l); seq != 6 {
		t.Errorf("LastSeq = %d, want 6", seq)
	}
}

func TestLog_AppendConflict(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	s1 := session("s1")
	a := mustAppend(t, l, decision(reg, s1, 0, 1, 2))

	for _, expect := range []uint64{0, a.Last - 1, a.Last + 1} {
		var b events.Batch
		if expect == 0 {
			b = decision(reg, s1, 0, 1, 1)
		} else {
			b = decision(reg, s1, expect, 3, 1)
		}
		_, err := l.Append(t.Context(), b)
		if !errors.Is(err, events.ErrConflict) {
			t.Errorf("Append(expect %d) = %v, want ErrConflict", expect, err)
		}
		if !strings.Contains(fmt.Sprint(err), "wrong last sequence") {
			t.Errorf("Append(expect %d) = %v, want the server's cause kept", expect, err)
		}
	}
	if seq := lastSeq(t, l); seq != a.Last {
		t.Errorf("LastSeq after conflicts = %d, want %d", seq, a.Last)
	}
}

func TestLog_AppendInvalid(t *testing.T) {
	t.Parallel()
	reg := events.NewRegistry()
	s1 := session("s1")
	tests := []struct {
		name    string
		batch   func() events.Batch
		wantErr error
		want    string // part of the message
	}{
		{"empty", func() events.Batch { return events.Batch{Agg: s1} }, events.ErrMalformed, "no events"},
		{"zero id", func() events.Batch {
			b := decision(reg, s1, 0, 1, 2)
			b.Events[1].ID = ulid.ULID{}
			return b
		}, events.ErrMalformed, "zero id"},
		{"missing cause", func() events.Batch {
			b := decision(reg, s1, 0, 1, 1)
			e := envelope(reg, s1, 2, events.SessionTransitioned{From: "ready", To: "working"})
			e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse"} // no ref
			b.Events = append(b.Events, e)
			return b
		}, events.ErrMissingCause, "session.transitioned"},
		{"wrong agg", func() events.Batch {
			b := decision(reg, s1, 0, 1, 2)
			b.Events[1].Agg = session("s2")
			return b
		}, events.ErrMalformed, "belongs to session/s2"},
		{"ver not dense", func() events.Batch {
			b := decision(reg, s1, 0, 1, 3)
			b.Events[2].Ver = 4
			return b
		}, events.ErrMalformed, "ver not dense: event 2"},
		{"new aggregate not at ver 1", func() events.Batch { return decision(reg, s1, 0, 2, 1) }, events.ErrMalformed, "needs ver 1"},
		{"ver 1 on old aggregate", func() events.Batch { return decision(reg, s1, 7, 1, 1) }, events.ErrMalformed, "ver 1 needs expect 0"},
		{"repeated id", func() events.Batch {
			b := decision(reg, s1, 0, 1, 2)
			b.Events[1].ID = b.Events[0].ID
			return b
		}, events.ErrMalformed, "share id"},
		{"unknown type", func() events.Batch {
			b := decision(reg, s1, 0, 1, 1)
			b.Events[0].Type = "session.exploded"
			return b
		}, events.ErrUnknownType, "session.exploded"},
		{"bad aggregate id", func() events.Batch {
			b := decision(reg, session("a.b"), 0, 1, 1)
			return b
		}, events.ErrMalformed, `"a.b"`},
		{"over MaxBatch", func() events.Batch { return decision(reg, s1, 0, 1, events.MaxBatch+1) }, events.ErrMalformed, "1001 events"},
	}
	l, _ := newLog(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Append(t.Context(), tt.batch())
			if !errors.Is(err, tt.wantErr) || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("Append = %v, want %v naming %q", err, tt.wantErr, tt.want)
			}
		})
	}
	if seq := lastSeq(t, l); seq != 0 {
		t.Errorf("LastSeq after refused appends = %d, want 0", seq)
	}
	if st := l.Stats(); st.Batches != 0 {
		t.Errorf("Stats().Batches = %d, want 0: nothing may be sent", st.Batches)
	}
}

func TestLog_AppendReadMaxBatch(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	a := mustAppend(t, l, decision(events.NewRegistry(), session("s1"), 0, 1, events.MaxBatch))
	if want := (events.Appended{First: 1, Last: events.MaxBatch}); a != want {
		t.Errorf("Append(%d events) = %+v, want %+v", events.MaxBatch, a, want)
	}
	// Read decodes in chunks on several goroutines; order must hold.
	for i, r := range readAll(t, l, 0) {
		if r.Seq != uint64(i+1) || r.Ver != uint64(i+1) {
			t.Fatalf("Read record %d: seq %d ver %d", i, r.Seq, r.Ver)
		}
	}
	n := 0
	for _, err := range l.Read(t.Context(), 0) {
		if n++; err != nil || n == 300 {
			break
		}
	}
	if n != 300 {
		t.Errorf("loop stopping at 300 ran %d times", n)
	}
	// Load pages through the aggregate 1000 events at a time.
	b := mustAppend(t, l, decision(events.NewRegistry(), session("s1"), a.Last, events.MaxBatch+1, 5))
	recs, last, err := l.Load(t.Context(), session("s1"))
	if err != nil || len(recs) != events.MaxBatch+5 || last != b.Last {
		t.Fatalf("Load = %d records, last %d, %v; want %d, %d", len(recs), last, err, events.MaxBatch+5, b.Last)
	}
	for i, r := range recs {
		if r.Ver != uint64(i+1) {
			t.Fatalf("Load record %d has ver %d", i, r.Ver)
		}
	}
}

func TestLog_AppendDuplicate(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	s1 := session("s1")
	mustAppend(t, l, decision(reg, session("s0"), 0, 1, 2)) // so s1 does not start at 1
	b := decision(reg, s1, 0, 1, 3)
	first := mustAppend(t, l, b)
	mustAppend(t, l, decision(reg, s1, first.Last, 4, 1)) // s1 moved on since

	again := mustAppend(t, l, b)
	want := events.Appended{First: first.First, Last: first.Last, Duplicate: true}
	if again != want {
		t.Errorf("re-Append = %+v, want %+v", again, want)
	}
	if seq := lastSeq(t, l); seq != 6 {
		t.Errorf("LastSeq after re-append = %d, want 6", seq)
	}

	// A one-event decision goes out as a plain publish; its duplicate is
	// recognised the same way.
	one := decision(reg, s1, 6, 5, 1)
	firstOne := mustAppend(t, l, one)
	mustAppend(t, l, decision(reg, s1, firstOne.Last, 6, 1))
	want = events.Appended{First: firstOne.First, Last: firstOne.Last, Duplicate: true}
	if again := mustAppend(t, l, one); again != want {
		t.Errorf("re-Append of one event = %+v, want %+v", again, want)
	}
	if seq := lastSeq(t, l); seq != 8 {
		t.Errorf("LastSeq after re-append = %d, want 8", seq)
	}
}

func TestLog_AppendCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Append(ctx, decision(events.NewRegistry(), session("s1"), 0, 1, 1))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("Append(cancelled ctx) = %v, want context.Canceled, not ErrUnknownOutcome", err)
	}
}

func TestLog_Close(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := l.Append(t.Context(), decision(events.NewRegistry(), session("s1"), 0, 1, 1))
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestLog_GroupCommit runs 64 writers on distinct aggregates; each chains
// its own decisions by Expect. Every append must succeed, versions must be
// dense per aggregate, and the committer must have merged decisions.
func TestLog_GroupCommit(t *testing.T) {
	t.Parallel()
	const writers, rounds = 64, 10
	for _, mergeMin := range []int{1, DefaultMergeMin} {
		t.Run(fmt.Sprintf("MergeMin=%d", mergeMin), func(t *testing.T) {
			testGroupCommit(t, writers, rounds, mergeMin)
		})
	}
}

func testGroupCommit(t *testing.T, writers, rounds, mergeMin int) {
	s := startServer(t, t.TempDir())
	l := openLogWith(t, s, Config{MergeMin: mergeMin})
	reg := events.NewRegistry()
	got := make([][]events.Appended, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			agg := session(fmt.Sprintf("w%d", w))
			var last uint64
			for v := range rounds {
				a, err := l.Append(t.Context(), decision(reg, agg, last, uint64(v+1), 1))
				if err != nil {
					t.Errorf("writer %d round %d: %v", w, v, err)
					return
				}
				got[w] = append(got[w], a)
				last = a.Last
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	for w := range writers {
		recs, last, err := l.Load(t.Context(), session(fmt.Sprintf("w%d", w)))
		if err != nil {
			t.Fatalf("Load(w%d): %v", w, err)
		}
		if len(recs) != rounds || last != got[w][rounds-1].Last {
			t.Fatalf("Load(w%d) = %d records, last %d; want %d, %d", w, len(recs), last, rounds, got[w][rounds-1].Last)
		}
		for i, r := range recs {
			if r.Ver != uint64(i+1) || r.Seq != got[w][i].First {
				t.Errorf("w%d record %d: ver %d seq %d, want ver %d seq %d", w, i, r.Ver, r.Seq, i+1, got[w][i].First)
			}
		}
	}
	if seq := lastSeq(t, l); seq != uint64(writers*rounds) {
		t.Errorf("LastSeq = %d, want %d", seq, writers*rounds)
	}
	st := l.Stats()
	t.Logf("stats: %+v", st)
	if st.Decisions != uint64(writers*rounds) || st.Merged+st.Pipelined == 0 || mergeMin == 1 && st.Batches >= st.Decisions {
		t.Errorf("Stats = %+v, want %d decisions, some sent together (in fewer batches when MergeMin is 1)", st, writers*rounds)
	}
}

// TestLog_MergedBatchMemberFailsAlone drives the committer's commit step
// directly with one merged batch of five decisions: a conflict and a
// re-sent committed batch among them. Only those two may fail.
func TestLog_MergedBatchMemberFailsAlone(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	a0 := mustAppend(t, l, decision(reg, session("m0"), 0, 1, 1))
	old := decision(reg, session("m4"), 0, 1, 2)
	a4 := mustAppend(t, l, old)
	before := l.Stats()

	batches := []events.Batch{
		decision(reg, session("m1"), 0, 1, 2),
		decision(reg, session("m0"), a0.Last+5, 2, 1), // stale expect: conflict
		decision(reg, session("m2"), 0, 1, 1),
		old, // committed before: duplicate
		decision(reg, session("m3"), 0, 1, 3),
	}
	var reqs []*request
	for _, b := range batches {
		r, err := newRequest(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.state.Store(taken)
		reqs = append(reqs, r)
	}
	l.commit(reqs)
	outs := make([]outcome, len(reqs))
	for i, r := range reqs {
		outs[i] = <-r.done
	}

	if !errors.Is(outs[1].err, events.ErrConflict) {
		t.Errorf("stale member: %+v, want ErrConflict", outs[1])
	}
	if want := (events.Appended{First: a4.First, Last: a4.Last, Duplicate: true}); outs[3].err != nil || outs[3].app != want {
		t.Errorf("re-sent member: %+v, want %+v", outs[3], want)
	}
	for _, i := range []int{0, 2, 4} {
		o := outs[i]
		if o.err != nil {
			t.Errorf("member %d (%s): %v", i, batches[i].Agg, o.err)
			continue
		}
		recs, last, err := l.Load(t.Context(), batches[i].Agg)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(batches[i].Events) || recs[0].Seq != o.app.First || last != o.app.Last {
			t.Errorf("member %d: Load = %d records, first %d, last %d; appended %+v", i, len(recs), recs[0].Seq, last, o.app)
		}
	}
	st := l.Stats()
	if st.Split-before.Split != 1 || st.Batches-before.Batches != uint64(1+len(reqs)) {
		t.Errorf("Stats went from %+v to %+v, want one split and %d sends", before, st, 1+len(reqs))
	}
	if seq := lastSeq(t, l); seq != a4.Last+6 {
		t.Errorf("LastSeq = %d, want %d", seq, a4.Last+6)
	}
}

func TestPick(t *testing.T) {
	t.Parallel()
	reg := events.NewRegistry()
	req := func(id string, n int) *request {
		r, err := newRequest(decision(reg, session(id), 0, 1, n), nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a1, b, a2, c := req("a", 1), req("b", 2), req("a", 1), req("c", 3)
	gone := req("d", 1)
	gone.state.Store(cancelled)
	big, small := req("big", events.MaxBatch-1), req("e", 1)
	// Decisions whose bodies are each more than half of MaxMergeBytes.
	heavy := func(id string) *request {
		r := req(id, 1)
		r.size = MaxMergeBytes/2 + 1
		return r
	}
	h1, h2 := heavy("h1"), heavy("h2")

	tests := []struct {
		name    string
		pending []*request
		flying  map[string]int
		batch   []*request
		rest    []*request
	}{
		{"one per aggregate", []*request{a1, b, a2, c, gone}, nil, []*request{a1, b, c}, []*request{a2}},
		{"no overtaking past a full batch", []*request{b, big, small}, nil, []*request{b}, []*request{big, small}},
		{"none of an aggregate in flight", []*request{a1, b, c}, map[string]int{a1.subject: 1}, []*request{b, c}, []*request{a1}},
		{"bodies of at most MaxMergeBytes merged", []*request{h1, b, h2, c}, nil, []*request{h1, b}, []*request{h2, c}},
		{"a heavy decision alone", []*request{h2}, nil, []*request{h2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range tt.pending {
				if r != gone {
					r.state.Store(queued)
				}
			}
			batch, rest := pick(tt.pending, tt.flying)
			name := func(rs []*request) (s []string) {
				for _, r := range rs {
					s = append(s, fmt.Sprintf("%s×%d", r.agg.ID, len(r.msgs)))
				}
				return s
			}
			if diff := cmp.Diff(name(tt.batch), name(batch)); diff != "" {
				t.Errorf("batch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(name(tt.rest), name(rest)); diff != "" {
				t.Errorf("rest (-want +got):\n%s", diff)
			}
			for _, r := range batch {
				if r.state.Load() != taken {
					t.Errorf("%s in batch is not marked taken", r.agg)
				}
			}
		})
	}
}

// TestLog_AppendCancelHandoff plays the committer by hand to pin down what
// a caller whose ctx ends gets: before its decision is taken into a batch,
// a plain ctx error and the decision is dropped; after, ErrUnknownOutcome.
func TestLog_AppendCancelHandoff(t *testing.T) {
	t.Parallel()
	reg := events.NewRegistry()
	for _, tc := range []struct {
		name    string
		take    bool
		wantErr error
	}{
		{"queued", false, context.Canceled},
		{"taken", true, ErrUnknownOutcome},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Log{reg: reg, reqs: make(chan *request), done: make(chan struct{})}
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := l.Append(ctx, decision(reg, session("s1"), 0, 1, 1))
				errc <- err
			}()
			r := <-l.reqs
			if tc.take && !r.state.CompareAndSwap(queued, taken) {
				t.Fatal("request not queued")
			}
			cancel()
			err := <-errc
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Append = %v, want %v", err, tc.wantErr)
			}
			if tc.take {
				return
			}
			if errors.Is(err, ErrUnknownOutcome) {
				t.Errorf("Append = %v, must not claim an unknown outcome", err)
			}
			if batch, rest := pick([]*request{r}, nil); len(batch)+len(rest) != 0 {
				t.Errorf("pick kept a cancelled request: batch %d, rest %d", len(batch), len(rest))
			}
		})
	}
}

// A batch the server refuses because one of its event ids is committed
// already, while the batch itself is not in the log (an id re-used with
// new events, as when a decision is taken again after an append whose
// outcome was unknown), is not a duplicate: nothing of it was stored,
// and Append must not report it appended.
func TestLog_AppendDuplicateIDOfAnotherBatch(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	s1 := session("s1")
	first := mustAppend(t, l, decision(reg, s1, 0, 1, 2))
	stored := readAll(t, l, first.First)[0].ID

	b := decision(reg, s1, first.Last, 3, 2)
	b.Events[0].ID = stored // committed before, at first.First
	app, err := l.Append(t.Context(), b)
	if err == nil {
		t.Fatalf("Append of a batch re-using a committed event id = %+v, nil error; want an error (nothing stored)", app)
	}
	if !errors.Is(err, events.ErrConflict) {
		t.Errorf("Append error = %v, want events.ErrConflict", err)
	}
	if seq := lastSeq(t, l); seq != first.Last {
		t.Errorf("LastSeq = %d, want %d: nothing of the refused batch stored", seq, first.Last)
	}
}

// An event over the server's max_payload is refused before anything of
// its decision is sent, as malformed (no retry stores it), not as an
// append whose outcome is unknown.
func TestAppend_OverMaxPayload(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	agg := session("big")
	mustAppend(t, l, decision(l.reg, agg, 0, 1, 1))
	before := lastSeq(t, l)
	big := strings.Repeat("a", int(l.js.Conn().MaxPayload()))
	b := events.Batch{Agg: agg, Expect: before, Events: []events.Envelope{
		envelope(l.reg, agg, 2, events.SessionActivityChanged{From: "thinking", To: "tool:2"}),
		envelope(l.reg, agg, 3, events.SessionActivityChanged{From: "tool:2", To: big}),
	}}
	_, err := l.Append(t.Context(), b)
	if !errors.Is(err, events.ErrMalformed) || errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "event 1 (session.activity_changed) is ") || !strings.Contains(err.Error(), "over the server's max_payload") {
		t.Fatalf("Append of an event over max_payload: %v, want ErrMalformed naming event 1 and the limit", err)
	}
	if got := lastSeq(t, l); got != before {
		t.Errorf("last seq %d after the refused append, want %d (nothing sent)", got, before)
	}
}
