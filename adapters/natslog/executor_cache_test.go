package natslog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// loadCounter is a real Log that counts the loads of each aggregate.
type loadCounter struct {
	*Log
	mu    sync.Mutex
	loads map[string]int
}

func (l *loadCounter) Load(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	l.mu.Lock()
	l.loads[agg.ID]++
	l.mu.Unlock()
	return l.Log.Load(ctx, agg)
}

// nextDecision is the decision the executor tests make on an aggregate
// whose state counts n events: its start when n is 0, else an activity
// change; ref is its cause's reference.
func nextDecision(reg *events.Registry, n int, ref string) events.Decision {
	var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:%d", n+1)}
	if n == 0 {
		p = events.SessionStarted{Agent: "cli", Cwd: "/work"}
	}
	e := reg.New(p)
	e.At = time.Now()
	e.Cause = &events.Cause{Kind: "cli", Event: "test", Ref: ref}
	return events.Decision{e}
}

// countingExecutor returns an Executor on log whose state of an aggregate
// is the number of its events, keeping at most maxCached states (0: the
// Executor's default).
func countingExecutor(log events.Log, reg *events.Registry, maxCached int) *events.Executor[int] {
	return &events.Executor[int]{
		Log: log, Reg: reg, MaxCached: maxCached,
		Init:   func(events.Aggregate) int { return 0 },
		Evolve: func(n int, _ events.Envelope) int { return n + 1 },
		IDs:    ulid.Make, Host: "h", Actor: "a",
	}
}

// execNext makes x decide nextDecision on session id and returns the
// state after it; an error fails the test.
func execNext(t *testing.T, x *events.Executor[int], reg *events.Registry, id string) int {
	t.Helper()
	_, n, err := x.Execute(t.Context(), session(id), func(n int) (events.Decision, error) {
		return nextDecision(reg, n, id), nil
	})
	if err != nil {
		t.Fatalf("Execute %s: %v", id, err)
	}
	return n
}

// TestExecutorCacheLRU: the executor keeps at most MaxCached states and
// drops the least recently used one, which is reloaded from the log —
// with every event — when next needed.
func TestExecutorCacheLRU(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &loadCounter{Log: l, loads: map[string]int{}}
	reg := events.NewRegistry()
	x := countingExecutor(lc, reg, 2)
	step := func(id string) int { t.Helper(); return execNext(t, x, reg, id) }
	step("a")
	step("b")
	step("a") // a is now the most recently used
	step("c") // drops b
	if got := x.Cached(); got != 2 {
		t.Fatalf("Cached() = %d, want 2", got)
	}
	if n := step("a"); n != 3 || lc.loads["a"] != 1 {
		t.Errorf("a: state %d after %d loads, want 3 after 1 (kept)", n, lc.loads["a"])
	}
	if n := step("b"); n != 2 || lc.loads["b"] != 2 {
		t.Errorf("b: state %d after %d loads, want 2 after 2 (dropped, reloaded with its event)", n, lc.loads["b"])
	}
	if n := step("c"); n != 2 || lc.loads["c"] != 2 {
		t.Errorf("c: state %d after %d loads, want 2 after 2 (dropped when b came back)", n, lc.loads["c"])
	}
	if got := x.Cached(); got != 2 {
		t.Fatalf("Cached() = %d, want 2", got)
	}
	// Many aggregates never hold more than MaxCached states.
	for i := range 50 {
		step(fmt.Sprintf("s%d", i))
		if got := x.Cached(); got > 2 {
			t.Fatalf("after %d aggregates: Cached() = %d, want ≤ 2", i+1, got)
		}
	}
}

// TestExecutorCacheSettled: a state Settled reports done is not kept —
// however many aggregates settle, the cache holds only those still at
// work — and a decision on a settled aggregate folds it from the log
// with every event.
func TestExecutorCacheSettled(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &loadCounter{Log: l, loads: map[string]int{}}
	reg := events.NewRegistry()
	x := countingExecutor(lc, reg, 100)
	x.Settled = func(n int) bool { return n >= 2 }
	step := func(id string) int { t.Helper(); return execNext(t, x, reg, id) }
	for i := range 20 {
		id := fmt.Sprintf("s%d", i)
		step(id) // at work: kept
		if got := x.Cached(); got != 1 {
			t.Fatalf("%s at 1 event: Cached() = %d, want 1", id, got)
		}
		step(id) // settled: dropped
		if got := x.Cached(); got != 0 {
			t.Fatalf("%s settled: Cached() = %d, want 0", id, got)
		}
	}
	if n := step("s3"); n != 3 || lc.loads["s3"] != 2 {
		t.Errorf("s3: state %d after %d loads, want 3 after 2 (folded from the log again)", n, lc.loads["s3"])
	}
	if got := x.Cached(); got != 0 {
		t.Errorf("Cached() = %d after a settled aggregate's decision, want 0", got)
	}
}

// TestExecutorCacheConcurrent: decisions on more aggregates than the
// cache holds, from many goroutines, keep every state equal to the log's.
func TestExecutorCacheConcurrent(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	x := countingExecutor(l, reg, 2)
	const workers, steps, aggs = 8, 20, 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range steps {
				id := fmt.Sprintf("c%d", (w+i)%aggs)
				_, _, err := x.Execute(t.Context(), session(id), func(n int) (events.Decision, error) {
					return nextDecision(reg, n, id), nil
				})
				if err != nil {
					t.Errorf("Execute %s: %v", id, err)
				}
			}
		})
	}
	wg.Wait()
	fresh := countingExecutor(l, reg, 0)
	total := 0
	for a := range aggs {
		agg := session(fmt.Sprintf("c%d", a))
		got, err := x.State(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.State(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: cached state %d, log's %d", agg.ID, got, want)
		}
		total += want
	}
	if total != workers*steps {
		t.Errorf("%d events in all, want %d", total, workers*steps)
	}
	if x.Cached() > 2 {
		t.Errorf("Cached() = %d, want ≤ 2", x.Cached())
	}
}

// TestExecutorCacheStale: a decision to append nothing is not taken on a
// cached state another process has moved past — the executor catches up
// with the log first (here another Executor stands for the other process).
func TestExecutorCacheStale(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &loadCounter{Log: l, loads: map[string]int{}}
	reg := events.NewRegistry()
	newX := func() *events.Executor[int] { return countingExecutor(lc, reg, 0) }
	grow := func(x *events.Executor[int], want int) func(int) (events.Decision, error) {
		return func(n int) (events.Decision, error) {
			if n >= want { // nothing to do from where this state stands
				return nil, nil
			}
			return nextDecision(reg, n, "r"), nil
		}
	}
	a, b := newX(), newX()
	if _, n, err := a.Execute(t.Context(), session("s"), grow(a, 1)); err != nil || n != 1 {
		t.Fatalf("a: %d, %v", n, err)
	}
	for want := 2; want <= 3; want++ { // b moves the aggregate on twice
		if _, n, err := b.Execute(t.Context(), session("s"), grow(b, want)); err != nil || n != want {
			t.Fatalf("b: %d, %v", n, err)
		}
	}
	// a's cache says 1; a decision that appends nothing at 1 must still
	// see 3, and one that would stop at 2 must see that 3 is past it.
	var seen []int
	_, n, err := a.Execute(t.Context(), session("s"), func(n int) (events.Decision, error) {
		seen = append(seen, n)
		return nil, nil
	})
	if err != nil || n != 3 {
		t.Fatalf("a after b: state %d, %v; want 3", n, err)
	}
	if got := seen[len(seen)-1]; got != 3 {
		t.Errorf("a decided last on %d (seen %v), want 3", got, seen)
	}
	if s, err := a.State(t.Context(), session("s")); err != nil || s != 3 {
		t.Errorf("a.State = %d, %v; want 3", s, err)
	}
	if lc.loads["s"] != 2 { // one full load each; catching up is LoadAfter
		t.Errorf("%d full loads, want 2", lc.loads["s"])
	}
}

// TestExecutorConflictCatchesUp: two writers taking turns on one
// aggregate (the hook path and a worker, say) each lose the optimistic
// check on every turn; each catches up with the events past its cached
// state and never folds the whole history again, so a long-lived
// aggregate costs reads of its newest events only, not of every stream
// block it spans (issue 18).
func TestExecutorConflictCatchesUp(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &loadCounter{Log: l, loads: map[string]int{}}
	reg := events.NewRegistry()
	newX := func() *events.Executor[int] { return countingExecutor(lc, reg, 0) }
	step := func(x *events.Executor[int]) func(int) (events.Decision, error) {
		return func(n int) (events.Decision, error) {
			return nextDecision(reg, n, "r"), nil
		}
	}
	a, b := newX(), newX()
	const turns = 40
	for i := range turns {
		x := a
		if i%2 == 1 {
			x = b
		}
		_, n, err := x.Execute(t.Context(), session("long"), step(x))
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if n != i+1 {
			t.Fatalf("turn %d: state %d, want %d", i, n, i+1)
		}
	}
	// One whole load per executor (its first sight of the aggregate).
	if got := lc.loads["long"]; got != 2 {
		t.Errorf("%d whole loads of the aggregate over %d conflicting turns, want 2 (one per executor)", got, turns)
	}
	fresh := newX()
	want, err := fresh.State(t.Context(), session("long"))
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*events.Executor[int]{"a": a, "b": b} {
		got, err := x.State(t.Context(), session("long"))
		if err != nil || got != want || want != turns {
			t.Errorf("%s: state %d, %v; the log's %d, want %d", name, got, err, want, turns)
		}
	}
}

// TestExecutorRefusalIsOfTheCurrentState: an executor whose cached state
// another writer has moved past does not refuse on the stale state; it
// catches up and decides again (a worker's cache that last saw a command
// before its request must not call it "never requested").
func TestExecutorRefusalIsOfTheCurrentState(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	x := countingExecutor(l, reg, 0)
	agg := session("stale")
	noop := func(int) (events.Decision, error) { return nil, nil }
	if _, n, err := x.Execute(t.Context(), agg, noop); err != nil || n != 0 {
		t.Fatalf("first look: %d, %v", n, err)
	}
	mustAppend(t, l, decision(reg, agg, 0, 1, 2)) // another writer
	errNone := fmt.Errorf("nothing to act on")
	_, n, err := x.Execute(t.Context(), agg, func(n int) (events.Decision, error) {
		if n == 0 {
			return nil, errNone
		}
		return nil, nil
	})
	if err != nil || n != 2 {
		t.Errorf("Execute on a state moved past: state %d, %v; want 2, nil", n, err)
	}
}

// TestExecutorReplayedEventSetsNoVerBack: a message stored again later
// (a replay of an old event, its ver long past) does not set the next
// decision's ver back: the executor numbers from the highest ver it
// folded, so the fold, which skips a ver it has seen, takes the next
// decision.
func TestExecutorReplayedEventSetsNoVerBack(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	newX := func() *events.Executor[int] { return countingExecutor(l, reg, 0) }
	step := func(x *events.Executor[int]) {
		t.Helper()
		if _, _, err := x.Execute(t.Context(), session("r"), func(n int) (events.Decision, error) {
			return nextDecision(reg, n, "r"), nil
		}); err != nil {
			t.Fatalf("Execute: %v", err)
		}
	}
	x := newX()
	for range 3 {
		step(x)
	}
	recs, _, err := l.Load(t.Context(), session("r"))
	if err != nil || len(recs) != 3 {
		t.Fatalf("Load: %d, %v", len(recs), err)
	}
	first, err := l.getMsg(t.Context(), recs[0].Seq, "")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(s.Conn())
	if err != nil {
		t.Fatal(err)
	}
	// As a replayer copies it: every header but those the server would
	// check (the expected sequence, the message id).
	h := nats.Header{}
	for k, v := range first.Header {
		if k != jetstream.ExpectedLastSubjSeqHeader && k != jetstream.MsgIDHeader {
			h[k] = v
		}
	}
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: first.Subject, Header: h, Data: first.Data}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	// The replay carries the first message's Nats-Sequence and
	// Nats-Subject headers, which a direct get's reader must not take
	// for the server's.
	if _, last, err := l.Load(t.Context(), session("r")); err != nil || last != recs[2].Seq+1 {
		t.Fatalf("Load after the replay: last %d, %v; want %d, the replay's own", last, err, recs[2].Seq+1)
	}
	if last, err := l.LastEventSeq(t.Context()); err != nil || last != recs[2].Seq+1 {
		t.Fatalf("LastEventSeq after the replay: %d, %v; want %d", last, err, recs[2].Seq+1)
	}
	step(newX()) // a fresh executor loads the replay last
	recs, _, err = l.Load(t.Context(), session("r"))
	if err != nil {
		t.Fatal(err)
	}
	if got := recs[len(recs)-1].Ver; got != 4 {
		t.Errorf("the decision after the replay has ver %d, want 4", got)
	}
}

// readCounter is a loadCounter that also counts LoadAfter, the read an
// Executor brings a cached state up to date with.
type readCounter struct {
	*loadCounter
	afters map[string]int
}

func (l *readCounter) LoadAfter(ctx context.Context, agg events.Aggregate, after uint64) ([]events.Record, uint64, error) {
	l.mu.Lock()
	l.afters[agg.ID]++
	l.mu.Unlock()
	return l.Log.LoadAfter(ctx, agg, after)
}

// TestExecutorStateReadsOnce: State of an aggregate the executor does not
// hold reads the log once (the fold is as current as that read), one it
// holds is brought up to date with one read of what follows, and either
// way it sees what another process appended.
func TestExecutorStateReadsOnce(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &readCounter{loadCounter: &loadCounter{Log: l, loads: map[string]int{}}, afters: map[string]int{}}
	reg := events.NewRegistry()
	other := countingExecutor(l, reg, 0)
	execNext(t, other, reg, "a")
	x := countingExecutor(lc, reg, 0)
	n, err := x.State(t.Context(), session("a"))
	if err != nil || n != 1 || lc.loads["a"] != 1 || lc.afters["a"] != 0 {
		t.Fatalf("State(a) uncached = %d, %v after %d loads and %d reads after, want 1 after 1 and 0", n, err, lc.loads["a"], lc.afters["a"])
	}
	execNext(t, other, reg, "a")
	n, err = x.State(t.Context(), session("a"))
	if err != nil || n != 2 || lc.loads["a"] != 1 || lc.afters["a"] != 1 {
		t.Fatalf("State(a) cached = %d, %v after %d loads and %d reads after, want 2 after 1 and 1", n, err, lc.loads["a"], lc.afters["a"])
	}
	// The state State read is the one Execute decides on: its append
	// expects the sequence that read saw.
	if n := execNext(t, x, reg, "a"); n != 3 {
		t.Fatalf("Execute after State: state %d, want 3", n)
	}
	if lc.loads["a"] != 1 {
		t.Errorf("%d loads of a, want 1", lc.loads["a"])
	}
}

// TestExecutorAggregatesDoNotWait: decisions on different aggregates
// never wait for each other's lock: 100 of them are all inside their
// decide functions at once (each waits there until every one has
// entered; with locks shared between aggregates some would wait for
// another's append and this would never end), and each appends.
func TestExecutorAggregatesDoNotWait(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	x := countingExecutor(l, reg, 0)
	const aggs = 100
	var (
		entered sync.WaitGroup
		wg      sync.WaitGroup
	)
	entered.Add(aggs)
	for a := range aggs {
		wg.Go(func() {
			id := fmt.Sprintf("d%d", a)
			once := sync.OnceFunc(entered.Done)
			_, n, err := x.Execute(t.Context(), session(id), func(n int) (events.Decision, error) {
				once()
				entered.Wait()
				return nextDecision(reg, n, id), nil
			})
			if err != nil || n != 1 {
				t.Errorf("Execute %s: state %d, %v", id, n, err)
			}
		})
	}
	wg.Wait()
	if seq := lastSeq(t, l); seq != aggs {
		t.Errorf("LastSeq = %d, want %d", seq, aggs)
	}
}

// TestExecutorRemember: a state remembered after the caller's own append
// is decided on without a load; one remembered behind the aggregate (a
// writer moved it on since) costs a conflict and a catch-up, never a
// wrong decision; one older than the cached state is not taken.
func TestExecutorRemember(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	lc := &readCounter{loadCounter: &loadCounter{Log: l, loads: map[string]int{}}, afters: map[string]int{}}
	reg := events.NewRegistry()
	x, other := countingExecutor(lc, reg, 0), countingExecutor(l, reg, 0)
	appendOne := func(id string, n int) uint64 {
		t.Helper()
		evs := nextDecision(reg, n, id)
		evs[0].ID, evs[0].Agg, evs[0].Ver, evs[0].Host, evs[0].Actor = ulid.Make(), session(id), uint64(n+1), "h", "a"
		_, last, err := l.Load(t.Context(), session(id))
		if err != nil {
			t.Fatal(err)
		}
		ap, err := l.Append(t.Context(), events.Batch{Agg: session(id), Expect: last, Events: evs})
		if err != nil {
			t.Fatalf("append %s: %v", id, err)
		}
		return ap.Last
	}
	// reads counts x's reads of the log for id: whole loads, and the
	// catch-ups after a conflict.
	reads := func(id string) int { lc.mu.Lock(); defer lc.mu.Unlock(); return lc.loads[id] + lc.afters[id] }

	rLast := appendOne("r", 0)
	x.Remember(session("r"), 1, 1, rLast)
	if n := execNext(t, x, reg, "r"); n != 2 || reads("r") != 0 {
		t.Errorf("after Remember: state %d after %d reads, want 2 after none", n, reads("r"))
	}

	// Remembered behind: another writer appends after it.
	last := appendOne("b", 0)
	x.Remember(session("b"), 1, 1, last)
	execNext(t, other, reg, "b") // 2 events now
	if n := execNext(t, x, reg, "b"); n != 3 || reads("b") == 0 {
		t.Errorf("remembered behind: state %d after %d reads, want 3 after a catch-up at the conflict", n, reads("b"))
	}

	// An older state does not replace a newer one.
	x.Remember(session("r"), 1, 1, rLast)
	if n := execNext(t, x, reg, "r"); n != 3 || reads("r") != 0 {
		t.Errorf("after an older Remember: state %d after %d reads, want 3 after none (the newer state kept)", n, reads("r"))
	}
}
