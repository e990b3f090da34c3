package httpapi

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestObservations_ToolThatWaitsOnUser: a harness's call to a tool that
// waits on the user (AskUserQuestion, ExitPlanMode) puts its session in
// waiting on a question, as the same call in Claude Code's transcript
// does, so it is never marked stale; the call's result ends the wait. A
// harness that posts the question itself gets it once.
func TestObservations_ToolThatWaitsOnUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := func(body string) observeReply {
		t.Helper()
		var rep observeReply
		e.do("POST", "/v1/observations", body, nil, 200, &rep)
		return rep
	}
	for _, c := range []struct{ session, tool, extra string }{
		{"ask", "AskUserQuestion", ""},
		{"plan", "ExitPlanMode", ""},
		{"own", "AskUserQuestion", `,{"kind":"question","id":"t1","name":"AskUserQuestion"}`},
	} {
		post(`{"harness":"h","id":"o1","session":"` + c.session + `","kind":"prompt","signals":[{"kind":"prompt","id":"p1"}]}`)
		rep := post(`{"harness":"h","id":"o2","session":"` + c.session + `","kind":"tool","signals":[{"kind":"tool_use","id":"t1","name":"` + c.tool + `"}` + c.extra + `]}`)
		if rep.Phase != events.PhaseWaiting || rep.Activity != "question" {
			t.Errorf("%s: %s called: phase %q activity %q, want waiting question", c.session, c.tool, rep.Phase, rep.Activity)
		}
		recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-" + c.session})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, r := range recs {
			o, ok := events.Observed(r.Data)
			if !ok || o.Kind != "tool" {
				continue
			}
			calls++
			if n := len(o.Signals); n != 2 || o.Signals[1].Kind != events.SigQuestion || o.Signals[1].ID != "t1" {
				t.Errorf("%s: stored signals %+v, want the call and one question of it", c.session, o.Signals)
			}
		}
		if calls != 1 {
			t.Errorf("%s: %d observations of the call stored, want 1", c.session, calls)
		}
		rep = post(`{"harness":"h","id":"o3","session":"` + c.session + `","kind":"tool","signals":[{"kind":"tool_result","id":"t1","name":"` + c.tool + `","status":"ok"}]}`)
		if rep.Phase != events.PhaseWorking {
			t.Errorf("%s: %s answered: phase %q activity %q, want working", c.session, c.tool, rep.Phase, rep.Activity)
		}
	}
}
