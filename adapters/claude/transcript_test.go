package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

func newTestParser(t *testing.T, cfg Config) *Parser {
	t.Helper()
	p, err := NewParser(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shorts renders the signals of o in short form (see short).
func shorts(o events.Observation) []string {
	var s []string
	for _, sig := range o.Signals {
		s = append(s, short(sig))
	}
	return s
}

// TestParser_Line_Session parses a whole made-up session in the v2.1
// shape, one line of each kind, and checks every line's kind and signals.
func TestParser_Line_Session(t *testing.T) {
	t.Parallel()
	const path = "testdata/session.jsonl"
	p := newTestParser(t, Config{})
	want := []struct {
		kind string
		sigs []string
	}{
		1:  {"permission-mode", []string{"mode:default"}},
		2:  {"file-history-snapshot", nil},
		3:  {"user", []string{"prompt#P1"}},
		4:  {"attachment/deferred_tools_delta", nil},
		5:  {"ai-title", nil},
		6:  {"assistant", []string{"thinking", "usage#msg_2"}},
		7:  {"assistant", []string{"tool_use:Bash#toolu_A1&bg", "usage#msg_3"}},
		8:  {"user", []string{"tool_result#toolu_A1=backgrounded@bgtask1"}},
		9:  {"assistant", []string{"tool_use:AskUserQuestion#toolu_A2", "question:AskUserQuestion#toolu_A2", "usage#msg_5"}},
		10: {"user", []string{"tool_result#toolu_A2=ok", "answer:AskUserQuestion#toolu_A2"}},
		11: {"assistant", []string{"tool_use:Bash#toolu_A3", "usage#msg_7"}},
		12: {"user", []string{"tool_result#toolu_A3=rejected"}},
		13: {"user", []string{"interrupt:tool_use"}},
		14: {"system/api_error", []string{"api_error=retrying"}},
		15: {"user", []string{"prompt#P2"}},
		16: {"assistant", []string{"text", "usage#msg_12"}},
		17: {"assistant", []string{"tool_use:Bash#toolu_A4", "usage#msg_13"}},
		18: {"user", []string{"tool_result#toolu_A4=interrupted"}},
		19: {"user", []string{"interrupt"}},
		20: {"queue-operation", []string{"background_done=completed@bgtask1"}},
		21: {"user", []string{"prompt#P3"}},
		22: {"assistant", []string{"tool_use:Agent#toolu_A5&bg", "usage#msg_17"}},
		23: {"user", []string{"tool_result#toolu_A5=backgrounded@a0000000000000009"}},
		24: {"assistant", []string{"tool_use:BashOutput#toolu_A6", "usage#msg_19"}},
		25: {"user", []string{"tool_result#toolu_A6=ok", "background_done=killed@bgtask2"}},
		26: {"attachment/queued_command", []string{"background_done=completed@a0000000000000009"}},
		27: {"assistant", []string{"thinking", "usage#msg_22"}}, // end_turn, but a thinking line never ends a turn
		28: {"assistant", []string{"text", "turn_end:end_turn", "usage#msg_23"}},
		29: {"system/turn_duration", []string{"turn_end:turn_duration"}},
		30: {"system/stop_hook_summary", nil},
		31: {"system/compact_boundary", []string{"compact_end:auto"}},
		32: {"user", []string{"compact_end:summary"}},
		33: {"user", nil}, // isMeta
		34: {"user", nil}, // slash command record
		35: {"user", nil}, // local command output
		36: {"user", []string{"prompt#P5"}},
		37: {"assistant", []string{"api_error=failed", "turn_end:api_error"}},
		38: {"progress", nil},
		39: {"last-prompt", nil},
		40: {"custom-title", nil},
		41: {"summary", nil},
		42: {"permission-mode", []string{"mode:plan"}},
	}
	got := map[int]events.Observation{}
	for l, err := range ingest.ReadLines(path, 0) {
		if err != nil {
			t.Fatal(err)
		}
		o, err := p.Line(path, l.N, l.Bytes)
		if err != nil {
			t.Fatalf("line %d: %v", l.N, err)
		}
		got[l.N] = o
		if l.N >= len(want) {
			t.Errorf("line %d: not expected, got %s %v", l.N, o.Kind, shorts(o))
			continue
		}
		w := want[l.N]
		if o.Kind != w.kind {
			t.Errorf("line %d: kind %q, want %q", l.N, o.Kind, w.kind)
		}
		if diff := cmp.Diff(w.sigs, shorts(o)); diff != "" {
			t.Errorf("line %d (%s) signals (-want +got):\n%s", l.N, o.Kind, diff)
		}
		if len(o.Problems) > 0 {
			t.Errorf("line %d: problems %v", l.N, o.Problems)
		}
		if o.Key != fmt.Sprintf("line:%d", l.N) || o.Line != l.N || o.Path != path || o.Parser != ParserLine {
			t.Errorf("line %d: key %q line %d path %q parser %q", l.N, o.Key, o.Line, o.Path, o.Parser)
		}
	}
	if len(got) != len(want)-1 {
		t.Fatalf("parsed %d lines, want %d", len(got), len(want)-1)
	}

	// Details the short form leaves out.
	checks := []struct {
		line int
		got  any
		want any
	}{
		{3, got[3].Meta, events.Meta{SessionID: "5e551011-0000-4000-8000-000000000001", Cwd: "/home/user/project", Version: "2.1.140", GitBranch: "main", AgentMode: "default"}},
		{3, got[3].Signals[0].Text, "Start the dev server in the background, then ask me which port to use."},
		{3, got[3].UUID, "00000000-0000-4000-8000-000000000001"},
		{3, got[3].AgentTime, "2026-05-01T10:00:01.000Z"},
		{5, got[5].Meta.Title, "Start dev server"},
		{6, got[6].ParentUUID, "00000000-0000-4000-8000-000000000002"},
		{7, got[7].Meta.Model, "claude-opus-4-7"},
		{7, got[7].Signals[0].Text, "npm run dev"},
		{9, got[9].Signals[1].Text, "Which port should the server use?"},
		{12, strings.HasPrefix(got[12].Signals[0].Text, "The user doesn't want to proceed"), true},
		{14, got[14].Signals[0].Text, "status 529: Overloaded (retry 1/10)"},
		{15, got[15].Meta.AgentMode, "acceptEdits"},
		{28, got[28].Signals[0].Text, "The server ran on 8080 and has exited. Shall I restart it?"},
		{31, got[31].ParentUUID, got[30].UUID}, // logicalParentUuid
		{36, got[36].Signals[0].Text, "Deploy it with token=[REDACTED:assignment]"},
		{37, got[37].Meta.Model, ""}, // "<synthetic>"
		{40, got[40].Meta.Title, "Dev server session"},
		{42, got[42].Meta.AgentMode, "plan"},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", c.line, diff)
		}
	}
}

// TestParser_Line covers shapes the session fixture does not: older
// layouts, odd content, and what a line carries besides its signals.
func TestParser_Line(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100) + "Does this look right?"
	tests := []struct {
		name     string
		line     string
		kind     string
		sigs     []string
		text     string // Signals[0].Text, if set
		problems []string
	}{
		{"prompt as text blocks", `{"type":"user","promptId":"P9","message":{"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":"world"}]}}`,
			"user", []string{"prompt#P9"}, "hello\nworld", nil},
		{"image-only prompt", `{"type":"user","promptId":"P9","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}}]}}`,
			"user", []string{"prompt#P9"}, "", nil},
		{"interrupt as string", `{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"}}`,
			"user", []string{"interrupt"}, "[Request interrupted by user]", nil},
		{"tool result and interrupt marker in one message", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"The user doesn't want to take this action right now. STOP what you are doing."},{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`,
			"user", []string{"tool_result#toolu_1=interrupted", "interrupt:tool_use"}, "", nil},
		{"two tool results ignore toolUseResult", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a"},{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"Exit code 2"}]}]},"toolUseResult":{"backgroundTaskId":"nope"}}`,
			"user", []string{"tool_result#toolu_1=ok", "tool_result#toolu_2=error"}, "", nil},
		{"background id only in the text", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Command running in background with ID: bash_3. Output is being written to: /tmp/x"}]}}`,
			"user", []string{"tool_result#toolu_1=backgrounded@bash_3"}, "", nil},
		{"error result string", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"Exit code 1\ncat: /tmp/missing: No such file or directory"}]},"toolUseResult":"Error: Exit code 1\ncat: /tmp/missing: No such file or directory"}`,
			"user", []string{"tool_result#toolu_1=error"}, "Exit code 1\ncat: /tmp/missing: No such file or directory", nil},
		{"task notification as a user message", `{"type":"user","message":{"role":"user","content":"<task-notification>\n<task-id>bgX</task-id>\n<status>failed</status>\n</task-notification>"}}`,
			"user", []string{"background_done=failed@bgX"}, "", nil},
		{"running task notification", `{"type":"queue-operation","operation":"enqueue","content":"<task-notification><task-id>bgX</task-id><status>running</status></task-notification>"}`,
			"queue-operation", nil, "", nil},
		{"plain enqueue", `{"type":"queue-operation","operation":"enqueue","content":"next prompt"}`,
			"queue-operation", nil, "", nil},
		{"bash mode input", `{"type":"user","message":{"role":"user","content":"<bash-input>ls</bash-input>"}}`,
			"user", nil, "", nil},
		{"blocks of an older single-line message", `{"type":"assistant","message":{"model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"Running it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/home/user/project/go.mod"}}],"stop_reason":"tool_use"}}`,
			"assistant", []string{"thinking", "text", "tool_use:Read#toolu_1"}, "", nil},
		{"end turn after thinking and text", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"Done."}],"stop_reason":"end_turn"}}`,
			"assistant", []string{"thinking", "text", "turn_end:end_turn"}, "", nil},
		{"long text keeps head and tail", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + long + `"}],"stop_reason":"end_turn"}}`,
			"assistant", []string{"text", "turn_end:end_turn"}, "", nil},
		{"string content assistant", `{"type":"assistant","message":{"role":"assistant","content":"plain","stop_reason":"end_turn"}}`,
			"assistant", []string{"text", "turn_end:end_turn"}, "plain", nil},
		{"server tool blocks open nothing", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}],"stop_reason":"tool_use"}}`,
			"assistant", nil, "", nil},
		{"run_in_background false", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls","run_in_background":false}}]}}`,
			"assistant", []string{"tool_use:Bash#toolu_1"}, "ls", nil},
		{"compact boundary without metadata", `{"type":"system","subtype":"compact_boundary"}`,
			"system/compact_boundary", []string{"compact_end"}, "", nil},
		{"other system subtype", `{"type":"system","subtype":"local_command","content":"<command-name>/cost</command-name>"}`,
			"system/local_command", nil, "", nil},
		{"system without subtype", `{"type":"system","content":"x"}`,
			"system", nil, "", nil},
		{"unknown line type", `{"type":"telemetry-beacon","value":1}`,
			"telemetry-beacon", nil, "", []string{`unknown line type "telemetry-beacon"`}},
		{"no type", `{"uuid":"u1"}`,
			"untyped", nil, "", []string{`line has no "type"`}},
		{"wrong member types", `{"type":"user","sessionId":5,"isMeta":"no","message":{"role":"user","content":7}}`,
			"user", nil, "", []string{`field "sessionId": want string, got number`, `field "isMeta": want boolean, got string`, `field "message.content": want string or array, got number`}},
		{"unknown content block", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"hologram"}]}}`,
			"assistant", nil, "", []string{`unknown content block type "hologram"`}},
		{"wrong run_in_background type", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls","run_in_background":"yes"}}]}}`,
			"assistant", []string{"tool_use:Bash#toolu_1"}, "ls", []string{`field "message.content[0].input.run_in_background": want boolean, got string`}},
		{"null members", `{"type":"user","parentUuid":null,"message":null,"toolUseResult":null}`,
			"user", nil, "", nil},
	}
	p := newTestParser(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := p.Line("t.jsonl", 7, []byte(tt.line+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != tt.kind {
				t.Errorf("kind %q, want %q", o.Kind, tt.kind)
			}
			if diff := cmp.Diff(tt.sigs, shorts(o)); diff != "" {
				t.Errorf("signals (-want +got):\n%s", diff)
			}
			if tt.text != "" && o.Signals[0].Text != tt.text {
				t.Errorf("text %q, want %q", o.Signals[0].Text, tt.text)
			}
			if diff := cmp.Diff(tt.problems, o.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if o.Raw != tt.line || o.Cut != nil {
				t.Errorf("raw %q cut %v, want the line as given", o.Raw, o.Cut)
			}
			for _, s := range o.Signals {
				if len(s.Text) > MaxSigText {
					t.Errorf("%s text is %d bytes", s.Kind, len(s.Text))
				}
			}
		})
	}

	t.Run("long text keeps head and tail", func(t *testing.T) {
		line := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + long + `"}]}}`
		o, _ := p.Line("t.jsonl", 1, []byte(line))
		got := o.Signals[0].Text
		if len(got) > MaxSigText || !strings.HasPrefix(got, "word word") || !strings.HasSuffix(got, "Does this look right?") || !strings.Contains(got, " … ") {
			t.Errorf("text %q (%d bytes)", got, len(got))
		}
	})
}

// TestParser_LineErrors covers lines that are not JSON objects: each is a
// *LineError saying where, and still yields an observation to record.
func TestParser_LineErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		line    []byte
		is      error
		col     int
		message string
	}{
		{"malformed JSON", []byte(`{"type":"user",,}`), ErrSyntax, 16, "a.jsonl:3:16: malformed JSON at byte 16: invalid character ',' looking for beginning of object key string"},
		{"truncated JSON", []byte(`{"type":"user","message":{"role"`), ErrSyntax, 32, "a.jsonl:3:32: malformed JSON at byte 32: unexpected end of JSON input"},
		{"trailing data", []byte(`{"type":"user"} {}`), ErrSyntax, 17, "a.jsonl:3:17: malformed JSON at byte 17: invalid character '{' after top-level value"},
		{"invalid UTF-8", []byte("{\"type\":\"user\",\"x\":\"\xff\xfe\"}"), ErrInvalidUTF8, 21, "a.jsonl:3:21: invalid UTF-8 at byte 20"},
		{"array", []byte(`[1,2]`), ErrNotObject, 1, "a.jsonl:3:1: not a JSON object: got array"},
		{"string", []byte(`"user"`), ErrNotObject, 1, "a.jsonl:3:1: not a JSON object: got string"},
		{"null", []byte(`null`), ErrNotObject, 1, "a.jsonl:3:1: not a JSON object: got null"},
		{"number", []byte(`42`), ErrNotObject, 1, "a.jsonl:3:1: not a JSON object: got number"},
		{"empty line", []byte("\n"), ErrSyntax, 0, "a.jsonl:3: malformed JSON at byte 0: unexpected end of JSON input"},
	}
	p := newTestParser(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := p.Line("a.jsonl", 3, tt.line)
			le, ok := errors.AsType[*LineError](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *LineError", err, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if le.Path != "a.jsonl" || le.Line != 3 || le.Col != tt.col {
				t.Errorf("at %s:%d:%d, want a.jsonl:3:%d", le.Path, le.Line, le.Col, tt.col)
			}
			if err.Error() != tt.message {
				t.Errorf("message %q\n       want %q", err.Error(), tt.message)
			}
			if o.Kind != "invalid" || o.Key != "line:3" || o.Line != 3 || len(o.Signals) != 0 || len(o.Problems) != 1 || !utf8.ValidString(o.Raw) {
				t.Errorf("observation %+v, want an invalid line to record", o)
			}
		})
	}
}

// TestParser_LineCut covers a line over the cap: not an error, Raw cut on
// a rune boundary, Cut describing the original, signals from the whole line.
func TestParser_LineCut(t *testing.T) {
	t.Parallel()
	// "é" is two bytes; the filler puts a rune across the 200-byte cap.
	text := strings.Repeat("é", 300)
	line := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"},{"type":"tool_use","id":"toolu_late","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use"}}`
	p := newTestParser(t, Config{MaxRaw: 200})
	o, err := p.Line("a.jsonl", 1, []byte(line+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(line))
	want := &events.Cut{Size: int64(len(line)), SHA256: hex.EncodeToString(sum[:]), Kept: len(o.Raw)}
	if diff := cmp.Diff(want, o.Cut); diff != "" {
		t.Errorf("cut (-want +got):\n%s", diff)
	}
	if len(o.Raw) > 200 || len(o.Raw) < 198 || !utf8.ValidString(o.Raw) || !strings.HasPrefix(line, o.Raw) {
		t.Errorf("raw is %d bytes, valid %v: %q", len(o.Raw), utf8.ValidString(o.Raw), o.Raw)
	}
	if diff := cmp.Diff([]string{"text", "tool_use:Bash#toolu_late"}, shorts(o)); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}

	t.Run("default cap", func(t *testing.T) {
		p := newTestParser(t, Config{})
		if p.MaxRaw() != DefaultMaxRaw {
			t.Errorf("MaxRaw() = %d, want %d", p.MaxRaw(), DefaultMaxRaw)
		}
		big := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", DefaultMaxRaw) + `"}}`
		o, err := p.Line("a.jsonl", 1, []byte(big))
		if err != nil {
			t.Fatal(err)
		}
		if o.Cut == nil || len(o.Raw) != DefaultMaxRaw || o.Cut.Size != int64(len(big)) {
			t.Errorf("raw %d bytes, cut %+v", len(o.Raw), o.Cut)
		}
	})
	t.Run("negative cap", func(t *testing.T) {
		if _, err := NewParser(Config{MaxRaw: -1}); err == nil {
			t.Error("NewParser accepted MaxRaw -1")
		}
	})
}

// TestParser_LineRedacts checks that secrets leave neither through Raw nor
// through signals or meta.
func TestParser_LineRedacts(t *testing.T) {
	t.Parallel()
	const key = "AKIAABCDEFGHIJKLMNOP"
	line := `{"type":"user","cwd":"/home/user/` + key + `","promptId":"P1","message":{"role":"user","content":"use ` + key + ` and ticket TCK-1234"}}`
	o, err := ParseLine("a.jsonl", 1, []byte(line), Config{RedactPatterns: []string{`TCK-[0-9]+`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{o.Raw, o.Signals[0].Text, o.Meta.Cwd} {
		if strings.Contains(s, key) || strings.Contains(s, "TCK-1234") {
			t.Errorf("secret left in %q", s)
		}
	}
	if got, want := o.Signals[0].Text, "use [REDACTED:aws_access_key] and ticket [REDACTED:custom-1]"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if _, err := ParseLine("a.jsonl", 1, []byte(line), Config{RedactPatterns: []string{`(`}}); err == nil {
		t.Error("ParseLine accepted a bad pattern")
	}
}

func ExampleParseLine() {
	line := `{"type":"assistant","uuid":"u2","parentUuid":"u1","timestamp":"2026-05-01T10:00:02.000Z",` +
		`"message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"tool_use","id":"toolu_1",` +
		`"name":"Bash","input":{"command":"go test ./...","run_in_background":true}}],"stop_reason":"tool_use"}}`
	o, err := ParseLine("/home/user/.claude/projects/-home-user-project/S1.jsonl", 12, []byte(line), Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(o.Key, o.Kind, o.Meta.Model)
	for _, s := range o.Signals {
		fmt.Printf("%s %s %s background=%v %q\n", s.Kind, s.ID, s.Name, s.Background, s.Text)
	}
	// Output:
	// line:12 assistant claude-opus-4-7
	// tool_use toolu_1 Bash background=true "go test ./..."
}

// A line whose sessionId is no session id (a control character, a
// megabyte) is read, and its sessionId is not recorded as the session's
// agent_session_id: a problem says so, with its length but none of its
// bytes.
func TestParser_LineSessionIDChecked(t *testing.T) {
	t.Parallel()
	p := newTestParser(t, Config{})
	for _, id := range []string{`s1\u001b]0;title\u0007`, strings.Repeat("s", 1<<20)} {
		line := `{"type":"user","sessionId":"` + id + `","uuid":"u1","message":{"role":"user","content":"hi"}}`
		o, err := p.Line("t.jsonl", 1, []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		probs := strings.Join(o.Problems, "; ")
		if o.Meta.SessionID != "" || !strings.Contains(probs, "sessionId") || !strings.Contains(probs, "not recorded") || strings.ContainsAny(probs, "\x1b\x07") || len(probs) > 200 {
			t.Errorf("sessionId of %d bytes: recorded %.20q, problems %.300q; want none recorded, a short problem", len(id), o.Meta.SessionID, probs)
		}
	}
	o, err := p.Line("t.jsonl", 1, []byte(`{"type":"user","sessionId":"9a7e-ok","uuid":"u1","message":{"role":"user","content":"hi"}}`))
	if err != nil || o.Meta.SessionID != "9a7e-ok" || len(o.Problems) != 0 {
		t.Errorf("a valid sessionId: %q, problems %q, %v", o.Meta.SessionID, o.Problems, err)
	}
}
