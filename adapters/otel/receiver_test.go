package otel_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// fixture is testdata/claude-code-events.json: Claude Code's documented
// events, written from its Monitoring page (the file names its source).
type fixture struct {
	Source   string         `json:"source"`
	Resource map[string]any `json:"resource"`
	Scope    string         `json:"scope"`
	Session  string         `json:"session"`
	Events   []struct {
		Name       string         `json:"name"`
		Time       time.Time      `json:"time"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
}

func loadFixture(t *testing.T) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-code-events.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	if f.Source == "" {
		t.Fatal("the fixture names no source")
	}
	return f
}

// kv returns v as an attribute of the OTel API: a JSON string, a whole
// number, a fractional one or a bool.
func kv(k string, v any) attribute.KeyValue {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return attribute.Int64(k, n)
		}
		f, _ := v.Float64()
		return attribute.Float64(k, f)
	case bool:
		return attribute.Bool(k, v)
	}
	return attribute.String(k, fmt.Sprint(v))
}

// sendSDK exports the fixture's events, with the session id session, to
// the OTLP/HTTP endpoint url through the OpenTelemetry Go SDK's log
// pipeline and its OTLP/HTTP exporter (protobuf), as Claude Code does
// with OTEL_LOGS_EXPORTER=otlp and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf.
// edit, when set, changes each event's attributes before it is sent.
func sendSDK(t *testing.T, url string, f fixture, session string, edit func(name string, attrs map[string]any)) {
	t.Helper()
	ctx := t.Context()
	exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(url+otel.PathLogs), otlploghttp.WithCompression(otlploghttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	var res []attribute.KeyValue
	for k, v := range f.Resource {
		res = append(res, kv(k, v))
	}
	prov := sdklog.NewLoggerProvider(sdklog.WithResource(resource.NewSchemaless(res...)), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	lg := prov.Logger(f.Scope)
	for _, ev := range f.Events {
		attrs := map[string]any{}
		for k, v := range ev.Attributes {
			attrs[k] = v
		}
		attrs["session.id"] = session
		if edit != nil {
			edit(ev.Name, attrs)
		}
		var r otellog.Record
		r.SetTimestamp(ev.Time)
		r.SetBody(attribute.StringValue(ev.Name))
		for k, v := range attrs {
			r.AddAttributes(kv(k, v))
		}
		lg.Emit(ctx, r)
	}
	if err := prov.Shutdown(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}
}

// newReceiver runs a Receiver over a fresh log behind a real HTTP server.
func newReceiver(t testing.TB) (*natslog.Log, *otel.Receiver, string) {
	t.Helper()
	l, _ := natslogtest.Start(t, natslog.FsyncInterval)
	mk := func(actor string) *ingest.Ingester {
		in, err := ingest.New(ingest.Config{Log: l, Command: "logbook serve --otlp", Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	r := &otel.Receiver{Parser: otel.NewParser(nil, 0), Claude: mk(otel.AgentClaude), Codex: mk(otel.AgentCodex)}
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	return l, r, srv.URL
}

// fold folds session id from l.
func fold(t *testing.T, l *natslog.Log, id string) (session.State, []events.Record) {
	t.Helper()
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	return session.Fold(session.Init(agg), recs), recs
}

// spent sums a session's usage buckets.
type spent struct{ In, Out, Read, Write, Calls int64 }

func spentOf(st session.State) spent {
	var s spent
	for _, b := range st.Usage {
		s.In, s.Out, s.Read, s.Write, s.Calls = s.In+b.Input, s.Out+b.Output, s.Read+b.CacheRead, s.Write+b.CacheWrite, s.Calls+b.Calls
	}
	return s
}

func count(recs []events.Record, typ string) int {
	n := 0
	for _, r := range recs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

// TestReceiver_ClaudeSDK: Claude Code's documented events, sent by the
// OpenTelemetry SDK over OTLP/HTTP protobuf (gzip), make a session with
// its prompt, its tool call and the usage of its two API requests; sent
// again, they append nothing.
func TestReceiver_ClaudeSDK(t *testing.T) {
	t.Parallel() // its own log and receiver
	f := loadFixture(t)
	l, _, url := newReceiver(t)
	sendSDK(t, url, f, f.Session, nil)
	st, recs := fold(t, l, f.Session)
	if st.Phase != events.PhaseWorking || st.ToolCalls != 1 || st.Turns != 1 || st.Agent != otel.AgentClaude {
		t.Fatalf("phase %s, %d tool calls, %d turns, agent %q; want working, 1, 1, claude-code", st.Phase, st.ToolCalls, st.Turns, st.Agent)
	}
	if got, want := spentOf(st), (spent{In: 17, Out: 100, Read: 650, Write: 50, Calls: 2}); got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	if n := count(recs, "obs.otel"); n != len(f.Events) {
		t.Fatalf("%d observations, want %d", n, len(f.Events))
	}
	for _, r := range recs {
		if o, ok := r.Data.(events.OTelObserved); ok {
			if !strings.HasPrefix(o.Key, "otel:"+o.Kind+":") || o.Parser != otel.ParserClaude || !o.Live || o.Raw == "" || len(o.Problems) > 0 {
				t.Errorf("observation %+v", o.Observation)
			}
		}
	}
	sendSDK(t, url, f, f.Session, nil)
	if _, again := fold(t, l, f.Session); len(again) != len(recs) {
		t.Fatalf("the same events sent again appended %d events", len(again)-len(recs))
	}
}

// TestReceiver_JSON: the same events as OTLP/JSON (the collector's own
// encoder) are the same observations as over protobuf: a JSON export of
// records already taken appends nothing.
func TestReceiver_JSON(t *testing.T) {
	t.Parallel() // its own log and receiver
	f := loadFixture(t)
	l, _, url := newReceiver(t)
	sendSDK(t, url, f, f.Session, nil)
	_, before := fold(t, l, f.Session)
	body, err := plogotlp.NewExportRequestFromLogs(logsOf(f, f.Session)).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, url+otel.PathLogs, "application/json", "", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if _, after := fold(t, l, f.Session); len(after) != len(before) {
		t.Fatalf("JSON of the same records appended %d events", len(after)-len(before))
	}
	// A new session over JSON alone.
	resp = post(t, url+otel.PathLogs, "application/json", "", mustJSON(t, logsOf(f, "json-only")))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	if st, _ := fold(t, l, "json-only"); st.ToolCalls != 1 || spentOf(st).Calls != 2 {
		t.Fatalf("session over JSON: %d tool calls, usage %+v", st.ToolCalls, spentOf(st))
	}
}

// logsOf builds the fixture's records with pdata, as the SDK sends them.
func logsOf(f fixture, session string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range f.Resource {
		putAttr(rl.Resource().Attributes(), k, v)
	}
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(f.Scope)
	for _, ev := range f.Events {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
		lr.Body().SetStr(ev.Name)
		for k, v := range ev.Attributes {
			putAttr(lr.Attributes(), k, v)
		}
		lr.Attributes().PutStr("session.id", session)
	}
	return ld
}

func putAttr(m pcommon.Map, k string, v any) {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			m.PutInt(k, n)
			return
		}
		d, _ := v.Float64()
		m.PutDouble(k, d)
	case bool:
		m.PutBool(k, v)
	default:
		m.PutStr(k, fmt.Sprint(v))
	}
}

func mustJSON(t *testing.T, ld plog.Logs) []byte {
	t.Helper()
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustProto(t testing.TB, ld plog.Logs) []byte {
	t.Helper()
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body and returns the answer, its body read.
func post(t *testing.T, url, ctype, encoding string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// TestReceiver_SameAsHooks: one session seen through hooks (a prompt,
// a tool call, the turn's Stop) and its transcript, the same session seen
// only through OTLP (Claude Code's events and its spans, each sent by the
// OpenTelemetry SDK), and the same session seen through all of them, OTLP
// last or first, reach the same phase, ready, and the same tool calls,
// turns and usage: the hooks' and the telemetry's reports of one call are
// one call, the interaction span's end is the Stop hook's, and a
// request's usage counts once from its transcript line and its
// api_request event, in either order.
func TestReceiver_SameAsHooks(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := os.ReadFile(filepath.Join("testdata", "claude-code-hooks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := os.ReadFile(filepath.Join("testdata", "claude-code-transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// viaHooks feeds session id its hooks, then its transcript.
	viaHooks := func(id string) {
		t.Helper()
		at := time.Date(2026, 11, 30, 10, 0, 1, 0, time.UTC)
		for line := range bytes.Lines(hooks) {
			p := bytes.ReplaceAll(bytes.TrimSpace(line), []byte(f.Session), []byte(id))
			if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(), Time: at, Payload: p}); err != nil {
				t.Fatal(err)
			}
			at = at.Add(2 * time.Second)
		}
		path := filepath.Join(t.TempDir(), id+".jsonl")
		if err := os.WriteFile(path, bytes.ReplaceAll(transcript, []byte(f.Session), []byte(id)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := in.ImportFile(t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	const (
		hooksOnly = "5e551011-0000-4000-8000-0000000000c1"
		otlpOnly  = "5e551011-0000-4000-8000-0000000000c2"
		both      = "5e551011-0000-4000-8000-0000000000c3"
		otlpFirst = "5e551011-0000-4000-8000-0000000000c4"
	)
	// viaOTLP sends session id's events, then its spans, as Claude Code's
	// two exporters do.
	viaOTLP := func(id string) {
		t.Helper()
		sendSDK(t, url, f, id, nil)
		sendTraceSDK(t, url, sf, id)
	}
	viaHooks(hooksOnly)
	viaOTLP(otlpOnly)
	viaHooks(both)
	viaOTLP(both)
	viaOTLP(otlpFirst)
	viaHooks(otlpFirst)
	want, _ := fold(t, l, hooksOnly)
	if w := spentOf(want); w != (spent{In: 17, Out: 100, Read: 650, Write: 50, Calls: 2}) || want.Phase != events.PhaseReady || want.Turns != 1 || want.ToolCalls != 1 {
		t.Fatalf("hooks and transcript: phase %s, %d turns, %d tool calls, usage %+v; want ready, 1, 1", want.Phase, want.Turns, want.ToolCalls, w)
	}
	for _, id := range []string{otlpOnly, both, otlpFirst} {
		got, _ := fold(t, l, id)
		if got.Phase != events.PhaseReady || got.TurnOpen || got.ToolCalls != want.ToolCalls || got.Turns != want.Turns || spentOf(got) != spentOf(want) {
			t.Errorf("%s: phase %s, %d tool calls, %d turns, usage %+v; hooks alone: %s, %d, %d, %+v",
				id, got.Phase, got.ToolCalls, got.Turns, spentOf(got), want.Phase, want.ToolCalls, want.Turns, spentOf(want))
		}
	}
}

// TestReceiver_BadInput: what cannot be used is refused whole, appending
// nothing (malformed protobuf or JSON, a body over the cap however it is
// sent, another content type), or left out with the reason in the
// answer's partial success (a record naming no session, or naming it
// with the wrong type, or no agent's); an unknown event name or a count
// of the wrong type is kept as an observation to look at, with a
// Problems entry, and moves nothing.
func TestReceiver_BadInput(t *testing.T) {
	t.Parallel() // its own log and receiver
	f := loadFixture(t)
	l, r, url := newReceiver(t)
	r.MaxBody = 1 << 20
	end := func() uint64 {
		seq, err := l.LastSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	refused := func(name string, code int, resp *http.Response) {
		t.Helper()
		if resp.StatusCode != code {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %s %s, want %d", name, resp.Status, b, code)
		}
		if n := end(); n != 0 {
			t.Errorf("%s: the log holds %d events", name, n)
		}
	}
	good := mustProto(t, logsOf(f, "s1"))
	refused("MalformedProtobuf", 400, post(t, url+otel.PathLogs, "application/x-protobuf", "", []byte{0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2}))
	refused("TruncatedProtobuf", 400, post(t, url+otel.PathLogs, "application/x-protobuf", "", good[:len(good)-7]))
	refused("MalformedJSON", 400, post(t, url+otel.PathLogs, "application/json", "", []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":`)))
	// A body that does not decode is not quoted back, in the answer or
	// in what the receiver says: it may hold a secret.
	secret := "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	var said bytes.Buffer
	r.Say = func(format string, args ...any) { fmt.Fprintf(&said, format+"\n", args...) }
	resp0 := post(t, url+otel.PathLogs, "application/json", "", []byte(`{"resourceLogs":[{"k":"`+secret+`"!`))
	b0, _ := io.ReadAll(resp0.Body)
	if resp0.StatusCode != 400 || strings.Contains(string(b0), secret) || strings.Contains(said.String(), "ghp_") {
		t.Errorf("a body with a secret that does not decode: %s %q; said %q", resp0.Status, b0, said.String())
	}
	refused("ContentType", 415, post(t, url+otel.PathLogs, "text/plain", "", good))
	refused("Charset", 415, post(t, url+otel.PathLogs, "application/json; charset=utf-16", "", good))
	refused("Encoding", 415, post(t, url+otel.PathLogs, "application/x-protobuf", "br", good))
	// 100 MB, announced, streamed without a length, and as a small gzip
	// that inflates past the cap.
	huge := bytes.Repeat([]byte{0}, 100<<20)
	refused("Huge", 413, post(t, url+otel.PathLogs, "application/x-protobuf", "", huge))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+otel.PathLogs, io.MultiReader(bytes.NewReader(huge)))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	refused("HugeChunked", 413, resp)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(huge)
	zw.Close()
	refused("GzipBomb", 413, post(t, url+otel.PathLogs, "application/x-protobuf", "gzip", z.Bytes()))
	huge = nil

	// Records that cannot be placed are left out, the others taken.
	ld := logsOf(f, "s2")
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(1).Attributes().Remove("session.id")
	lrs.At(2).Attributes().PutInt("session.id", 42)
	orl := ld.ResourceLogs().AppendEmpty()
	orl.Resource().Attributes().PutStr("service.name", "web")
	other := orl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	other.Body().SetStr("http.request")
	other.Attributes().PutStr("session.id", "s2")
	resp = post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, ld))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	b, _ := io.ReadAll(resp.Body)
	er := plogotlp.NewExportResponse()
	if err := er.UnmarshalProto(b); err != nil {
		t.Fatal(err)
	}
	ps := er.PartialSuccess()
	if ps.RejectedLogRecords() != 3 || !strings.Contains(ps.ErrorMessage(), "logRecords[1]") || !strings.Contains(ps.ErrorMessage(), "session.id") {
		t.Errorf("partial success %d %q", ps.RejectedLogRecords(), ps.ErrorMessage())
	}
	st, recs := fold(t, l, "s2")
	if n := count(recs, "obs.otel"); n != len(f.Events)-2 {
		t.Errorf("%d observations, want %d", n, len(f.Events)-2)
	}
	if st.ToolCalls != 1 || spentOf(st).Calls != 1 {
		t.Errorf("%d tool calls, usage %+v", st.ToolCalls, spentOf(st))
	}

	// An unknown event, a count of the wrong type and a tool result of
	// wrong types on a session that does not exist: kept, with problems,
	// and no session starts.
	ld = plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	u := sl.LogRecords().AppendEmpty()
	u.Body().SetStr("claude_code.teleport")
	u.Attributes().PutStr("session.id", "s3")
	w := sl.LogRecords().AppendEmpty()
	w.Body().SetStr("claude_code.api_request")
	w.Attributes().PutStr("session.id", "s3")
	w.Attributes().PutEmptyMap("input_tokens").PutInt("n", 5)
	w.Attributes().PutInt("output_tokens", 7)
	// A tool result whose name, id and outcome are of the wrong types.
	x := sl.LogRecords().AppendEmpty()
	x.Body().SetStr("claude_code.tool_result")
	x.Attributes().PutStr("session.id", "s3")
	x.Attributes().PutInt("tool_name", 5)
	x.Attributes().PutEmptySlice("tool_use_id")
	x.Attributes().PutStr("success", "maybe")
	if resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, ld)); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	st, recs = fold(t, l, "s3")
	if st.Exists() || st.Phase != "" || len(recs) != 3 || count(recs, "obs.otel") != 3 {
		t.Fatalf("session s3: exists %v, phase %q, %d events", st.Exists(), st.Phase, len(recs))
	}
	var probs []string
	for _, r := range recs {
		probs = append(probs, r.Data.(events.OTelObserved).Problems...)
	}
	if len(probs) < 4 || !strings.Contains(probs[0], `unknown event "claude_code.teleport"`) || !strings.Contains(probs[1], `"input_tokens": want a number, got Map`) || !strings.Contains(strings.Join(probs[2:], " "), `"success": want "true" or "false"`) {
		t.Fatalf("problems %q", probs)
	}
}

// TestReceiver_Codex: Codex CLI's documented events ([DOC]: a
// conversation's start, a prompt, a tool call approved and its result)
// make a Codex session with its call, on the session its conversation.id
// names.
func TestReceiver_Codex(t *testing.T) {
	t.Parallel() // its own log and receiver
	l, _, url := newReceiver(t)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "codex_cli_rs")
	sl := rl.ScopeLogs().AppendEmpty()
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	add := func(name string, attrs map[string]string) {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		at = at.Add(time.Second)
		lr.Attributes().PutStr("event.name", name)
		lr.Attributes().PutStr("conversation.id", "019a0000-0000-7000-8000-0000000000d1")
		lr.Attributes().PutStr("app.version", "0.147.0")
		lr.Attributes().PutStr("model", "gpt-5.5")
		for k, v := range attrs {
			lr.Attributes().PutStr(k, v)
		}
	}
	add("codex.conversation_starts", map[string]string{"provider_name": "openai", "approval_policy": "on-request"})
	add("codex.user_prompt", map[string]string{"prompt_length": "9", "prompt": "[REDACTED]"})
	add("codex.tool_decision", map[string]string{"tool_name": "shell", "call_id": "call_1", "decision": "approved", "source": "user"})
	add("codex.tool_result", map[string]string{"tool_name": "shell", "call_id": "call_1", "arguments": `{"command":["ls"]}`, "duration_ms": "12", "success": "true", "output": "a b"})
	add("codex.sse_event", map[string]string{"event.kind": "response.completed", "input_token_count": "100", "output_token_count": "20"})
	if resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, ld)); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	st, recs := fold(t, l, "019a0000-0000-7000-8000-0000000000d1")
	if st.Agent != otel.AgentCodex || st.ToolCalls != 1 || st.Turns != 1 || st.Phase != events.PhaseWorking || count(recs, "obs.otel") != 5 {
		t.Fatalf("agent %q, %d tool calls, %d turns, phase %s, %d observations", st.Agent, st.ToolCalls, st.Turns, st.Phase, count(recs, "obs.otel"))
	}
	if len(st.Usage) != 0 {
		t.Fatalf("usage %+v: Codex CLI's sse_event counts are not taken", st.Usage)
	}
}

// TestReceiver_Redaction: a prompt's text (sent when
// OTEL_LOG_USER_PROMPTS=1) and every string kept of a record pass
// through the redaction rules; an id that looks like a secret refuses
// its record.
func TestReceiver_Redaction(t *testing.T) {
	t.Parallel() // its own log and receiver
	f := loadFixture(t)
	l, _, url := newReceiver(t)
	const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	ld := logsOf(f, "s4")
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(0).Attributes().PutStr("prompt", "deploy with "+secret)
	lrs.At(2).Attributes().PutStr("tool_use_id", secret)
	resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, ld))
	b, _ := io.ReadAll(resp.Body)
	er := plogotlp.NewExportResponse()
	if err := er.UnmarshalProto(b); err != nil || er.PartialSuccess().RejectedLogRecords() != 1 {
		t.Fatalf("%s: %v %d", resp.Status, err, er.PartialSuccess().RejectedLogRecords())
	}
	_, recs := fold(t, l, "s4")
	for _, r := range recs {
		j, _ := json.Marshal(r.Data)
		if bytes.Contains(j, []byte(secret)) {
			t.Fatalf("%s holds the secret: %s", r.Type, j)
		}
	}
	if !strings.Contains(string(mustJSONOf(t, recs[0].Data)), "deploy with") {
		t.Fatalf("the prompt's text is gone: %s", mustJSONOf(t, recs[0].Data))
	}
}

func mustJSONOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestListen_Taken: a port another program holds is said so, naming the
// flag and the address.
func TestListen_Taken(t *testing.T) {
	l, err := otel.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = otel.Listen(l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "--otlp "+l.Addr().String()+": the port is taken") {
		t.Fatalf("err %v", err)
	}
}

// TestReceiver_HostTimeAndIDs: a request naming a host that is not a
// loopback name (a page re-pointed here by DNS rebinding) is refused
// with 403 and appends nothing; a timestamp past the largest int64 is
// read as far future and bounded like any other future time, never
// wrapped to 1969; an id longer than a hook may send refuses its record
// alone, named in the partial success.
func TestReceiver_HostTimeAndIDs(t *testing.T) {
	t.Parallel() // its own log and receiver
	l, _, url := newReceiver(t)
	f := loadFixture(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+otel.PathLogs, bytes.NewReader(mustProto(t, logsOf(f, "h1"))))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example.com:4318"
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `Host "evil.example.com:4318" is not a loopback name`) {
		t.Errorf("a foreign Host: %s %s", resp.Status, b)
	}
	if last, _ := l.LastSeq(t.Context()); last != 0 {
		t.Fatalf("a foreign Host appended up to %d", last)
	}

	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	p := sl.LogRecords().AppendEmpty()
	p.Body().SetStr("claude_code.user_prompt")
	p.Attributes().PutStr("session.id", "h2")
	p.Attributes().PutStr("prompt.id", "P1")
	p.SetTimestamp(pcommon.Timestamp(^uint64(0)))
	early := sl.LogRecords().AppendEmpty()
	early.Body().SetStr("claude_code.user_prompt")
	early.Attributes().PutStr("session.id", "h3")
	early.Attributes().PutStr("prompt.id", "P1")
	early.SetTimestamp(1)
	long := sl.LogRecords().AppendEmpty()
	long.Body().SetStr("claude_code.tool_decision")
	long.Attributes().PutStr("session.id", "h2")
	long.Attributes().PutStr("tool_name", "Bash")
	long.Attributes().PutStr("tool_use_id", strings.Repeat("t", 5000))
	long.Attributes().PutStr("decision", "accept")
	resp = post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, ld))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	b, _ = io.ReadAll(resp.Body)
	er := plogotlp.NewExportResponse()
	if err := er.UnmarshalProto(b); err != nil {
		t.Fatal(err)
	}
	if ps := er.PartialSuccess(); ps.RejectedLogRecords() != 1 || !strings.Contains(ps.ErrorMessage(), "logRecords[2]") || !strings.Contains(ps.ErrorMessage(), "5000 bytes, the most is 256") {
		t.Errorf("partial success %d %q", ps.RejectedLogRecords(), ps.ErrorMessage())
	}
	st, recs := fold(t, l, "h2")
	if len(recs) == 0 || st.ToolCalls != 0 {
		t.Fatalf("session h2: %d events, %d tool calls", len(recs), st.ToolCalls)
	}
	for _, r := range recs {
		if r.At.Year() < 2026 {
			t.Errorf("%s dated %s", r.Type, r.At)
		}
	}
	// A time of 1 ns is no time: the record is dated by its receipt.
	if _, recs := fold(t, l, "h3"); len(recs) == 0 || recs[0].At.Year() < 2026 {
		t.Errorf("session h3 (timeUnixNano 1): %+v", recs)
	}
}

// TestReceiver_OtherUsersRefused: with TrustedUIDs, a sender whose
// connection's peer (by the kernel's socket table) is another user's is
// refused with 403 and appends nothing; one of a trusted uid is taken.
func TestReceiver_OtherUsersRefused(t *testing.T) {
	t.Parallel() // its own log and receiver
	l, r, url := newReceiver(t)
	f := loadFixture(t)
	me := uint32(os.Geteuid())
	r.TrustedUIDs = []uint32{me + 1}
	resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, logsOf(f, "u1")))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), fmt.Sprintf("the sender is uid %d, another user", me)) {
		t.Fatalf("another user's sender: %s %s", resp.Status, b)
	}
	if last, _ := l.LastSeq(t.Context()); last != 0 {
		t.Fatalf("another user's sender appended up to %d", last)
	}
	r.TrustedUIDs = []uint32{me}
	if resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, logsOf(f, "u1"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("the trusted user's sender: %s", resp.Status)
	}
}
