package session_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
	"github.com/logbook-dev/logbook/reducers/session"
)

var agg = events.Aggregate{Kind: events.KindSession, ID: "s1"}

var t0 = time.Date(2026, 4, 24, 19, 19, 0, 0, time.UTC)

// history drives Decide and Evolve over inputs the way the executor does
// and returns the state and every event decided, observations included.
type history struct {
	t     *testing.T
	s     session.State
	evs   []events.Envelope
	n     int
	lines int
}

func newHistory(t *testing.T) *history { return &history{t: t, s: session.Init(agg)} }

func (h *history) stamp(e events.Envelope) events.Envelope {
	h.n++
	if e.ID.IsZero() {
		e.ID = ulid.ULID{15: byte(h.n), 14: byte(h.n >> 8)}
	}
	e.Agg = events.Aggregate{Kind: agg.Kind, ID: h.s.ID}
	e.Ver = h.s.Ver + 1
	return e
}

// line observes one transcript line carrying sigs.
func (h *history) line(meta events.Meta, sigs ...events.Sig) []events.Envelope {
	h.lines++
	o := events.Observation{Key: fmt.Sprintf("line:%d", h.lines), Parser: "test/1", Line: h.lines, Kind: "assistant", Meta: meta, Signals: sigs}
	return h.observe(events.ClaudeLineObserved{Observation: o})
}

// hook observes one hook payload with key.
func (h *history) hook(key string, sigs ...events.Sig) []events.Envelope {
	o := events.Observation{Key: key, Parser: "test/1", Kind: "hook", Signals: sigs}
	return h.observe(events.ClaudeHookObserved{Observation: o})
}

func (h *history) observe(p events.Payload) []events.Envelope {
	h.t.Helper()
	return h.record(p, t0.Add(time.Duration(h.n)*time.Second), false, true)
}

// record stamps the observation of p at at, decides it on h's state and
// appends it and its decisions to the history; it returns the decisions.
// An observation that decides nothing is not stored when it is a tick or
// one the state has seen. With check, each decision must also pass the
// registry's Validate (on a stamp of its own).
func (h *history) record(p events.Payload, at time.Time, tick, check bool) []events.Envelope {
	h.t.Helper()
	reg := events.NewRegistry()
	obs := reg.New(p)
	obs.At = at
	obs = h.stamp(obs)
	decs, err := session.Decide(h.s, session.Observe{Obs: obs})
	if err != nil && tick {
		h.t.Fatalf("decide tick: %v", err)
	} else if err != nil {
		h.t.Fatalf("decide: %v", err)
	}
	if len(decs) == 0 && (tick || h.s.Seen(mustObs(obs))) {
		return nil // a tick that decides nothing is not stored
	}
	h.apply(obs)
	for _, d := range decs {
		if check {
			if err := validate(reg, h.stamp(d)); err != nil {
				h.t.Fatalf("decided invalid event: %v", err)
			}
		}
		h.apply(h.stamp(d))
	}
	return decs
}

func (h *history) apply(e events.Envelope) {
	e.Ver = h.s.Ver + 1
	h.s = session.Evolve(h.s, e)
	h.evs = append(h.evs, e)
}

func validate(reg *events.Registry, e events.Envelope) error { return reg.Validate(e) }

func mustObs(e events.Envelope) *events.Observation {
	o, _ := events.Observed(e.Data)
	return o
}

// arc returns the phases the session went through.
func (h *history) arc() string {
	var ph []string
	for _, e := range h.evs {
		if p, ok := reducertest.PhaseAfter(e.Data); ok {
			ph = append(ph, p)
		}
	}
	return strings.Join(ph, ">")
}

func types(evs []events.Envelope) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func sig(kind string, kv ...string) events.Sig {
	s := events.Sig{Kind: kind}
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "id":
			s.ID = kv[i+1]
		case "name":
			s.Name = kv[i+1]
		case "task":
			s.Task = kv[i+1]
		case "status":
			s.Status = kv[i+1]
		case "text":
			s.Text = kv[i+1]
		}
	}
	return s
}

func TestDecide_Arcs(t *testing.T) {
	meta := events.Meta{SessionID: "s1", Cwd: "/w", Model: "m", AgentMode: "default"}
	tests := []struct {
		name string
		run  func(h *history)
		arc  string
		then func(t *testing.T, s session.State)
	}{
		{"basic turn", func(h *history) {
			h.line(meta, sig(events.SigPrompt, "id", "p1"))
			h.line(meta, sig(events.SigText, "text", "ok"), sig(events.SigTurnEnd))
		}, "ready>working>ready", func(t *testing.T, s session.State) {
			if s.Turns != 1 || s.TurnOpen || len(s.Entries) != 0 {
				t.Errorf("turns=%d open=%v entries=%v", s.Turns, s.TurnOpen, s.Entries)
			}
		}},
		{"tool call", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.line(meta, sig(events.SigToolResult, "id", "t1", "status", "ok"))
			h.line(meta, sig(events.SigText, "text", "done"), sig(events.SigTurnEnd))
		}, "ready>working>ready", func(t *testing.T, s session.State) {
			if s.ToolCalls != 1 || s.Activity != "" {
				t.Errorf("tool calls=%d activity=%q", s.ToolCalls, s.Activity)
			}
		}},
		{"background process keeps working", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, events.Sig{Kind: events.SigToolUse, ID: "t1", Name: "Bash", Background: true})
			h.line(meta, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "b1"))
			h.line(meta, sig(events.SigText, "text", "started"), sig(events.SigTurnEnd))
		}, "ready>working", func(t *testing.T, s session.State) {
			if len(s.Entries) != 1 || s.Entries[0].Lane != events.LaneBackground || s.Activity != "background" {
				t.Errorf("entries=%+v activity=%q", s.Entries, s.Activity)
			}
		}},
		{"background done releases", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.line(meta, sig(events.SigToolResult, "id", "t1", "status", "backgrounded", "task", "b1"))
			h.line(meta, sig(events.SigTurnEnd))
			h.line(meta, sig(events.SigBackgroundDone, "task", "b1", "status", "completed"))
		}, "ready>working>ready", nil},
		{"permission prompt waits", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.hook("perm:t1", sig(events.SigPermission, "id", "t1", "name", "Bash"))
			h.line(meta, sig(events.SigToolResult, "id", "t1", "status", "rejected"))
			h.line(meta, sig(events.SigTurnEnd))
		}, "ready>working>waiting>working>ready", func(t *testing.T, s session.State) {
			if len(s.OpenReviews) != 0 || len(s.Verdicts) != 1 || !s.Verdicts[0] {
				t.Errorf("reviews=%v verdicts=%v", s.OpenReviews, s.Verdicts)
			}
		}},
		{"question at turn end waits", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigText, "text", "Which file?"), sig(events.SigTurnEnd))
		}, "ready>working>waiting", nil},
		{"interrupt abandons open entries", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.line(meta, sig(events.SigInterrupt))
		}, "ready>working>ready", func(t *testing.T, s session.State) {
			if s.Abandoned != 1 || len(s.Entries) != 0 {
				t.Errorf("abandoned=%d entries=%v", s.Abandoned, s.Entries)
			}
		}},
		{"hook and transcript report one call once", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.hook("pre:t1", sig(events.SigToolUse, "id", "t1", "name", "Read"))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Read"))
			h.hook("post:t1", sig(events.SigToolResult, "id", "t1", "status", "ok"))
			h.line(meta, sig(events.SigToolResult, "id", "t1", "status", "ok"))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Read"))
		}, "ready>working", func(t *testing.T, s session.State) {
			if s.ToolCalls != 1 || len(s.Entries) != 0 {
				t.Errorf("tool calls=%d entries=%v", s.ToolCalls, s.Entries)
			}
		}},
		{"redelivered hook is dropped", func(h *history) {
			h.hook("k1", sig(events.SigPrompt))
			h.hook("k1", sig(events.SigPrompt))
		}, "ready>working", func(t *testing.T, s session.State) {
			if s.Turns != 1 || s.Observations != 1 {
				t.Errorf("turns=%d observations=%d", s.Turns, s.Observations)
			}
		}},
		{"subagent lane keeps working", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.hook("sa", sig(events.SigSubagentStart, "id", "a1", "name", "Explore"))
			h.line(meta, sig(events.SigTurnEnd))
			h.hook("sb", sig(events.SigSubagentStop, "id", "a1"))
			h.hook("st", sig(events.SigIdle))
		}, "ready>working>ready", nil},
		{"session end abandons and ends", func(h *history) {
			h.line(meta, sig(events.SigPrompt))
			h.line(meta, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
			h.hook("end", sig(events.SigSessionEnd, "text", "prompt_input_exit"))
		}, "ready>working>ended", func(t *testing.T, s session.State) {
			if s.Abandoned != 1 || s.EndReason != "prompt_input_exit" {
				t.Errorf("abandoned=%d reason=%q", s.Abandoned, s.EndReason)
			}
		}},
		{"mode change", func(h *history) {
			h.line(meta, sig(events.SigMode, "name", "bypassPermissions"))
		}, "ready", func(t *testing.T, s session.State) {
			if s.Mode != events.ModeFullAccess || s.ModeRevision != 1 {
				t.Errorf("mode=%q rev=%d", s.Mode, s.ModeRevision)
			}
		}},
		{"compaction", func(h *history) {
			h.hook("c1", sig(events.SigCompactStart))
			h.line(meta, sig(events.SigCompactEnd))
		}, "ready>working>ready", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(t)
			tt.run(h)
			if got := h.arc(); got != tt.arc {
				t.Errorf("arc = %s, want %s\nevents: %v", got, tt.arc, types(h.evs))
			}
			if tt.then != nil {
				tt.then(t, h.s)
			}
		})
	}
}

func TestDecide_LineCursor(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	reg := events.NewRegistry()
	// A line already imported is seen and decides nothing.
	old := reg.New(events.ClaudeLineObserved{Observation: events.Observation{Key: "line:1", Line: 1, Kind: "user"}})
	old.ID, old.Agg, old.At = ulid.Make(), agg, t0
	if got, err := session.Decide(h.s, session.Observe{Obs: old}); err != nil || got != nil {
		t.Errorf("seen line: got %v, %v; want nothing", types(got), err)
	}
	// A gap is refused.
	gap := reg.New(events.ClaudeLineObserved{Observation: events.Observation{Key: "line:5", Line: 5, Kind: "user"}})
	gap.ID, gap.Agg, gap.At = ulid.Make(), agg, t0
	if _, err := session.Decide(h.s, session.Observe{Obs: gap}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("gap: err = %v, want ErrRejected", err)
	}
}

// TestDecide_AbandonWhatItWaitsOn: a person abandoning the entry a
// waiting session waits on (a question) ends the wait; the turn stays
// open, so the session works on.
func TestDecide_AbandonWhatItWaitsOn(t *testing.T) {
	cause := events.Cause{Kind: "cli", Event: "session.abandon", Ref: "r1"}
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigToolUse, "id", "q1", "name", "AskUserQuestion"), sig(events.SigQuestion, "id", "q1", "name", "AskUserQuestion"))
	if h.s.Phase != events.PhaseWaiting || h.s.WaitingOn != "q1" {
		t.Fatalf("after the question: phase %q waiting on %q", h.s.Phase, h.s.WaitingOn)
	}
	got, err := session.Decide(h.s, session.Abandon{EntryID: "q1", Reason: "answered elsewhere", At: t0, Cause: cause})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"session.entry_abandoned", "session.transitioned"}, types(got)); diff != "" {
		t.Errorf("abandon the awaited question (-want +got):\n%s", diff)
	}
	if tr, ok := got[1].Data.(events.SessionTransitioned); !ok || tr.To != events.PhaseWorking || tr.Activity != "thinking" {
		t.Errorf("transition %+v, want waiting→working (thinking)", got[1].Data)
	}
}

func TestDecide_Requests(t *testing.T) {
	cause := events.Cause{Kind: "cli", Event: "end", Ref: "r1"}
	if _, err := session.Decide(session.Init(agg), session.End{At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("end of missing session: %v", err)
	}
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
	got, err := session.Decide(h.s, session.Abandon{EntryID: "t1", Reason: "stuck", At: t0, Cause: cause})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"session.entry_abandoned"}, types(got)); diff != "" {
		t.Errorf("abandon (-want +got):\n%s", diff)
	}
	if _, err := session.Decide(h.s, session.Abandon{EntryID: "nope", At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("abandon unknown entry: %v", err)
	}
	if _, err := session.Decide(h.s, session.ChangeMode{Mode: "root", At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("bad mode: %v", err)
	}
	got, err = session.Decide(h.s, session.End{Reason: "done", At: t0, Cause: cause})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"session.entry_abandoned", "session.turn_ended", "session.ended"}
	if diff := cmp.Diff(want, types(got)); diff != "" {
		t.Errorf("end (-want +got):\n%s", diff)
	}
}

func TestDecide_BreakerTrips(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	for i := range 3 {
		id := fmt.Sprintf("t%d", i)
		h.line(events.Meta{}, sig(events.SigToolUse, "id", id, "name", "Bash"))
		h.hook("perm:"+id, sig(events.SigPermission, "id", id, "name", "Bash"))
		h.line(events.Meta{}, sig(events.SigToolResult, "id", id, "status", "rejected"))
	}
	if !h.s.BreakerTripped {
		t.Errorf("breaker not tripped after 3 refusals: verdicts %v", h.s.Verdicts)
	}
}

func ExampleDecide() {
	reg := events.NewRegistry()
	obs := reg.New(events.ClaudeHookObserved{Observation: events.Observation{
		Key: "k1", Kind: "UserPromptSubmit", Signals: []events.Sig{{Kind: events.SigPrompt}},
	}})
	obs.ID = ulid.MustParse("01JDQ0000000000000000000AA")
	obs.Agg = agg
	obs.At = t0
	decs, _ := session.Decide(session.Init(agg), session.Observe{Obs: obs})
	for _, d := range decs {
		fmt.Println(d.Type, d.Cause.Kind, d.Cause.Ref)
	}
	// Output:
	// session.started hook 01JDQ0000000000000000000AA
	// session.turn_started hook 01JDQ0000000000000000000AA
	// session.transitioned hook 01JDQ0000000000000000000AA
}

func TestDecide_PermissionWithoutToolUseID(t *testing.T) {
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigToolUse, "id", "t1", "name", "Bash"))
	h.hook("perm", sig(events.SigPermission, "name", "Bash"))
	h.hook("note", sig(events.SigPermission, "name", "Bash"))
	if diff := cmp.Diff([]string{"t1"}, h.s.OpenReviews); diff != "" {
		t.Errorf("one dialog, one review (-want +got):\n%s", diff)
	}
	h.line(events.Meta{}, sig(events.SigToolResult, "id", "t1", "status", "ok"))
	if len(h.s.OpenReviews) != 0 || h.s.Phase != events.PhaseWorking {
		t.Errorf("after the call ran: reviews %v phase %s", h.s.OpenReviews, h.s.Phase)
	}
}

func TestDecide_AttachKeepsWorking(t *testing.T) {
	cause := events.Cause{Kind: "worker", Event: "command.started", Ref: "c1"}
	h := newHistory(t)
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigTurnEnd))
	apply := func(cmd session.Command) {
		t.Helper()
		evs, err := session.Decide(h.s, cmd)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			h.apply(h.stamp(e))
		}
	}
	apply(session.Attach{EntryID: "cmd-1", Activity: "command:sleep", At: t0, Cause: cause})
	apply(session.Attach{EntryID: "cmd-1", Activity: "command:sleep", At: t0, Cause: cause})
	if h.s.Phase != events.PhaseWorking || len(h.s.Entries) != 1 {
		t.Fatalf("attached: phase %s entries %v", h.s.Phase, h.s.Entries)
	}
	h.line(events.Meta{}, sig(events.SigPrompt))
	h.line(events.Meta{}, sig(events.SigTurnEnd))
	if h.s.Phase != events.PhaseWorking {
		t.Errorf("a live command must keep the session working after its turn; phase %s", h.s.Phase)
	}
	apply(session.Detach{EntryID: "cmd-1", Outcome: "exit 0", At: t0, Cause: cause})
	if h.s.Phase != events.PhaseReady {
		t.Errorf("detached: phase %s, want ready", h.s.Phase)
	}
	if got := h.arc(); got != "ready>working>ready>working>ready" {
		t.Errorf("arc %s", got)
	}
}

func TestDecide_ParallelCallsKeepWaiting(t *testing.T) {
	h := newHistory(t)
	h.hook("p", sig(events.SigPrompt, "id", "P1"))
	h.hook("a", sig(events.SigToolUse, "id", "tA", "name", "Bash"))
	h.hook("b", sig(events.SigToolUse, "id", "tB", "name", "Read"))
	h.hook("perm", sig(events.SigPermission, "id", "tA", "name", "Bash"))
	h.hook("rb", sig(events.SigToolResult, "id", "tB", "status", "ok"))
	if h.s.Phase != events.PhaseWaiting {
		t.Errorf("tA still waits for approval; phase %s", h.s.Phase)
	}
	h.hook("ra", sig(events.SigToolResult, "id", "tA", "status", "ok"))
	if h.s.Phase != events.PhaseWorking {
		t.Errorf("approved and ran; phase %s", h.s.Phase)
	}
}

func TestDecide_SamePromptFromHookAndTranscript(t *testing.T) {
	h := newHistory(t)
	h.hook("p", sig(events.SigPrompt, "id", "P1"))
	h.line(events.Meta{}, sig(events.SigPrompt, "id", "P1"))
	if h.s.Turns != 1 || h.s.Abandoned != 0 {
		t.Errorf("one prompt, two reports: turns %d abandoned %d", h.s.Turns, h.s.Abandoned)
	}
	h.line(events.Meta{}, sig(events.SigPrompt, "id", "P2"))
	if h.s.Turns != 2 {
		t.Errorf("a new prompt: turns %d", h.s.Turns)
	}
}

func TestDecide_CursorPerTranscript(t *testing.T) {
	reg := events.NewRegistry()
	s := session.Init(agg)
	observe := func(path string, line int) error {
		o := reg.New(events.ClaudeLineObserved{Observation: events.Observation{Key: fmt.Sprintf("line:%d", line), Path: path, Line: line, Kind: "user"}})
		o.ID, o.Agg, o.At, o.Ver = ulid.Make(), agg, t0, s.Ver+1
		if s.Seen(mustObs(o)) {
			return nil
		}
		decs, err := session.Decide(s, session.Observe{Obs: o})
		if err != nil {
			return err
		}
		s = session.Evolve(s, o)
		for _, d := range decs {
			d.Ver = s.Ver + 1
			s = session.Evolve(s, d)
		}
		return nil
	}
	for _, step := range []struct {
		path string
		line int
	}{{"/a/x.jsonl", 1}, {"/a/y.jsonl", 1}, {"/a/x.jsonl", 2}, {"/a/y.jsonl", 2}, {"/a/y.jsonl", 1}} {
		if err := observe(step.path, step.line); err != nil {
			t.Fatalf("%s:%d: %v", step.path, step.line, err)
		}
	}
	if s.Cursor("/a/x.jsonl") != 2 || s.Cursor("/b/y.jsonl") != 2 || s.Lines != 4 {
		t.Errorf("cursors %v lines %d", s.Cursors, s.Lines)
	}
	if err := observe("/a/x.jsonl", 4); !errors.Is(err, events.ErrRejected) {
		t.Errorf("gap in x: %v", err)
	}
}

// TestDecide_AnotherAgentsReport: an observation from another agent than
// the session's (its meta names another) is refused whole and decides
// nothing, whatever it reports; the session's own agent goes on.
func TestDecide_AnotherAgentsReport(t *testing.T) {
	h := newHistory(t)
	h.hook("h1", sig(events.SigPrompt, "id", "p1"))
	for _, agent := range []string{"codex", "agent", "64f42b5c"} {
		o := events.Observation{Key: "x-" + agent, Parser: "test/1", Kind: "x", Meta: events.Meta{Agent: agent},
			Signals: []events.Sig{sig(events.SigTurnEnd), sig(events.SigSessionEnd)}}
		reg := events.NewRegistry()
		obs := h.stamp(reg.New(events.HarnessObserved{Observation: o}))
		decs, err := session.Decide(h.s, session.Observe{Obs: obs})
		if !errors.Is(err, events.ErrRejected) || len(decs) != 0 || !strings.Contains(err.Error(), "the session is claude-code's, the observation "+agent+"'s") {
			t.Errorf("%s: decided %v, %v; want refused naming both agents", agent, types(decs), err)
		}
	}
	if got := h.hook("h2", sig(events.SigTurnEnd)); len(got) == 0 || h.s.Phase != events.PhaseReady {
		t.Errorf("the session's own hook after the refusals: %v, phase %s", types(got), h.s.Phase)
	}
}

// TestDecide_AnotherHarnessReport: a harness's session is the harness's
// alone, whatever agent either names: another harness's observation on it
// (ids that met on a log written while harness names could hold a '-':
// "foo-bar" + "baz" and "foo" + "bar-baz") is refused whole and decides
// nothing; the session's own harness goes on.
func TestDecide_AnotherHarnessReport(t *testing.T) {
	h := newHistory(t)
	post := func(harness, id string, sigs ...events.Sig) events.Envelope {
		o := events.Observation{Key: harness + ":" + id, Parser: "logbook-observation/1", Kind: "k", Meta: events.Meta{Agent: "tool"}, Signals: sigs}
		return events.NewRegistry().New(events.HarnessObserved{Observation: o})
	}
	h.observe(post("foo-bar", "e1", sig(events.SigPrompt, "id", "p1")).Data)
	if h.s.Harness != "foo-bar" || h.s.Phase != events.PhaseWorking {
		t.Fatalf("harness %q, phase %s; want foo-bar, working", h.s.Harness, h.s.Phase)
	}
	obs := h.stamp(post("foo", "e2", sig(events.SigTurnEnd), sig(events.SigSessionEnd)))
	decs, err := session.Decide(h.s, session.Observe{Obs: obs})
	if !errors.Is(err, events.ErrRejected) || len(decs) != 0 || !strings.Contains(err.Error(), "the session is harness foo-bar's, the observation harness foo's") {
		t.Errorf("another harness: decided %v, %v; want refused naming both harnesses", types(decs), err)
	}
	if got := h.observe(post("foo-bar", "e3", sig(events.SigTurnEnd)).Data); len(got) == 0 || h.s.Phase != events.PhaseReady {
		t.Errorf("the session's own harness after the refusal: %v, phase %s", types(got), h.s.Phase)
	}
	// A session another reader started is no harness's.
	c := newHistory(t)
	c.hook("h1", sig(events.SigPrompt, "id", "p1"))
	obs = c.stamp(post("foo", "e1", sig(events.SigSessionEnd)))
	obs.Data = events.HarnessObserved{Observation: events.Observation{Key: "foo:e1", Parser: "logbook-observation/1", Kind: "k", Meta: events.Meta{Agent: "claude-code"}, Signals: []events.Sig{sig(events.SigSessionEnd)}}}
	if decs, err := session.Decide(c.s, session.Observe{Obs: obs}); !errors.Is(err, events.ErrRejected) || len(decs) != 0 {
		t.Errorf("a harness on a hook's session: decided %v, %v; want refused", types(decs), err)
	}
}

// TestDecide_TurnEndDatedBeforeTurn: a turn's end dated before the open
// turn began is an earlier turn's, reported late by a source that sends
// in batches of its own (Claude Code's interaction span after the next
// prompt's event): it ends nothing of the open turn; an end dated within
// it ends it.
func TestDecide_TurnEndDatedBeforeTurn(t *testing.T) {
	h := newHistory(t)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	observe := func(key string, s int, sigs ...events.Sig) {
		h.record(events.OTelObserved{Observation: events.Observation{Key: key, Parser: "test/1", Kind: "otel", Signals: sigs}}, at(s), false, true)
	}
	observe("p1", 1, sig(events.SigPrompt, "id", "P1"))
	observe("p2", 20, sig(events.SigPrompt, "id", "P2"))
	observe("end1", 8, sig(events.SigTurnEnd))
	if !h.s.TurnOpen || h.s.Phase != events.PhaseWorking || h.s.Turns != 2 {
		t.Fatalf("after the first turn's late end: turn open %v, phase %s, %d turns", h.s.TurnOpen, h.s.Phase, h.s.Turns)
	}
	observe("end2", 25, sig(events.SigTurnEnd))
	if h.s.TurnOpen || h.s.Phase != events.PhaseReady {
		t.Fatalf("after the second turn's end: turn open %v, phase %s", h.s.TurnOpen, h.s.Phase)
	}
}

// TestDecide_OTelUnordered: an agent's OpenTelemetry export keeps no
// order (its spans and its events go in batches of their own): a turn
// opened and ended by an interaction span (an in-turn prompt at its
// start, an end at its end), then the turn's own prompt event dated
// within it, is late and opens no second turn; an in-turn prompt dated
// before the open turn began (an earlier span's start) leaves the open
// turn waiting where it waits.
func TestDecide_OTelUnordered(t *testing.T) {
	h := newHistory(t)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	observe := func(key string, s int, sigs ...events.Sig) {
		h.record(events.OTelObserved{Observation: events.Observation{Key: key, Parser: "test/1", Kind: "otel", Signals: sigs}}, at(s), false, true)
	}
	inTurn := events.Sig{Kind: events.SigPrompt, Status: events.PromptInTurn}
	observe("span1:start", 1, inTurn)
	observe("span1:end", 8, sig(events.SigTurnEnd))
	observe("prompt1", 1, sig(events.SigPrompt, "id", "P1"))
	if h.s.Turns != 1 || h.s.TurnOpen || h.s.Phase != events.PhaseReady {
		t.Fatalf("the turn's prompt after its end: %d turns, turn open %v, phase %s; want 1, false, ready", h.s.Turns, h.s.TurnOpen, h.s.Phase)
	}
	observe("prompt2", 20, sig(events.SigPrompt, "id", "P2"))
	observe("perm", 21, sig(events.SigPermission, "id", "toolu_1", "name", "Bash"))
	if h.s.Phase != events.PhaseWaiting {
		t.Fatalf("phase %s, want waiting", h.s.Phase)
	}
	observe("span1:start-again", 2, inTurn)
	if h.s.Phase != events.PhaseWaiting || h.s.Turns != 2 {
		t.Fatalf("an earlier turn's start: phase %s, %d turns; want waiting, 2", h.s.Phase, h.s.Turns)
	}
}

// TestDecide_CodexTelemetryBesideRollout: Codex CLI's telemetry of a turn
// the rollout already opened (its conversation_starts and its user_prompt,
// which names no id, dated inside the turn) is the same turn: no fork, no
// second turn; with no turn open its prompt opens one.
func TestDecide_CodexTelemetryBesideRollout(t *testing.T) {
	h := newHistory(t)
	codex := events.Meta{Agent: "codex"}
	h.line(codex, sig(events.SigSessionStart), sig(events.SigPrompt, "text", "fix it"), sig(events.SigToolUse, "id", "call_1", "name", "shell"))
	obs := func(key string, sigs ...events.Sig) []events.Envelope {
		o := events.Observation{Key: key, Parser: "test/1", Kind: "otel", Meta: codex, Signals: sigs}
		return h.observe(events.OTelObserved{Observation: o})
	}
	obs("o1", events.Sig{Kind: events.SigSessionStart, Name: "otel"})
	obs("o2", events.Sig{Kind: events.SigPrompt, Text: "fix it", Status: events.PromptInTurn})
	open := slices.ContainsFunc(h.s.Entries, func(e session.Entry) bool { return e.EntryID == "call_1" })
	if h.s.Turns != 1 || !h.s.TurnOpen || !open {
		t.Fatalf("turns %d, open %v, entries %+v; want the rollout's one turn with its call open", h.s.Turns, h.s.TurnOpen, h.s.Entries)
	}
	for _, e := range h.evs {
		if e.Type == "session.forked" {
			t.Fatalf("a fork recorded: %s", h.arc())
		}
	}
	h.line(codex, sig(events.SigToolResult, "id", "call_1", "status", events.OutcomeOK), sig(events.SigTurnEnd))
	obs("o3", events.Sig{Kind: events.SigPrompt, Text: "and again", Status: events.PromptInTurn})
	if h.s.Turns != 2 || !h.s.TurnOpen {
		t.Errorf("a prompt with no turn open: turns %d, open %v", h.s.Turns, h.s.TurnOpen)
	}
}

// A session whose id is near events.MaxIDLen diverges into a session
// whose id is still valid, and two such ids that share their start
// diverge into two sessions.
func TestDecide_DivergedIDFits(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"s1", strings.Repeat("a", 124), strings.Repeat("a", 125), strings.Repeat("a", 127), strings.Repeat("a", events.MaxIDLen), strings.Repeat("a", events.MaxIDLen-1) + "b"} {
		h := &history{t: t, s: session.Init(events.Aggregate{Kind: events.KindSession, ID: id})}
		h.line(events.Meta{}, sig(events.SigPrompt))
		got, err := session.Decide(h.s, session.Diverge{Path: "/t.jsonl", At: t0})
		if err != nil || len(got) != 1 {
			t.Fatalf("id of %d bytes: diverge = %v, %v", len(id), got, err)
		}
		next := got[0].Data.(events.SessionTranscriptDiverged).NewSession
		if err := events.ValidID(next); err != nil {
			t.Errorf("id of %d bytes diverges into %q: %v", len(id), next, err)
		}
		if other, ok := seen[next]; ok {
			t.Errorf("%q and %q both diverge into %q", other, id, next)
		}
		seen[next] = id
	}
	if _, ok := seen["s1-r1"]; !ok {
		t.Errorf("a short id diverges into %v; want s1-r1", seen)
	}
}

// TestDecide_ModeOfEndedSessionHoldsOnResume: a person may set the mode
// of an ended session, and it is no dead letter: a session resumes (its
// agent starts it again under the same id), and the mode set while it
// was ended holds then, the agent reporting the permission mode it had.
func TestDecide_ModeOfEndedSessionHoldsOnResume(t *testing.T) {
	cause := events.Cause{Kind: "cli", Event: "session.mode", Ref: "r1"}
	meta := events.Meta{SessionID: "s1", Cwd: "/w", Model: "m", AgentMode: "default"}
	h := newHistory(t)
	h.line(meta, sig(events.SigPrompt, "id", "p1"))
	h.line(meta, sig(events.SigText, "text", "ok"), sig(events.SigTurnEnd))
	got, err := session.Decide(h.s, session.End{Reason: "done", At: t0, Cause: cause})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		h.apply(h.stamp(e))
	}
	if h.s.Phase != events.PhaseEnded || h.s.Mode != events.ModeWorkspaceWrite {
		t.Fatalf("after the end: phase %q mode %q, want ended in workspace_write", h.s.Phase, h.s.Mode)
	}
	got, err = session.Decide(h.s, session.ChangeMode{Mode: events.ModeReadOnly, At: t0, Cause: cause})
	if err != nil {
		t.Fatalf("mode of an ended session: %v", err)
	}
	for _, e := range got {
		h.apply(h.stamp(e))
	}
	h.line(meta, sig(events.SigSessionStart))
	h.line(meta, sig(events.SigPrompt, "id", "p2"))
	if h.s.Phase == events.PhaseEnded || h.s.Mode != events.ModeReadOnly {
		t.Errorf("resumed: phase %q mode %q, want the session on in read_only", h.s.Phase, h.s.Mode)
	}
}
