package httpapi

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestObservations_FutureTime: an "at" in the far future is recorded at
// its receipt (events.BoundTime), the posted time kept as the
// observation's agent_time.
func TestObservations_FutureTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := time.Now()
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","at":"9999-12-31T23:59:59Z","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	after := time.Now()
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-s"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("load: %v, %d records", err, len(recs))
	}
	lo, hi := before.Truncate(time.Microsecond), after
	for _, r := range recs {
		if r.At.Before(lo) || r.At.After(hi) {
			t.Errorf("%s at %v; want its receipt, within [%v, %v]", r.Type, r.At, lo, hi)
		}
	}
	if o, ok := events.Observed(recs[0].Data); !ok || o.AgentTime != "9999-12-31T23:59:59Z" {
		t.Errorf("agent_time = %+v; want the posted time", o)
	}
}

// TestObservations_AheadThenUndated: a harness whose clock runs ahead
// posts a prompt with its own "at", then the turn's end with none (the
// server's time). The end came later and must end the turn: both are on
// the server's clock, the prompt dated by its receipt.
func TestObservations_AheadThenUndated(t *testing.T) {
	e := newEnv(t)
	ahead := time.Now().Add(90 * time.Second).UTC().Format(time.RFC3339Nano)
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"p1","session":"ahead","kind":"prompt","at":"`+ahead+`","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	if rep.Phase != events.PhaseWorking {
		t.Fatalf("after the prompt: phase %q, want %q", rep.Phase, events.PhaseWorking)
	}
	e.do("POST", "/v1/observations", `{"harness":"h","id":"e1","session":"ahead","kind":"end","signals":[{"kind":"turn_end"}]}`, nil, 200, &rep)
	if rep.Phase != events.PhaseReady {
		t.Errorf("after the turn's end: phase %q activity %q, want %q", rep.Phase, rep.Activity, events.PhaseReady)
	}
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-ahead"})
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := events.Observed(recs[0].Data); !ok || o.AgentTime != ahead {
		t.Errorf("agent_time = %q; want the posted %q", o.AgentTime, ahead)
	}
}
