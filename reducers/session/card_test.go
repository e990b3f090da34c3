package session_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
	"github.com/logbook-dev/logbook/reducers/session"
)

func TestOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"\n  \n", ""},
		{"  done  ", "done"},
		{"\n\nI found one file:\n\n- a.go", "I found one file:"},
		{strings.Repeat("a", 130), strings.Repeat("a", 117) + "…"},
		// Cut on a rune boundary: "é" is two bytes.
		{strings.Repeat("é", 70), strings.Repeat("é", 58) + "…"},
	} {
		got := session.OneLine(c.in, session.MaxLastSaid)
		if got != c.want {
			t.Errorf("OneLine(%q) = %q, want %q", c.in, got, c.want)
		}
		if len(got) > session.MaxLastSaid {
			t.Errorf("OneLine(%q) is %d bytes, over %d", c.in, len(got), session.MaxLastSaid)
		}
	}
}

// A subagent's card: its depth (1 when its agent counts none), the last
// thing it said on one line, its own turns, calls and tokens, its status
// as the phase and the parent's release say, and whether its parent sent
// it to the background (the parent's backgrounded result names its
// agent id).
func TestCardOf(t *testing.T) {
	child := newHistory(t)
	meta := events.Meta{SessionID: "parent", AgentID: "a1", AgentType: "Explore"}
	child.line(meta, sig(events.SigPrompt))
	child.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Grep"))
	child.line(meta, sig(events.SigToolResult, "id", "t1"))
	child.line(meta, events.Sig{Kind: events.SigText, Text: "\n**Total: 135 files**\n\n- adapters: 72"},
		events.Sig{Kind: events.SigUsage, ID: "m1", Usage: &events.Usage{Model: "m", Input: 10, Output: 5, CacheRead: 100}})
	if child.s.Depth != 1 || child.s.Parent != "parent" {
		t.Fatalf("depth %d parent %q, want 1 and parent", child.s.Depth, child.s.Parent)
	}
	if child.s.LastSaid != "**Total: 135 files**" {
		t.Errorf("last said %q", child.s.LastSaid)
	}
	parent := newHistory(t)
	parent.line(events.Meta{SessionID: "parent"}, sig(events.SigPrompt))
	parent.line(events.Meta{SessionID: "parent"}, sig(events.SigToolUse, "id", "ta", "name", "Agent"))
	parent.line(events.Meta{SessionID: "parent"}, events.Sig{Kind: events.SigToolResult, ID: "ta", Status: events.OutcomeBackground, Task: "a1"})
	if !parent.s.Backgrounded.Has("a1") {
		t.Fatalf("parent's backgrounded %v, want a1", parent.s.Backgrounded.All())
	}
	// The rows as the projection stores them.
	cs := reducertest.RoundTrip(t, session.Summarize(child.s))
	ps := reducertest.RoundTrip(t, session.Summarize(parent.s))
	got := session.CardOf(cs, ps)
	want := session.Card{
		Session: child.s.ID, Kind: session.CardAgentTool, Type: "Explore", Depth: 1, Background: true,
		Status: session.CardRunning, LastSaid: "**Total: 135 files**", Turns: 1, ToolCalls: 1, Tokens: 115,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("card (-want +got):\n%s", d)
	}
	if r, n := session.Delegation([]session.Card{got}); r != 1 || n != 1 {
		t.Errorf("delegation %d/%d, want 1/1", r, n)
	}
	// A parent that ran it in the foreground: not background. Its turn
	// over: done.
	child.line(meta, sig(events.SigTurnEnd))
	got = session.CardOf(session.Summarize(child.s), session.Summary{})
	if got.Background || got.Status != session.CardDone {
		t.Errorf("background %v status %s, want false and done", got.Background, got.Status)
	}
	if r, n := session.Delegation([]session.Card{got}); r != 0 || n != 1 {
		t.Errorf("delegation %d/%d, want 0/1", r, n)
	}
}

// A Codex spawned thread's card keeps the depth its agent counted.
func TestCardOf_SpawnedThreadDepth(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{Agent: "codex", SessionID: "root", AgentID: "t2", AgentType: "explorer", Depth: 2}, sig(events.SigSessionStart, "name", "subagent"))
	c := session.CardOf(session.Summarize(h.s), session.Summary{})
	if c.Kind != session.CardSpawnedThread || c.Depth != 2 || c.Status != session.CardIdle || c.Type != "explorer" {
		t.Errorf("card %+v, want spawned_thread depth 2 idle explorer", c)
	}
}

func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		s    session.Summary
		want string
	}{
		{session.Summary{Phase: events.PhaseReady}, session.CardIdle},
		{session.Summary{Phase: events.PhaseReady, Turns: 1}, session.CardDone},
		{session.Summary{Phase: events.PhaseWorking, Turns: 1}, session.CardRunning},
		{session.Summary{Phase: events.PhaseWaiting, Turns: 1}, session.CardWaiting},
		{session.Summary{Phase: events.PhaseWorking, Turns: 1, Released: true}, session.CardDone},
		{session.Summary{Phase: events.PhaseEnded, Turns: 1, Released: true}, session.CardEnded},
	} {
		if got := session.StatusOf(c.s); got != c.want {
			t.Errorf("StatusOf(%+v) = %s, want %s", c.s, got, c.want)
		}
	}
}
