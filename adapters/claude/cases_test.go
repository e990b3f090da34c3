package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// The phase cases: situations reported in public by people who run
// Claude Code, kept under testdata/claude/cases/<case>/ as hook payloads
// (hooks.jsonl, one payload a line, sent in order) or transcripts
// (projects/). docs/phases.md says which exit-table row each one checks.

const casesDir = "../../testdata/claude/cases"

// feeder sends hook payloads and transcripts to one log through one
// Ingester, as `logbook hook claude` and `logbook import claude` do.
type feeder struct {
	t   *testing.T
	in  *Ingester
	log events.Log
	n   int
}

func newFeeder(t *testing.T) *feeder {
	l := ingesttest.OpenLog(t)
	return &feeder{t: t, in: newTestIngester(t, l), log: l}
}

// hooks sends each payload as one spool entry, in order.
func (f *feeder) hooks(payloads ...string) {
	f.t.Helper()
	for _, p := range payloads {
		f.n++
		at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(f.n) * time.Second)
		id := ulid.MustNew(ulid.Timestamp(at), bytes.NewReader(bytes.Repeat([]byte{byte(f.n)}, 16)))
		if _, err := f.in.Hook(context.Background(), Entry{ID: id.String(), Time: at, Payload: []byte(p)}); err != nil {
			f.t.Fatalf("hook %d: %v\n%s", f.n, err, p)
		}
	}
}

// hookFile sends the non-empty lines of path from line from (1-based) to
// line to (0: the last).
func (f *feeder) hookFile(path string, from, to int) {
	f.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	var ps []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if n < from || to > 0 && n > to || strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		ps = append(ps, sc.Text())
	}
	f.hooks(ps...)
}

// importDir imports every transcript under dir.
func (f *feeder) importDir(dir string) {
	f.t.Helper()
	ts, err := Discover(dir)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, tr := range ts {
		if _, err := f.in.ImportTranscript(context.Background(), tr, nil); err != nil {
			f.t.Fatal(err)
		}
	}
}

// transcript writes lines as the transcript of session id under a fresh
// projects dir and imports it.
func (f *feeder) transcript(id string, lines ...string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "-home-user-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	ingesttest.AppendFile(f.t, filepath.Join(dir, id+".jsonl"), strings.Join(lines, "\n")+"\n")
	f.importDir(dir)
}

func (f *feeder) state(id string) session.State {
	f.t.Helper()
	s, err := f.in.Sessions().State(context.Background(), events.Aggregate{Kind: events.KindSession, ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// want checks a session's phase, activity ("-": none), open entries and
// open reviews.
func (f *feeder) want(id, phase, activity string, entries []string, reviews int) {
	f.t.Helper()
	s := f.state(id)
	var open []string
	for _, e := range s.Entries {
		open = append(open, e.EntryID)
	}
	act := s.Activity
	if act == "" {
		act = "-"
	}
	if s.Phase != phase || activity != "" && act != activity || !slices.Equal(open, entries) || len(s.OpenReviews) != reviews {
		f.t.Errorf("session %s: phase %s/%s entries %v reviews %v; want %s/%s entries %v reviews %d",
			id, s.Phase, act, open, s.OpenReviews, phase, activity, entries, reviews)
	}
}

// hk renders a hook payload of session sid for event with the common
// fields and kv.
func hk(sid, event string, kv ...any) string {
	m := map[string]any{
		"session_id": sid, "hook_event_name": event, "cwd": "/home/user/app",
		"transcript_path": "/home/user/.claude/projects/-home-user-app/" + sid + ".jsonl",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// tl renders a transcript line of session sid: typ with the fields kv.
func tl(sid, typ string, kv ...any) string {
	m := map[string]any{"type": typ, "sessionId": sid, "cwd": "/home/user/app", "version": "2.1.150", "timestamp": "2026-06-01T10:00:00.000Z"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func tUser(sid, text string) string {
	return tl(sid, "user", "message", map[string]any{"role": "user", "content": text})
}

func tAssistant(sid, stop string, blocks ...map[string]any) string {
	return tl(sid, "assistant", "message", map[string]any{"role": "assistant", "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": stop})
}

func toolUseBlock(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func tResult(sid, id, content string, detail any) string {
	return tl(sid, "user", "message", map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": content},
	}}, "toolUseResult", detail)
}

func caseDir(name string) string { return filepath.Join(casesDir, name) }

// TestCase24_EscOnPermissionThenIdle: Esc on a permission dialog fires no
// hook; the idle_prompt that follows ends the turn.
func TestCase24_EscOnPermissionThenIdle(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000024"
	f := newFeeder(t)
	f.hookFile(filepath.Join(caseDir("24-esc-permission-idle"), "hooks.jsonl"), 1, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)
	st := f.state(s)
	if st.TurnOpen || st.Abandoned != 1 || len(st.Verdicts) != 1 || !st.Verdicts[0] {
		t.Errorf("turn open %v, abandoned %d, verdicts %v: want the call abandoned and the prompt refused", st.TurnOpen, st.Abandoned, st.Verdicts)
	}

	t.Run("PermissionRequest hook", func(t *testing.T) {
		const s = "s24b"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
			hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "rm -rf b"}),
			hk(s, "PermissionRequest", "tool_name", "Bash", "tool_input", map[string]any{"command": "rm -rf b"}))
		f.want(s, events.PhaseWaiting, "review", []string{"t1"}, 1)
		f.hooks(hk(s, "Notification", "notification_type", "idle_prompt", "message", "Claude is waiting for your input"))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
	t.Run("idle keeps an open question", func(t *testing.T) {
		const s = "s24c"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
			hk(s, "PreToolUse", "tool_name", "AskUserQuestion", "tool_use_id", "q1", "tool_input", map[string]any{"questions": []any{map[string]any{"question": "Which?"}}}),
			hk(s, "Notification", "notification_type", "idle_prompt", "message", "Claude is waiting for your input"))
		f.want(s, events.PhaseWaiting, "question", []string{"q1"}, 0)
	})
}

// TestCase25_CompactBracket: /compact is bracketed by PreCompact and, before
// PostCompact existed, SessionStart(source=compact).
func TestCase25_CompactBracket(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000025"
	f := newFeeder(t)
	f.hookFile(filepath.Join(caseDir("25-compact-hook-bracket"), "hooks.jsonl"), 1, 4)
	f.want(s, events.PhaseWorking, "compacting", nil, 0)
	f.hookFile(filepath.Join(caseDir("25-compact-hook-bracket"), "hooks.jsonl"), 5, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)

	t.Run("PostCompact", func(t *testing.T) {
		const s = "s25b"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "PreCompact", "trigger", "manual"), hk(s, "PostCompact", "trigger", "manual"))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
	t.Run("auto compaction inside a turn", func(t *testing.T) {
		const s = "s25c"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
			hk(s, "PreCompact", "trigger", "auto"), hk(s, "SessionStart", "source", "compact"))
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
		if st := f.state(s); !st.TurnOpen {
			t.Error("compaction ended the turn")
		}
	})
	t.Run("transcript compact_boundary", func(t *testing.T) {
		const s = "s25d"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "PreCompact", "trigger", "manual"))
		f.transcript(s, tUser(s, "<command-name>/compact</command-name>"),
			tl(s, "system", "subtype", "compact_boundary", "compactMetadata", map[string]any{"trigger": "manual"}))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
}

// TestCompact_ManualAfterAnUnendedTurn: a /compact typed at the prompt
// after a turn whose end was never reported (a tool result, then
// nothing) ends that turn: the agent was at its prompt. Hooks with
// SessionStart(compact) or PostCompact, a transcript alone (which has no
// line for the compaction's start), and a late transcript line of a
// compaction from before the open turn, which ends nothing.
func TestCompact_ManualAfterAnUnendedTurn(t *testing.T) {
	t.Parallel()
	unended := func(s string) []string {
		return []string{hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "run the tests"),
			hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "go test ./..."}),
			hk(s, "PostToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "go test ./..."}, "tool_response", map[string]any{"stdout": "ok"})}
	}
	// testsRan is the transcript of a prompt whose Bash call ran the tests
	// and got its result, the turn still open.
	testsRan := func(s string) []string {
		return []string{tUser(s, "run the tests"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Bash", map[string]any{"command": "go test ./..."})),
			tResult(s, "t1", "ok", map[string]any{"stdout": "ok"})}
	}
	ended := func(t *testing.T, f *feeder, s, outcome string) {
		t.Helper()
		f.want(s, events.PhaseReady, "-", nil, 0)
		if st := f.state(s); st.TurnOpen {
			t.Error("the turn before the compaction is still open")
		}
		got := ""
		for _, ty := range typesOfSession(t, f, s) {
			if strings.HasPrefix(ty, "session.turn_ended:") {
				got = strings.TrimPrefix(ty, "session.turn_ended:")
			}
		}
		if got != outcome {
			t.Errorf("turn outcome %q, want %q", got, outcome)
		}
	}
	t.Run("hooks, SessionStart compact", func(t *testing.T) {
		const s = "s-compact-a"
		f := newFeeder(t)
		f.hooks(unended(s)...)
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
		f.hooks(hk(s, "PreCompact", "trigger", "manual", "custom_instructions", ""), hk(s, "SessionStart", "source", "compact"))
		ended(t, f, s, "completed")
	})
	t.Run("hooks, PostCompact", func(t *testing.T) {
		const s = "s-compact-b"
		f := newFeeder(t)
		f.hooks(unended(s)...)
		f.hooks(hk(s, "PreCompact", "trigger", "manual"), hk(s, "PostCompact", "trigger", "manual"))
		ended(t, f, s, "completed")
	})
	t.Run("hooks, a call still open", func(t *testing.T) {
		const s = "s-compact-c"
		f := newFeeder(t)
		f.hooks(unended(s)[:3]...)
		f.hooks(hk(s, "PreCompact", "trigger", "manual"), hk(s, "PostCompact", "trigger", "manual"))
		ended(t, f, s, "interrupted")
	})
	t.Run("transcript", func(t *testing.T) {
		const s = "s-compact-d"
		f := newFeeder(t)
		f.transcript(s, append(testsRan(s),
			tUser(s, "<command-name>/compact</command-name>"),
			tl(s, "system", "subtype", "compact_boundary", "compactMetadata", map[string]any{"trigger": "manual"}),
			tl(s, "user", "isCompactSummary", true, "message", map[string]any{"role": "user", "content": "This session is being continued…"}))...)
		ended(t, f, s, "completed")
	})
	t.Run("auto compaction inside a turn keeps it", func(t *testing.T) {
		const s = "s-compact-e"
		f := newFeeder(t)
		f.transcript(s, append(testsRan(s),
			tl(s, "system", "subtype", "compact_boundary", "compactMetadata", map[string]any{"trigger": "auto"}))...)
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
	})
	t.Run("a late line of an earlier compaction", func(t *testing.T) {
		// The hooks began a turn at 10:00:02; the transcript's compaction
		// line, read afterwards, is of 10:00:00.
		const s = "s-compact-f"
		f := newFeeder(t)
		f.hooks(unended(s)[:2]...)
		f.transcript(s, tUser(s, "<command-name>/compact</command-name>"),
			tl(s, "system", "subtype", "compact_boundary", "compactMetadata", map[string]any{"trigger": "manual"}))
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
	})
}

// TestHooks_RunTwice: Claude Code 2.0.17 to 2.0.22 run each hook 2 to 4
// times, and their UserPromptSubmit carries no prompt_id: the copies of
// one prompt make one turn, never a first one "superseded". A prompt of
// the same text after the turn's first call, after its end, or under
// another prompt id is a new prompt; a transcript line of the prompt
// (no promptId either) is the same one.
func TestHooks_RunTwice(t *testing.T) {
	t.Parallel()
	prompt := func(s string) string { return hk(s, "UserPromptSubmit", "prompt", "fix the build") }
	pre := func(s string) string {
		return hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "make"})
	}
	post := func(s string) string {
		return hk(s, "PostToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "make"}, "tool_response", map[string]any{"stdout": "ok"})
	}
	outcomes := func(t *testing.T, f *feeder, s string) []string {
		var out []string
		for _, ty := range typesOfSession(t, f, s) {
			if o, ok := strings.CutPrefix(ty, "session.turn_ended:"); ok {
				out = append(out, o)
			}
		}
		return out
	}
	t.Run("every hook run 2 to 4 times", func(t *testing.T) {
		const s = "s-twice-a"
		f := newFeeder(t)
		start := hk(s, "SessionStart", "source", "startup")
		stop := hk(s, "Stop")
		f.hooks(start, start, prompt(s), prompt(s), prompt(s), prompt(s), pre(s), pre(s), post(s), post(s), post(s), stop, stop)
		f.want(s, events.PhaseReady, "-", nil, 0)
		st := f.state(s)
		if got := outcomes(t, f, s); st.Turns != 1 || st.ToolCalls != 1 || !slices.Equal(got, []string{"completed"}) {
			t.Errorf("turns %d, calls %d, outcomes %v: want one turn completed and one call", st.Turns, st.ToolCalls, got)
		}
	})
	t.Run("the same text in the next turn", func(t *testing.T) {
		const s = "s-twice-b"
		f := newFeeder(t)
		f.hooks(prompt(s), prompt(s), hk(s, "Stop"), prompt(s), prompt(s))
		if st := f.state(s); st.Turns != 2 || !st.TurnOpen {
			t.Errorf("turns %d, open %v: want a second turn", st.Turns, st.TurnOpen)
		}
	})
	t.Run("the same text after the turn's first call", func(t *testing.T) {
		const s = "s-twice-c"
		f := newFeeder(t)
		f.hooks(prompt(s), pre(s), post(s), prompt(s))
		if got := outcomes(t, f, s); f.state(s).Turns != 2 || !slices.Equal(got, []string{"superseded"}) {
			t.Errorf("turns %d, outcomes %v: want a new turn", f.state(s).Turns, got)
		}
	})
	t.Run("the same text under two prompt ids", func(t *testing.T) {
		const s = "s-twice-d"
		f := newFeeder(t)
		f.hooks(hk(s, "UserPromptSubmit", "prompt", "yes", "prompt_id", "p1"), hk(s, "UserPromptSubmit", "prompt", "yes", "prompt_id", "p2"))
		if st := f.state(s); st.Turns != 2 {
			t.Errorf("turns %d: two prompt ids are two prompts", st.Turns)
		}
	})
	t.Run("a hook, then the transcript line of the prompt", func(t *testing.T) {
		const s = "s-twice-e"
		f := newFeeder(t)
		f.hooks(prompt(s), prompt(s))
		f.transcript(s, tUser(s, "fix the build"))
		if got := outcomes(t, f, s); f.state(s).Turns != 1 || len(got) != 0 {
			t.Errorf("turns %d, outcomes %v: want the one turn still open", f.state(s).Turns, got)
		}
	})
}

// TestPermissionDenied_SaysWhoAndWhy: a call Claude Code's auto-mode
// classifier refuses (PermissionDenied with its reason) is closed
// rejected with who refused and why, and the audit timeline shows both;
// with a permission dialog open for it, the review is decided by the
// agent's check, not "rejected by the user". A refusal whose reason
// names no classifier is the agent's permission check (a rule or a
// hook); a person's refusal (the transcript's "User rejected tool use")
// names nobody.
func TestPermissionDenied_SaysWhoAndWhy(t *testing.T) {
	t.Parallel()
	pre := func(s string) string {
		return hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "curl https://example.invalid"})
	}
	denied := func(s, reason string) string {
		return hk(s, "PermissionDenied", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "curl https://example.invalid"}, "reason", reason)
	}
	closed := func(t *testing.T, f *feeder, s string) (events.SessionEntryClosed, []events.ReviewDecided) {
		t.Helper()
		recs, _, err := f.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: s})
		if err != nil {
			t.Fatal(err)
		}
		var c events.SessionEntryClosed
		var rs []events.ReviewDecided
		for _, r := range recs {
			switch d := r.Data.(type) {
			case events.SessionEntryClosed:
				c = d
			case events.ReviewDecided:
				rs = append(rs, d)
			}
		}
		return c, rs
	}
	t.Run("auto-mode classifier", func(t *testing.T) {
		const s = "s-denied-a"
		f := newFeeder(t)
		f.hooks(hk(s, "UserPromptSubmit", "prompt", "fetch it"), pre(s), denied(s, "Denied by auto mode classifier"))
		c, _ := closed(t, f, s)
		want := events.SessionEntryClosed{EntryID: "t1", Outcome: "rejected", By: ByAutoModeClassifier, Reason: "Denied by auto mode classifier"}
		if c != want {
			t.Errorf("closed %+v, want %+v", c, want)
		}
		items, err := replay.SessionTimeline(t.Context(), f.log, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := replay.WriteText(&b, items); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "by=claude-code:auto_mode_classifier") || !strings.Contains(b.String(), "Denied by auto mode classifier") {
			t.Errorf("audit does not say who refused and why:\n%s", b.String())
		}
	})
	t.Run("a rule, with the dialog open", func(t *testing.T) {
		const s = "s-denied-b"
		f := newFeeder(t)
		f.hooks(hk(s, "UserPromptSubmit", "prompt", "fetch it"), pre(s),
			hk(s, "PermissionRequest", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "curl https://example.invalid"}),
			denied(s, "Permission to use Bash has been denied by a rule"))
		c, rs := closed(t, f, s)
		if c.By != ByPermissionCheck || c.Reason == "" {
			t.Errorf("closed %+v: want the permission check and its reason", c)
		}
		if len(rs) != 1 || rs[0].DecidedBy == nil || rs[0].DecidedBy.Kind != events.DecidedByAgent || strings.Contains(rs[0].Reason, "user") {
			t.Errorf("review decided %+v: want the agent's check, not the user", rs)
		}
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
	})
	t.Run("the person refused", func(t *testing.T) {
		const s = "s-denied-c"
		f := newFeeder(t)
		f.transcript(s, tUser(s, "fetch it"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Bash", map[string]any{"command": "curl https://example.invalid"})),
			tResult(s, "t1", "The user doesn't want to proceed with this tool use.", "User rejected tool use"))
		if c, _ := closed(t, f, s); c.Outcome != "rejected" || c.By != "" || c.Reason != "" {
			t.Errorf("closed %+v: want rejected by nobody named", c)
		}
	})
}

// TestPermission_OneDialogOneReview: a permission dialog that a
// recorder-only hook reports twice (PermissionRequest, then
// Notification permission_prompt, in either order; a PermissionRequest
// run twice, as 2.0.17–2.0.22 do) is one review, decided once by the
// call's result; two dialogs of one tool with different actions are two.
func TestPermission_OneDialogOneReview(t *testing.T) {
	t.Parallel()
	pre := func(s, id, cmd string) string {
		return hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", id, "tool_input", map[string]any{"command": cmd})
	}
	req := func(s, cmd string) string {
		return hk(s, "PermissionRequest", "tool_name", "Bash", "tool_input", map[string]any{"command": cmd})
	}
	note := func(s string) string {
		return hk(s, "Notification", "notification_type", "permission_prompt", "message", "Claude needs your permission to use Bash")
	}
	post := func(s, id string) string {
		return hk(s, "PostToolUse", "tool_name", "Bash", "tool_use_id", id, "tool_input", map[string]any{"command": "x"}, "tool_response", map[string]any{"stdout": "ok"})
	}
	for _, tt := range []struct {
		name    string
		dialog  func(s string) []string
		reviews int
	}{
		{"request, then notification", func(s string) []string { return []string{req(s, "rm -rf build"), note(s)} }, 1},
		{"notification, then request", func(s string) []string { return []string{note(s), req(s, "rm -rf build")} }, 1},
		{"request run twice", func(s string) []string {
			return []string{req(s, "rm -rf build"), req(s, "rm -rf build"), note(s), note(s)}
		}, 1},
		{"two calls, two dialogs", func(s string) []string {
			return []string{pre(s, "t2", "rm -rf dist"), req(s, "rm -rf build"), req(s, "rm -rf dist")}
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := "s-dialog-" + strings.ReplaceAll(tt.name, " ", "-")
			s = strings.ReplaceAll(s, ",", "")
			f := newFeeder(t)
			f.hooks(hk(s, "UserPromptSubmit", "prompt", "clean up"), pre(s, "t1", "rm -rf build"))
			f.hooks(tt.dialog(s)...)
			st := f.state(s)
			if st.Phase != events.PhaseWaiting || len(st.OpenReviews) != tt.reviews {
				t.Fatalf("phase %s, open reviews %v; want waiting with %d", st.Phase, st.OpenReviews, tt.reviews)
			}
			f.hooks(post(s, "t1"))
			if tt.reviews == 1 {
				st := f.state(s)
				if len(st.OpenReviews) != 0 || len(st.Verdicts) != 1 || st.Phase != events.PhaseWorking {
					t.Errorf("after the result: phase %s, open %v, verdicts %v; want working, none open, one verdict", st.Phase, st.OpenReviews, st.Verdicts)
				}
			}
		})
	}
}

// typesOfSession lists the session's event types, a turn end with its
// outcome ("session.turn_ended:completed").
func typesOfSession(t *testing.T, f *feeder, id string) []string {
	t.Helper()
	recs, _, err := f.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		ty := r.Type
		if d, ok := r.Data.(events.SessionTurnEnded); ok {
			ty += ":" + d.Outcome
		}
		out = append(out, ty)
	}
	return out
}

// TestCase27_BlockingTools: a call that shows a dialog (ExitPlanMode,
// AskUserQuestion) waits on the user while it is open.
func TestCase27_BlockingTools(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000027"
	f := newFeeder(t)
	f.importDir(filepath.Join(caseDir("27-exitplanmode-waiting"), "projects"))
	f.want(s, events.PhaseWaiting, "question", []string{"toolu_27a"}, 0)

	for _, tool := range []string{"ExitPlanMode", "AskUserQuestion"} {
		t.Run(tool+" hooks, answered", func(t *testing.T) {
			s := "s27-" + tool
			f := newFeeder(t)
			f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
				hk(s, "PreToolUse", "tool_name", tool, "tool_use_id", "q1", "tool_input", map[string]any{"plan": "p"}))
			f.want(s, events.PhaseWaiting, "question", []string{"q1"}, 0)
			f.hooks(hk(s, "PostToolUse", "tool_name", tool, "tool_use_id", "q1", "tool_response", map[string]any{"plan": "p"}))
			f.want(s, events.PhaseWorking, "thinking", nil, 0)
		})
	}
	t.Run("parallel call result does not end the wait", func(t *testing.T) {
		const s = "s27p"
		f := newFeeder(t)
		f.transcript(s, tUser(s, "go"),
			tAssistant(s, "tool_use", toolUseBlock("r1", "Read", map[string]any{"file_path": "/a"}), toolUseBlock("q1", "AskUserQuestion", map[string]any{})),
			tResult(s, "r1", "contents", map[string]any{"type": "text"}))
		f.want(s, events.PhaseWaiting, "question", []string{"q1"}, 0)
	})
}

// TestCase28_StoppedBackgroundTask: a background task the agent stops
// (KillShell in 2.0.x, TaskStop in 2.1.x) is over.
func TestCase28_StoppedBackgroundTask(t *testing.T) {
	t.Parallel()
	f := newFeeder(t)
	f.importDir(filepath.Join(caseDir("28-killshell-taskstop"), "projects"))
	for _, s := range []string{"5e551011-0000-4000-8000-000000000281", "5e551011-0000-4000-8000-000000000282"} {
		f.want(s, events.PhaseReady, "-", nil, 0)
	}

	for _, v := range []struct{ tool, key, msg string }{
		{"KillShell", "shell_id", "Successfully killed shell: bk1 (npm run dev)"},
		{"TaskStop", "task_id", "Successfully stopped task: bk1 (npm run dev)"},
	} {
		t.Run(v.tool+" hooks", func(t *testing.T) {
			s := "s28-" + v.tool
			f := newFeeder(t)
			f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
				hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "npm run dev", "run_in_background": true}),
				hk(s, "PostToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_response", map[string]any{"backgroundTaskId": "bk1"}),
				hk(s, "Stop"))
			f.want(s, events.PhaseWorking, "background", []string{"bg-bk1"}, 0)
			f.hooks(hk(s, "UserPromptSubmit", "prompt", "stop it"),
				hk(s, "PreToolUse", "tool_name", v.tool, "tool_use_id", "t2", "tool_input", map[string]any{v.key: "bk1"}),
				// The response's wording changes; the input names the task.
				hk(s, "PostToolUse", "tool_name", v.tool, "tool_use_id", "t2", "tool_input", map[string]any{v.key: "bk1"}, "tool_response", map[string]any{"message": "ok"}),
				hk(s, "Stop"))
			f.want(s, events.PhaseReady, "-", nil, 0)
		})
	}
	t.Run("task-notification and BashOutput status", func(t *testing.T) {
		const s = "s28n"
		f := newFeeder(t)
		lines := []string{tUser(s, "go"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Bash", map[string]any{"command": "make", "run_in_background": true})),
			tResult(s, "t1", "Command running in background with ID: bk1", map[string]any{"backgroundTaskId": "bk1"}),
			tAssistant(s, "tool_use", toolUseBlock("t2", "Bash", map[string]any{"command": "sleep 9", "run_in_background": true})),
			tResult(s, "t2", "Command running in background with ID: bk2", map[string]any{"backgroundTaskId": "bk2"}),
			tAssistant(s, "end_turn", textBlock("Started."))}
		f.transcript(s, lines...)
		f.want(s, events.PhaseWorking, "background", []string{"bg-bk1", "bg-bk2"}, 0)
		lines = append(lines, tUser(s, "is make done?"),
			tAssistant(s, "tool_use", toolUseBlock("t3", "BashOutput", map[string]any{"bash_id": "bk1"})),
			tResult(s, "t3", "<status>completed</status>", map[string]any{"shellId": "bk1", "status": "completed", "exitCode": 0}),
			tAssistant(s, "end_turn", textBlock("Yes.")))
		f.transcript(s, lines...)
		f.want(s, events.PhaseWorking, "background", []string{"bg-bk2"}, 0)
		lines = append(lines, tUser(s, "<task-notification><task-id>bk2</task-id><status>killed</status></task-notification>"))
		f.transcript(s, lines...)
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
}

// TestCase29_BackgroundSubagent: a background subagent keeps the session
// working after the main turn stops, and its SubagentStop (or its
// notification) ends it.
func TestCase29_BackgroundSubagent(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000029"
	hooks := filepath.Join(caseDir("29-background-subagent-stop"), "hooks.jsonl")
	f := newFeeder(t)
	f.hookFile(hooks, 1, 6)
	f.want(s, events.PhaseWorking, "", []string{"agent-a29b29c29d29e29f"}, 0)
	f.hookFile(hooks, 7, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)

	t.Run("SubagentStart after the launch result", func(t *testing.T) {
		f := newFeeder(t)
		f.hookFile(hooks, 1, 3)
		f.hookFile(hooks, 5, 5)
		f.hookFile(hooks, 4, 4)
		f.hookFile(hooks, 6, 0)
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
	t.Run("transcript task-notification", func(t *testing.T) {
		const s = "s29t"
		f := newFeeder(t)
		f.transcript(s, tUser(s, "review in the background"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Agent", map[string]any{"prompt": "review", "run_in_background": true})),
			tResult(s, "t1", "Async agent launched", map[string]any{"isAsync": true, "status": "async_launched", "agentId": "a29"}),
			tAssistant(s, "end_turn", textBlock("Launched.")))
		f.want(s, events.PhaseWorking, "background", []string{"bg-a29"}, 0)
		f.transcript(s, tUser(s, "review in the background"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Agent", map[string]any{"prompt": "review", "run_in_background": true})),
			tResult(s, "t1", "Async agent launched", map[string]any{"isAsync": true, "status": "async_launched", "agentId": "a29"}),
			tAssistant(s, "end_turn", textBlock("Launched.")),
			tl(s, "queue-operation", "operation", "enqueue", "content", "<task-notification><task-id>a29</task-id><status>completed</status><summary>done</summary></task-notification>"))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
}

// TestCase31_ResumeAfterCrash: a new agent process for a session closes
// what the dead one left open.
func TestCase31_ResumeAfterCrash(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000031"
	f := newFeeder(t)
	f.hookFile(filepath.Join(caseDir("31-resume-after-crash"), "hooks.jsonl"), 1, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)
	if st := f.state(s); st.TurnOpen || st.Abandoned != 2 {
		t.Errorf("turn open %v, abandoned %d", st.TurnOpen, st.Abandoned)
	}

	for _, src := range []string{"resume", "startup", "clear"} {
		t.Run("SessionStart "+src, func(t *testing.T) {
			s := "s31-" + src
			f := newFeeder(t)
			f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
				hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "make"}),
				hk(s, "PermissionRequest", "tool_name", "Bash"),
				hk(s, "SessionStart", "source", src))
			f.want(s, events.PhaseReady, "-", nil, 0)
		})
	}
	t.Run("transcript continued under a new sessionId", func(t *testing.T) {
		const s, old = "5e551011-0000-4000-8000-0000000031aa", "5e551011-0000-4000-8000-0000000031bb"
		f := newFeeder(t)
		f.transcript(s, tUser(old, "build"),
			tAssistant(old, "tool_use", toolUseBlock("t1", "Bash", map[string]any{"command": "make"})),
			tUser(s, "go on"))
		f.want(s, events.PhaseWorking, "thinking", nil, 0)
		st := f.state(s)
		if st.AgentSessionID != s || st.Abandoned != 1 || st.Turns != 2 {
			t.Errorf("agent session %q, abandoned %d, turns %d", st.AgentSessionID, st.Abandoned, st.Turns)
		}
	})
}

// TestCase40_StopWithUnansweredPermission: the turn's end closes a
// permission prompt nobody answered.
func TestCase40_StopWithUnansweredPermission(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-000000000040"
	f := newFeeder(t)
	f.hookFile(filepath.Join(caseDir("40-permission-unanswered-stop"), "hooks.jsonl"), 1, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)

	t.Run("Notification permission_prompt then end_turn line", func(t *testing.T) {
		const s = "s40b"
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "x"),
			hk(s, "PreToolUse", "tool_name", "Bash", "tool_use_id", "t1", "tool_input", map[string]any{"command": "make"}),
			hk(s, "Notification", "notification_type", "permission_prompt", "message", "Claude needs your permission to use Bash"),
			hk(s, "StopFailure", "error", "rate_limit"))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
}

// subagentProject makes a Claude Code project folder holding session s's
// subagents folder and returns the folder, the path of subagent a's
// transcript in it (not yet written), and cl, which makes a line of that
// transcript (tl with a's agentId, on the side chain).
func subagentProject(t *testing.T, s, a string) (proj, subFile string, cl func(typ string, kv ...any) string) {
	t.Helper()
	proj = filepath.Join(t.TempDir(), "-home-user-app")
	sub := filepath.Join(proj, s, "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cl = func(typ string, kv ...any) string {
		return tl(s, typ, append([]any{"agentId", a, "isSidechain", true}, kv...)...)
	}
	return proj, filepath.Join(sub, "agent-"+a+".jsonl"), cl
}

// TestSubagentReleasedByParent: once the parent has a subagent's result,
// the subagent's own row is done too, whatever its transcript last said,
// and the parent's entries agree with it.
func TestSubagentReleasedByParent(t *testing.T) {
	t.Parallel()
	const s, a = "5e551011-0000-4000-8000-0000000000a1", "a0a1"
	child := "agent-" + a
	t.Run("transcripts", func(t *testing.T) {
		f := newFeeder(t)
		proj, subFile, cl := subagentProject(t, s, a)
		ingesttest.AppendFile(t, subFile, strings.Join([]string{
			cl("user", "message", map[string]any{"role": "user", "content": "look"}),
			cl("assistant", "message", map[string]any{"role": "assistant", "model": "m", "content": []any{toolUseBlock("c1", "Glob", map[string]any{"pattern": "*"})}, "stop_reason": nil}),
			cl("user", "message", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "c1", "content": "a.go"}}}),
			// The last line streams text with no stop reason: nothing in
			// the file ends the turn.
			cl("assistant", "message", map[string]any{"role": "assistant", "model": "m", "content": []any{textBlock("Found a.go")}, "stop_reason": nil}),
		}, "\n")+"\n")
		ingesttest.AppendFile(t, filepath.Join(proj, s+".jsonl"), strings.Join([]string{
			tUser(s, "explore"),
			tAssistant(s, "tool_use", toolUseBlock("t1", "Agent", map[string]any{"prompt": "look"})),
			tResult(s, "t1", "Found a.go", map[string]any{"agentId": a, "status": "completed"}),
			tAssistant(s, "end_turn", textBlock("Done.")),
		}, "\n")+"\n")
		f.importDir(proj)
		f.want(s, events.PhaseReady, "-", nil, 0)
		f.want(child, events.PhaseReady, "-", nil, 0)
		if st := f.state(child); !st.Released || st.TurnOpen || st.Parent != s {
			t.Errorf("child released %v turn open %v parent %q", st.Released, st.TurnOpen, st.Parent)
		}
		// A late line of the released work is recorded and moves nothing.
		ingesttest.AppendFile(t, subFile,
			cl("assistant", "message", map[string]any{"role": "assistant", "model": "m", "content": []any{toolUseBlock("c2", "Read", map[string]any{"file_path": "a.go"})}, "stop_reason": nil})+"\n")
		f.importDir(proj)
		f.want(child, events.PhaseReady, "-", nil, 0)
		if st := f.state(child); st.Lines != 5 {
			t.Errorf("late line not recorded: %d lines", st.Lines)
		}
	})
	t.Run("hooks", func(t *testing.T) {
		f := newFeeder(t)
		f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "explore"),
			hk(s, "PreToolUse", "tool_name", "Agent", "tool_use_id", "t1", "tool_input", map[string]any{"prompt": "look"}),
			hk(s, "SubagentStart", "agent_id", a, "agent_type", "Explore"),
			hk(s, "PreToolUse", "agent_id", a, "agent_type", "Explore", "tool_name", "Glob", "tool_use_id", "c1", "tool_input", map[string]any{"pattern": "*"}))
		f.want(child, events.PhaseWorking, "tool:Glob", []string{"c1"}, 0)
		f.want(s, events.PhaseWorking, "subagent:Explore", []string{"t1", child}, 0)
		f.hooks(hk(s, "SubagentStop", "agent_id", a, "agent_type", "Explore"))
		f.want(child, events.PhaseReady, "-", nil, 0)
		f.want(s, events.PhaseWorking, "", []string{"t1"}, 0)
		f.hooks(hk(s, "PostToolUse", "tool_name", "Agent", "tool_use_id", "t1", "tool_response", map[string]any{"agentId": a, "status": "completed"}),
			hk(s, "Stop"))
		f.want(s, events.PhaseReady, "-", nil, 0)
	})
}

// TestLocalCommandsRecordNothing: /compact, /clear and `!` shell escapes
// leave records in the transcript that are not prompts; their effects
// arrive as their own signals.
func TestLocalCommandsRecordNothing(t *testing.T) {
	t.Parallel()
	const s = "5e551011-0000-4000-8000-0000000000c1"
	f := newFeeder(t)
	f.transcript(s, tUser(s, "hello"), tAssistant(s, "end_turn", textBlock("Hi.")),
		tUser(s, "<bash-input>ls</bash-input>"),
		tUser(s, "<bash-stdout>a.go</bash-stdout><bash-stderr></bash-stderr>"),
		tUser(s, "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"),
		tUser(s, "<local-command-stdout></local-command-stdout>"),
		tUser(s, "<command-name>/compact</command-name>"),
		tl(s, "system", "subtype", "compact_boundary", "compactMetadata", map[string]any{"trigger": "manual"}),
		tl(s, "user", "isCompactSummary", true, "message", map[string]any{"role": "user", "content": "This session is being continued…"}))
	f.want(s, events.PhaseReady, "-", nil, 0)
	if st := f.state(s); st.Turns != 1 {
		t.Errorf("turns %d: a local command record became a prompt", st.Turns)
	}
}

// TestSubagentEndClosesParentEntry: a subagent's own transcript ending
// its turn closes the parent's entry for it when no SubagentStop came.
func TestSubagentEndClosesParentEntry(t *testing.T) {
	t.Parallel()
	const s, a = "5e551011-0000-4000-8000-0000000000a2", "a0a2"
	f := newFeeder(t)
	f.hooks(hk(s, "SessionStart", "source", "startup"), hk(s, "UserPromptSubmit", "prompt", "review"),
		hk(s, "PreToolUse", "tool_name", "Agent", "tool_use_id", "t1", "tool_input", map[string]any{"prompt": "review", "run_in_background": true}),
		hk(s, "SubagentStart", "agent_id", a, "agent_type", "general-purpose"),
		hk(s, "PostToolUse", "tool_name", "Agent", "tool_use_id", "t1", "tool_response", map[string]any{"isAsync": true, "status": "async_launched", "agentId": a}),
		hk(s, "Stop"))
	f.want(s, events.PhaseWorking, "subagent:general-purpose", []string{"agent-" + a}, 0)
	proj, subFile, cl := subagentProject(t, s, a)
	ingesttest.AppendFile(t, subFile, strings.Join([]string{
		cl("user", "message", map[string]any{"role": "user", "content": "review"}),
		cl("assistant", "message", map[string]any{"role": "assistant", "model": "m", "content": []any{textBlock("No dead code.")}, "stop_reason": "end_turn"}),
	}, "\n")+"\n")
	f.importDir(proj)
	f.want("agent-"+a, events.PhaseReady, "-", nil, 0)
	f.want(s, events.PhaseReady, "-", nil, 0)
}
