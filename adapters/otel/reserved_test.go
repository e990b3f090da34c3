package otel_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/otel"
)

// otlpRecord is one log record of an OTLP/JSON logs request: its event
// name and its attributes, JSON members of the attributes array as
// written (so a key may be given twice).
func otlpRecord(name string, attrs ...string) string {
	return fmt.Sprintf(`{"timeUnixNano":"1790000000000000000","eventName":%q,"attributes":[%s]}`, name, strings.Join(attrs, ","))
}

// otlpStr is an OTLP/JSON string attribute.
func otlpStr(k, v string) string {
	return fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, k, v)
}

// postLogs sends records, under a resource with resource's attributes,
// as one OTLP/JSON logs request, wants 200, and returns the partial
// success's count of refused records and its message.
func postLogs(t *testing.T, url string, resource []string, records ...string) (int64, string) {
	t.Helper()
	body := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[%s]},"scopeLogs":[{"logRecords":[%s]}]}]}`, strings.Join(resource, ","), strings.Join(records, ","))
	resp := post(t, url+otel.PathLogs, "application/json", "", []byte(body))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", resp.Status, b)
	}
	er := plogotlp.NewExportResponse()
	if err := er.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return er.PartialSuccess().RejectedLogRecords(), er.PartialSuccess().ErrorMessage()
}

// TestReceiver_SubagentSessionIDRefused: a record whose session id has
// a subagent's shape ("agent-<id>", Claude Code's session.id or Codex
// CLI's conversation.id) is refused, named in the partial success, and
// appends nothing, as the hooks and POST /v1/observations refuse one; a
// real subagent of that id then gets its own session, with its parent.
func TestReceiver_SubagentSessionIDRefused(t *testing.T) {
	t.Parallel() // its own log and receiver
	l, _, url := newReceiver(t)
	n, msg := postLogs(t, url, nil,
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "agent-zzz"), otlpStr("prompt", "hi")),
		otlpRecord("codex.user_prompt", otlpStr("conversation.id", "agent-yyy"), otlpStr("prompt", "hi")),
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "top1"), otlpStr("prompt", "hi")))
	if want := `2 log records refused; first: resourceLogs[0].scopeLogs[0].logRecords[0]: event claude_code.user_prompt: attribute session.id: events: malformed event: id "agent-zzz" begins with "agent-", which names a subagent's session`; n != 2 || !strings.HasPrefix(msg, want) {
		t.Errorf("partial success %d %q, want 2 %q", n, msg, want)
	}
	for _, id := range []string{"agent-zzz", "agent-yyy"} {
		if _, recs := fold(t, l, id); len(recs) != 0 {
			t.Errorf("session %s: %d events", id, len(recs))
		}
	}
	if st, _ := fold(t, l, "top1"); !st.Exists() {
		t.Error("the good record beside them started no session")
	}
	// The subagent zzz of realparent1, through its hooks.
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, p := range []string{
		`{"hook_event_name":"SessionStart","session_id":"realparent1","source":"startup","cwd":"/tmp"}`,
		`{"hook_event_name":"SubagentStart","session_id":"realparent1","agent_id":"zzz","agent_type":"Explore","cwd":"/tmp"}`,
		`{"hook_event_name":"PreToolUse","session_id":"realparent1","agent_id":"zzz","agent_type":"Explore","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"ls"},"cwd":"/tmp"}`,
	} {
		at = at.Add(time.Second)
		if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(), Time: at, Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := fold(t, l, "agent-zzz"); st.Parent != "realparent1" || st.AgentID != "zzz" {
		t.Errorf("session agent-zzz: parent %q, agent id %q; want realparent1's zzz", st.Parent, st.AgentID)
	}
}

// TestReceiver_RepeatedAttributeRefused: a record that gives an
// attribute twice ("session.id" as ot1, then ot9), in its own
// attributes at any depth or in its resource's, is refused and named in
// the partial success: a reader would take one value and its raw copy
// keep the other. Nothing of it is appended; a good record beside it is.
func TestReceiver_RepeatedAttributeRefused(t *testing.T) {
	t.Parallel() // its own log and receiver
	l, _, url := newReceiver(t)
	n, msg := postLogs(t, url, nil,
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "ot1"), otlpStr("prompt", "hi"), otlpStr("session.id", "ot9")),
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "ot2"), `{"key":"m","value":{"kvlistValue":{"values":[`+otlpStr("a", "1")+","+otlpStr("a", "2")+`]}}}`),
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "ot3"), otlpStr("prompt", "hi")))
	if want := `2 log records refused; first: resourceLogs[0].scopeLogs[0].logRecords[0]: event claude_code.user_prompt: attribute "session.id": duplicate key: given more than once`; n != 2 || msg != want {
		t.Errorf("partial success %d %q, want 2 %q", n, msg, want)
	}
	n, msg = postLogs(t, url, []string{otlpStr("service.name", "claude-code"), otlpStr("service.name", "web")},
		otlpRecord("claude_code.user_prompt", otlpStr("session.id", "ot4"), otlpStr("prompt", "hi")))
	if n != 1 || !strings.Contains(msg, `resource attribute "service.name": duplicate key`) {
		t.Errorf("a resource's repeated attribute: partial success %d %q", n, msg)
	}
	for _, id := range []string{"ot1", "ot9", "ot2", "ot4"} {
		if _, recs := fold(t, l, id); len(recs) != 0 {
			t.Errorf("session %s: %d events", id, len(recs))
		}
	}
	if st, _ := fold(t, l, "ot3"); !st.Exists() {
		t.Error("the good record beside them started no session")
	}
}
