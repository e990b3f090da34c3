package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

var update = flag.Bool("update", false, "rewrite golden files")

var (
	id0 = ulid.MustParse("01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8")
	at0 = time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)
)

// samples has one filled-in payload per registered type.
func samples() []events.Payload {
	obs := events.Observation{
		Key: "line:7", Parser: "claude-transcript/1", Path: "/home/user/.claude/projects/p/s1.jsonl", Line: 7,
		Kind: "assistant", UUID: "u7", ParentUUID: "u6", AgentTime: "2026-04-24T19:19:02.584Z",
		Meta:        events.Meta{SessionID: "s1", Cwd: "/home/user/project", Model: "claude-opus-4-7", Version: "2.1.119"},
		Signals:     []events.Sig{{Kind: events.SigToolUse, ID: "toolu_1", Name: "Bash"}},
		Raw:         `{"type":"assistant"}`,
		Cut:         &events.Cut{Size: 70000, SHA256: strings.Repeat("ab", 32), Kept: 65536},
		Fingerprint: &events.Fingerprint{Line: 7, Offset: 5120, End: 75121, SHA256: strings.Repeat("ab", 32)},
	}
	hook := obs
	hook.Line, hook.Path, hook.Key, hook.Kind, hook.Parser, hook.Cut, hook.Fingerprint = 0, "", "PreToolUse:toolu_1", "PreToolUse", "claude-hook/1", nil, nil
	hook.Process = &events.Process{PID: 4242, Start: 991234, Host: "build-3", Boot: "6f1c2d3e-0000-4000-8000-000000000001", Comm: "claude"}
	tick := events.Observation{
		Key: "tick:01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8", Parser: "logbook-reconciler/1", Kind: "tick",
		Tick: &events.Tick{
			Now: at0, LastObserved: at0.Add(-45 * time.Minute), AbandonAfter: 30 * 60 * 1000,
			Check: &events.ProcessCheck{Process: *hook.Process, Result: events.ProcessGone, Detail: "no /proc/4242"},
		},
	}
	cxLine := events.Observation{
		Key: "line:2", Parser: "codex-rollout/1", Path: "/home/user/.codex/sessions/2026/05/23/rollout-2026-05-23T18-54-05-019e55c2-1c15-7813-bbbe-9f699a6ccd3f.jsonl", Line: 2,
		Kind: "event_msg/task_started", AgentTime: "2026-05-23T16:54:07.652Z",
		Meta:    events.Meta{Agent: "codex", SessionID: "019e55c2-1c15-7813-bbbe-9f699a6ccd3f", ForkedFrom: "019e55eb-cdbc-78a1-84a6-c98c8e34a495", Version: "0.130.0"},
		Signals: []events.Sig{{Kind: events.SigPrompt, ID: "019e55c2-1c3d-7000-aa4e-8438fdf7df72"}},
		Raw:     `{"timestamp":"2026-05-23T16:54:07.652Z","type":"event_msg","payload":{"type":"task_started","turn_id":"019e55c2-1c3d-7000-aa4e-8438fdf7df72"}}`,
	}
	cxNotify := events.Observation{
		Key: "notify:agent-turn-complete:t1", Parser: "codex-notify/1", Kind: "agent-turn-complete",
		Meta:    events.Meta{Agent: "codex", SessionID: "019e55c2-1c15-7813-bbbe-9f699a6ccd3f", Cwd: "/home/user/project"},
		Signals: []events.Sig{{Kind: events.SigPrompt, Status: events.PromptInTurn}, {Kind: events.SigTurnEnd, Name: "agent-turn-complete"}},
	}
	agentLine := events.Observation{
		Key: "line:3", Parser: "pilot-transcript/1", Path: "/home/user/.pilot/sessions/7c1e2a40-5b6d-4f80-9a1b-2c3d4e5f6a7b.jsonl", Line: 3,
		Kind: "tool_call", AgentTime: "2026-12-01T10:00:02.000Z",
		Meta:    events.Meta{Agent: "pilot", SessionID: "7c1e2a40-5b6d-4f80-9a1b-2c3d4e5f6a7b"},
		Signals: []events.Sig{{Kind: events.SigToolUse, ID: "c1", Name: "shell", Text: "go test ./..."}},
		Raw:     `{"t":"2026-12-01T10:00:02.000Z","type":"tool_call","id":"c1","tool":"shell","input":{"cmd":"go test ./..."}}`,
	}
	return []events.Payload{
		events.CodexLineObserved{Observation: cxLine},
		events.AgentLineObserved{Observation: agentLine},
		events.CodexNotifyObserved{Observation: cxNotify},
		events.SessionStarted{Agent: "claude-code", AgentSessionID: "s1", RewrittenFrom: "s0", Cwd: "/home/user/project", Model: "claude-opus-4-7", Mode: events.ModeWorkspaceWrite, AgentMode: "default", Transcript: "/home/user/.claude/projects/p/s1.jsonl"},
		events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "thinking", EntryID: "toolu_1"},
		events.SessionActivityChanged{From: "thinking", To: "tool:Bash"},
		events.SessionEntryOpened{EntryID: "toolu_1", Activity: "tool:Bash", Lane: events.LaneMain},
		events.SessionEntryClosed{EntryID: "toolu_1", Outcome: events.OutcomeOK},
		events.SessionEntryAbandoned{EntryID: "toolu_2", Reason: "agent_gone", Evidence: "pid 4242 (claude) on build-3 is gone: no /proc/4242"},
		events.SessionModeChanged{From: events.ModeWorkspaceWrite, To: events.ModeFullAccess, AgentMode: "bypassPermissions", Revision: 2},
		events.SessionDescribed{Cwd: "/home/user/project", Model: "claude-opus-4-7", GitBranch: "main", Version: "2.1.119", Title: "Fix the tests"},
		events.SessionTurnStarted{Turn: 3, PromptID: "p3"},
		events.SessionTurnEnded{Turn: 3, Outcome: "completed"},
		events.SessionEnded{From: events.PhaseReady, Reason: "prompt_input_exit"},
		events.ReviewRequested{ReviewID: "toolu_1", Tool: "Bash", Action: "rm -rf build"},
		events.ReviewDecided{ReviewID: "toolu_1", Verdict: events.VerdictDeny, Outcome: events.ReviewRejected, Risk: "high", UserAuthorization: "none", EvidenceDropped: true, Reason: "writes outside workspace"},
		events.ReviewBreakerTripped{Refusals: 3, Window: 3},
		events.ReviewBreakerReset{Reason: "new prompt"},
		events.SessionEntryLateResult{EntryID: "toolu_2", Outcome: events.OutcomeOK},
		events.SessionForked{Turn: 4, PromptID: "p4", Open: []string{"toolu_1"}},
		events.SessionTranscriptDiverged{Path: "/home/user/.claude/projects/p/s1.jsonl", Imported: events.Fingerprint{Line: 4, Offset: 900, End: 1210, SHA256: strings.Repeat("ab", 32)}, Found: events.Fingerprint{Line: 3, Offset: 900, End: 1100, SHA256: strings.Repeat("cd", 32)}, Size: 1100, NewSession: "s1-r1"},
		events.ClaudeLineObserved{Observation: obs},
		events.ClaudeHookObserved{Observation: hook},
		events.TickObserved{Observation: tick},
		events.HarnessObserved{Observation: events.Observation{
			Key: "mydaemon:4f2c9a1b0e8d7c6b5a49382716059483", Parser: "logbook-observation/1", Kind: "tool_start",
			Meta:    events.Meta{SessionID: "mydaemon-s1", Cwd: "/home/user/project", Model: "m1"},
			Signals: []events.Sig{{Kind: events.SigToolUse, ID: "t1", Name: "shell"}},
		}},
		events.OTelObserved{Observation: events.Observation{
			Key: "otel:claude_code.api_request:4f2c9a1b0e8d7c6b5a49382716059483", Parser: "otel-claude-code/1", Kind: "claude_code.api_request",
			AgentTime: "2026-11-30T10:00:00.123Z", Meta: events.Meta{SessionID: "s1", Model: "claude-opus-4-7", Version: "2.1.214"},
			Signals: []events.Sig{{Kind: events.SigUsage, Request: "req_1", Usage: &events.Usage{Model: "claude-opus-4-7", Input: 6, Output: 40, CacheRead: 100}}},
			Raw:     `{"event.name":"api_request","request_id":"req_1"}`,
		}},
		events.CommandRequested{Session: "s1", Argv: []string{"go", "test", "./..."}, Cwd: "internal", Workspace: "/home/user/project", Mode: events.ModeWorkspaceWrite, TTY: true, Env: []string{"PATH=/usr/bin:/bin", "GITHUB_TOKEN=[REDACTED]"}, WaitMS: 30000, RequestedBy: "claude-code"},
		events.CommandStarted{Worker: "w1", Host: "build-3", Pid: 4242},
		events.CommandRunning{Pid: 4242, ProcStart: 123456789, Boot: "0f4c9a2e-6b1d-4c3e-9a8b-7d6e5f4a3b2c", Cgroup: "/sys/fs/cgroup/logbook/01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"},
		events.CommandBackgrounded{AfterMS: 30000},
		events.CommandStdinWritten{Bytes: 6, SHA256: strings.Repeat("cd", 32)},
		events.CommandStopRequested{By: "alice", Reason: "user"},
		events.CommandExited{Code: -1, Signal: "SIGTERM", Stopped: true, DurationMS: 2100, OutputBytes: 65536},
		events.CommandAbandoned{Reason: "worker_lost", Worker: "w1"},
		events.CommandEvicted{By: "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z9"},
		events.CommandRefused{Reason: "bubblewrap is missing: install bubblewrap or run in full_access"},
	}
}

func envelope(reg *events.Registry, p events.Payload) events.Envelope {
	e := reg.New(p)
	e.ID, e.Agg, e.Ver, e.At = id0, events.Aggregate{Kind: events.KindSession, ID: "s1"}, 12, at0
	if strings.HasPrefix(e.Type, "command.") {
		e.Agg = events.Aggregate{Kind: events.KindCommand, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"}
	}
	switch k, _, _ := strings.Cut(e.Type, "."); k {
	case events.KindProject, events.KindWorkspace, events.KindTask:
		e.Agg = events.Aggregate{Kind: k, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7W1"}
	case "key", "signing":
		e.Agg = events.Aggregate{Kind: events.KindKey, ID: "4e8b0c2d1a3f5e6d"}
	case events.KindNotification:
		e.Agg = events.Aggregate{Kind: events.KindNotification, ID: "9c1e5d0b7a3f42e8b6d1c0a95e7f3b24"}
	case events.KindCheck:
		e.Agg = events.Aggregate{Kind: events.KindCheck, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7K1"}
	}
	e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7"}
	e.Corr, e.Host, e.Actor = "turn-7", "build-3", "claude-code"
	return e
}

func TestGolden(t *testing.T) {
	reg := events.NewRegistry()
	seen := map[string]bool{}
	for _, p := range append(append(append(append(samples(), workspaceSamples()...), keySamples()...), notificationSamples()...), checkSamples()...) {
		seen[p.EventType()] = true
		t.Run(p.EventType(), func(t *testing.T) {
			e := envelope(reg, p)
			got, err := json.MarshalIndent(e, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("..", "testdata", "events", p.EventType()+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./events -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("wire form changed (-want +got):\n%s", diff)
			}
			back, err := reg.Decode(want)
			if err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			if diff := cmp.Diff(e, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	for _, typ := range reg.Types() {
		if !seen[typ] {
			t.Errorf("type %s has no golden sample", typ)
		}
	}
}

// editor returns a function that decodes the JSON object good, lets f
// change it and encodes it again: one bad envelope a call.
func editor(t *testing.T, good []byte) func(f func(m map[string]any)) []byte {
	t.Helper()
	return func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
}

func TestDecode_Refuses(t *testing.T) {
	reg := events.NewRegistry()
	good, err := json.Marshal(envelope(reg, events.SessionTransitioned{From: "ready", To: "working"}))
	if err != nil {
		t.Fatal(err)
	}
	edit := editor(t, good)
	tests := []struct {
		name string
		in   []byte
		want error
		says string
	}{
		{"not json", []byte(`{"id":`), events.ErrMalformed, "envelope"},
		{"unknown type", edit(func(m map[string]any) { m["type"] = "session.teleported" }), events.ErrUnknownType, "session.teleported"},
		{"unknown version", edit(func(m map[string]any) { m["v"] = 7 }), events.ErrUnknownVersion, "v7"},
		{"cause lost ref", edit(func(m map[string]any) { delete(m["cause"].(map[string]any), "ref") }), events.ErrMissingCause, "cause"},
		{"cause lost", edit(func(m map[string]any) { delete(m, "cause") }), events.ErrMissingCause, "cause"},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), events.ErrMalformed, "extra"},
		{"unknown data field", edit(func(m map[string]any) { m["data"].(map[string]any)["zzz"] = 1 }), events.ErrMalformed, "zzz"},
		{"ver zero", edit(func(m map[string]any) { m["ver"] = 0 }), events.ErrMalformed, "ver 0"},
		{"bad aggregate id", edit(func(m map[string]any) { m["agg"].(map[string]any)["id"] = "a.b" }), events.ErrMalformed, "a.b"},
		{"bad kind", edit(func(m map[string]any) { m["agg"].(map[string]any)["kind"] = "planet" }), events.ErrMalformed, "planet"},
		{"bad time", edit(func(m map[string]any) { m["at"] = "yesterday" }), events.ErrMalformed, "at"},
		{"no data", edit(func(m map[string]any) { delete(m, "data") }), events.ErrMalformed, "data"},
		{"trailing", append(bytes.Clone(good), []byte(` {}`)...), events.ErrMalformed, "trailing"},
		// The canonical field order, as MarshalJSON writes it, with data cut.
		{"no data, canonical order", withData(t, good, ""), events.ErrMalformed, "no data"},
		{"data null", withData(t, good, `,"data":null`), events.ErrMalformed, "no data"},
		{"trailing close brace", append(bytes.Clone(good), []byte(`}garbage`)...), events.ErrMalformed, "trailing"},
		{"trailing close bracket", append(bytes.Clone(good), []byte(`]`)...), events.ErrMalformed, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := reg.Decode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err %q does not say %q", err, tt.says)
			}
		})
	}
}

// withData returns the wire form b (data last, as MarshalJSON writes it)
// with its data member replaced by member.
func withData(t *testing.T, b []byte, member string) []byte {
	t.Helper()
	i := bytes.LastIndex(b, []byte(`,"data":`))
	if i < 0 {
		t.Fatalf("no data member in %s", b)
	}
	return append(append(bytes.Clone(b[:i]), member...), '}')
}

func TestUpcast(t *testing.T) {
	reg := events.NewRegistry()
	// Pretend session.turn_started v1 was stored as {"n":3} at v0: an
	// upcaster renames the field.
	b := []byte(`{"id":"01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8","type":"session.turn_started","v":0,"agg":{"kind":"session","id":"s1"},"ver":1,"at":"2026-11-30T10:00:00.000000Z","data":{"n":3}}`)
	if _, err := reg.Decode(b); !errors.Is(err, events.ErrUnknownVersion) {
		t.Fatalf("without upcaster: %v", err)
	}
	reg.Upcast("session.turn_started", 0, func(data json.RawMessage) (json.RawMessage, error) {
		var old struct{ N int }
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, err
		}
		return json.Marshal(events.SessionTurnStarted{Turn: old.N})
	})
	e, err := reg.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Data.(events.SessionTurnStarted).Turn; got != 3 || e.V != 1 {
		t.Errorf("upcast: turn %d v%d, want 3 v1", got, e.V)
	}
}

func TestParseSubject(t *testing.T) {
	a, err := events.ParseSubject("lb.ev.session.abc-1")
	if err != nil || a != (events.Aggregate{Kind: "session", ID: "abc-1"}) {
		t.Errorf("got %v, %v", a, err)
	}
	for _, s := range []string{"lb.out.x", "lb.ev.session", "lb.ev.session.a.b", "lb.ev.nope.x"} {
		if _, err := events.ParseSubject(s); !errors.Is(err, events.ErrMalformed) {
			t.Errorf("%s: err = %v", s, err)
		}
	}
}

// The events that record forks, late results and rewritten transcripts
// are decisions: each needs a complete cause, and the decoder refuses an
// unknown field anywhere in its data, nested fingerprints included.
func TestDecode_RefusesLifecycleEvents(t *testing.T) {
	reg := events.NewRegistry()
	for _, p := range []events.Payload{
		events.SessionEntryLateResult{EntryID: "toolu_2", Outcome: events.OutcomeOK},
		events.SessionForked{Turn: 2, Open: []string{"toolu_1"}},
		events.SessionTranscriptDiverged{Path: "/p/s1.jsonl", Imported: events.Fingerprint{Line: 4, Offset: 9, End: 20, SHA256: "ab"}, NewSession: "s1-r1"},
	} {
		good, err := json.Marshal(envelope(reg, p))
		if err != nil {
			t.Fatal(err)
		}
		edit := editor(t, good)
		bad := map[string][]byte{
			"no ref":        edit(func(m map[string]any) { delete(m["cause"].(map[string]any), "ref") }),
			"unknown field": edit(func(m map[string]any) { m["data"].(map[string]any)["zzz"] = 1 }),
		}
		if p.EventType() == "session.transcript_diverged" {
			bad["unknown fingerprint field"] = edit(func(m map[string]any) { m["data"].(map[string]any)["imported"].(map[string]any)["zzz"] = 1 })
		}
		for name, b := range bad {
			if _, err := reg.Decode(b); err == nil {
				t.Errorf("%s with %s decoded", p.EventType(), name)
			}
		}
	}
	obs := events.ClaudeLineObserved{Observation: events.Observation{Key: "line:1", Parser: "p/1", Path: "/p/s1.jsonl", Line: 1, Kind: "user", Fingerprint: &events.Fingerprint{Line: 1, End: 3, SHA256: "ab"}}}
	good, _ := json.Marshal(envelope(reg, obs))
	var m map[string]any
	_ = json.Unmarshal(good, &m)
	m["data"].(map[string]any)["fingerprint"].(map[string]any)["zzz"] = 1
	b, _ := json.Marshal(m)
	if _, err := reg.Decode(b); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("observation with an unknown fingerprint field: %v", err)
	}
}

// TestGateReviewRoundTrip: a review the gate decides carries every field
// of the gate's contract through the codec.
func TestGateReviewRoundTrip(t *testing.T) {
	reg := events.NewRegistry()
	for _, p := range []events.Payload{
		events.ReviewRequested{ReviewID: "toolu_9", Tool: "Bash", Action: "git push origin main", Gate: true, Event: "PreToolUse",
			ArgsDigest: "sha256:" + strings.Repeat("ef", 32), Mode: events.ModeAuto, Revision: 3, Risk: "medium", BudgetMS: 90000},
		events.ReviewDecided{ReviewID: "toolu_9", Verdict: events.VerdictAllow, Outcome: events.ReviewApproved, Risk: "medium",
			UserAuthorization: "medium", Evidence: []string{"01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7"},
			DecidedBy: &events.DecidedBy{Kind: events.DecidedByUser, Name: "person:alice@build-3"}, Reason: "release day"},
	} {
		e := envelope(reg, p)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := reg.Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", e.Type, diff)
		}
	}
}
