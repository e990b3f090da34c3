package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
)

// TestParser_Hook parses one payload of each hook event from
// testdata/hooks and checks its signals, key and meta.
func TestParser_Hook(t *testing.T) {
	t.Parallel()
	const session = "5e551011-0000-4000-8000-000000000002"
	tests := []struct {
		file     string
		kind     string
		sigs     []string
		text     string // Signals[0].Text, if set
		key      string // "" means the payload's SHA-256 key
		meta     events.Meta
		problems []string
	}{
		{file: "SessionStart", kind: "SessionStart", sigs: []string{"session_start:startup"},
			meta: events.Meta{Model: "claude-opus-4-7"}},
		{file: "UserPromptSubmit", kind: "UserPromptSubmit", sigs: []string{"prompt#P1"}, text: "Run the tests",
			meta: events.Meta{AgentMode: "default"}},
		{file: "PreToolUse", kind: "PreToolUse", sigs: []string{"tool_use:Bash#toolu_H1&bg"}, text: "go test ./...",
			key: "hook:PreToolUse:toolu_H1", meta: events.Meta{AgentMode: "default"}},
		{file: "PreToolUse-AskUserQuestion", kind: "PreToolUse", sigs: []string{"tool_use:AskUserQuestion#toolu_H2", "question:AskUserQuestion#toolu_H2"}, text: "Which branch?",
			key: "hook:PreToolUse:toolu_H2", meta: events.Meta{AgentMode: "default"}},
		{file: "PreToolUse-in-subagent", kind: "PreToolUse", sigs: []string{"tool_use:Glob#toolu_H9"}, text: "**/*.go",
			key: "hook:PreToolUse:toolu_H9", meta: events.Meta{AgentMode: "default", AgentID: "a0000000000000003", AgentType: "Explore"}},
		{file: "PermissionRequest", kind: "PermissionRequest", sigs: []string{"permission:Bash"}, text: "git push origin main",
			meta: events.Meta{AgentMode: "default"}},
		{file: "PermissionDenied", kind: "PermissionDenied", sigs: []string{"tool_result:Bash#toolu_H3=rejected"}, text: "Denied by auto mode classifier",
			key: "hook:PermissionDenied:toolu_H3", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUse", kind: "PostToolUse", sigs: []string{"tool_result:Bash#toolu_H4=ok"},
			key: "hook:PostToolUse:toolu_H4", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUse-background", kind: "PostToolUse", sigs: []string{"tool_result:Bash#toolu_H5=backgrounded@bgtask7"},
			key: "hook:PostToolUse:toolu_H5", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUse-TaskOutput", kind: "PostToolUse", sigs: []string{"tool_result:TaskOutput#toolu_H6=ok", "background_done=failed@bgtask7"},
			key: "hook:PostToolUse:toolu_H6", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUseFailure", kind: "PostToolUseFailure", sigs: []string{"tool_result:Bash#toolu_H7=error"}, text: "Exit code 1",
			key: "hook:PostToolUseFailure:toolu_H7", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUseFailure-interrupt", kind: "PostToolUseFailure", sigs: []string{"tool_result:Bash#toolu_H8=interrupted"},
			key: "hook:PostToolUseFailure:toolu_H8", meta: events.Meta{AgentMode: "default"}},
		{file: "Notification-permission", kind: "Notification", sigs: []string{"permission:Bash"}, text: "Claude needs your permission to use Bash"},
		{file: "Notification-untyped", kind: "Notification", sigs: []string{"permission:Write"}},
		{file: "Notification-idle", kind: "Notification", sigs: []string{"idle"}},
		{file: "Notification-elicitation", kind: "Notification", sigs: []string{"question"}},
		{file: "Notification-auth", kind: "Notification", sigs: nil},
		{file: "SubagentStart", kind: "SubagentStart", sigs: []string{"subagent_start:Explore#a0000000000000003"},
			meta: events.Meta{AgentMode: "default"}},
		{file: "SubagentStop", kind: "SubagentStop", sigs: []string{"subagent_stop:Explore#a0000000000000003"},
			meta: events.Meta{AgentMode: "default"}},
		{file: "Stop", kind: "Stop", sigs: []string{"turn_end:Stop"}, meta: events.Meta{AgentMode: "default"}},
		{file: "StopFailure", kind: "StopFailure", sigs: []string{"api_error=failed", "turn_end:StopFailure"}, text: "Rate limited",
			meta: events.Meta{AgentMode: "default"}},
		{file: "SessionStart-resume", kind: "SessionStart", sigs: []string{"session_start:resume"}},
		{file: "SessionStart-compact", kind: "SessionStart", sigs: []string{"compact_end:compact"}},
		{file: "PreToolUse-ExitPlanMode", kind: "PreToolUse", sigs: []string{"tool_use:ExitPlanMode#toolu_HA", "question:ExitPlanMode#toolu_HA"},
			key: "hook:PreToolUse:toolu_HA", meta: events.Meta{AgentMode: "plan"}},
		{file: "PostToolUse-KillShell", kind: "PostToolUse", sigs: []string{"tool_result:KillShell#toolu_HB=ok", "background_done=killed@bk7q2m"},
			key: "hook:PostToolUse:toolu_HB", meta: events.Meta{AgentMode: "default"}},
		{file: "PostToolUse-TaskStop", kind: "PostToolUse", sigs: []string{"tool_result:TaskStop#toolu_HC=ok", "background_done=killed@bk7q2m"},
			key: "hook:PostToolUse:toolu_HC", meta: events.Meta{AgentMode: "default"}},
		{file: "PreCompact", kind: "PreCompact", sigs: []string{"compact_start:auto"}},
		{file: "PostCompact", kind: "PostCompact", sigs: []string{"compact_end:manual"}, meta: events.Meta{AgentMode: "default"}},
		{file: "SessionEnd", kind: "SessionEnd", sigs: []string{"session_end"}, text: "prompt_input_exit"},
		{file: "Unknown-event", kind: "SomeFutureEvent", sigs: nil, meta: events.Meta{AgentMode: "default"},
			problems: []string{`unknown hook event "SomeFutureEvent"`}},
	}
	p := newTestParser(t, Config{})
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "hooks", tt.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			seen[tt.file] = true
			o, err := p.Hook(b)
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != tt.kind || o.Parser != ParserHook {
				t.Errorf("kind %q parser %q", o.Kind, o.Parser)
			}
			if diff := cmp.Diff(tt.sigs, shorts(o)); diff != "" {
				t.Errorf("signals (-want +got):\n%s", diff)
			}
			if tt.text != "" && o.Signals[0].Text != tt.text {
				t.Errorf("text %q, want %q", o.Signals[0].Text, tt.text)
			}
			key := tt.key
			if key == "" {
				sum := sha256.Sum256([]byte(strings.TrimRight(string(b), "\n")))
				key = "hook:" + tt.kind + ":sha256:" + hex.EncodeToString(sum[:])
			}
			if o.Key != key {
				t.Errorf("key %q, want %q", o.Key, key)
			}
			tt.meta.SessionID, tt.meta.Cwd = session, "/home/user/project"
			if diff := cmp.Diff(tt.meta, o.Meta); diff != "" {
				t.Errorf("meta (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, o.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if o.Raw != strings.TrimRight(string(b), "\n") {
				t.Errorf("raw %q", o.Raw)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "hooks", "*.json"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !seen[name] {
			t.Errorf("fixture %s has no test case", f)
		}
	}
}

// TestParser_HookErrors covers payloads that cannot be used: each is a
// *HookError naming the field.
func TestParser_HookErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		is      error
		field   string
		message string
	}{
		{"not JSON", `hook_event_name=Stop`, ErrSyntax, "", "claude hook: malformed JSON at byte 1: invalid character 'h' looking for beginning of value"},
		{"not an object", `["Stop"]`, ErrNotObject, "", "claude hook: not a JSON object: got array"},
		{"invalid UTF-8", "{\"session_id\":\"\xc3\"}", ErrInvalidUTF8, "", "claude hook: invalid UTF-8 at byte 15"},
		{"missing event", `{"session_id":"S1"}`, ErrMissingField, "hook_event_name", `claude hook: field "hook_event_name": missing field`},
		{"empty event", `{"session_id":"S1","hook_event_name":""}`, ErrMissingField, "hook_event_name", `claude hook: field "hook_event_name": missing field: it is an empty string`},
		{"null event", `{"session_id":"S1","hook_event_name":null}`, ErrMissingField, "hook_event_name", `claude hook: field "hook_event_name": missing field: it is null`},
		{"missing session", `{"hook_event_name":"Stop"}`, ErrMissingField, "session_id", `claude hook Stop: field "session_id": missing field`},
		{"null session", `{"hook_event_name":"Stop","session_id":null}`, ErrMissingField, "session_id", `claude hook Stop: field "session_id": missing field: it is null`},
		{"numeric session", `{"hook_event_name":"Stop","session_id":5}`, ErrFieldType, "session_id", `claude hook Stop: field "session_id": wrong JSON type: want string, got number`},
		{"numeric event", `{"hook_event_name":7,"session_id":"S1"}`, ErrFieldType, "hook_event_name", `claude hook: field "hook_event_name": wrong JSON type: want string, got number`},
		{"string tool_input", `{"hook_event_name":"PreToolUse","session_id":"S1","tool_name":"Bash","tool_input":"x"}`, ErrFieldType, "tool_input", `claude hook PreToolUse: field "tool_input": wrong JSON type: want object, got string`},
		{"string stop_hook_active", `{"hook_event_name":"Stop","session_id":"S1","stop_hook_active":"yes"}`, ErrFieldType, "stop_hook_active", `claude hook Stop: field "stop_hook_active": wrong JSON type: want boolean, got string`},
		{"object tool_use_id", `{"hook_event_name":"PostToolUse","session_id":"S1","tool_use_id":{}}`, ErrFieldType, "tool_use_id", `claude hook PostToolUse: field "tool_use_id": wrong JSON type: want string, got object`},
		{"array cwd", `{"hook_event_name":"Stop","session_id":"S1","cwd":[]}`, ErrFieldType, "cwd", `claude hook Stop: field "cwd": wrong JSON type: want string, got array`},
		{"path session", `{"hook_event_name":"Stop","session_id":"../../etc"}`, events.ErrMalformed, "session_id", `claude hook Stop: field "session_id": events: malformed event: id "../../etc": byte '.' at 0 is not [A-Za-z0-9_-]`},
		{"newline session", `{"hook_event_name":"Stop","session_id":"S1\nS2"}`, events.ErrMalformed, "session_id", `claude hook Stop: field "session_id": events: malformed event: id "S1\nS2": byte '\n' at 2 is not [A-Za-z0-9_-]`},
		{"NUL session", `{"hook_event_name":"Stop","session_id":"S1\u0000"}`, events.ErrMalformed, "session_id", `claude hook Stop: field "session_id": events: malformed event: id "S1\x00": byte '\x00' at 2 is not [A-Za-z0-9_-]`},
		{"dotted agent", `{"hook_event_name":"Stop","session_id":"S1","agent_id":"a.b"}`, events.ErrMalformed, "agent_id", `claude hook Stop: field "agent_id": events: malformed event: id "a.b": byte '.' at 1 is not [A-Za-z0-9_-]`},
		{"subagent start dotted agent", `{"hook_event_name":"SubagentStart","session_id":"S1","agent_id":"*"}`, events.ErrMalformed, "agent_id", `claude hook SubagentStart: field "agent_id": events: malformed event: id "*": byte '*' at 0 is not [A-Za-z0-9_-]`},
		{"long agent", `{"hook_event_name":"Stop","session_id":"S1","agent_id":"` + strings.Repeat("a", events.MaxIDLen) + `"}`, events.ErrMalformed, "agent_id", `claude hook Stop: field "agent_id": events: malformed event: 128 bytes: want at most 122, since the subagent's session id ("agent-" and the agent id) is at most 128`},
		{"subagent start without agent", `{"hook_event_name":"SubagentStart","session_id":"S1","agent_type":"Explore"}`, ErrMissingField, "agent_id", `claude hook SubagentStart: field "agent_id": missing field`},
		{"subagent stop with null agent", `{"hook_event_name":"SubagentStop","session_id":"S1","agent_id":null}`, ErrMissingField, "agent_id", `claude hook SubagentStop: field "agent_id": missing field: it is null`},
		{"subagent start with empty agent", `{"hook_event_name":"SubagentStart","session_id":"S1","agent_id":""}`, ErrMissingField, "agent_id", `claude hook SubagentStart: field "agent_id": missing field: it is an empty string`},
		{"session its own subagent", `{"hook_event_name":"Stop","session_id":"agent-zz","agent_id":"zz"}`, events.ErrMalformed, "session_id", `claude hook Stop: field "session_id": events: malformed event: id "agent-zz" begins with "agent-", which names a subagent's session ("agent-" and its agent id); Claude Code sends the parent's session_id and the agent_id`},
		{"session named as a subagent", `{"hook_event_name":"SessionStart","session_id":"agent-zz"}`, events.ErrMalformed, "session_id", `claude hook SessionStart: field "session_id": events: malformed event: id "agent-zz" begins with "agent-", which names a subagent's session ("agent-" and its agent id); Claude Code sends the parent's session_id and the agent_id`},
		{"agent one byte long", `{"hook_event_name":"Stop","session_id":"S1","agent_id":"` + strings.Repeat("a", events.MaxIDLen-5) + `"}`, events.ErrMalformed, "agent_id", `claude hook Stop: field "agent_id": events: malformed event: 123 bytes: want at most 122, since the subagent's session id ("agent-" and the agent id) is at most 128`},
	}
	p := newTestParser(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Hook([]byte(tt.payload))
			he, ok := errors.AsType[*HookError](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *HookError", err, err)
			}
			if !errors.Is(err, tt.is) || he.Field != tt.field {
				t.Errorf("error %v field %q, want %v field %q", err, he.Field, tt.is, tt.field)
			}
			if err.Error() != tt.message {
				t.Errorf("message %q\n       want %q", err.Error(), tt.message)
			}
		})
	}

	t.Run("lenient inside tool input", func(t *testing.T) {
		o, err := p.Hook([]byte(`{"hook_event_name":"PreToolUse","session_id":"S1","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"ls","run_in_background":"yes"},"tool_response":"any shape","custom_instructions":null}`))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{`field "tool_input.run_in_background": want boolean, got string`}, o.Problems); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
	})
	t.Run("bad pattern", func(t *testing.T) {
		_, err := ParseHook([]byte(`{}`), Config{RedactPatterns: []string{"ok", "[z-a]"}})
		pe, ok := errors.AsType[*PatternError](err)
		if !ok || pe.Index != 2 || pe.Pattern != "[z-a]" {
			t.Errorf("error %v, want a *PatternError for pattern 2", err)
		}
	})
}

// TestParser_HookKey checks which payloads share a key.
func TestParser_HookKey(t *testing.T) {
	t.Parallel()
	p := newTestParser(t, Config{})
	stop := []byte(`{"hook_event_name":"Stop","session_id":"S1","stop_hook_active":false}`)
	a, _ := p.Hook(stop)
	b, _ := p.Hook(append(append([]byte{}, stop...), '\n'))
	if a.Key != b.Key {
		t.Errorf("a trailing newline changed the key: %q, %q", a.Key, b.Key)
	}
	// The same payload from two runs: equal keys from Hook, distinct keys
	// from SpooledHook, stable across redelivery of one entry.
	e1, e2 := Entry{ID: "01JDQ00000000000000000000A", Payload: stop}, Entry{ID: "01JDQ00000000000000000000B", Payload: stop}
	s1, err := p.SpooledHook(e1)
	if err != nil {
		t.Fatal(err)
	}
	s1again, _ := p.SpooledHook(e1)
	s2, _ := p.SpooledHook(e2)
	if s1.Key != "hook:Stop:spool:"+e1.ID || s1.Key != s1again.Key || s1.Key == s2.Key {
		t.Errorf("spooled keys %q %q %q", s1.Key, s1again.Key, s2.Key)
	}
	// A tool call keeps its tool_use_id key, whichever way it arrives.
	pre := []byte(`{"hook_event_name":"PreToolUse","session_id":"S1","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{}}`)
	h, _ := p.Hook(pre)
	s, _ := p.SpooledHook(Entry{ID: e1.ID, Payload: pre})
	if h.Key != "hook:PreToolUse:toolu_1" || s.Key != h.Key {
		t.Errorf("tool keys %q %q", h.Key, s.Key)
	}
	if _, err := p.SpooledHook(Entry{ID: e1.ID, Payload: []byte(`{`)}); err == nil || !strings.Contains(err.Error(), e1.ID) {
		t.Errorf("error %v does not name the entry", err)
	}
}
