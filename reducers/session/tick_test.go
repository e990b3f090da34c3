package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// tick observes one reconciler tick at now: its clock is the tick's own
// recorded time, so the decision is the same on every re-derivation.
func (h *history) tick(now time.Time, after time.Duration, check *events.ProcessCheck) []events.Envelope {
	h.t.Helper()
	h.n++
	key := fmt.Sprintf("tick:%d", h.n)
	o := events.Observation{Key: key, Parser: "logbook-reconciler/1", Kind: "tick", Tick: &events.Tick{
		Now: now, LastObserved: h.s.ObservedAt, AbandonAfter: after.Milliseconds(), Check: check,
	}}
	return h.record(events.TickObserved{Observation: o}, now, true, true)
}

// hookFrom observes a hook payload that ran under process p.
func (h *history) hookFrom(p events.Process, key string, sigs ...events.Sig) []events.Envelope {
	o := events.Observation{Key: key, Parser: "test/1", Kind: "hook", Signals: sigs, Process: &p}
	return h.observe(events.ClaudeHookObserved{Observation: o})
}

func TestDecide_TickStale(t *testing.T) {
	meta := events.Meta{SessionID: "s1"}
	const after = 30 * time.Minute
	open := func(t *testing.T) *history {
		h := newHistory(t)
		h.line(meta, sig(events.SigPrompt, "id", "p1"))
		h.line(meta, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		return h
	}
	t.Run("BeforeAbandonAfter", func(t *testing.T) {
		h := open(t)
		if got := h.tick(h.s.ObservedAt.Add(after-time.Second), after, nil); got != nil {
			t.Fatalf("decided %v before the abandon-after time", types(got))
		}
	})
	t.Run("NeverWithZeroAbandonAfter", func(t *testing.T) {
		h := open(t)
		if got := h.tick(h.s.ObservedAt.Add(1000*time.Hour), 0, nil); got != nil {
			t.Fatalf("decided %v with abandon-after 0", types(got))
		}
	})
	t.Run("MarksOpenEntryAndSettles", func(t *testing.T) {
		h := open(t)
		seen := h.s.ObservedAt
		now := seen.Add(72 * time.Hour)
		got := h.tick(now, after, nil)
		want := []string{"session.entry_abandoned", "session.turn_ended", "session.transitioned"}
		if diff := cmp.Diff(want, types(got)); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		mark := got[0].Data.(events.SessionEntryAbandoned)
		if mark.EntryID != "toolu_1" || mark.Reason != session.ReasonStale || mark.Evidence == "" {
			t.Errorf("mark = %+v", mark)
		}
		for _, e := range got {
			if e.Cause == nil || e.Cause.Kind != "reconciler" || !e.At.Equal(now) {
				t.Errorf("%s: cause %+v at %s; want the tick's, at its time", e.Type, e.Cause, e.At)
			}
		}
		if h.s.Phase != events.PhaseReady || len(h.s.Entries) != 0 || h.s.Abandoned != 1 {
			t.Errorf("after: phase %s, %d open, %d abandoned", h.s.Phase, len(h.s.Entries), h.s.Abandoned)
		}
		if !h.s.ObservedAt.Equal(seen) {
			t.Errorf("a tick moved observed_at to %s", h.s.ObservedAt)
		}
		// Marks are new events; a second tick finds nothing left to mark.
		if got := h.tick(now.Add(time.Hour), after, nil); got != nil {
			t.Errorf("second tick decided %v", types(got))
		}
		// The agent was alive after all: its next line is taken as usual.
		h.line(meta, sig(events.SigText, "text", "done"))
		if h.s.Phase != events.PhaseWorking {
			t.Errorf("phase after a later line = %s, want working", h.s.Phase)
		}
	})
	t.Run("WaitingOnPermission", func(t *testing.T) {
		h := open(t)
		h.hook("perm-1", sig(events.SigPermission, "id", "toolu_1", "name", "Bash"))
		if h.s.Phase != events.PhaseWaiting {
			t.Fatalf("phase %s, want waiting", h.s.Phase)
		}
		// A permission prompt waits on a person: their silence, a week
		// of it, is no stale mark.
		if got := h.tick(h.s.ObservedAt.Add(7*24*time.Hour), after, nil); got != nil {
			t.Errorf("decided %v on a permission prompt", types(got))
		}
		if h.s.Phase != events.PhaseWaiting || len(h.s.OpenReviews) != 1 {
			t.Errorf("after: phase %s, open reviews %v; want still waiting on the prompt", h.s.Phase, h.s.OpenReviews)
		}
	})
	t.Run("KeepsWorkersEntries", func(t *testing.T) {
		h := open(t)
		evs, err := session.Decide(h.s, session.Attach{EntryID: "cmd-1", Activity: "command:go", At: h.s.ObservedAt,
			Cause: events.Cause{Kind: "worker", Event: "command.started", Ref: "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			h.apply(h.stamp(e))
		}
		h.tick(h.s.ObservedAt.Add(time.Hour), after, nil)
		if len(h.s.Entries) != 1 || h.s.Entries[0].EntryID != "cmd-1" || h.s.Phase != events.PhaseWorking {
			t.Errorf("after: phase %s, entries %+v; want the command's entry kept, working", h.s.Phase, h.s.Entries)
		}
	})
	t.Run("ReadyIsLeftAlone", func(t *testing.T) {
		h := newHistory(t)
		h.line(meta, sig(events.SigPrompt, "id", "p1"))
		h.line(meta, sig(events.SigTurnEnd))
		if got := h.tick(h.s.ObservedAt.Add(1000*time.Hour), after, nil); got != nil {
			t.Errorf("decided %v for a ready session", types(got))
		}
	})
}

func TestDecide_TickAgentGone(t *testing.T) {
	meta := events.Meta{SessionID: "s1"}
	agent := events.Process{PID: 4242, Start: 99, Host: "h", Boot: "b", Comm: "claude"}
	open := func(t *testing.T) *history {
		h := newHistory(t)
		h.hookFrom(agent, "hook:1", sig(events.SigPrompt, "id", "p1"))
		h.hookFrom(agent, "hook:2", sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		h.line(meta, sig(events.SigToolUse, "id", "toolu_2", "name", "Read"))
		return h
	}
	t.Run("Gone", func(t *testing.T) {
		h := open(t)
		if h.s.AgentProcess == nil || !h.s.AgentProcess.Same(agent) {
			t.Fatalf("agent process = %+v", h.s.AgentProcess)
		}
		got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, &events.ProcessCheck{Process: agent, Result: events.ProcessGone, Detail: "no /proc/4242"})
		want := []string{"session.entry_abandoned", "session.entry_abandoned", "session.turn_ended", "session.ended"}
		if diff := cmp.Diff(want, types(got)); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		end := got[3].Data.(events.SessionEnded)
		if end.Reason != session.ReasonAgentGone || end.Evidence != "pid 4242 (claude) on h is gone: no /proc/4242" {
			t.Errorf("end = %+v", end)
		}
		if h.s.Phase != events.PhaseEnded || len(h.s.Entries) != 0 {
			t.Errorf("after: phase %s, entries %v", h.s.Phase, h.s.Entries)
		}
	})
	for name, check := range map[string]*events.ProcessCheck{
		"Alive":        {Process: agent, Result: events.ProcessAlive},
		"Unknown":      {Process: agent, Result: events.ProcessUnknown},
		"OtherProcess": {Process: events.Process{PID: 4242, Start: 100, Host: "h", Boot: "b"}, Result: events.ProcessGone},
		"NoCheck":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			h := open(t)
			// Long idle: a known, live agent is never marked stale.
			if got := h.tick(h.s.ObservedAt.Add(100*time.Hour), 30*time.Minute, check); got != nil {
				t.Errorf("decided %v", types(got))
			}
		})
	}
	t.Run("NewerProcessWins", func(t *testing.T) {
		h := open(t)
		resumed := events.Process{PID: 5000, Start: 7, Host: "h", Boot: "b"}
		h.hookFrom(resumed, "hook:3", sig(events.SigSessionStart, "name", "resume"))
		if got := h.tick(h.s.ObservedAt, 0, &events.ProcessCheck{Process: agent, Result: events.ProcessGone}); got != nil {
			t.Errorf("the old process's end decided %v", types(got))
		}
	})
}

// TestDecide_TickAgentFromChains: hooks that record their chain of
// ancestors name the agent by the process their chains share. A
// dispatcher that runs one hook and exits is never the agent: its death
// marks nothing, while the agent's, once two hooks agree on it, ends the
// session. One hook alone names no agent; an agent process that resumes
// the session is taken once two of its hooks agree.
func TestDecide_TickAgentFromChains(t *testing.T) {
	agent := events.ProcessRef{PID: 4242, Start: 99, Comm: "python3"}
	shell := events.ProcessRef{PID: 100, Start: 5, Comm: "tmux: server"}
	// via is the process a hook finds first when dispatcher d runs it
	// under the agent: d, with the agent and the user's terminal above.
	via := func(d events.ProcessRef, above ...events.ProcessRef) events.Process {
		return events.Process{PID: d.PID, Start: d.Start, Host: "h", Boot: "b", Comm: d.Comm,
			Chain: append([]events.ProcessRef{d}, above...)}
	}
	disp := func(n int) events.ProcessRef {
		return events.ProcessRef{PID: 5000 + n, Start: 200 + uint64(n), Comm: "python3"}
	}
	gone := func(r events.ProcessRef) *events.ProcessCheck {
		return &events.ProcessCheck{Process: events.Process{PID: r.PID, Start: r.Start, Host: "h", Boot: "b"}, Result: events.ProcessGone}
	}
	open := func(t *testing.T) *history {
		h := newHistory(t)
		h.hookFrom(via(disp(1), agent, shell), "hook:1", sig(events.SigPrompt, "id", "p1"))
		if h.s.AgentProcess != nil {
			t.Fatalf("after one hook: agent process %+v, want none yet", h.s.AgentProcess)
		}
		h.hookFrom(via(disp(2), agent, shell), "hook:2", sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		return h
	}
	t.Run("DispatcherGone", func(t *testing.T) {
		h := open(t)
		if p := h.s.AgentProcess; p == nil || p.PID != agent.PID || p.Start != agent.Start || p.Comm != "python3" || p.Chain != nil {
			t.Fatalf("agent process = %+v, want pid %d", p, agent.PID)
		}
		for _, d := range []events.ProcessRef{disp(1), disp(2)} {
			if got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, gone(d)); got != nil {
				t.Fatalf("dispatcher %d gone decided %v", d.PID, types(got))
			}
		}
	})
	t.Run("AgentGone", func(t *testing.T) {
		h := open(t)
		got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, gone(agent))
		want := []string{"session.entry_abandoned", "session.turn_ended", "session.ended"}
		if diff := cmp.Diff(want, types(got)); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("OneHookNamesNone", func(t *testing.T) {
		h := newHistory(t)
		h.hookFrom(via(disp(1), agent, shell), "hook:1", sig(events.SigPrompt, "id", "p1"))
		if got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, gone(disp(1))); got != nil {
			t.Fatalf("an unconfirmed process's death decided %v", types(got))
		}
	})
	t.Run("Resumed", func(t *testing.T) {
		h := open(t)
		again := events.ProcessRef{PID: 6000, Start: 900, Comm: "python3"}
		h.hookFrom(via(disp(3), again, shell), "hook:3", sig(events.SigSessionStart, "name", "resume"))
		if p := h.s.AgentProcess; p != nil && p.PID == agent.PID {
			t.Fatalf("agent process = %+v after another agent's hook", p)
		}
		h.hookFrom(via(disp(4), again, shell), "hook:4", sig(events.SigPrompt, "id", "p2"))
		if p := h.s.AgentProcess; p == nil || p.PID != again.PID {
			t.Fatalf("agent process = %+v, want the resumed agent %d", p, again.PID)
		}
		if got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, gone(agent)); got != nil {
			t.Fatalf("the old agent's death decided %v", types(got))
		}
	})
	t.Run("OtherHost", func(t *testing.T) {
		h := open(t)
		p := via(disp(3), agent, shell)
		p.Host = "other"
		h.hookFrom(p, "hook:3", sig(events.SigPrompt, "id", "p2"))
		if h.s.AgentProcess != nil {
			t.Fatalf("agent process = %+v after a hook on another host", h.s.AgentProcess)
		}
	})
	t.Run("OtherPidNamespace", func(t *testing.T) {
		// The same pids in another PID namespace are other processes:
		// the chains share none, and a check of the agent's pid in
		// another namespace than its own is about another process.
		h := open(t)
		p := via(disp(3), agent, shell)
		p.PidNS = "pid:[4026532253]"
		h.hookFrom(p, "hook:3", sig(events.SigPrompt, "id", "p2"))
		if h.s.AgentProcess != nil {
			t.Fatalf("agent process = %+v after a hook in another PID namespace", h.s.AgentProcess)
		}
		h.hookFrom(via(disp(4), agent, shell), "hook:4", sig(events.SigPrompt, "id", "p3"))
		h.hookFrom(via(disp(5), agent, shell), "hook:5", sig(events.SigPrompt, "id", "p4"))
		if a := h.s.AgentProcess; a == nil || a.PID != agent.PID || a.PidNS != "" {
			t.Fatalf("agent process = %+v, want pid %d with no PID namespace", a, agent.PID)
		}
		c := gone(agent)
		c.Process.PidNS = "pid:[4026532253]"
		if got := h.tick(h.s.ObservedAt.Add(time.Second), 30*time.Minute, c); got != nil {
			t.Fatalf("pid %d gone in another PID namespace decided %v", agent.PID, types(got))
		}
	})
	t.Run("SamePidNamespace", func(t *testing.T) {
		h := newHistory(t)
		for i := range 2 {
			p := via(disp(i), agent, shell)
			p.PidNS = "pid:[4026532253]"
			h.hookFrom(p, fmt.Sprintf("hook:%d", i), sig(events.SigPrompt, "id", fmt.Sprintf("p%d", i)))
		}
		if a := h.s.AgentProcess; a == nil || a.PID != agent.PID || a.PidNS != "pid:[4026532253]" {
			t.Fatalf("agent process = %+v, want pid %d in its PID namespace", a, agent.PID)
		}
	})
}

// TestDecide_TickOneHookChain: before two hooks agree on the agent, the
// process the one hook found holds off a stale mark while it is not
// found gone, as a known agent does; found gone (it may have been a
// dispatcher), it ends nothing, and the session is stale as one with no
// process known.
func TestDecide_TickOneHookChain(t *testing.T) {
	const after = 30 * time.Minute
	found := events.Process{PID: 5001, Start: 201, Host: "h", Boot: "b", Comm: "python3",
		Chain: []events.ProcessRef{{PID: 5001, Start: 201}, {PID: 4242, Start: 99}}}
	plain := found
	plain.Chain = nil
	open := func(t *testing.T) *history {
		h := newHistory(t)
		h.hookFrom(found, "hook:1", sig(events.SigPrompt, "id", "p1"))
		h.line(events.Meta{SessionID: "s1"}, sig(events.SigToolUse, "id", "toolu_1", "name", "Bash"))
		if h.s.AgentProcess != nil || h.s.HookProcess == nil {
			t.Fatalf("agent %+v, hook process %+v; want none, the one found", h.s.AgentProcess, h.s.HookProcess)
		}
		return h
	}
	for _, result := range []string{events.ProcessAlive, events.ProcessUnknown} {
		t.Run(result, func(t *testing.T) {
			h := open(t)
			if got := h.tick(h.s.ObservedAt.Add(100*time.Hour), after, &events.ProcessCheck{Process: plain, Result: result}); got != nil {
				t.Errorf("decided %v", types(got))
			}
		})
	}
	t.Run("Gone", func(t *testing.T) {
		h := open(t)
		gone := &events.ProcessCheck{Process: plain, Result: events.ProcessGone}
		if got := h.tick(h.s.ObservedAt.Add(time.Second), after, gone); got != nil {
			t.Fatalf("decided %v before the abandon-after time", types(got))
		}
		got := h.tick(h.s.ObservedAt.Add(time.Hour), after, gone)
		want := []string{"session.entry_abandoned", "session.turn_ended", "session.transitioned"}
		if diff := cmp.Diff(want, types(got)); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		if a := got[0].Data.(events.SessionEntryAbandoned); a.Reason != session.ReasonStale {
			t.Errorf("abandoned %+v, want stale", a)
		}
	})
}
