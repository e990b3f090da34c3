package gate

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestRecordLocal: the verdict a hook gave without a server is recorded
// in its observation's batch as the call's review, decided by the hook;
// delivered again it records nothing more; an entry without a verdict or
// of an event the gate does not judge gets nothing; a session that has
// ended takes the observation, and the delivery does not fail.
func TestRecordLocal(t *testing.T) {
	r := newRig(t, "")
	r.hook("SessionStart", map[string]any{"source": "startup"})
	entry := func(event string, fields map[string]any, v *claude.LocalVerdict) claude.Entry {
		m := map[string]any{"session_id": r.sess, "transcript_path": "/nonexistent/x.jsonl", "cwd": "/tmp", "hook_event_name": event, "permission_mode": "default"}
		for k, x := range fields {
			m[k] = x
		}
		b, _ := json.Marshal(m)
		id := ulid.Make()
		return claude.Entry{ID: id.String(), Time: ulid.Time(id.Time()), Payload: b, Verdict: v}
	}
	lv := LocalVerdict("no Logbook server is running", time.Now(), 90*time.Second)
	push := entry("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "git push"}, "tool_use_id": "toolu_a"}, &lv)

	if r.gate.RecordLocal(entry("PreToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_b"}, nil)) != nil {
		t.Error("an entry without a verdict records one")
	}
	if r.gate.RecordLocal(entry("Stop", nil, &lv)) != nil {
		t.Error("a Stop records a verdict")
	}

	_, st, err := r.ing.HookThen(t.Context(), push, r.gate.RecordLocal(push))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := st.DecidedReview("toolu_a")
	if !ok || d.Verdict != events.VerdictDeny || d.Outcome != events.ReviewUnavailable ||
		d.DecidedBy != (events.DecidedBy{Kind: events.DecidedByHook, Name: LocalRule}) || d.Reason != "no Logbook server is running" {
		t.Fatalf("decided %+v %v", d, ok)
	}
	if len(st.Pending) != 0 || len(st.OpenReviews) != 0 {
		t.Errorf("open reviews left: %v %v", st.Pending, st.OpenReviews)
	}
	recs, _, err := r.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: r.sess})
	if err != nil {
		t.Fatal(err)
	}
	n := len(recs)
	var batch []string
	for _, rec := range recs {
		if rec.Cause != nil && rec.Cause.Ref == push.ID {
			batch = append(batch, rec.Type)
			if rec.Type == "review.decided" && (rec.Cause.Kind != events.CauseGate || !rec.At.Equal(lv.At)) {
				t.Errorf("review.decided cause %+v at %v, want the gate's at the hook's time %v", rec.Cause, rec.At, lv.At)
			}
		}
	}
	if !slices.Contains(batch, "review.requested") || !slices.Contains(batch, "review.decided") {
		t.Errorf("the entry's decisions: %v", batch)
	}

	// Delivered again (a drain cut short before the remove): nothing.
	if _, _, err := r.ing.HookThen(t.Context(), push, r.gate.RecordLocal(push)); err != nil {
		t.Fatal(err)
	}
	if recs, _, _ := r.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: r.sess}); len(recs) != n {
		t.Errorf("redelivery appended %d events", len(recs)-n)
	}

	// The server took the call before it went away: its review, open,
	// is left to the server (its sweep decides it), not decided here.
	in := json.RawMessage(`{"command":"git push -f"}`)
	held := entry("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": in, "tool_use_id": "toolu_p"}, &lv)
	if _, err := r.ing.Hook(t.Context(), claude.Entry{ID: held.ID, Time: held.Time, Payload: held.Payload}); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: r.sess}
	if _, _, err := r.gate.Sessions.Execute(t.Context(), agg, func(s session.State) (events.Decision, error) {
		rq := events.ReviewRequested{ReviewID: "toolu_p", Tool: "Bash", Action: "git push -f", Event: EventPreToolUse, ArgsDigest: digest(in), BudgetMS: 60000}
		return session.Decide(s, session.RequestReview{Review: rq, At: time.Now().UTC(), Cause: events.Cause{Kind: events.CauseGate, Event: EventPreToolUse, Detail: "Bash", Ref: held.ID}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, st, err = r.ing.HookThen(t.Context(), held, r.gate.RecordLocal(held)); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.PendingReview("toolu_p"); !ok {
		t.Errorf("the server's open review was decided by the spooled verdict: %+v", st.Decided)
	}

	// An ended session: the observation is taken, the verdict is not.
	r.hook("SessionEnd", map[string]any{"reason": "exit"})
	late := entry("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_c"}, &lv)
	_, st, err = r.ing.HookThen(t.Context(), late, r.gate.RecordLocal(late))
	if err != nil {
		t.Fatalf("ended session: %v", err)
	}
	if _, ok := st.DecidedReview("toolu_c"); ok || st.Phase != events.PhaseEnded {
		t.Errorf("ended session: phase %s, review recorded %v", st.Phase, ok)
	}
}
