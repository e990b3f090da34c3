package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/logbook-dev/logbook/adapters/otel"
)

// spanSink is a real OTLP/HTTP traces endpoint that decodes with the
// collector's ptraceotlp and keeps each span's wire form and how many
// times it came. While held, a request waits for release before it is
// taken; held receives once the first such request arrived.
type spanSink struct {
	mu    sync.Mutex
	wire  map[string]string // span id → the span as received
	names map[string]string // span id → "trace name"
	times map[string]int
	diff  []string
	hold  bool
	held  chan struct{}
	// inFlight are the span ids of the request held.
	inFlight []string
	release  chan struct{}
	srv      *httptest.Server
}

func newSpanSink(t *testing.T) *spanSink {
	s := &spanSink{wire: map[string]string{}, names: map[string]string{}, times: map[string]int{}, held: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		hold := s.hold
		s.mu.Unlock()
		if hold {
			once.Do(func() { close(s.held) })
			<-s.release
		}
		ids := s.take(req.Traces())
		if hold {
			s.mu.Lock()
			s.inFlight = ids
			s.mu.Unlock()
		}
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// take keeps td's spans and returns their ids.
func (s *spanSink) take(td ptrace.Traces) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				one := ptrace.NewTraces()
				ss.At(k).CopyTo(one.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
				b, _ := ptraceotlp.NewExportRequestFromTraces(one).MarshalProto()
				id := ss.At(k).SpanID().String()
				if old, ok := s.wire[id]; ok && old != string(b) {
					s.diff = append(s.diff, id)
				}
				s.wire[id], s.names[id] = string(b), ss.At(k).TraceID().String()+" "+ss.At(k).Name()
				s.times[id]++
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// has reports whether the spans named (name) of session sid's trace all
// came.
func (s *spanSink) has(sid string, names ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	trace := otel.TraceID(sid).String()
	for _, n := range names {
		found := false
		for _, got := range s.names {
			if got == trace+" "+n {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// timesOf returns how many times each span of session sid's trace came.
func (s *spanSink) timesOf(sid string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	trace := otel.TraceID(sid).String()
	for id, n := range s.times {
		if strings.HasPrefix(s.names[id], trace+" ") {
			out[strings.TrimPrefix(s.names[id], trace+" ")] = n
		}
	}
	return out
}

// claudeEvents returns Claude Code's documented events of one prompt and
// one Bash call for session sid (adapters/otel/testdata's fixture,
// written from code.claude.com/docs/en/monitoring-usage), as an OTLP
// protobuf body.
func claudeEvents(t *testing.T, sid string) []byte {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "claude-code")
	sl := rl.ScopeLogs().AppendEmpty()
	at := time.Now().UTC()
	for i, ev := range []map[string]any{
		{"event.name": "user_prompt", "prompt.id": "P1", "prompt_length": 13, "prompt": "<REDACTED>"},
		{"event.name": "api_request", "model": "claude-opus-4-7", "input_tokens": 12, "output_tokens": 40, "cache_read_tokens": 300, "request_id": "req_" + sid[len(sid)-2:]},
		{"event.name": "tool_decision", "tool_name": "Bash", "tool_use_id": "toolu_" + sid[len(sid)-2:], "decision": "accept", "source": "config"},
		{"event.name": "tool_result", "tool_name": "Bash", "tool_use_id": "toolu_" + sid[len(sid)-2:], "success": "true", "duration_ms": 80},
	} {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(i) * time.Second)))
		lr.Body().SetStr("claude_code." + ev["event.name"].(string))
		lr.Attributes().PutStr("session.id", sid)
		if err := lr.Attributes().FromRaw(merge(ev, map[string]any{"session.id": sid})); err != nil {
			t.Fatal(err)
		}
	}
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// sendOTLP posts body to serve's OTLP receiver at addr.
func sendOTLP(t *testing.T, ctx context.Context, addr string, body []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+otel.PathLogs, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	er := plogotlp.NewExportResponse()
	if resp.StatusCode != http.StatusOK || er.UnmarshalProto(b) != nil || er.PartialSuccess().RejectedLogRecords() != 0 {
		t.Fatalf("otlp: %s %q", resp.Status, b)
	}
}

// freeAddr returns a loopback host:port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestOTLP_ExportAcrossServeKill runs the real binary: `serve --otlp
// ADDR --otlp-export URL` takes Claude Code's events of session A over
// OTLP and exports its spans to a real OTLP endpoint; session B comes by
// hooks, and serve is SIGKILLed while B's spans are in flight at the
// endpoint; the next serve sends B's batch again (the same ids and
// bytes) and C's (over OTLP again). Nothing is lost, A's spans come
// once, only the batch in flight comes twice, and no span id ever
// carries two contents.
func TestOTLP_ExportAcrossServeKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		t.Fatal(err)
	}
	sink := newSpanSink(t)
	addr := freeAddr(t)
	flags := []string{"--otlp", addr, "--otlp-export", sink.srv.URL + "/v1/traces"}
	wait := func(what string, log *syncBuffer, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("gave up waiting for %s:\n%s", what, log.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	const (
		sidA = "5e551011-0000-4000-8000-0000000000f1"
		sidB = "5e551011-0000-4000-8000-0000000000f2"
		sidC = "5e551011-0000-4000-8000-0000000000f3"
	)
	var log1 syncBuffer
	s1 := p.serve(ctx, &log1, flags...)
	// Serve says where OTLP goes as its receiver and exporter start, which
	// may come after it answers.
	wait("serve to say where OTLP goes", &log1, func() bool {
		return strings.Contains(log1.String(), "OpenTelemetry (OTLP/HTTP) taken on http://"+addr+"/v1/logs") && strings.Contains(log1.String(), "sessions exported as traces to "+sink.srv.URL)
	})
	sendOTLP(t, ctx, addr, claudeEvents(t, sidA))
	wait("session A's spans", &log1, func() bool { return sink.has(sidA, "invoke_agent claude-code", "execute_tool Bash") })

	sink.mu.Lock()
	sink.hold = true
	sink.mu.Unlock()
	for _, h := range []map[string]any{
		{"hook_event_name": "SessionStart", "source": "startup"},
		{"hook_event_name": "UserPromptSubmit", "prompt": "Test it.", "prompt_id": "p1"},
		{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_b1", "tool_input": map[string]any{"command": "go test ./..."}},
		{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_b1", "tool_input": map[string]any{"command": "go test ./..."}, "tool_response": map[string]any{"stdout": "ok"}},
		{"hook_event_name": "Stop"},
	} {
		h["session_id"], h["cwd"] = sidB, "/tmp"
		b, _ := json.Marshal(h)
		if out, err := p.run(ctx, string(b), "hook", "claude"); err != nil {
			t.Fatalf("hook: %v\n%s", err, out)
		}
	}
	select {
	case <-sink.held:
	case <-ctx.Done():
		t.Fatalf("no export of session B reached the endpoint:\n%s", log1.String())
	}
	if err := syscall.Kill(-s1.c.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s1.exited
	sink.mu.Lock()
	sink.hold = false
	sink.mu.Unlock()
	close(sink.release) // the endpoint keeps what it was sent; serve never heard

	var log2 syncBuffer
	p.serve(ctx, &log2, flags...)
	// The killed serve left its serve.json: wait for the new one's word.
	wait("the second serve's receiver", &log2, func() bool { return strings.Contains(log2.String(), "OpenTelemetry (OTLP/HTTP) taken") })
	sendOTLP(t, ctx, addr, claudeEvents(t, sidC))
	wait("sessions B and C", &log2, func() bool {
		return sink.has(sidB, "invoke_agent claude-code", "turn 1", "execute_tool Bash") && sink.has(sidC, "invoke_agent claude-code", "execute_tool Bash")
	})
	// The batch in flight at the kill was never acknowledged: the next
	// serve sends it again, whole.
	sink.mu.Lock()
	inFlight := sink.inFlight
	sink.mu.Unlock()
	if len(inFlight) == 0 {
		t.Fatal("the request held at the kill carried no span")
	}
	wait("the batch in flight to come again", &log2, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, id := range inFlight {
			if sink.times[id] < 2 {
				return false
			}
		}
		return true
	})
	a, b, c := sink.timesOf(sidA), sink.timesOf(sidB), sink.timesOf(sidC)
	t.Logf("times each span came: A %v, B %v, C %v", a, b, c)
	for _, m := range []map[string]int{a, c} {
		for name, n := range m {
			if n != 1 {
				t.Errorf("span %q came %d times", name, n)
			}
		}
	}
	for name, n := range b {
		if n > 2 {
			t.Errorf("session B's span %q came %d times: only the batch in flight comes again", name, n)
		}
	}
	sink.mu.Lock()
	diff := sink.diff
	sink.mu.Unlock()
	if len(diff) > 0 {
		t.Errorf("span ids received with two contents: %v", diff)
	}
}

// TestOTLP_GRPCAndTraces runs the real binary: `serve --otlp ADDR
// --otlp-grpc GADDR` takes Claude Code's events of one prompt over
// OTLP/gRPC and the prompt's interaction span over OTLP/HTTP, and the
// session they name ends its turn and is ready, as its Stop hook would
// make it; a second session's events over HTTP and its span over gRPC do
// the same.
func TestOTLP_GRPCAndTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		t.Fatal(err)
	}
	addr, gaddr := freeAddr(t), freeAddr(t)
	var log syncBuffer
	p.serve(ctx, &log, "--otlp", addr, "--otlp-grpc", gaddr)
	// Said once serve.json names the server, through a pipe.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(log.String(), "OpenTelemetry (OTLP/gRPC) taken on "+gaddr); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve does not say where OTLP/gRPC is taken:\n%s", log.String())
		}
	}
	cc, err := grpc.NewClient(gaddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// interaction is the root span of session sid's prompt, ended now.
	interaction := func(sid string) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "claude-code")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName("claude_code.interaction")
		sp.SetTraceID(pcommon.TraceID(otel.TraceID(sid)))
		sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(-time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(5 * time.Second)))
		sp.Attributes().PutStr("session.id", sid)
		sp.Attributes().PutInt("interaction.sequence", 1)
		return td
	}
	ready := func(sid string) {
		t.Helper()
		for {
			got, err := p.run(ctx, "", "--json", "session", "show", sid)
			if err == nil && (strings.Contains(got, `"phase": "ready"`) || strings.Contains(got, `"phase":"ready"`)) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("session %s never ready: %v\n%s\n%s", sid, err, got, log.String())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	const sidA, sidB = "5e551011-0000-4000-8000-0000000000g1", "5e551011-0000-4000-8000-0000000000g2"

	// A: events over gRPC, the span over HTTP.
	er := plogotlp.NewExportRequest()
	if err := er.UnmarshalProto(claudeEvents(t, sidA)); err != nil {
		t.Fatal(err)
	}
	resp, err := plogotlp.NewGRPCClient(cc).Export(ctx, er, grpc.UseCompressor(gzip.Name))
	if err != nil || resp.PartialSuccess().RejectedLogRecords() != 0 {
		t.Fatalf("logs over gRPC: %v %q", err, resp.PartialSuccess().ErrorMessage())
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(interaction(sidA)).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+otel.PathTraces, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	hresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		t.Fatalf("traces over HTTP: %s", hresp.Status)
	}
	ready(sidA)

	// B: events over HTTP, the span over gRPC.
	sendOTLP(t, ctx, addr, claudeEvents(t, sidB))
	tresp, err := ptraceotlp.NewGRPCClient(cc).Export(ctx, ptraceotlp.NewExportRequestFromTraces(interaction(sidB)))
	if err != nil || tresp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("traces over gRPC: %v %q", err, tresp.PartialSuccess().ErrorMessage())
	}
	ready(sidB)
}
