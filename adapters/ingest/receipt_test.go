package ingest

import (
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestObserveEntry_NeverPastReceipt: a spooled entry dated past this
// host's clock (the spooling host's clock runs ahead) is received at the
// clock's reading, and the observation is dated no later than that
// receipt, though the clock has moved on when the observation's time is
// bounded.
func TestObserveEntry_NeverPastReceipt(t *testing.T) {
	l := ingesttest.OpenLog(t)
	base := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	var (
		mu    sync.Mutex
		reads int
	)
	clock := func() time.Time { // a second on at each reading
		mu.Lock()
		defer mu.Unlock()
		reads++
		return base.Add(time.Duration(reads) * time.Second)
	}
	in, err := New(Config{Log: l, Host: "test", Command: "logbook import toy", Actor: "toy", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "c0000005-0000-4000-8000-000000000005"
	ahead := base.Add(time.Hour)
	e := Entry{ID: ulid.MustNew(ulid.Timestamp(ahead), ulid.DefaultEntropy()).String(), Time: ahead}
	o := events.Observation{Key: "h1", Parser: "toy/1", Kind: "hook", Meta: events.Meta{Agent: "toy", SessionID: sid},
		Signals: []events.Sig{{Kind: events.SigPrompt, ID: "p1"}}}
	wrap := func(o events.Observation) events.Payload { return events.ClaudeHookObserved{Observation: o} }
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	if _, _, err := in.ObserveEntry(t.Context(), "hook", e, agg, o, wrap, nil); err != nil {
		t.Fatal(err)
	}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("nothing appended")
	}
	for _, r := range recs {
		got, ok := events.Observed(r.Data)
		if !ok {
			continue
		}
		if got.Received.IsZero() || r.At.After(got.Received) {
			t.Errorf("%s dated %s, past its receipt %s", r.Type, r.At, got.Received)
		}
	}
}
