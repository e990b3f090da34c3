package natslog

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestLog_ReadStopsEarly breaks out of many reads partway: the parallel
// decoder must shut down cleanly every time, whatever chunk it was in.
func TestLog_ReadStopsEarly(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	for i := range 8 {
		mustAppend(t, l, decision(reg, session(fmt.Sprintf("s%d", i)), 0, 1, 500))
	}
	for i := range 60 {
		stop := 1 + i*97%3900
		n := 0
		for _, err := range l.Read(t.Context(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == stop {
				break
			}
		}
		if n != stop {
			t.Fatalf("read %d records, wanted to stop at %d", n, stop)
		}
	}
}

func TestLog_LastEventSeq(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	if got, err := l.LastEventSeq(t.Context()); err != nil || got != 0 {
		t.Fatalf("empty log: %d, %v", got, err)
	}
	ap := mustAppend(t, l, decision(events.NewRegistry(), session("s1"), 0, 1, 3))
	if _, err := l.PublishOutput(t.Context(), "c1", "c1:stdout:0", []byte("out")); err != nil {
		t.Fatal(err)
	}
	got, err := l.LastEventSeq(t.Context())
	if err != nil || got != ap.Last {
		t.Errorf("LastEventSeq = %d, %v; want %d (the output after it does not count)", got, err, ap.Last)
	}
}

// TestLog_LastEventSeqFromWhatItKnows: LastEventSeq answers what the
// server's walk of every subject answers, whoever appended meanwhile
// (this Log, another, runs of up to 50 events, output after them), and
// when the event it knows of is gone (a tail the store lost, here a hint
// past the end); it asks the server for the last event itself only when
// this Log did not append the last one, or knows of none.
func TestLog_LastEventSeqFromWhatItKnows(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	other := openLog(t, s)
	reg := events.NewRegistry()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(7, seed))
	vers := map[string]uint64{} // by session id
	lasts := map[string]uint64{}
	lastByOther := false // the last event was other's
	add := func(by *Log, id string, n int) {
		t.Helper()
		b := decision(reg, session(id), lasts[id], vers[id]+1, n)
		ap := mustAppend(t, by, b)
		vers[id] += uint64(n)
		lasts[id] = ap.Last
		lastByOther = by == other
	}
	check := func(step string, walk bool) {
		t.Helper()
		want, err := l.lastEventSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		walk = walk || lastByOther || l.eventHint.Load() == 0
		before := l.eventWalks.Load()
		got, err := l.LastEventSeq(t.Context())
		if err != nil || got != want {
			t.Fatalf("%s: LastEventSeq = %d, %v; the server's walk says %d", step, got, err, want)
		}
		if walked := l.eventWalks.Load() > before; walked != walk {
			t.Errorf("%s: LastEventSeq asked the server for the last event: %v, want %v", step, walked, walk)
		}
		lastByOther = false // l knows of it now
	}
	check("empty", true)
	for i := range 300 {
		id := fmt.Sprintf("s%d", rng.IntN(20))
		walk := false
		switch rng.IntN(5) {
		case 0:
			add(l, id, 1+rng.IntN(3))
		case 1:
			add(other, id, 1)
		case 2:
			for range 1 + rng.IntN(50) {
				add([]*Log{l, other}[rng.IntN(2)], fmt.Sprintf("s%d", rng.IntN(20)), 1)
			}
		case 3:
			for range 1 + rng.IntN(20) {
				if _, err := other.PublishOutput(t.Context(), "c1", "", []byte("out")); err != nil {
					t.Fatal(err)
				}
			}
		case 4:
			l.eventHint.Store(lastSeq(t, l) + 1 + uint64(rng.IntN(5)))
			walk = true
		}
		check(fmt.Sprintf("step %d", i), walk)
	}
}

// TestLog_LastEventSeqKnowsWhatItFollows: an event another writer
// appended that this Log's Follow has yielded (serve's projection follows
// the log) is known to LastEventSeq, which answers it without asking the
// server for the last event.
func TestLog_LastEventSeqKnowsWhatItFollows(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	other := openLog(t, s)
	reg := events.NewRegistry()
	ap := mustAppend(t, other, decision(reg, session("f"), 0, 1, 2))
	for rec, err := range l.Follow(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq == ap.Last {
			break
		}
	}
	before := l.eventWalks.Load()
	if got, err := l.LastEventSeq(t.Context()); err != nil || got != ap.Last {
		t.Fatalf("LastEventSeq = %d, %v; want %d", got, err, ap.Last)
	}
	if l.eventWalks.Load() != before {
		t.Errorf("LastEventSeq asked the server for the last event, though its Follow had yielded it")
	}
}
