package httpapi

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestObservations_DedupByID: an observation is a repeat by its id alone.
// One under a new id whose signals name a tool call already closed or a
// prompt already taken is stored, for the audit, and decides nothing (a
// re-sent copy of what the session knows); only its id sent again is a
// duplicate.
func TestObservations_DedupByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := func(body string) observeReply {
		t.Helper()
		var rep observeReply
		e.do("POST", "/v1/observations", body, nil, 200, &rep)
		return rep
	}
	post(`{"harness":"h","id":"o1","session":"s","kind":"prompt","signals":[{"kind":"prompt","id":"p1"}]}`)
	post(`{"harness":"h","id":"o2","session":"s","kind":"tool","signals":[{"kind":"tool_use","id":"t1","name":"shell"}]}`)
	done := post(`{"harness":"h","id":"o3","session":"s","kind":"tool","signals":[{"kind":"tool_result","id":"t1","status":"ok"}]}`)
	for _, body := range []string{
		`{"harness":"h","id":"o4","session":"s","kind":"tool again","signals":[{"kind":"tool_use","id":"t1","name":"shell"}]}`,
		`{"harness":"h","id":"o5","session":"s","kind":"prompt again","signals":[{"kind":"prompt","id":"p1"}]}`,
	} {
		before, _ := e.log.LastSeq(t.Context())
		rep := post(body)
		if rep.Duplicate || rep.Last != before+1 || rep.First != rep.Last {
			t.Errorf("new id, known signal id: %+v (log was at %d), want the observation alone appended", rep, before)
		}
		if rep.Phase != done.Phase || rep.Activity != done.Activity {
			t.Errorf("new id, known signal id: phase %q activity %q, want %q %q unchanged", rep.Phase, rep.Activity, done.Phase, done.Activity)
		}
		if again := post(body); !again.Duplicate || again.Last != 0 {
			t.Errorf("same id again: %+v, want a duplicate", again)
		}
	}
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-s"})
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.Type != (events.HarnessObserved{}).EventType() {
		t.Errorf("last event %s, want the observation", last.Type)
	}
}
