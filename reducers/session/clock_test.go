package session_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// lineAt observes transcript line n+1 whose agent timestamp is agent,
// taken in by the appending host at recv; live says whether it was read
// as the agent wrote it. Its envelope's time is the agent's, as the
// import gives it.
func (h *history) lineAt(agent, recv time.Time, live bool, sigs ...events.Sig) []events.Envelope {
	h.t.Helper()
	h.lines++
	o := events.Observation{
		Key: fmt.Sprintf("line:%d", h.lines), Parser: "test/1", Line: h.lines, Kind: "assistant",
		Meta: events.Meta{SessionID: "s1"}, Signals: sigs,
		AgentTime: agent.UTC().Format(time.RFC3339Nano), Received: recv, Live: live,
	}
	return h.observeAt(events.ClaudeLineObserved{Observation: o}, agent)
}

// hookAt observes a hook taken in at recv (its time and its receipt).
func (h *history) hookAt(key string, recv time.Time, sigs ...events.Sig) []events.Envelope {
	h.t.Helper()
	o := events.Observation{Key: key, Parser: "test/1", Kind: "hook", Signals: sigs, Received: recv, Live: true}
	return h.observeAt(events.ClaudeHookObserved{Observation: o}, recv)
}

func (h *history) observeAt(p events.Payload, at time.Time) []events.Envelope {
	h.t.Helper()
	return h.record(p, at, false, false)
}

// tickQ observes a reconciler tick at now with abandon-after after and a
// quiet period of quiet, its evidence read from the state as the
// reconciler reads it.
func (h *history) tickQ(now time.Time, after, quiet time.Duration) []events.Envelope {
	h.t.Helper()
	h.n++
	o := events.Observation{Key: fmt.Sprintf("tick:%d", h.n), Parser: "logbook-reconciler/1", Kind: "tick", Tick: &events.Tick{
		Now: now, LastObserved: h.s.ObservedAt, LastRef: h.s.ObservedRef, LastReceived: h.s.ReceivedAt,
		AbandonAfter: after.Milliseconds(), QuietMS: quiet.Milliseconds(), ClockOffsetMS: h.s.ClockOffsetMS,
	}}
	return h.record(events.TickObserved{Observation: o}, now, true, false)
}

// TestDecide_StaleOnServerClock: staleness is judged on the server's
// clock. A live line counts at its receipt, whatever the agent's clock
// says; the offset it shows is learned and corrects history read later;
// history with no offset known counts at its own time.
func TestDecide_StaleOnServerClock(t *testing.T) {
	const after, quiet = 30 * time.Minute, 2 * time.Second
	server := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, skew := range []time.Duration{-40 * time.Minute, 40 * time.Minute, -2 * time.Hour, 2 * time.Hour, 0} {
		t.Run(fmt.Sprintf("Live%s", skew), func(t *testing.T) {
			h := newHistory(t)
			at := server
			h.lineAt(at.Add(skew), at, true, sig(events.SigPrompt, "id", "p1"))
			for i := range 6 {
				at = at.Add(time.Second)
				id := fmt.Sprintf("toolu_%d", i)
				h.lineAt(at.Add(skew), at, true, sig(events.SigToolUse, "id", id, "name", "Bash"))
				at = at.Add(time.Second)
				h.lineAt(at.Add(skew), at, true, sig(events.SigToolResult, "id", id, "status", "ok"))
				if got := h.tickQ(at.Add(3*time.Second), after, quiet); got != nil {
					t.Fatalf("tick 3s after a live line decided %v", types(got))
				}
			}
			h.lineAt(at.Add(skew), at, true, sig(events.SigToolUse, "id", "toolu_build", "name", "Bash"))
			if !h.s.ObservedAt.Equal(at) {
				t.Errorf("observed_at %s, want the last receipt %s", h.s.ObservedAt, at)
			}
			if got, want := h.s.ClockOffsetMS, -skew.Milliseconds(); got != want {
				t.Errorf("clock offset %d ms, want %d", got, want)
			}
			if got := h.tickQ(at.Add(after-time.Second), after, quiet); got != nil {
				t.Fatalf("tick within abandon-after of the last receipt decided %v", types(got))
			}
			got := h.tickQ(at.Add(after), after, quiet)
			if len(got) == 0 {
				t.Fatalf("no stale mark %s after the last receipt", after)
			}
			ev := got[0].Data.(events.SessionEntryAbandoned).Evidence
			if skew != 0 && !strings.Contains(ev, session.State{ClockOffsetMS: -skew.Milliseconds(), ClockOffsetAt: at}.ClockOffset()) {
				t.Errorf("evidence %q does not show the clock offset", ev)
			}
		})
	}
	t.Run("OldHistoryIsStale", func(t *testing.T) {
		// A transcript written days ago, imported now (no offset known):
		// its own times say it is silent.
		h := newHistory(t)
		old := server.Add(-72 * time.Hour)
		h.lineAt(old, server, false, sig(events.SigPrompt, "id", "p1"))
		h.lineAt(old.Add(time.Second), server, false, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		if got := h.tickQ(server.Add(time.Second), after, quiet); got != nil {
			t.Fatalf("tick within the quiet period after the import decided %v", types(got))
		}
		got := h.tickQ(server.Add(quiet), after, quiet)
		if len(got) == 0 || got[0].Type != "session.entry_abandoned" {
			t.Fatalf("tick after the import decided %v, want a stale mark", types(got))
		}
	})
	t.Run("HistoryCorrectedByOffset", func(t *testing.T) {
		// Followed live (agent 40m behind), then the server stops; the
		// lines written meanwhile are read as history when it starts
		// again, dated by their agent time plus the offset learned.
		const skew = -40 * time.Minute
		h := newHistory(t)
		h.lineAt(server.Add(skew), server, true, sig(events.SigPrompt, "id", "p1"))
		back := server.Add(10 * time.Minute)
		written := back.Add(-time.Minute)
		h.lineAt(written.Add(skew), back, false, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		if !h.s.ObservedAt.Equal(written) {
			t.Errorf("observed_at %s, want the line's agent time corrected to %s", h.s.ObservedAt, written)
		}
		if got := h.tickQ(back.Add(time.Minute), after, quiet); got != nil {
			t.Fatalf("decided %v two minutes after the agent wrote", types(got))
		}
		if got := h.tickQ(written.Add(after), after, quiet); len(got) == 0 {
			t.Fatalf("no stale mark %s after the corrected time", after)
		}
	})
	t.Run("HistoryNeverMovesItBack", func(t *testing.T) {
		h := newHistory(t)
		h.hookAt("h1", server, sig(events.SigPrompt, "id", "p1"))
		h.lineAt(server.Add(-2*time.Hour), server.Add(time.Second), false, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		if !h.s.ObservedAt.Equal(server) {
			t.Errorf("observed_at %s, want the hook's receipt %s", h.s.ObservedAt, server)
		}
	})
	t.Run("ImportInProgressIsNotSilence", func(t *testing.T) {
		h := newHistory(t)
		old := server.Add(-72 * time.Hour)
		h.lineAt(old, server, false, sig(events.SigPrompt, "id", "p1"))
		for i := range 20 {
			recv := server.Add(time.Duration(i) * 500 * time.Millisecond)
			h.lineAt(old.Add(time.Duration(i)*time.Second), recv, false, sig(events.SigText, "text", "…"))
			if got := h.tickQ(recv.Add(400*time.Millisecond), after, quiet); got != nil {
				t.Fatalf("tick during the import decided %v", types(got))
			}
		}
	})
}

// TestDecide_PersonWaitNeverStale: what waits on a person stays open for
// a week of their silence, and ends only by their answer, the session's
// end, or the agent process known gone.
func TestDecide_PersonWaitNeverStale(t *testing.T) {
	const after, quiet = 30 * time.Minute, 2 * time.Second
	week := 7 * 24 * time.Hour
	cases := map[string]func(h *history){
		"QuestionCue": func(h *history) {
			h.line(meta1, sig(events.SigText, "text", "Shall I go on?"), sig(events.SigTurnEnd))
		},
		"AskUserQuestion": func(h *history) {
			h.line(meta1, sig(events.SigToolUse, "id", "toolu_q", "name", "AskUserQuestion"), sig(events.SigQuestion, "id", "toolu_q", "name", "AskUserQuestion"))
		},
		"PlanApproval": func(h *history) {
			h.line(meta1, sig(events.SigToolUse, "id", "toolu_p", "name", "ExitPlanMode"), sig(events.SigQuestion, "id", "toolu_p", "name", "ExitPlanMode"))
		},
		"CodexProposedPlan": func(h *history) {
			h.line(meta1, sig(events.SigTurnEnd, "status", events.TurnEndPlan))
		},
		"CodexQuestionAtTurnEnd": func(h *history) {
			h.line(meta1, sig(events.SigTurnEnd, "status", events.TurnEndQuestion))
		},
		"PermissionPrompt": func(h *history) {
			h.line(meta1, sig(events.SigToolUse, "id", "toolu_b", "name", "Bash"))
			h.hook("perm", sig(events.SigPermission, "id", "toolu_b", "name", "Bash"))
		},
	}
	for name, wait := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHistory(t)
			h.line(meta1, sig(events.SigPrompt, "id", "p1"))
			wait(h)
			what, since, ok := h.s.PersonWait()
			if !ok || h.s.Phase != events.PhaseWaiting {
				t.Fatalf("phase %s/%s: no person wait", h.s.Phase, h.s.Activity)
			}
			for _, d := range []time.Duration{after, 24 * time.Hour, week} {
				if got := h.tickQ(h.s.ObservedAt.Add(d), after, quiet); got != nil {
					t.Fatalf("tick %s later decided %v on a wait for a person (%s since %s)", d, types(got), what, since)
				}
			}
			if h.s.Phase != events.PhaseWaiting {
				t.Errorf("phase %s after a week, want waiting", h.s.Phase)
			}
		})
	}
	t.Run("AgentGoneEndsIt", func(t *testing.T) {
		h := newHistory(t)
		agent := events.Process{PID: 7, Start: 1, Host: "h", Boot: "b"}
		h.hookFrom(agent, "hook:1", sig(events.SigPrompt, "id", "p1"))
		h.line(meta1, sig(events.SigText, "text", "Which one?"), sig(events.SigTurnEnd))
		if h.s.Phase != events.PhaseWaiting {
			t.Fatalf("phase %s, want waiting", h.s.Phase)
		}
		got := h.tick(h.s.ObservedAt.Add(week), after, &events.ProcessCheck{Process: agent, Result: events.ProcessGone})
		if len(got) == 0 || h.s.Phase != events.PhaseEnded || h.s.EndReason != session.ReasonAgentGone {
			t.Fatalf("decided %v, phase %s (%s); want agent_gone", types(got), h.s.Phase, h.s.EndReason)
		}
	})
}

var meta1 = events.Meta{SessionID: "s1"}

// TestSummary_StaleMarkIsNotActivity: the reconciler's tick and its stale
// mark are not the agent's activity: a session marked stale keeps, as its
// last activity, the time its agent was last heard from.
func TestSummary_StaleMarkIsNotActivity(t *testing.T) {
	const after, quiet = 30 * time.Minute, 2 * time.Second
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := newHistory(t)
	h.lineAt(at, at, true, sig(events.SigPrompt, "id", "p1"))
	h.lineAt(at, at, true, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
	mark := at.Add(2 * after)
	if got := h.tickQ(mark, after, quiet); len(got) == 0 {
		t.Fatalf("no stale mark %s after the last line", 2*after)
	}
	sum := session.Summarize(h.s)
	if !sum.UpdatedAt.Equal(mark) {
		t.Errorf("updated_at %s, want the mark's time %s", sum.UpdatedAt, mark)
	}
	if got := sum.LastActivity(); !got.Equal(at) {
		t.Errorf("last activity %s, want the last line's %s, not the mark's", got, at)
	}
}
