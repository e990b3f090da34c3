package session_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
	"github.com/logbook-dev/logbook/reducers/session"
)

var gateCause = events.Cause{Kind: "gate", Event: "PreToolUse", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7"}

// decide runs cmd on h's state and folds what it decides.
func (h *history) decide(cmd session.Command) ([]events.Envelope, error) {
	h.t.Helper()
	out, err := session.Decide(h.s, cmd)
	if err != nil {
		return nil, err
	}
	reg := events.NewRegistry()
	for _, d := range out {
		if err := validate(reg, h.stamp(d)); err != nil {
			h.t.Fatalf("decided invalid event: %v", err)
		}
		h.apply(h.stamp(d))
	}
	return out, nil
}

func request(id string, a *review.Answer) session.RequestReview {
	return session.RequestReview{
		Review: events.ReviewRequested{ReviewID: id, Tool: "Bash", Action: "git push", Event: "PreToolUse", ArgsDigest: "sha256:00"},
		Answer: a, At: t0, Cause: gateCause,
	}
}

func ruleDeny() *review.Answer {
	return &review.Answer{Verdict: events.VerdictDeny, Risk: "high", By: events.DecidedBy{Kind: events.DecidedByRule, Name: "Bash(rm -rf:*)"}}
}

func TestGate_RuleDecidesInOneDecision(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
	got, err := h.decide(request("t1", &review.Answer{Verdict: "allow", Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule, Name: "Bash(git status)"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "review.requested" || got[1].Type != "review.decided" {
		t.Fatalf("decided %v", types(got))
	}
	rq := got[0].Data.(events.ReviewRequested)
	if !rq.Gate || rq.Revision != h.s.ModeRevision || rq.ArgsDigest == "" {
		t.Errorf("request %+v", rq)
	}
	if r, ok := h.s.DecidedReview("t1"); !ok || r.Verdict != "allow" || r.DecidedBy.Kind != "rule" {
		t.Errorf("decided %+v %v", r, ok)
	}
	// A retried request decides nothing.
	if again, err := h.decide(request("t1", nil)); err != nil || len(again) != 0 {
		t.Errorf("retry: %v %v", types(again), err)
	}
}

// waitingOnBash returns a history in which a prompt's Bash call t1 has
// been asked for review, with no answer yet.
func waitingOnBash(t *testing.T) *history {
	t.Helper()
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
	if _, err := h.decide(request("t1", nil)); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGate_FirstAnswerWins(t *testing.T) {
	h := waitingOnBash(t)
	if h.s.Phase != events.PhaseWaiting || len(h.s.Pending) != 1 {
		t.Fatalf("pending: phase %s, %+v", h.s.Phase, h.s.Pending)
	}
	before := h.s
	alice := session.DecideReview{ReviewID: "t1", Answer: review.Answer{Verdict: "allow", Reason: "release", By: events.DecidedBy{Kind: events.DecidedByUser, Name: "person:alice@h"}}, At: t0, Cause: gateCause}
	bob := session.DecideReview{ReviewID: "t1", Answer: review.Answer{Verdict: "deny", Reason: "no", By: events.DecidedBy{Kind: events.DecidedByUser, Name: "person:bob@h"}}, At: t0, Cause: gateCause}
	if _, err := h.decide(alice); err != nil {
		t.Fatal(err)
	}
	if h.s.Phase != events.PhaseWorking || len(h.s.Pending) != 0 {
		t.Errorf("after the verdict: phase %s pending %v", h.s.Phase, h.s.Pending)
	}
	_, err := h.decide(bob)
	if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "person:alice@h") {
		t.Errorf("late answer: %v, want refused naming alice", err)
	}
	// Both decided on the same state (a race): the second, re-decided on
	// the state after the first (what the executor does on a conflict),
	// is refused the same way.
	if _, err := session.Decide(before, bob); err != nil {
		t.Errorf("bob alone: %v", err)
	}
	if _, err := session.Decide(session.Init(agg), bob); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("unknown review: %v", err)
	}
}

func TestGate_BreakerTripsAndSurvivesUntilAPrompt(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt, "id", "p1"))
	for _, id := range []string{"a", "b", "c"} {
		if _, err := h.decide(request(id, ruleDeny())); err != nil {
			t.Fatal(err)
		}
	}
	if !h.s.BreakerTripped {
		t.Fatalf("not tripped after 3 refusals: %v", h.s.Verdicts)
	}
	// Folded again from the events alone (a restart): still tripped.
	again := session.Fold(session.Init(agg), records(h.evs))
	if !again.BreakerTripped {
		t.Error("breaker lost on refold")
	}
	got, err := h.decide(request("d", &review.Answer{Verdict: "allow", Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule}}))
	if err != nil {
		t.Fatal(err)
	}
	if d := got[1].Data.(events.ReviewDecided); d.Verdict != "deny" || d.DecidedBy.Kind != events.DecidedByBreaker {
		t.Errorf("with the breaker tripped: %+v", d)
	}
	h.line(events.Meta{}, sig(events.SigPrompt, "id", "p2"))
	if h.s.BreakerTripped || h.s.Refusals != 0 {
		t.Errorf("a new prompt did not reset the breaker: %+v", h.s.Refusals)
	}
	if len(h.s.Verdicts) != 0 {
		t.Errorf("the reset kept the window: %v", h.s.Verdicts)
	}
	// One allow clears the run, not the window (which restarted at the
	// reset).
	if _, err := h.decide(request("e", ruleDeny())); err != nil {
		t.Fatal(err)
	}
	if _, err := h.decide(request("f", &review.Answer{Verdict: "allow", Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule}})); err != nil {
		t.Fatal(err)
	}
	if h.s.Refusals != 0 || len(h.s.Verdicts) != 2 {
		t.Errorf("refusals %d verdicts %v", h.s.Refusals, h.s.Verdicts)
	}
}

func TestGate_TenInTheWindow(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt, "id", "p1"))
	allow := &review.Answer{Verdict: "allow", Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule}}
	for i := 1; i <= 10; i++ {
		if h.s.BreakerTripped {
			t.Fatalf("tripped after %d refusals, never 3 in a row", i-1)
		}
		for j, a := range []*review.Answer{allow, allow, ruleDeny()} {
			id := strings.Repeat("x", i) + string(rune('a'+j))
			if _, err := h.decide(request(id, a)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !h.s.BreakerTripped {
		t.Errorf("10 refusals in the window did not trip: %v", h.s.Verdicts)
	}
}

func TestGate_PendingClosedByAgentResult(t *testing.T) {
	h := waitingOnBash(t)
	h.line(events.Meta{}, sig(events.SigToolResult, "id", "t1", "status", "error"))
	r, ok := h.s.DecidedReview("t1")
	if !ok || r.Outcome != events.ReviewUnavailable || r.Verdict != "deny" {
		t.Errorf("%+v %v", r, ok)
	}
}

func TestGate_RequestForMissingOrEndedSession(t *testing.T) {
	if _, err := session.Decide(session.Init(agg), request("t1", nil)); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
}

func records(evs []events.Envelope) []events.Record {
	out := make([]events.Record, len(evs))
	for i, e := range evs {
		out[i] = events.Record{Envelope: e}
	}
	return out
}

// TestGate_VerdictEndsTheWait: whoever decides a gate review — a rule, the
// breaker, a reviewer program, a person, the budget — and whichever way,
// the session stops waiting on it in the same decision: an allowed call
// runs, a denied call is closed (it never runs), and no review is left
// pending. Refolding the events gives the same state.
func TestGate_VerdictEndsTheWait(t *testing.T) {
	person := func(v string) session.Command {
		return session.DecideReview{ReviewID: "t1", Answer: review.Answer{Verdict: v, Reason: "said so", By: events.DecidedBy{Kind: events.DecidedByUser, Name: "person:alice@h"}}, At: t0, Cause: gateCause}
	}
	reviewer := func(v string) session.Command {
		return session.DecideReview{ReviewID: "t1", Answer: review.Answer{Verdict: v, Risk: "low", By: events.DecidedBy{Kind: events.DecidedByReviewer, Name: "rev"}}, At: t0, Cause: gateCause}
	}
	timeout := session.DecideReview{ReviewID: "t1", Answer: review.Answer{Outcome: events.ReviewTimedOut, By: events.DecidedBy{Kind: events.DecidedByTimeout, Name: "gate budget 90s"}}, At: t0, Cause: gateCause}
	rule := func(v string) *review.Answer {
		return &review.Answer{Verdict: v, Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule, Name: "Bash(git:*)"}}
	}
	tests := []struct {
		name    string
		breaker bool            // trip the breaker first
		answer  *review.Answer  // a rule's answer in the request
		then    session.Command // the verdict after the request
		verdict string
	}{
		{name: "rule allow", answer: rule("allow"), verdict: "allow"},
		{name: "rule deny", answer: rule("deny"), verdict: "deny"},
		{name: "breaker", breaker: true, verdict: "deny"},
		{name: "reviewer allow", then: reviewer("allow"), verdict: "allow"},
		{name: "reviewer deny", then: reviewer("deny"), verdict: "deny"},
		{name: "person allow", then: person("allow"), verdict: "allow"},
		{name: "person deny", then: person("deny"), verdict: "deny"},
		{name: "timeout", then: timeout, verdict: "deny"},
	}
	for _, tt := range tests {
		for _, turn := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/turn=%v", tt.name, turn), func(t *testing.T) {
				h := newHistory(t)
				h.hook("h0", sig(events.SigSessionStart, "name", "startup"))
				if turn {
					h.hook("h1", sig(events.SigPrompt, "id", "p1", "text", "push it"))
				}
				if tt.breaker {
					for _, id := range []string{"a", "b", "c"} {
						h.hook("pre-"+id, sig(events.SigToolUse, "id", id, "name", "Bash"))
						if _, err := h.decide(request(id, ruleDeny())); err != nil {
							t.Fatal(err)
						}
					}
					if !h.s.BreakerTripped {
						t.Fatal("breaker not tripped")
					}
				}
				h.hook("pre-t1", sig(events.SigToolUse, "id", "t1", "name", "Bash"))
				if _, err := h.decide(request("t1", tt.answer)); err != nil {
					t.Fatal(err)
				}
				if tt.then != nil {
					if h.s.Phase != events.PhaseWaiting || h.s.Activity != "review" || len(h.s.Pending) != 1 {
						t.Fatalf("before the verdict: %s/%s pending %v", h.s.Phase, h.s.Activity, h.s.Pending)
					}
					if _, err := h.decide(tt.then); err != nil {
						t.Fatal(err)
					}
				}
				r, ok := h.s.DecidedReview("t1")
				if !ok || r.Verdict != tt.verdict {
					t.Fatalf("decided %+v %v, want %s", r, ok, tt.verdict)
				}
				if len(h.s.Pending) != 0 || len(h.s.OpenReviews) != 0 {
					t.Errorf("still pending: %v open %v", h.s.Pending, h.s.OpenReviews)
				}
				wantPhase, wantActivity := events.PhaseWorking, "tool:Bash"
				if tt.verdict == "deny" {
					wantActivity = "thinking"
					if !turn {
						wantPhase, wantActivity = events.PhaseReady, ""
					}
				}
				if h.s.Phase != wantPhase || h.s.Activity != wantActivity {
					t.Errorf("after %s: %s/%s, want %s/%s", tt.verdict, h.s.Phase, h.s.Activity, wantPhase, wantActivity)
				}
				open := slices.ContainsFunc(h.s.Entries, func(e session.Entry) bool { return e.EntryID == "t1" })
				if open != (tt.verdict == "allow") {
					t.Errorf("entry t1 open=%v after %s: %+v", open, tt.verdict, h.s.Entries)
				}
				if tt.verdict == "deny" {
					closed := false
					for _, e := range h.evs {
						if c, ok := e.Data.(events.SessionEntryClosed); ok && c.EntryID == "t1" {
							closed = c.Outcome == events.OutcomeRejected
						}
					}
					if !closed {
						t.Error("the denied call was not closed with outcome rejected")
					}
				}
				if again := session.Fold(session.Init(agg), records(h.evs)); !cmp.Equal(again, h.s) {
					t.Errorf("refold differs: %s", cmp.Diff(h.s, again))
				}
				// The agent's report of the denied call (Claude Code writes
				// the denial as the call's error result) moves nothing back.
				before := h.s
				h.line(events.Meta{}, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
				if tt.verdict == "deny" {
					h.line(events.Meta{}, sig(events.SigToolResult, "id", "t1", "status", "error"))
					if h.s.Phase != before.Phase || h.s.Activity != before.Activity || len(h.s.Entries) != len(before.Entries) {
						t.Errorf("the denied call's transcript lines moved the session: %s/%s %v", h.s.Phase, h.s.Activity, h.s.Entries)
					}
				}
			})
		}
	}
}

// TestGate_VerdictWithAnotherReviewOpen: a session waiting on two gate
// reviews keeps waiting until the last is decided.
func TestGate_VerdictWithAnotherReviewOpen(t *testing.T) {
	h := newHistory(t)
	h.hook("h1", sig(events.SigPrompt, "id", "p1"))
	for _, id := range []string{"t1", "t2"} {
		h.hook("pre-"+id, sig(events.SigToolUse, "id", id, "name", "Bash"))
		if _, err := h.decide(request(id, nil)); err != nil {
			t.Fatal(err)
		}
	}
	deny := session.DecideReview{ReviewID: "t1", Answer: review.Answer{Verdict: "deny", Reason: "no", By: events.DecidedBy{Kind: events.DecidedByUser, Name: "person:a@h"}}, At: t0, Cause: gateCause}
	if _, err := h.decide(deny); err != nil {
		t.Fatal(err)
	}
	if h.s.Phase != events.PhaseWaiting || h.s.Activity != "review" || len(h.s.Pending) != 1 {
		t.Fatalf("with t2 open: %s/%s pending %v", h.s.Phase, h.s.Activity, h.s.Pending)
	}
	allow := deny
	allow.ReviewID, allow.Answer.Verdict = "t2", "allow"
	if _, err := h.decide(allow); err != nil {
		t.Fatal(err)
	}
	if h.s.Phase != events.PhaseWorking || h.s.Activity != "tool:Bash" || h.s.WaitingOn != "" || len(h.s.Entries) != 1 || h.s.Entries[0].EntryID != "t2" {
		t.Errorf("after both: %s/%s entries %+v", h.s.Phase, h.s.Activity, h.s.Entries)
	}
}

// TestGate_BreakerRunAndReset: the breaker counts denials in a row within
// the user's turn (a user's new prompt starts the run again) and 10 in the
// last 50 decisions; a reset (the user's next prompt while it is tripped,
// or a person's word, as setting the mode gives) closes it and restarts
// both, so it does not trip again on what it already answered.
//
// Steps: d a gate denial, a a gate allow, p a new user prompt, m a
// person's reset (ResetBreaker), o a gate review left open (the next
// prompt supersedes it: a rejection).
func TestGate_BreakerRunAndReset(t *testing.T) {
	window := strings.Repeat("aad", 10) // 10 denials in 30 decisions, never 3 in a row
	for _, tt := range []struct {
		name     string
		steps    string
		tripped  bool
		refusals int
	}{
		{name: "three in a row", steps: "ddd", tripped: true, refusals: 3},
		{name: "three in a row after a prompt", steps: "pddd", tripped: true, refusals: 3},
		{name: "three separated by prompts", steps: "dpdpd", refusals: 1},
		{name: "two then a prompt then one", steps: "ddpd", refusals: 1},
		{name: "two then a prompt then two", steps: "ddpdd", refusals: 2},
		{name: "two then a prompt then three", steps: "ddpddd", tripped: true, refusals: 3},
		{name: "an allow ends the run", steps: "ddadd", refusals: 2},
		{name: "a prompt's own rejections do not trip it", steps: "ddop", refusals: 0},
		{name: "a prompt's rejections start no run", steps: "ddopdd", refusals: 2},
		{name: "ten in the window", steps: window, tripped: true, refusals: 1},
		{name: "ten in the window across prompts", steps: strings.Repeat("aadp", 9) + "aad", tripped: true, refusals: 1},
		{name: "a prompt closes it", steps: "dddp", refusals: 0},
		{name: "a person closes it", steps: "dddm", refusals: 0},
		{name: "a reset restarts the run", steps: "dddpdd", refusals: 2},
		{name: "a reset restarts the run, third trips", steps: "dddpddd", tripped: true, refusals: 3},
		{name: "a prompt restarts the window", steps: window + "pd", refusals: 1},
		{name: "a person restarts the window", steps: window + "md", refusals: 1},
		{name: "a prompt restarts the window, nine more", steps: window + "p" + strings.Repeat("aad", 9), refusals: 1},
		{name: "a prompt restarts the window, ten more", steps: window + "p" + strings.Repeat("aad", 10), tripped: true, refusals: 1},
		{name: "a person restarts the window, ten more", steps: window + "m" + strings.Repeat("aad", 10), tripped: true, refusals: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(t)
			h.line(events.Meta{}, sig(events.SigPrompt, "id", "p0"))
			allow := &review.Answer{Verdict: "allow", Risk: "low", By: events.DecidedBy{Kind: events.DecidedByRule}}
			for i, step := range tt.steps {
				id := fmt.Sprintf("r%d", i)
				var err error
				switch step {
				case 'd':
					_, err = h.decide(request(id, ruleDeny()))
				case 'a':
					_, err = h.decide(request(id, allow))
				case 'o':
					_, err = h.decide(request(id, nil))
					if len(h.s.Pending) == 0 {
						t.Fatalf("step %d: review %s not left open", i, id)
					}
				case 'p':
					h.line(events.Meta{}, sig(events.SigPrompt, "id", "p"+id))
				case 'm':
					_, err = h.decide(session.ResetBreaker{Reason: "mode set", At: t0, Cause: events.Cause{Kind: "cli", Event: "session mode", Ref: "x"}})
				}
				if err != nil {
					t.Fatalf("step %d (%c): %v", i, step, err)
				}
			}
			if h.s.BreakerTripped != tt.tripped || h.s.Refusals != tt.refusals {
				t.Errorf("%s: tripped %v refusals %d, want %v and %d (verdicts %v)", tt.steps, h.s.BreakerTripped, h.s.Refusals, tt.tripped, tt.refusals, h.s.Verdicts)
			}
			// The same events folded again (a restart, a replay) give the
			// same breaker.
			again := session.Fold(session.Init(agg), records(h.evs))
			if again.BreakerTripped != h.s.BreakerTripped || again.Refusals != h.s.Refusals || !slices.Equal(again.Verdicts, h.s.Verdicts) {
				t.Errorf("refold: tripped %v refusals %d verdicts %v; live %v %d %v", again.BreakerTripped, again.Refusals, again.Verdicts, h.s.BreakerTripped, h.s.Refusals, h.s.Verdicts)
			}
		})
	}
}
