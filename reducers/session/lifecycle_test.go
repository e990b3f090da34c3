package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
	"github.com/logbook-dev/logbook/reducers/session"
)

// A tool call's hook re-sent after more calls than any window holds (the
// recent hook keys, the recent closed entries) decides nothing: the
// closed calls are remembered for the session's life.
func TestDecide_LateDuplicateBeyondWindows(t *testing.T) {
	h := newHistory(t)
	meta := events.Meta{SessionID: "s1"}
	h.hook("start", sig(events.SigSessionStart, "name", "startup"))
	h.hook("p1", sig(events.SigPrompt))
	h.hook("pre:x", sig(events.SigToolUse, "id", "toolu_x", "name", "Bash"))
	h.hook("post:x", sig(events.SigToolResult, "id", "toolu_x"))
	n := max(session.RecentKeys, session.RecentClosed) + 10
	for i := range n {
		id := fmt.Sprintf("toolu_r%d", i)
		h.hook("pre:"+id, sig(events.SigToolUse, "id", id, "name", "Read"))
		h.hook("post:"+id, sig(events.SigToolResult, "id", id))
	}
	h.line(meta, sig(events.SigTurnEnd))
	if h.s.Phase != events.PhaseReady {
		t.Fatalf("phase %s, want ready", h.s.Phase)
	}
	obs := h.s.Observations
	for _, o := range [][]events.Sig{
		{sig(events.SigToolUse, "id", "toolu_x", "name", "Bash")},
		{sig(events.SigToolResult, "id", "toolu_x")},
		{sig(events.SigPermission, "id", "toolu_x", "name", "Bash")},
	} {
		if decs := h.hook(fmt.Sprintf("late:%s", o[0].Kind), o...); len(decs) != 0 {
			t.Errorf("late %s decided %v", o[0].Kind, types(decs))
		}
	}
	if h.s.Observations != obs || h.s.Phase != events.PhaseReady {
		t.Errorf("observations %d (was %d), phase %s", h.s.Observations, obs, h.s.Phase)
	}
	// The same tool_use in a transcript line (a duplicated line) is
	// stored, as every line is, and decides nothing.
	if decs := h.line(meta, sig(events.SigToolUse, "id", "toolu_x", "name", "Bash")); len(decs) != 0 {
		t.Errorf("duplicated line decided %v", types(decs))
	}
	if h.s.Phase != events.PhaseReady || len(h.s.Entries) != 0 {
		t.Errorf("phase %s entries %v after a duplicated line", h.s.Phase, h.s.Entries)
	}
}

// A prompt while the turn's calls are open records session.forked and
// keeps the calls open; their results close them ok.
func TestDecide_ForkKeepsCallsOpen(t *testing.T) {
	h := newHistory(t)
	h.hook("p1", sig(events.SigPrompt))
	h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Edit"))
	decs := h.hook("p2", sig(events.SigPrompt))
	if got := strings.Join(types(decs), " "); !strings.HasPrefix(got, "session.turn_ended session.forked session.turn_started") {
		t.Errorf("second prompt decided %s", got)
	}
	h.hook("pre:b", sig(events.SigToolUse, "id", "b", "name", "Edit"))
	h.hook("post:a", sig(events.SigToolResult, "id", "a"))
	h.hook("post:b", sig(events.SigToolResult, "id", "b"))
	h.hook("stop1", sig(events.SigTurnEnd))
	h.hook("stop2", sig(events.SigTurnEnd))
	if h.s.Forks != 1 || h.s.Abandoned != 0 || h.s.Phase != events.PhaseReady {
		t.Errorf("forks %d abandoned %d phase %s", h.s.Forks, h.s.Abandoned, h.s.Phase)
	}
	for _, e := range h.evs {
		if d, ok := e.Data.(events.SessionForked); ok && (d.Turn != 2 || strings.Join(d.Open, ",") != "a") {
			t.Errorf("forked %+v, want turn 2 open [a]", d)
		}
	}
	// A prompt after the turn's calls closed is a plain new turn.
	if got := types(h.hook("p3", sig(events.SigPrompt))); strings.Contains(strings.Join(got, " "), "forked") {
		t.Errorf("prompt with nothing open decided %v", got)
	}
}

// The result of an abandoned call is its late result; it decides nothing
// else, and a copy of it decides nothing at all.
func TestDecide_LateResult(t *testing.T) {
	h := newHistory(t)
	h.hook("p1", sig(events.SigPrompt))
	h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash"))
	h.hook("stop", sig(events.SigTurnEnd))
	decs := h.hook("post:a", sig(events.SigToolResult, "id", "a", "status", events.OutcomeError))
	if len(decs) != 1 || decs[0].Data != (events.SessionEntryLateResult{EntryID: "a", Outcome: events.OutcomeError}) {
		t.Fatalf("late result decided %v", types(decs))
	}
	if h.s.LateResults != 1 || h.s.Phase != events.PhaseReady {
		t.Errorf("late results %d phase %s", h.s.LateResults, h.s.Phase)
	}
	if decs := h.line(events.Meta{}, sig(events.SigToolResult, "id", "a")); len(decs) != 0 {
		t.Errorf("second copy decided %v", types(decs))
	}
}

// An IDSet is a value: Add never changes the set it was called on, and
// the JSON form round-trips exactly.
func TestIDSet(t *testing.T) {
	var a session.IDSet
	for i := range 1500 {
		a = a.Add(fmt.Sprintf("toolu_%d", i))
	}
	b := a.Add("extra")
	if a.Has("extra") || !b.Has("extra") || a.Len() != 1500 || b.Len() != 1501 {
		t.Fatalf("Add changed its receiver: a.Len %d b.Len %d", a.Len(), b.Len())
	}
	if !b.Has("toolu_0") || b.Has("toolu_1500") {
		t.Error("set membership wrong")
	}
	back := reducertest.RoundTrip(t, b)
	j2, _ := json.Marshal(back.Add("more"))
	j3, _ := json.Marshal(b.Add("more"))
	if string(j2) != string(j3) || back.Len() != b.Len() || !back.Has("toolu_777") {
		t.Error("JSON round trip changed the set")
	}
	for _, bad := range []string{`"!!"`, `"AAAA"`, `7`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The set keeps at most MaxIDs ids, dropping the oldest.
func TestIDSet_Bound(t *testing.T) {
	if testing.Short() {
		t.Skip("adds MaxIDs ids")
	}
	var s session.IDSet
	start := time.Now()
	for i := range session.MaxIDs + 600 {
		s = s.Add(fmt.Sprint(i))
	}
	if s.Len() > session.MaxIDs || s.Has("0") || !s.Has(fmt.Sprint(session.MaxIDs+599)) {
		t.Errorf("len %d, has oldest %v", s.Len(), s.Has("0"))
	}
	t.Logf("%d adds in %s", session.MaxIDs+600, time.Since(start))
}

// A prompt seen again after its turn ended (a duplicated transcript line,
// a hook re-sent, a transcript imported after the hooks) decides nothing,
// not even after the session ended.
func TestDecide_LatePromptCopy(t *testing.T) {
	h := newHistory(t)
	h.hook("p1", events.Sig{Kind: events.SigPrompt, ID: "P1"})
	h.line(events.Meta{}, events.Sig{Kind: events.SigPrompt, ID: "P1"}) // the same prompt, while its turn is open
	h.hook("stop", sig(events.SigTurnEnd))
	if h.s.Phase != events.PhaseReady || h.s.Turns != 1 {
		t.Fatalf("phase %s turns %d", h.s.Phase, h.s.Turns)
	}
	if decs := h.line(events.Meta{}, events.Sig{Kind: events.SigPrompt, ID: "P1"}); len(decs) != 0 {
		t.Errorf("late prompt line decided %v", types(decs))
	}
	if decs := h.hook("p1-again", events.Sig{Kind: events.SigPrompt, ID: "P1"}); len(decs) != 0 || !h.s.Seen(&events.Observation{Key: "p1-again2", Signals: []events.Sig{{Kind: events.SigPrompt, ID: "P1"}}}) {
		t.Errorf("late prompt hook decided %v", types(decs))
	}
	h.hook("end", events.Sig{Kind: events.SigSessionEnd, Text: "exit"})
	if decs := h.line(events.Meta{}, events.Sig{Kind: events.SigPrompt, ID: "P1"}); len(decs) != 0 || h.s.Phase != events.PhaseEnded {
		t.Errorf("late prompt after the end decided %v, phase %s", types(decs), h.s.Phase)
	}
	// A new prompt is a new turn.
	h.hook("p2", events.Sig{Kind: events.SigPrompt, ID: "P2"})
	if h.s.Turns != 2 || h.s.Phase != events.PhaseWorking {
		t.Errorf("new prompt: turns %d phase %s", h.s.Turns, h.s.Phase)
	}
}

// A subagent's session is its parent's: an observation of the same agent
// id that names another parent session is refused, and the subagent's
// own observations go on moving it.
func TestDecide_SubagentOfAnotherParent(t *testing.T) {
	h := newHistory(t)
	mine := events.Meta{SessionID: "parent", AgentID: "a1", AgentType: "Explore"}
	h.line(mine, sig(events.SigPrompt))
	reg := events.NewRegistry()
	other := events.Observation{Key: "x", Parser: "test/1", Kind: "hook", Meta: events.Meta{SessionID: "intruder", AgentID: "a1"},
		Signals: []events.Sig{sig(events.SigTurnEnd)}}
	obs := h.stamp(reg.New(events.ClaudeHookObserved{Observation: other}))
	_, err := session.Decide(h.s, session.Observe{Obs: obs})
	if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "the subagent is session parent's, the observation names parent intruder") {
		t.Fatalf("another parent's observation: %v, want it rejected naming both parents", err)
	}
	h.line(mine, sig(events.SigToolUse, "id", "t1", "name", "Grep"))
	if h.s.Parent != "parent" || h.s.Phase != events.PhaseWorking {
		t.Errorf("parent %q phase %s, want parent working", h.s.Parent, h.s.Phase)
	}
}

// A session of a subagent's name that started with no parent (an
// intake that took an "agent-" session id, before they were refused) is
// no parent's subagent: a subagent's observation naming a parent is
// refused there, rather than filed in an unrelated session; one naming
// the session its lines named (a subagent's transcript whose lines gave
// no agentId) is taken.
func TestDecide_SubagentOfNoParent(t *testing.T) {
	reg := events.NewRegistry()
	for _, c := range []struct {
		started string // the session id its first line named
		parent  string // the parent the subagent's hook names
		refused bool
	}{
		{"agent-zzz", "realparent1", true},
		{"", "realparent1", true},
		{"s-1", "s-1", false},
	} {
		h := &history{t: t, s: session.Init(events.Aggregate{Kind: events.KindSession, ID: "agent-zzz"})}
		h.line(events.Meta{SessionID: c.started}, sig(events.SigPrompt))
		o := events.Observation{Key: "x", Parser: "test/1", Kind: "hook", Meta: events.Meta{SessionID: c.parent, AgentID: "zzz"},
			Signals: []events.Sig{sig(events.SigToolUse, "id", "t1", "name", "Bash")}}
		_, err := session.Decide(h.s, session.Observe{Obs: h.stamp(reg.New(events.ClaudeHookObserved{Observation: o}))})
		if c.refused && (!errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "the session started with no parent, the observation is of a subagent of "+c.parent)) {
			t.Errorf("started as %q, a subagent of %s: %v, want it rejected", c.started, c.parent, err)
		}
		if !c.refused && err != nil {
			t.Errorf("started as %q, a subagent of %s: %v, want it taken", c.started, c.parent, err)
		}
	}
}

// A hold at a line that does not parse is cleared by the file's next
// line however the import that reads on names the file (a relative path,
// another folder): lines are counted per file name, as Cursor counts.
func TestHeld_ClearedByTheSameFileUnderAnotherPath(t *testing.T) {
	h := newHistory(t)
	obs := func(path string, line int, held bool) {
		o := events.Observation{Key: fmt.Sprintf("line:%d", line), Parser: "test/1", Path: path, Line: line, Kind: "user", Held: held,
			Signals: []events.Sig{sig(events.SigText)}}
		h.observe(events.ClaudeLineObserved{Observation: o})
	}
	obs("/home/u/.claude/projects/p/s.jsonl", 1, false)
	obs("/home/u/.claude/projects/p/s.jsonl", 2, true)
	if h.s.HeldPath == "" || h.s.HeldLine != 3 {
		t.Fatalf("held %q:%d, want line 3 held", h.s.HeldPath, h.s.HeldLine)
	}
	obs("p/s.jsonl", 3, false)
	if h.s.HeldPath != "" || h.s.HeldLine != 0 {
		t.Errorf("held %q:%d after line 3 read under a relative path, want nothing held", h.s.HeldPath, h.s.HeldLine)
	}
}

// The record of an import's stop at a line that does not parse, when the
// pass took in no line before it (events.KindHeld), holds the session at
// that line as a last line's Held does: it moves no cursor, says nothing
// of when the agent was heard from, takes no key, and is seen once the
// session is held there; a stop at a line other than the next is
// refused, and the next line read clears the hold.
func TestHeld_StopRecord(t *testing.T) {
	h := newHistory(t)
	const path = "/home/u/.claude/projects/p/s.jsonl"
	line := func(n int) {
		o := events.Observation{Key: fmt.Sprintf("line:%d", n), Parser: "test/1", Path: path, Line: n, Kind: "user",
			Signals: []events.Sig{sig(events.SigText)}}
		h.observe(events.ClaudeLineObserved{Observation: o})
	}
	stop := func(n int) events.Observation {
		return events.Observation{Key: fmt.Sprintf("held:%d", n), Parser: "test/1", Path: path, Kind: events.KindHeld, Held: true, HeldLine: n}
	}
	line(1)
	line(2)
	before, stored := h.s, len(h.evs)
	held := stop(3)
	h.observe(events.ClaudeLineObserved{Observation: held})
	s := h.s
	if len(h.evs) != stored+1 || s.HeldPath != path || s.HeldLine != 3 {
		t.Fatalf("%d events stored, held %q:%d; want the stop stored alone, line 3 held", len(h.evs)-stored, s.HeldPath, s.HeldLine)
	}
	if s.Cursor(path) != 2 || s.Lines != before.Lines || !s.ObservedAt.Equal(before.ObservedAt) || s.Keys.Has(held.Key) || s.RecentKeys.Has(held.Key) {
		t.Errorf("cursor %d, %d lines, observed at %s, key taken %v; want cursor 2, %d lines, observed at %s, no key",
			s.Cursor(path), s.Lines, s.ObservedAt, s.Keys.Has(held.Key), before.Lines, before.ObservedAt)
	}
	if !s.Seen(&held) {
		t.Error("the stop is not seen once the session is held at its line")
	}
	h.observe(events.ClaudeLineObserved{Observation: held})
	if len(h.evs) != stored+1 {
		t.Errorf("the stop observed again stored %d events", len(h.evs)-stored-1)
	}
	far := events.NewRegistry().New(events.ClaudeLineObserved{Observation: stop(5)})
	far.Agg = events.Aggregate{Kind: events.KindSession, ID: s.ID}
	if _, err := session.Decide(s, session.Observe{Obs: far}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("a stop past the next line: %v; want it refused", err)
	}
	line(3)
	if h.s.HeldPath != "" || h.s.HeldLine != 0 || h.s.Cursor(path) != 3 {
		t.Errorf("after line 3: held %q:%d, cursor %d; want nothing held, cursor 3", h.s.HeldPath, h.s.HeldLine, h.s.Cursor(path))
	}
	if !h.s.Seen(&held) {
		t.Error("a stop at a line the session took in since is not seen")
	}
}

// stored returns how many observations with key h's history holds.
func stored(h *history, key string) int {
	n := 0
	for _, e := range h.evs {
		if o, ok := events.Observed(e.Data); ok && o.Key == key {
			n++
		}
	}
	return n
}

// entryEvents returns the entry events of h's history: opened, closed,
// abandoned.
func entryEvents(h *history) (opened []events.SessionEntryOpened, closed []events.SessionEntryClosed, abandoned []events.SessionEntryAbandoned) {
	for _, e := range h.evs {
		switch d := e.Data.(type) {
		case events.SessionEntryOpened:
			opened = append(opened, d)
		case events.SessionEntryClosed:
			closed = append(closed, d)
		case events.SessionEntryAbandoned:
			abandoned = append(abandoned, d)
		}
	}
	return opened, closed, abandoned
}

// A call's result that comes before its use (two hooks that raced)
// records the call opened from its result and closed with it. The use
// that follows is the call's own report: it is stored, and opens
// nothing, so the turn's end abandons nothing; a copy of it, or of the
// result, is dropped.
func TestDecide_ResultBeforeUse(t *testing.T) {
	h := newHistory(t)
	h.hook("p1", sig(events.SigPrompt))
	decs := h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Bash", "status", events.OutcomeError))
	if got := strings.Join(types(decs), " "); !strings.HasPrefix(got, "session.entry_opened session.entry_closed") {
		t.Fatalf("result before use decided %s", got)
	}
	if len(h.s.Entries) != 0 || h.s.ToolCalls != 1 {
		t.Fatalf("after the result: entries %v tool calls %d, want none open and 1", h.s.Entries, h.s.ToolCalls)
	}
	if decs := h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash")); len(decs) != 0 {
		t.Errorf("use after its result decided %v", types(decs))
	}
	if n := stored(h, "pre:a"); n != 1 {
		t.Fatalf("use after its result stored %d times, want once: an acknowledged hook is recorded", n)
	}
	// Copies, from any source and under other keys, are dropped.
	for _, o := range []events.Observation{
		{Key: "pre:a-again", Signals: []events.Sig{sig(events.SigToolUse, "id", "a", "name", "Bash")}},
		{Key: "post:a-again", Signals: []events.Sig{sig(events.SigToolResult, "id", "a", "name", "Bash")}},
	} {
		if !h.s.Seen(&o) {
			t.Errorf("copy %s not seen", o.Key)
		}
	}
	if decs := h.line(events.Meta{}, sig(events.SigToolUse, "id", "a", "name", "Bash")); len(decs) != 0 {
		t.Errorf("the use's transcript line decided %v", types(decs))
	}
	if decs := h.line(events.Meta{}, sig(events.SigToolResult, "id", "a")); len(decs) != 0 {
		t.Errorf("the result's transcript line decided %v", types(decs))
	}
	h.hook("stop", sig(events.SigTurnEnd))
	if h.s.Abandoned != 0 || h.s.Phase != events.PhaseReady || h.s.ToolCalls != 1 {
		t.Errorf("abandoned %d phase %s tool calls %d, want 0 ready 1", h.s.Abandoned, h.s.Phase, h.s.ToolCalls)
	}
	opened, closed, _ := entryEvents(h)
	if len(opened) != 1 || !opened[0].FromResult || len(closed) != 1 || closed[0].Outcome != events.OutcomeError {
		t.Errorf("opened %+v closed %+v, want a's one open from its result and one close, error", opened, closed)
	}
	// A state read back from its row knows the call's use was seen.
	back := reducertest.RoundTrip(t, h.s)
	if o := (events.Observation{Key: "pre:a-3", Signals: []events.Sig{sig(events.SigToolUse, "id", "a")}}); !back.Seen(&o) {
		t.Error("a state read from its row takes a copy of the use for the call's own")
	}
}

// The orders a call's use and result can arrive in, and what each leaves.
func TestDecide_ResultBeforeUse_Orders(t *testing.T) {
	t.Run("UseThenResult", func(t *testing.T) {
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash"))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Bash"))
		if o := (events.Observation{Key: "pre:a-again", Signals: []events.Sig{sig(events.SigToolUse, "id", "a")}}); !h.s.Seen(&o) {
			t.Error("a late copy of a use seen before its result is not dropped")
		}
		opened, closed, _ := entryEvents(h)
		if len(opened) != 1 || opened[0].FromResult || len(closed) != 1 || !h.s.Inferred.IsZero() {
			t.Errorf("opened %+v closed %+v inferred %d: want one call opened by its use", opened, closed, h.s.Inferred.Len())
		}
	})
	t.Run("ResultNoUse", func(t *testing.T) {
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Read"))
		h.hook("stop", sig(events.SigTurnEnd))
		if h.s.Abandoned != 0 || h.s.Phase != events.PhaseReady || h.s.ToolCalls != 1 {
			t.Errorf("abandoned %d phase %s tool calls %d, want 0 ready 1", h.s.Abandoned, h.s.Phase, h.s.ToolCalls)
		}
	})
	t.Run("AfterTurnEnd", func(t *testing.T) {
		// The result's hook came after the Stop hook, the use's after
		// both: the session stays ready.
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("stop", sig(events.SigTurnEnd))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Bash"))
		if decs := h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash")); len(decs) != 0 || stored(h, "pre:a") != 1 {
			t.Errorf("use after its result and the turn's end decided %v, stored %d times", types(decs), stored(h, "pre:a"))
		}
		if h.s.Phase != events.PhaseReady || len(h.s.Entries) != 0 {
			t.Errorf("phase %s entries %v, want ready and nothing open", h.s.Phase, h.s.Entries)
		}
	})
	t.Run("Background", func(t *testing.T) {
		// A backgrounded call's work stays open, in the background lane.
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Bash", "status", events.OutcomeBackground, "task", "b1"))
		if decs := h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash")); len(decs) != 0 || stored(h, "pre:a") != 1 {
			t.Errorf("use after its backgrounded result decided %v, stored %d times", types(decs), stored(h, "pre:a"))
		}
		h.hook("stop", sig(events.SigTurnEnd))
		if h.s.Abandoned != 0 || len(h.s.Entries) != 1 || h.s.Entries[0].EntryID != "bg-b1" || h.s.Activity != "background" {
			t.Fatalf("abandoned %d entries %v activity %s, want bg-b1 open, working in the background", h.s.Abandoned, h.s.Entries, h.s.Activity)
		}
		h.hook("done", sig(events.SigBackgroundDone, "task", "b1"))
		if h.s.Phase != events.PhaseReady {
			t.Errorf("phase %s after the background work ended, want ready", h.s.Phase)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("denied:a", events.Sig{Kind: events.SigToolResult, ID: "a", Name: "Bash", Status: events.OutcomeRejected, By: "classifier", Text: "destructive"})
		h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Bash"))
		h.hook("stop", sig(events.SigTurnEnd))
		_, closed, abandoned := entryEvents(h)
		if len(closed) != 1 || closed[0].Outcome != events.OutcomeRejected || closed[0].By != "classifier" || closed[0].Reason != "destructive" || len(abandoned) != 0 {
			t.Errorf("closed %+v abandoned %+v, want a rejected by classifier: destructive", closed, abandoned)
		}
	})
	t.Run("Subagent", func(t *testing.T) {
		// The Task call's result ends the subagent's work it names.
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("start:x", sig(events.SigSubagentStart, "id", "x", "name", "Explore"))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "Task", "task", "x"))
		h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "Task"))
		h.hook("stop", sig(events.SigTurnEnd))
		if h.s.Abandoned != 0 || len(h.s.Entries) != 0 || h.s.Phase != events.PhaseReady || stored(h, "pre:a") != 1 {
			t.Errorf("abandoned %d entries %v phase %s use stored %d times, want 0, none, ready, once", h.s.Abandoned, h.s.Entries, h.s.Phase, stored(h, "pre:a"))
		}
	})
	t.Run("PermissionAndQuestion", func(t *testing.T) {
		// A dialog or question reported after the call's result was
		// answered: recorded once, it waits on nobody.
		h := newHistory(t)
		h.hook("p1", sig(events.SigPrompt))
		h.hook("post:a", sig(events.SigToolResult, "id", "a", "name", "AskUserQuestion"))
		h.hook("pre:a", sig(events.SigToolUse, "id", "a", "name", "AskUserQuestion"), sig(events.SigQuestion, "id", "a", "name", "AskUserQuestion"))
		h.hook("perm:a", sig(events.SigPermission, "id", "a", "name", "AskUserQuestion"))
		if stored(h, "pre:a") != 1 || stored(h, "perm:a") != 1 {
			t.Errorf("use and question stored %d times, permission %d, want each once", stored(h, "pre:a"), stored(h, "perm:a"))
		}
		if h.s.Phase != events.PhaseWorking || len(h.s.OpenReviews) != 0 {
			t.Errorf("phase %s/%s reviews %v, want working and none open", h.s.Phase, h.s.Activity, h.s.OpenReviews)
		}
		if o := (events.Observation{Key: "perm:a-again", Signals: []events.Sig{sig(events.SigPermission, "id", "a")}}); !h.s.Seen(&o) {
			t.Error("a copy of the permission is not dropped")
		}
	})
}

// A subagent's parent is a session of its own agent: a Codex thread
// names a Claude Code session, a Claude Code subagent a Codex thread, or
// either a harness's session, and CheckParent refuses it naming both; a
// parent not started yet, or the agent's own, is taken. Stored logs are
// not touched: the check is on states.
func TestCheckParent(t *testing.T) {
	started := func(agent string) session.State {
		h := &history{t: t, s: session.Init(events.Aggregate{Kind: events.KindSession, ID: "p1"})}
		h.line(events.Meta{Agent: agent, SessionID: "p1"}, sig(events.SigPrompt))
		return h.s
	}
	for _, c := range []struct {
		parent  session.State
		agent   string
		refused string
	}{
		{session.Init(events.Aggregate{Kind: events.KindSession, ID: "p1"}), "codex", ""},
		{started("codex"), "codex", ""},
		{started(""), "claude-code", ""},
		{started("claude-code"), "", ""},
		{started("claude-code"), "codex", "session p1 is claude-code's, the subagent codex's"},
		{started("codex"), "claude-code", "session p1 is codex's, the subagent claude-code's"},
		{started("my-harness"), "codex", "session p1 is my-harness's, the subagent codex's"},
		{started("my-harness"), "other-harness", ""},
	} {
		err := session.CheckParent(c.parent, c.agent, "child1")
		if c.refused == "" && err != nil {
			t.Errorf("parent %q, subagent of %q: %v, want it taken", c.parent.Agent, c.agent, err)
		}
		if c.refused != "" && (!errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "parent of child1: ") || !strings.Contains(err.Error(), c.refused)) {
			t.Errorf("parent %q, subagent of %q: %v, want it refused: %s", c.parent.Agent, c.agent, err, c.refused)
		}
	}
}
