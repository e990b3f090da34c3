package otel_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/events"
)

// spanFixture is testdata/claude-code-spans.json: Claude Code's
// documented spans of the fixture's prompt, written from its Monitoring
// page's "Traces (beta)" section (the file names its source).
type spanFixture struct {
	Source   string         `json:"source"`
	Resource map[string]any `json:"resource"`
	Scope    string         `json:"scope"`
	Session  string         `json:"session"`
	Spans    []spanDef      `json:"spans"`
}

// spanDef is one span of the fixture; ID and Parent are labels within
// it.
type spanDef struct {
	ID         string         `json:"id"`
	Parent     string         `json:"parent"`
	Name       string         `json:"name"`
	Start      time.Time      `json:"start"`
	End        time.Time      `json:"end"`
	Attributes map[string]any `json:"attributes"`
}

func loadSpans(t *testing.T) spanFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-code-spans.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f spanFixture
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	if f.Source == "" || len(f.Spans) == 0 {
		t.Fatal("the span fixture names no source or holds no spans")
	}
	return f
}

// sendTraceSDK exports the fixture's spans, with the session id session,
// to the OTLP/HTTP endpoint url through the OpenTelemetry Go SDK's trace
// pipeline (a batch span processor) and its OTLP/HTTP exporter
// (protobuf, gzip), as Claude Code does with OTEL_TRACES_EXPORTER=otlp:
// each span is started under its parent and ended at its own time, in
// the order the spans end, so the interaction, ending last, is exported
// last.
func sendTraceSDK(t *testing.T, url string, f spanFixture, session string) {
	t.Helper()
	ctx := t.Context()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url+otel.PathTraces), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	var res []attribute.KeyValue
	for k, v := range f.Resource {
		res = append(res, kv(k, v))
	}
	prov := sdktrace.NewTracerProvider(sdktrace.WithResource(resource.NewSchemaless(res...)), sdktrace.WithBatcher(exp))
	tr := prov.Tracer(f.Scope)
	ctxs := map[string]context.Context{}
	spans := map[string]trace.Span{}
	for _, s := range f.Spans {
		parent := ctx
		if s.Parent != "" {
			parent = ctxs[s.Parent]
		}
		attrs := []attribute.KeyValue{attribute.String("session.id", session)}
		for k, v := range s.Attributes {
			attrs = append(attrs, kv(k, v))
		}
		c, sp := tr.Start(parent, s.Name, trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
		ctxs[s.ID], spans[s.ID] = c, sp
	}
	order := slices.Clone(f.Spans)
	slices.SortStableFunc(order, func(a, b spanDef) int { return a.End.Compare(b.End) })
	for _, s := range order {
		spans[s.ID].End(trace.WithTimestamp(s.End))
	}
	if err := prov.Shutdown(ctx); err != nil {
		t.Fatalf("export: %v", err)
	}
}

// tracesOf builds the fixture's spans with pdata, with ids derived from
// the session and the span's label: the same call gives the same spans,
// as an exporter's retry does.
func tracesOf(f spanFixture, session string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	for k, v := range f.Resource {
		putAttr(rs.Resource().Attributes(), k, v)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(f.Scope)
	tsum := sha256.Sum256([]byte("trace/" + session))
	spanID := func(label string) pcommon.SpanID {
		sum := sha256.Sum256([]byte("span/" + session + "/" + label))
		return pcommon.SpanID(sum[:8])
	}
	for _, s := range f.Spans {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(s.Name)
		sp.SetTraceID(pcommon.TraceID(tsum[:16]))
		sp.SetSpanID(spanID(s.ID))
		if s.Parent != "" {
			sp.SetParentSpanID(spanID(s.Parent))
		}
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.End))
		for k, v := range s.Attributes {
			putAttr(sp.Attributes(), k, v)
		}
		sp.Attributes().PutStr("session.id", session)
	}
	// Exported as they end: the interaction last.
	ss.Spans().Sort(func(a, b ptrace.Span) bool { return a.EndTimestamp() < b.EndTimestamp() })
	return td
}

func traceProto(t *testing.T, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func traceJSON(t *testing.T, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// traceAnswer decodes a /v1/traces answer's body.
func traceAnswer(t *testing.T, resp *http.Response, isJSON bool) ptraceotlp.ExportResponse {
	t.Helper()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	er := ptraceotlp.NewExportResponse()
	var err error
	if isJSON {
		err = er.UnmarshalJSON(b.Bytes())
	} else {
		err = er.UnmarshalProto(b.Bytes())
	}
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("%s %q: %v", resp.Status, b.String(), err)
	}
	return er
}

// TestReceiver_TracesSDK: Claude Code's events and its spans of the same
// prompt, each sent by the OpenTelemetry SDK, make a session that ends
// its turn with the interaction span and is ready, with the usage of its
// two API requests counted once (the llm_request spans add none); each
// span is an observation of its own, with no problems.
func TestReceiver_TracesSDK(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	sendSDK(t, url, f, f.Session, nil)
	if st, _ := fold(t, l, f.Session); st.Phase != events.PhaseWorking {
		t.Fatalf("events alone: phase %s, want working (a turn's end is the interaction span's)", st.Phase)
	}
	sendTraceSDK(t, url, sf, f.Session)
	st, recs := fold(t, l, f.Session)
	if st.Phase != events.PhaseReady || st.Turns != 1 || st.ToolCalls != 1 || st.TurnOpen {
		t.Fatalf("phase %s, %d turns, %d tool calls, turn open %v; want ready, 1, 1, false", st.Phase, st.Turns, st.ToolCalls, st.TurnOpen)
	}
	if got, want := spentOf(st), (spent{In: 17, Out: 100, Read: 650, Write: 50, Calls: 2}); got != want {
		t.Fatalf("usage %+v, want %+v: the spans' token counts are the events'", got, want)
	}
	spans := 0
	for _, r := range recs {
		o, ok := r.Data.(events.OTelObserved)
		if !ok || !strings.HasPrefix(o.Kind, "claude_code.") || slices.Contains([]string{"claude_code.user_prompt", "claude_code.api_request", "claude_code.tool_decision", "claude_code.tool_result"}, o.Kind) {
			continue
		}
		spans++
		if !strings.HasPrefix(o.Key, "otel:"+o.Kind+":") || o.Parser != otel.ParserClaude || o.Raw == "" || len(o.Problems) > 0 || o.AgentTime == "" {
			t.Errorf("span observation %+v", o.Observation)
		}
	}
	// The interaction span is two: its start and its end.
	if spans != len(sf.Spans)+1 {
		t.Fatalf("%d span observations, want %d", spans, len(sf.Spans)+1)
	}
}

// TestReceiver_TracesJSON: spans over OTLP/JSON are taken as over
// protobuf, and the same spans sent again, in either encoding, append
// nothing.
func TestReceiver_TracesJSON(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	const id = "5e551011-0000-4000-8000-0000000000e1"
	sendSDK(t, url, f, id, nil)
	resp := post(t, url+otel.PathTraces, "application/json", "", traceJSON(t, tracesOf(sf, id)))
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer of type %q", resp.Header.Get("Content-Type"))
	}
	if ps := traceAnswer(t, resp, true).PartialSuccess(); ps.RejectedSpans() != 0 {
		t.Fatalf("partial success %d %q", ps.RejectedSpans(), ps.ErrorMessage())
	}
	st, recs := fold(t, l, id)
	if st.Phase != events.PhaseReady || st.Turns != 1 {
		t.Fatalf("phase %s, %d turns", st.Phase, st.Turns)
	}
	traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", traceProto(t, tracesOf(sf, id))), false)
	traceAnswer(t, post(t, url+otel.PathTraces, "application/json", "", traceJSON(t, tracesOf(sf, id))), true)
	if _, again := fold(t, l, id); len(again) != len(recs) {
		t.Fatalf("the same spans sent again appended %d events", len(again)-len(recs))
	}
}

// TestReceiver_TracesLateEnd: Claude Code sends its spans and its events
// in batches of their own, so the interaction span of one prompt may come
// after the next prompt's event: it ends nothing of the next turn, whose
// own interaction span then ends it.
func TestReceiver_TracesLateEnd(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	const id = "5e551011-0000-4000-8000-0000000000e2"
	sendSDK(t, url, f, id, nil)
	// The second prompt, after the first turn ended (10:00:08).
	second := logsOf(f, id)
	lrs := second.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.RemoveIf(func(lr plog.LogRecord) bool { b := lr.Body().Str(); return b != "claude_code.user_prompt" })
	lrs.At(0).SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 10, 0, 20, 0, time.UTC)))
	lrs.At(0).Attributes().PutStr("prompt.id", "P2")
	if resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", mustProto(t, second)); resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", traceProto(t, tracesOf(sf, id))), false)
	st, _ := fold(t, l, id)
	if st.Phase != events.PhaseWorking || !st.TurnOpen || st.Turns != 2 {
		t.Fatalf("after the first turn's late end: phase %s, turn open %v, %d turns; want working, true, 2", st.Phase, st.TurnOpen, st.Turns)
	}
	// The second turn's own interaction span.
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("claude_code.interaction")
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 10, 0, 20, 0, time.UTC)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 10, 0, 25, 0, time.UTC)))
	sp.Attributes().PutStr("session.id", id)
	sp.Attributes().PutInt("interaction.sequence", 2)
	traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", traceProto(t, td)), false)
	if st, _ := fold(t, l, id); st.Phase != events.PhaseReady || st.TurnOpen || st.Turns != 2 {
		t.Fatalf("after the second turn's end: phase %s, turn open %v, %d turns; want ready, false, 2", st.Phase, st.TurnOpen, st.Turns)
	}
}

// TestReceiver_TracesBadInput: /v1/traces refuses what /v1/logs refuses,
// whole and appending nothing (a body that does not decode, another
// content type, a body over the cap); a span naming no session, naming
// it with the wrong type, or of no agent is left out and named in the
// partial success; a span of Codex CLI is taken and not kept; an unknown
// claude_code. span is kept with a problem and decides nothing.
func TestReceiver_TracesBadInput(t *testing.T) {
	t.Parallel() // its own log and receiver
	sf := loadSpans(t)
	l, r, url := newReceiver(t)
	r.MaxBody = 1 << 20
	end := func() uint64 {
		seq, err := l.LastSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	good := traceProto(t, tracesOf(sf, "t1"))
	for _, c := range []struct {
		name, ctype, enc string
		body             []byte
		code             int
	}{
		{"MalformedProtobuf", "application/x-protobuf", "", []byte{0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2}, 400},
		{"TruncatedProtobuf", "application/x-protobuf", "", good[:len(good)-7], 400},
		{"MalformedJSON", "application/json", "", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":`), 400},
		{"ContentType", "text/plain", "", good, 415},
		{"Encoding", "application/x-protobuf", "br", good, 415},
		{"Huge", "application/x-protobuf", "", bytes.Repeat([]byte{0}, 2<<20), 413},
	} {
		if resp := post(t, url+otel.PathTraces, c.ctype, c.enc, c.body); resp.StatusCode != c.code {
			t.Errorf("%s: %s, want %d", c.name, resp.Status, c.code)
		}
		if n := end(); n != 0 {
			t.Fatalf("%s: the log holds %d events", c.name, n)
		}
	}

	td := tracesOf(sf, "t2")
	sps := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	sps.At(1).Attributes().Remove("session.id")
	sps.At(2).Attributes().PutInt("session.id", 42)
	web := td.ResourceSpans().AppendEmpty()
	web.Resource().Attributes().PutStr("service.name", "web")
	w := web.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	w.SetName("GET /")
	w.Attributes().PutStr("session.id", "t2")
	codex := td.ResourceSpans().AppendEmpty()
	codex.Resource().Attributes().PutStr("service.name", "codex_cli_rs")
	c := codex.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	c.SetName("run_turn")
	c.Attributes().PutStr("conversation.id", "t2")
	ps := traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", traceProto(t, td)), false).PartialSuccess()
	if ps.RejectedSpans() != 3 || !strings.Contains(ps.ErrorMessage(), "3 spans refused; first: resourceSpans[0].scopeSpans[0].spans[1]: span claude_code.") || !strings.Contains(ps.ErrorMessage(), "session.id") {
		t.Errorf("partial success %d %q", ps.RejectedSpans(), ps.ErrorMessage())
	}
	st, recs := fold(t, l, "t2")
	if n := count(recs, "obs.otel"); n != len(sf.Spans)-2+1 {
		t.Errorf("%d observations, want %d (the interaction span two, the Codex span none)", n, len(sf.Spans)-2+1)
	}
	if st.Phase != events.PhaseReady {
		t.Errorf("phase %s: the interaction span, taken, ends the turn", st.Phase)
	}

	// An unknown span of Claude Code on a session that does not exist:
	// kept, with a problem, and no session starts.
	td = ptrace.NewTraces()
	u := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	u.SetName("claude_code.teleport")
	u.Attributes().PutStr("session.id", "t3")
	traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", traceProto(t, td)), false)
	st, recs = fold(t, l, "t3")
	if st.Exists() || len(recs) != 1 {
		t.Fatalf("session t3: exists %v, %d events", st.Exists(), len(recs))
	}
	if p := recs[0].Data.(events.OTelObserved).Problems; len(p) != 1 || !strings.Contains(p[0], `unknown span "claude_code.teleport"`) {
		t.Fatalf("problems %q", p)
	}
}

// TestReceiver_MidBatchRefusal: a batch of one session's records where
// one in the middle is refused (its session.id a number): the others are
// appended, the refused one is named in the partial success, and the
// whole batch sent again appends nothing and names it again; the same of
// spans.
func TestReceiver_MidBatchRefusal(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	const id = "5e551011-0000-4000-8000-0000000000e3"
	ld := logsOf(f, id)
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(2).Attributes().PutInt("session.id", 7)
	body := mustProto(t, ld)
	var before []events.Record
	for round := range 2 {
		resp := post(t, url+otel.PathLogs, "application/x-protobuf", "", body)
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		er := plogotlp.NewExportResponse()
		if err := er.UnmarshalProto(b.Bytes()); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("round %d: %s %v", round, resp.Status, err)
		}
		if ps := er.PartialSuccess(); ps.RejectedLogRecords() != 1 || !strings.Contains(ps.ErrorMessage(), "logRecords[2]: event claude_code.tool_decision: attribute session.id") {
			t.Errorf("round %d: partial success %d %q", round, ps.RejectedLogRecords(), ps.ErrorMessage())
		}
		_, recs := fold(t, l, id)
		if n := count(recs, "obs.otel"); n != len(f.Events)-1 {
			t.Fatalf("round %d: %d observations, want %d", round, n, len(f.Events)-1)
		}
		if round == 1 && len(recs) != len(before) {
			t.Fatalf("the batch sent again appended %d events", len(recs)-len(before))
		}
		before = recs
	}
	st, _ := fold(t, l, id)
	if st.ToolCalls != 1 || spentOf(st).Calls != 2 {
		t.Fatalf("%d tool calls, usage %+v: the records around the refused one are in", st.ToolCalls, spentOf(st))
	}

	td := tracesOf(sf, id)
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(2).Attributes().PutEmptyMap("session.id")
	tb := traceProto(t, td)
	for round := range 2 {
		ps := traceAnswer(t, post(t, url+otel.PathTraces, "application/x-protobuf", "", tb), false).PartialSuccess()
		if ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), "spans[2]") {
			t.Errorf("round %d: partial success %d %q", round, ps.RejectedSpans(), ps.ErrorMessage())
		}
		_, recs := fold(t, l, id)
		if n := count(recs, "obs.otel"); n != len(f.Events)-1+len(sf.Spans)-1+1 {
			t.Fatalf("round %d: %d observations, want %d", round, n, len(f.Events)-1+len(sf.Spans)-1+1)
		}
		if round == 1 && len(recs) != len(before) {
			t.Fatalf("the spans sent again appended %d events", len(recs)-len(before))
		}
		before = recs
	}
	if st, _ := fold(t, l, id); st.Phase != events.PhaseReady {
		t.Fatalf("phase %s", st.Phase)
	}
}

// TestReceiver_SpansFirst: Claude Code's two exporters keep no order
// between them, so a short turn's spans may come before its events: the
// interaction span opens and ends the turn, and the events that come
// after, dated within it, are late and reopen nothing; the session is
// ready with one turn and its usage counted once. (Its tool call, known
// only from late events, is not counted.)
func TestReceiver_SpansFirst(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, _, url := newReceiver(t)
	const id = "5e551011-0000-4000-8000-0000000000e4"
	sendTraceSDK(t, url, sf, id)
	if st, _ := fold(t, l, id); st.Phase != events.PhaseReady || st.Turns != 1 || st.TurnOpen {
		t.Fatalf("spans alone: phase %s, %d turns, turn open %v; want ready, 1, false", st.Phase, st.Turns, st.TurnOpen)
	}
	sendSDK(t, url, f, id, nil)
	st, _ := fold(t, l, id)
	if st.Phase != events.PhaseReady || st.Turns != 1 || st.TurnOpen {
		t.Fatalf("then the events: phase %s, %d turns, turn open %v; want ready, 1, false", st.Phase, st.Turns, st.TurnOpen)
	}
	if got, want := spentOf(st), (spent{In: 17, Out: 100, Read: 650, Write: 50, Calls: 2}); got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}
