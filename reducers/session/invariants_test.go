package session_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// invariantChecks is how many histories TestInvariants draws unless
// -rapid.checks or RAPID_CHECKS says otherwise. Each is folded in memory,
// so 600 take well under a few seconds.
const invariantChecks = 600

// report is one observation as an agent source produces it: a hook
// payload or a transcript line, with the agent's time.
type report struct {
	line bool
	key  string // hook key; lines are keyed by number when delivered
	at   time.Time
	sigs []events.Sig
}

// turnScript is one drawn turn: its hooks and its transcript lines, each
// in the order the agent writes them, and how it ended.
type turnScript struct {
	hooks, lines []report
	ender        string
}

// drawTurns draws a session of 1..4 turns the way Claude Code reports
// them: every step goes to the sources that report it (a tool call to
// both, a thinking block to the transcript only, a permission dialog to
// hooks only), and every turn ends with one signal of the exit table.
func drawTurns(t *rapid.T) []turnScript {
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	tick := func() time.Time {
		at = at.Add(time.Duration(rapid.IntRange(2, 2000).Draw(t, "ms")) * time.Millisecond)
		return at
	}
	var turns []turnScript
	nHook := 0
	n := rapid.IntRange(1, 4).Draw(t, "turns")
	var tasks []string // background tasks started and not yet reported done
	for k := range n {
		var ts turnScript
		hook := func(sigs ...events.Sig) {
			nHook++
			ts.hooks = append(ts.hooks, report{key: "h" + strconv.Itoa(nHook), at: tick().Add(time.Millisecond), sigs: sigs})
		}
		line := func(sigs ...events.Sig) { ts.lines = append(ts.lines, report{line: true, at: tick(), sigs: sigs}) }
		both := func(sigs ...events.Sig) {
			line(sigs...)
			nHook++
			ts.hooks = append(ts.hooks, report{key: "h" + strconv.Itoa(nHook), at: at.Add(time.Millisecond), sigs: sigs})
		}
		if k == 0 || rapid.Bool().Draw(t, "sessionStartHook") {
			hook(events.Sig{Kind: events.SigSessionStart, Name: "startup"})
		}
		pid := fmt.Sprintf("p%d", k)
		both(events.Sig{Kind: events.SigPrompt, ID: pid})
		lastText := ""
		for j := range rapid.IntRange(0, 6).Draw(t, "steps") {
			switch rapid.IntRange(0, 7).Draw(t, "step") {
			case 0:
				line(events.Sig{Kind: events.SigThinking})
			case 1:
				lastText = rapid.SampledFrom([]string{"Working on it.", "Which one?"}).Draw(t, "text")
				line(events.Sig{Kind: events.SigText, Text: lastText})
			case 2, 3:
				id := fmt.Sprintf("t%d_%d", k, j)
				tool := rapid.SampledFrom([]string{"Bash", "Read", "AskUserQuestion", "Agent"}).Draw(t, "tool")
				use := []events.Sig{{Kind: events.SigToolUse, ID: id, Name: tool}}
				if tool == "AskUserQuestion" {
					use = append(use, events.Sig{Kind: events.SigQuestion, ID: id, Name: tool})
				}
				both(use...)
				if tool == "Bash" && rapid.Bool().Draw(t, "permission") {
					hook(events.Sig{Kind: events.SigPermission, Name: tool})
				}
				if tool == "Agent" && rapid.Bool().Draw(t, "subagentHooks") {
					hook(events.Sig{Kind: events.SigSubagentStart, ID: "a" + id, Name: "Explore"})
					hook(events.Sig{Kind: events.SigSubagentStop, ID: "a" + id})
				}
				switch st := rapid.SampledFrom([]string{"ok", "ok", "error", "rejected", "backgrounded", "none"}).Draw(t, "status"); st {
				case "none": // left open: the turn's end settles it
				case "backgrounded":
					task := "b" + id
					tasks = append(tasks, task)
					both(events.Sig{Kind: events.SigToolResult, ID: id, Name: tool, Status: st, Task: task})
				default:
					r := events.Sig{Kind: events.SigToolResult, ID: id, Name: tool, Status: st}
					if tool == "Agent" {
						r.Task = "a" + id
					}
					both(r)
				}
			case 4:
				hook(events.Sig{Kind: events.SigCompactStart, Name: "auto"})
				if rapid.Bool().Draw(t, "postCompactHook") {
					hook(events.Sig{Kind: events.SigCompactEnd, Name: "compact"})
				} else {
					line(events.Sig{Kind: events.SigCompactEnd, Name: "auto"})
				}
			case 5:
				line(events.Sig{Kind: events.SigAPIError, Status: "retrying"})
			case 6:
				if len(tasks) > 0 {
					i := rapid.IntRange(0, len(tasks)-1).Draw(t, "doneTask")
					line(events.Sig{Kind: events.SigBackgroundDone, Task: tasks[i], Status: "completed"})
					tasks = slices.Delete(tasks, i, i+1)
				}
			case 7:
				hook(events.Sig{Kind: events.SigMode, Name: "plan"})
			}
		}
		ts.ender = rapid.SampledFrom([]string{"stop", "stop", "interrupt", "idle", "failed", "restart", "end"}).Draw(t, "ender")
		switch ts.ender {
		case "stop":
			if rapid.Bool().Draw(t, "question") {
				lastText = "Shall I go on?"
			}
			line(events.Sig{Kind: events.SigText, Text: lastText}, events.Sig{Kind: events.SigTurnEnd, Name: "end_turn"})
			hook(events.Sig{Kind: events.SigTurnEnd, Name: "Stop"})
		case "interrupt":
			line(events.Sig{Kind: events.SigInterrupt})
		case "idle":
			hook(events.Sig{Kind: events.SigIdle})
		case "failed":
			line(events.Sig{Kind: events.SigAPIError, Status: "failed"}, events.Sig{Kind: events.SigTurnEnd, Name: "api_error"})
			hook(events.Sig{Kind: events.SigAPIError, Status: "failed"}, events.Sig{Kind: events.SigTurnEnd, Name: "StopFailure"})
		case "restart":
			hook(events.Sig{Kind: events.SigSessionStart, Name: "resume"})
		case "end":
			hook(events.Sig{Kind: events.SigSessionEnd, Text: "other"})
		}
		turns = append(turns, ts)
		if ts.ender == "restart" || ts.ender == "end" {
			tasks = nil // gone with the process
		}
	}
	return turns
}

// folder feeds observations to Decide and Evolve as the executor does,
// and checks what must hold after every step.
type folder struct {
	t     *rapid.T
	reg   *events.Registry
	s     session.State
	n     int
	lines int
	obs   map[string]bool // ids of stored observations
	sent  []report        // hooks delivered, for redelivery
}

func (f *folder) deliver(r report) {
	o := events.Observation{Key: r.key, Parser: "test/1", Kind: "hook", Signals: r.sigs, Meta: events.Meta{SessionID: "s1"}}
	var p events.Payload = events.ClaudeHookObserved{Observation: o}
	if r.line {
		f.lines++
		o.Key, o.Line, o.Path, o.Kind = "line:"+strconv.Itoa(f.lines), f.lines, "/p/s1.jsonl", "assistant"
		p = events.ClaudeLineObserved{Observation: o}
	} else {
		f.sent = append(f.sent, r)
	}
	f.observe(p, r.at)
}

func (f *folder) observe(p events.Payload, at time.Time) {
	f.n++
	e := f.reg.New(p)
	e.ID = ulid.MustNew(ulid.Timestamp(at), strings.NewReader(fmt.Sprintf("%016d", f.n)))
	e.Agg, e.At = agg, at
	o, _ := events.Observed(p)
	if f.s.Seen(o) {
		return
	}
	decs, err := session.Decide(f.s, session.Observe{Obs: e})
	if err != nil {
		f.t.Fatalf("decide %s: %v", e.Type, err)
	}
	f.apply(e)
	if os.Getenv("INV_DEBUG") != "" {
		f.t.Logf("obs line=%d key=%s at=%s sigs=%v", o.Line, o.Key, at.Format("05.000"), o.Signals)
		for _, d := range decs {
			f.t.Logf("   -> %s %+v", d.Type, d.Data)
		}
	}
	f.obs[e.ID.String()] = true
	for _, d := range decs {
		// Every change has a cause that resolves to a stored observation.
		if d.Cause == nil || !f.obs[d.Cause.Ref] {
			f.t.Fatalf("%s has cause %+v, which is no stored observation", d.Type, d.Cause)
		}
		f.apply(d)
	}
	f.always()
}

func (f *folder) apply(e events.Envelope) {
	e.Ver = f.s.Ver + 1
	f.s = session.Evolve(f.s, e)
}

// always checks what holds after every observation.
func (f *folder) always() {
	s := f.s
	if s.Phase == events.PhaseEnded && (len(s.Entries) > 0 || len(s.OpenReviews) > 0 || s.TurnOpen) {
		f.t.Fatalf("ended with entries %v reviews %v turn open %v", s.Entries, s.OpenReviews, s.TurnOpen)
	}
	if s.Exists() && s.UpdatedAt.Before(s.StartedAt) {
		f.t.Fatalf("updated %v before started %v", s.UpdatedAt, s.StartedAt)
	}
}

// afterEnd checks the state once a turn's end and everything before it
// has been delivered.
func (f *folder) afterEnd(ender string) {
	s := f.s
	holds := func() bool {
		switch s.Phase {
		case events.PhaseReady, events.PhaseEnded:
			return true
		case events.PhaseWorking:
			// A live background task or subagent.
			return slices.ContainsFunc(s.Entries, func(e session.Entry) bool {
				return e.Lane == events.LaneBackground || e.Lane == events.LaneSubagent
			}) && (s.Activity == "background" || strings.HasPrefix(s.Activity, "subagent:"))
		case events.PhaseWaiting:
			return s.Activity == "question" || len(s.OpenReviews) > 0
		}
		return false
	}()
	if !holds {
		f.t.Fatalf("after %s: phase %s/%s entries %+v reviews %v", ender, s.Phase, s.Activity, s.Entries, s.OpenReviews)
	}
	if s.TurnOpen && !(s.Phase == events.PhaseWaiting && s.Activity == "question") {
		f.t.Fatalf("after %s: the turn is still open", ender)
	}
	if slices.ContainsFunc(s.Entries, func(e session.Entry) bool { return e.Lane == events.LaneMain }) &&
		!(s.Phase == events.PhaseWaiting && s.Activity == "question") {
		f.t.Fatalf("after %s: main-lane entries %+v stay open", ender, s.Entries)
	}
}

// TestInvariants draws sessions as Claude Code reports them through hooks
// and transcripts, delivers each turn's hooks and lines interleaved in
// any order (each source keeps its own order; a source lags the other by
// less than a turn), redelivers some hooks and lines, and checks the
// invariants of docs/phases.md.
func TestInvariants(t *testing.T) {
	defaultChecks(t, invariantChecks)
	rapid.Check(t, func(t *rapid.T) {
		f := &folder{t: t, reg: events.NewRegistry(), s: session.Init(agg), obs: map[string]bool{}}
		for k, ts := range drawTurns(t) {
			hi, li := 0, 0
			for hi < len(ts.hooks) || li < len(ts.lines) {
				fromHook := li == len(ts.lines) || hi < len(ts.hooks) && rapid.Bool().Draw(t, fmt.Sprintf("hookFirst%d", k))
				if fromHook {
					f.deliver(ts.hooks[hi])
					hi++
				} else {
					f.deliver(ts.lines[li])
					li++
				}
				switch rapid.IntRange(0, 9).Draw(t, "dup") {
				case 0: // a hook delivered again
					if len(f.sent) > 0 {
						r := f.sent[rapid.IntRange(0, len(f.sent)-1).Draw(t, "dupHook")]
						o := events.Observation{Key: r.key, Parser: "test/1", Kind: "hook", Signals: r.sigs, Meta: events.Meta{SessionID: "s1"}}
						f.observe(events.ClaudeHookObserved{Observation: o}, r.at)
					}
				case 1: // a transcript line read again
					if f.lines > 0 {
						o := events.Observation{Key: "line:1", Line: 1, Path: "/p/s1.jsonl", Parser: "test/1", Kind: "user", Signals: []events.Sig{{Kind: events.SigPrompt, ID: "p0"}}}
						f.observe(events.ClaudeLineObserved{Observation: o}, ts.lines[0].at)
					}
				}
			}
			f.afterEnd(ts.ender)
		}
	})
}

// defaultChecks sets rapid's -rapid.checks to n until the test ends,
// unless the run chose the number itself (rapidChecksSetHere).
func defaultChecks(t *testing.T, n int) {
	t.Helper()
	if rapidChecksSetHere() {
		return
	}
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Value.Set(old) })
}

// rapidChecksSetHere reports whether the number of rapid checks was
// chosen on the command line or in the environment.
func rapidChecksSetHere() bool {
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	return set
}
