package natslog

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestLog_HoldGathersAFullBatch appends five decisions of 200 events,
// each of its own session, while a Hold is outstanding: the committer
// sends nothing until all five are queued (together events.MaxBatch
// messages), then sends them as one merged atomic batch; the hold is
// released only after every append returned.
func TestLog_HoldGathersAFullBatch(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	release := l.Hold()
	defer release()
	const writers, each = 5, events.MaxBatch / 5
	if each >= DirectMin {
		t.Fatalf("%d events a decision would go direct (DirectMin %d)", each, DirectMin)
	}
	before := l.Stats()
	apps := make([]events.Appended, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			apps[w], errs[w] = l.Append(t.Context(), decision(reg, session(fmt.Sprintf("h%d", w)), 0, 1, each))
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("append h%d: %v", w, err)
		}
	}
	st := l.Stats()
	if st.Decisions-before.Decisions != writers || st.Merged-before.Merged != 1 || st.Batches-before.Batches != 1 {
		t.Errorf("Stats went from %+v to %+v, want %d decisions in one merged batch", before, st, writers)
	}
	for w, a := range apps {
		recs, last, err := l.Load(t.Context(), session(fmt.Sprintf("h%d", w)))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != each || last != a.Last || a.Last-a.First != each-1 {
			t.Errorf("h%d: Load = %d records, last %d; appended %+v", w, len(recs), last, a)
		}
	}
}

// TestLog_HoldReleased: a decision queued while a Hold is outstanding,
// too small to fill a batch, goes out once the hold is released, and
// releasing twice is harmless; a Log closed under a hold answers its
// queued appends.
func TestLog_HoldReleased(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	release := l.Hold()
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(t.Context(), decision(reg, session("r1"), 0, 1, 3))
		done <- err
	}()
	release()
	release()
	if err := <-done; err != nil {
		t.Fatalf("append after release: %v", err)
	}
	if l.holds.Load() != 0 {
		t.Fatalf("holds = %d after release, want 0", l.holds.Load())
	}

	l2 := openLog(t, s)
	l2.Hold() // never released
	go func() {
		_, err := l2.Append(t.Context(), decision(reg, session("r2"), 0, 1, 3))
		done <- err
	}()
	// Close may come before or after the append is queued: either way
	// the append is answered, sent or refused with ErrClosed.
	l2.Close()
	if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("append on a Log closed under a hold: %v", err)
	}
}

// TestLog_HoldSendsBeside appends, under a Hold, decisions of 200 events
// of their own sessions, two full batches' worth and one more, which the
// committer may send beside each other, and the decision after them once
// the hold is released, and a second decision of one session as soon as
// its first is answered: every append is stored whole, each session's
// events in order.
func TestLog_HoldSendsBeside(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	release := l.Hold()
	const each = events.MaxBatch / 5
	var wg sync.WaitGroup
	errs := make([]error, 11)
	for w := range 11 {
		wg.Go(func() {
			var a events.Appended
			a, errs[w] = l.Append(t.Context(), decision(reg, session(fmt.Sprintf("b%d", w)), 0, 1, each))
			if w == 0 && errs[w] == nil {
				// The same session again, at once: the batch after its
				// first decision's may still be in flight.
				_, errs[w] = l.Append(t.Context(), decision(reg, session("b0"), a.Last, 1+each, each))
			}
		})
	}
	for l.Stats().Decisions < 10 {
		runtime.Gosched() // the two full batches went
	}
	release()
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("append b%d: %v", w, err)
		}
	}
	for w := range 11 {
		want := each
		if w == 0 {
			want = 2 * each
		}
		recs, _, err := l.Load(t.Context(), session(fmt.Sprintf("b%d", w)))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != want {
			t.Fatalf("b%d: Load = %d records, want %d", w, len(recs), want)
		}
		for i, r := range recs {
			if r.Envelope.Ver != uint64(i+1) {
				t.Fatalf("b%d: record %d has ver %d", w, i, r.Envelope.Ver)
			}
		}
	}
}
