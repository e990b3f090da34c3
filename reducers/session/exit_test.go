package session_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestExitTable pins the rows of docs/phases.md that are decided from
// signals alone; the rows that depend on how Claude Code reports a
// situation are checked with its payloads in adapters/claude (TestCase*).
func TestExitTable(t *testing.T) {
	m := events.Meta{}
	prompt := func(h *history) { h.line(m, sig(events.SigPrompt, "id", "p1")) }
	call := func(h *history, id, tool string) { h.line(m, sig(events.SigToolUse, "id", id, "name", tool)) }
	perm := func(h *history, id string) { h.hook("perm:"+id, sig(events.SigPermission, "id", id, "name", "Bash")) }
	// asking: a prompt's Bash call t1 asks a person's permission.
	asking := func(h *history) {
		prompt(h)
		call(h, "t1", "Bash")
		perm(h, "t1")
	}
	type want struct {
		phase, activity string
		entries         int
		reviews         int
		outcome         string // the last turn's outcome, if set
	}
	tests := []struct {
		name string
		run  func(h *history)
		want want
	}{
		{"stop ends the turn", func(h *history) {
			prompt(h)
			h.hook("stop", sig(events.SigTurnEnd, "name", "Stop"))
		}, want{phase: events.PhaseReady, outcome: "completed"}},
		{"stop abandons an open call", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.hook("stop", sig(events.SigTurnEnd, "name", "Stop"))
		}, want{phase: events.PhaseReady}},
		{"stop closes an unanswered review", func(h *history) {
			asking(h)
			h.hook("stop", sig(events.SigTurnEnd, "name", "Stop"))
		}, want{phase: events.PhaseReady}},
		{"stop keeps background work", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "b1"))
			h.hook("stop", sig(events.SigTurnEnd))
		}, want{phase: events.PhaseWorking, activity: "background", entries: 1}},
		{"stop after a question in text waits", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigText, "text", "Shall I?"), sig(events.SigTurnEnd, "name", "end_turn"))
			h.hook("stop", sig(events.SigTurnEnd, "name", "Stop"))
			h.line(m, sig(events.SigTurnEnd, "name", "turn_duration"))
		}, want{phase: events.PhaseWaiting, activity: "question"}},
		{"api_error ends turn failed", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigAPIError, "status", "failed"), sig(events.SigTurnEnd, "name", "api_error"))
			h.hook("idle", sig(events.SigIdle))
		}, want{phase: events.PhaseReady, outcome: "failed"}},
		{"api_retry", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigAPIError, "status", "retrying"))
		}, want{phase: events.PhaseWorking, activity: "api_retry"}},
		{"api_retry then the answer", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigAPIError, "status", "retrying"))
			h.line(m, sig(events.SigText, "text", "done"), sig(events.SigTurnEnd))
		}, want{phase: events.PhaseReady, outcome: "completed"}},
		{"interrupt", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigInterrupt))
		}, want{phase: events.PhaseReady, outcome: "interrupted"}},
		{"interrupt waiting", func(h *history) {
			asking(h)
			h.line(m, sig(events.SigInterrupt))
		}, want{phase: events.PhaseReady, outcome: "interrupted"}},
		{"idle after a dismissed permission", func(h *history) {
			asking(h)
			h.hook("idle", sig(events.SigIdle))
		}, want{phase: events.PhaseReady, outcome: "interrupted"}},
		{"idle without a reported stop", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigText, "text", "done"))
			h.hook("idle", sig(events.SigIdle))
		}, want{phase: events.PhaseReady, outcome: "completed"}},
		{"idle keeps an open question", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigToolUse, "id", "q1", "name", "Ask"), sig(events.SigQuestion, "id", "q1"))
			h.hook("idle", sig(events.SigIdle))
		}, want{phase: events.PhaseWaiting, activity: "question", entries: 1}},
		{"question answered", func(h *history) {
			prompt(h)
			h.line(m, sig(events.SigToolUse, "id", "q1", "name", "Ask"), sig(events.SigQuestion, "id", "q1"))
			h.line(m, sig(events.SigToolResult, "id", "q1", "status", "ok"))
		}, want{phase: events.PhaseWorking, activity: "thinking"}},
		{"restart abandons everything", func(h *history) {
			prompt(h)
			call(h, "t1", "Agent")
			h.hook("sa", sig(events.SigSubagentStart, "id", "a1", "name", "Explore"))
			perm(h, "t1")
			h.hook("start", sig(events.SigSessionStart, "name", "resume"))
		}, want{phase: events.PhaseReady, outcome: "abandoned"}},
		{"restart of an ended session", func(h *history) {
			prompt(h)
			h.hook("end", sig(events.SigSessionEnd, "text", "other"))
			h.hook("start", sig(events.SigSessionStart, "name", "resume"))
		}, want{phase: events.PhaseReady}},
		{"result outside turn", func(h *history) {
			// Hooks wired mid-turn: no prompt seen.
			h.hook("start", sig(events.SigSessionStart, "name", "startup"))
			h.hook("pre", sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.hook("post", sig(events.SigToolResult, "id", "t1", "name", "Bash", "status", "ok"))
		}, want{phase: events.PhaseWorking, activity: "thinking"}},
		{"no tool_use_id", func(h *history) {
			h.hook("start", sig(events.SigSessionStart, "name", "startup"))
			h.hook("pre", sig(events.SigToolUse, "name", "Bash"))
			h.hook("post", sig(events.SigToolResult, "name", "Bash", "status", "ok"))
			h.hook("stop", sig(events.SigTurnEnd))
		}, want{phase: events.PhaseReady}},
		{"subagent result closes", func(h *history) {
			prompt(h)
			call(h, "t1", "Agent")
			h.hook("sa", sig(events.SigSubagentStart, "id", "a1", "name", "Explore"))
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "ok", "task", "a1"))
		}, want{phase: events.PhaseWorking, activity: "thinking"}},
		{"background subagent launched then started", func(h *history) {
			prompt(h)
			call(h, "t1", "Agent")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "a1"))
			h.hook("sa", sig(events.SigSubagentStart, "id", "a1", "name", "Explore"))
			h.hook("stop", sig(events.SigTurnEnd))
		}, want{phase: events.PhaseWorking, activity: "background", entries: 1}},
		{"background subagent stop", func(h *history) {
			prompt(h)
			call(h, "t1", "Agent")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "a1"))
			h.hook("stop", sig(events.SigTurnEnd))
			h.hook("sb", sig(events.SigSubagentStop, "id", "a1"))
		}, want{phase: events.PhaseReady}},
		{"permission denied", func(h *history) {
			asking(h)
			h.hook("denied", sig(events.SigToolResult, "id", "t1", "status", "rejected"))
		}, want{phase: events.PhaseWorking, activity: "thinking"}},
		{"compaction outside a turn", func(h *history) {
			h.hook("start", sig(events.SigSessionStart, "name", "startup"))
			h.hook("pre", sig(events.SigCompactStart, "name", "manual"))
			h.hook("post", sig(events.SigCompactEnd, "name", "compact"))
		}, want{phase: events.PhaseReady}},
		{"manual compaction after a turn that never got its end (hooks)", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "ok"))
			h.hook("pre", sig(events.SigCompactStart, "name", "manual"))
			h.hook("post", sig(events.SigCompactEnd, "name", "compact"))
		}, want{phase: events.PhaseReady, outcome: "completed"}},
		{"manual compaction after a turn that never got its end (transcript)", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "ok"))
			h.line(m, sig(events.SigCompactEnd, "name", "manual"))
			h.line(m, sig(events.SigCompactEnd, "name", "summary"))
		}, want{phase: events.PhaseReady, outcome: "completed"}},
		{"manual compaction with a call still open", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigCompactEnd, "name", "manual"))
		}, want{phase: events.PhaseReady, outcome: "interrupted"}},
		{"auto compaction inside a turn", func(h *history) {
			prompt(h)
			h.hook("pre", sig(events.SigCompactStart, "name", "auto"))
			h.line(m, sig(events.SigCompactEnd, "name", "auto"))
		}, want{phase: events.PhaseWorking, activity: "thinking"}},
		{"an auto compaction's end alone moves nothing", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigCompactEnd, "name", "auto"))
		}, want{phase: events.PhaseWorking, activity: "tool:Bash", entries: 1}},
		{"session end closes everything", func(h *history) {
			prompt(h)
			call(h, "t1", "Bash")
			h.line(m, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "b1"))
			call(h, "t2", "Bash")
			perm(h, "t2")
			h.hook("end", sig(events.SigSessionEnd, "text", "logout"))
		}, want{phase: events.PhaseEnded, outcome: "ended"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(t)
			tt.run(h)
			s := h.s
			if s.Phase != tt.want.phase || tt.want.activity != "" && s.Activity != tt.want.activity ||
				len(s.Entries) != tt.want.entries || len(s.OpenReviews) != tt.want.reviews {
				t.Errorf("phase %s/%s entries %v reviews %v; want %s/%s %d entries %d reviews\nevents: %v",
					s.Phase, s.Activity, s.Entries, s.OpenReviews, tt.want.phase, tt.want.activity, tt.want.entries, tt.want.reviews, types(h.evs))
			}
			if tt.want.outcome != "" {
				if got := lastOutcome(h); got != tt.want.outcome {
					t.Errorf("turn outcome %q, want %q", got, tt.want.outcome)
				}
			}
			if s.Phase != events.PhaseWorking && s.TurnOpen && s.Phase != events.PhaseWaiting {
				t.Errorf("phase %s with an open turn", s.Phase)
			}
		})
	}
}

func lastOutcome(h *history) string {
	out := ""
	for _, e := range h.evs {
		if d, ok := e.Data.(events.SessionTurnEnded); ok {
			out = d.Outcome
		}
	}
	return out
}

// TestDecide_UnknownHookInventsNothing: a hook without signals is kept as
// an observation but neither starts nor moves a session.
func TestDecide_UnknownHookInventsNothing(t *testing.T) {
	h := newHistory(t)
	if decs := h.hook("future"); len(decs) != 0 {
		t.Fatalf("unknown hook decided %v", types(decs))
	}
	if h.s.Exists() || h.s.Observations != 1 {
		t.Errorf("exists %v observations %d", h.s.Exists(), h.s.Observations)
	}
	h.hook("start", sig(events.SigSessionStart, "name", "startup"))
	h.line(events.Meta{}, sig(events.SigPrompt))
	if decs := h.hook("future2"); len(decs) != 0 {
		t.Errorf("unknown hook in a live session decided %v", types(decs))
	}
	if h.s.Phase != events.PhaseWorking {
		t.Errorf("phase %s", h.s.Phase)
	}
}

// TestEvolve_UpdatedNotBeforeStarted: events carrying earlier times than
// the session's start (a transcript imported after hooks) move started
// back, never updated before it.
func TestEvolve_UpdatedNotBeforeStarted(t *testing.T) {
	s := session.Init(agg)
	at := []int{10, 12, 3, 11}
	reg := events.NewRegistry()
	for i, sec := range at {
		var p events.Payload = events.SessionDescribed{Title: "x"}
		if i == 0 {
			p = events.SessionStarted{Agent: "a"}
		}
		e := reg.New(p)
		e.Agg, e.Ver, e.At = agg, s.Ver+1, t0.Add(seconds(sec))
		s = session.Evolve(s, e)
		if s.UpdatedAt.Before(s.StartedAt) {
			t.Fatalf("after event %d: updated %v before started %v", i, s.UpdatedAt, s.StartedAt)
		}
	}
	if !s.StartedAt.Equal(t0.Add(seconds(3))) || !s.UpdatedAt.Equal(t0.Add(seconds(12))) {
		t.Errorf("started %v updated %v", s.StartedAt, s.UpdatedAt)
	}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// TestDecide_LateReports: a transcript read after the Stop hook of its
// turn reopens nothing but keeps the question cue; a prompt hook read
// after the transcript ended its turn starts no turn.
func TestDecide_LateReports(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(steps []lateStep) session.State {
		reg := events.NewRegistry()
		s := session.Init(agg)
		for i, st := range steps {
			o := events.Observation{Key: fmt.Sprintf("h%d", i), Parser: "test/1", Kind: "hook", Signals: st.sigs}
			var p events.Payload = events.ClaudeHookObserved{Observation: o}
			if st.line > 0 {
				o.Key, o.Line, o.Path = fmt.Sprintf("line:%d", st.line), st.line, "/p/s1.jsonl"
				p = events.ClaudeLineObserved{Observation: o}
			}
			e := reg.New(p)
			e.ID, e.Agg, e.At = ulid.MustNew(ulid.Timestamp(at(st.ms)), strings.NewReader(fmt.Sprintf("%016d", i))), agg, at(st.ms)
			decs, err := session.Decide(s, session.Observe{Obs: e})
			if err != nil {
				t.Fatal(err)
			}
			e.Ver = s.Ver + 1
			s = session.Evolve(s, e)
			for _, d := range decs {
				d.Ver = s.Ver + 1
				s = session.Evolve(s, d)
			}
		}
		return s
	}
	prompt := events.Sig{Kind: events.SigPrompt, ID: "p1"}
	stop := events.Sig{Kind: events.SigTurnEnd, Name: "Stop"}
	s := run([]lateStep{
		{ms: 1, sigs: []events.Sig{prompt}},
		{ms: 9, sigs: []events.Sig{stop}},
		{ms: 0, line: 1, sigs: []events.Sig{prompt}},
		{ms: 3, line: 2, sigs: []events.Sig{{Kind: events.SigToolUse, ID: "t1", Name: "Bash"}}},
		{ms: 8, line: 3, sigs: []events.Sig{{Kind: events.SigText, Text: "Shall I?"}, {Kind: events.SigTurnEnd, Name: "end_turn"}}},
	})
	if s.Phase != events.PhaseWaiting || s.Activity != "question" || len(s.Entries) != 0 || s.Turns != 1 {
		t.Errorf("late transcript: %s/%s entries %v turns %d; want waiting/question, none, 1", s.Phase, s.Activity, s.Entries, s.Turns)
	}
	s = run([]lateStep{
		{ms: 0, line: 1, sigs: []events.Sig{{Kind: events.SigPrompt}}},
		{ms: 5, line: 2, sigs: []events.Sig{{Kind: events.SigInterrupt}}},
		{ms: 1, sigs: []events.Sig{{Kind: events.SigPrompt}}},
	})
	if s.Phase != events.PhaseReady || s.Turns != 1 {
		t.Errorf("late prompt hook: %s turns %d; want ready, 1", s.Phase, s.Turns)
	}
}

type lateStep struct {
	ms   int
	line int
	sigs []events.Sig
}

// TestExitTable_APIRetriesThenSilence: a transcript that ends in API
// error retries (the process exited while retrying) has nothing that ends
// its turn; the stale mark does, and the session is ready.
func TestExitTable_APIRetriesThenSilence(t *testing.T) {
	h := newHistory(t)
	m := events.Meta{SessionID: "s1"}
	h.line(m, sig(events.SigPrompt, "id", "p1"))
	h.line(m, sig(events.SigAPIError, "status", "retrying", "text", "status 529: Overloaded (retry 1/10)"))
	h.line(m, sig(events.SigAPIError, "status", "retrying", "text", "status 529: Overloaded (retry 2/10)"))
	if h.s.Phase != events.PhaseWorking || h.s.Activity != "api_retry" || !h.s.TurnOpen {
		t.Fatalf("retrying: %s/%s turn open %v", h.s.Phase, h.s.Activity, h.s.TurnOpen)
	}
	h.tick(h.s.ObservedAt.Add(time.Hour), 30*time.Minute, nil)
	if h.s.Phase != events.PhaseReady || h.s.TurnOpen {
		t.Errorf("after the stale mark: %s turn open %v", h.s.Phase, h.s.TurnOpen)
	}
	if got := lastOutcome(h); got != session.ReasonStale {
		t.Errorf("turn outcome %q", got)
	}
}
