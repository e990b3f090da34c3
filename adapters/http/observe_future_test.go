package httpapi

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestObservations_FutureTime: an "at" in the far future is recorded at
// the server clock's bound (events.BoundTime), the posted time kept as
// the observation's agent_time.
func TestObservations_FutureTime(t *testing.T) {
	e := newEnv(t)
	before := time.Now()
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","at":"9999-12-31T23:59:59Z","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	after := time.Now()
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-s"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("load: %v, %d records", err, len(recs))
	}
	lo, hi := before.Add(events.MaxClockSkew).Truncate(time.Microsecond), after.Add(events.MaxClockSkew)
	for _, r := range recs {
		if r.At.Before(lo) || r.At.After(hi) {
			t.Errorf("%s at %v; want the bound, within [%v, %v]", r.Type, r.At, lo, hi)
		}
	}
	if o, ok := events.Observed(recs[0].Data); !ok || o.AgentTime != "9999-12-31T23:59:59Z" {
		t.Errorf("agent_time = %+v; want the posted time", o)
	}
}
