package otel_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/events"
)

// span is what the test's endpoint keeps of one span received.
type span struct {
	Trace, ID, Parent string
	Name              string
	Start, End        time.Time
	Attrs             map[string]any
	Events            []string
	Status            string
	// Wire is the span as received (its protobuf), to tell a repeat
	// from a different span under the same id.
	Wire string
}

// traceSink is a real OTLP/HTTP traces endpoint: it decodes each
// request with the collector's ptraceotlp and keeps every span by id,
// with how many times it came.
type traceSink struct {
	mu    sync.Mutex
	spans map[string]span
	times map[string]int
	diff  []string // ids received again with other content
	srv   *httptest.Server
}

func newTraceSink(t *testing.T) *traceSink {
	s := &traceSink{spans: map[string]span{}, times: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || req.UnmarshalProto(b) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.take(req.Traces())
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *traceSink) url() string { return s.srv.URL + "/v1/traces" }

func (s *traceSink) take(td ptrace.Traces) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				sp := spanOf(ss.At(k))
				if old, ok := s.spans[sp.ID]; ok && old.Wire != sp.Wire {
					s.diff = append(s.diff, sp.ID)
				}
				s.spans[sp.ID] = sp
				s.times[sp.ID]++
			}
		}
	}
}

func spanOf(p ptrace.Span) span {
	one := ptrace.NewTraces()
	p.CopyTo(one.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	wire, _ := ptraceotlp.NewExportRequestFromTraces(one).MarshalProto()
	sp := span{Trace: p.TraceID().String(), ID: p.SpanID().String(), Name: p.Name(),
		Start: p.StartTimestamp().AsTime(), End: p.EndTimestamp().AsTime(), Attrs: p.Attributes().AsRaw(), Status: p.Status().Code().String(), Wire: string(wire)}
	if !p.ParentSpanID().IsEmpty() {
		sp.Parent = p.ParentSpanID().String()
	}
	for i := 0; i < p.Events().Len(); i++ {
		sp.Events = append(sp.Events, p.Events().At(i).Name())
	}
	return sp
}

// snapshot returns the spans received so far, by id, and how many times
// each came.
func (s *traceSink) snapshot() (map[string]span, map[string]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, n := map[string]span{}, map[string]int{}
	for k, v := range s.spans {
		sp[k] = v
	}
	for k, v := range s.times {
		n[k] = v
	}
	return sp, n, append([]string(nil), s.diff...)
}

// trees checks that the spans of each trace form one tree under the
// session's root span, and returns the spans by trace.
func trees(t *testing.T, spans map[string]span) map[string][]span {
	t.Helper()
	by := map[string][]span{}
	for _, s := range spans {
		by[s.Trace] = append(by[s.Trace], s)
	}
	for trace, ss := range by {
		ids := map[string]bool{}
		roots := 0
		for _, s := range ss {
			ids[s.ID] = true
			if s.Parent == "" {
				roots++
			}
		}
		if roots != 1 {
			t.Errorf("trace %s: %d roots", trace, roots)
		}
		for _, s := range ss {
			if s.Parent != "" && !ids[s.Parent] {
				t.Errorf("trace %s: span %s %q has parent %s, not in the trace", trace, s.ID, s.Name, s.Parent)
			}
		}
	}
	return by
}

// runExporter runs an exporter on l to url, with headers (at most one
// set), until the test ends.
func runExporter(t *testing.T, l *natslog.Log, srv *natslog.Server, url string, headers ...http.Header) {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	x := &otel.Exporter{Log: l, Registry: events.NewRegistry(), JS: js, URL: url, Batch: 64, Say: func(f string, a ...any) { t.Logf(f, a...) }}
	for _, h := range headers {
		x.Headers = h
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// drained waits until the exporter's consumer has acknowledged
// everything up to the log's end.
func exportDrained(t *testing.T, l *natslog.Log, srv *natslog.Server) {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	end, err := l.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for {
		c, err := js.Consumer(t.Context(), natslog.StreamName, otel.ExportDurable)
		if err == nil {
			if in, err := c.Info(t.Context()); err == nil && in.NumPending == 0 && in.NumAckPending == 0 && in.AckFloor.Stream >= end {
				return
			}
		}
		select {
		case <-t.Context().Done():
			t.Fatal("gave up waiting for the exporter to drain")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestExporter_Tree: the sessions of real Claude Code recordings
// (../shared/corpus, skipped when absent) and one fed by hooks with a
// review, an abandoned call and a command each open as one tree in a real
// OTLP endpoint: the session's root, its turns under it, its calls under
// their turn, the review under its call, the command under the root;
// gen_ai attributes on them, the abandonment a span event. Every span
// comes once, and Spans over the log read again (a replay) gives the
// same ids.
func TestExporter_Tree(t *testing.T) {
	t.Parallel() // its own log, exporter and sink; it mostly waits on the export
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../../../shared/corpus/claude")
	scenarios, _ := filepath.Glob(filepath.Join(root, "*", "transcript.jsonl"))
	if len(scenarios) == 0 {
		t.Logf("no corpus at %s: the hooks' session alone", root)
	}
	corpus := map[string]string{} // session aggregate → scenario
	for _, path := range scenarios {
		agg := events.Aggregate{Kind: events.KindSession, ID: "corpus-" + filepath.Base(filepath.Dir(path))}
		if _, err := in.ImportFile(t.Context(), path, agg, nil); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		corpus[agg.ID] = path
	}
	const sid = "5e551011-0000-4000-8000-0000000000e1"
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, h := range []map[string]any{
		{"hook_event_name": "SessionStart", "source": "startup"},
		{"hook_event_name": "UserPromptSubmit", "prompt": "Push it.", "prompt_id": "p1"},
		{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}},
		{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}},
		{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}, "tool_response": map[string]any{"stdout": "ok"}},
		{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "toolu_2", "tool_input": map[string]any{"file_path": "/tmp/x"}},
		{"hook_event_name": "Stop"},
		{"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
	} {
		h["session_id"], h["cwd"] = sid, "/home/user/project"
		b, _ := json.Marshal(h)
		if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(), Time: at, Payload: b}); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
	}
	// A command of the session, requested and exited.
	cmd := events.Aggregate{Kind: events.KindCommand, ID: ulid.Make().String()}
	reg := events.NewRegistry()
	var es []events.Envelope
	for i, p := range []events.Payload{
		events.CommandRequested{Session: sid, Argv: []string{"go", "test", "./..."}, Workspace: "/home/user/project", Mode: events.ModeWorkspaceWrite},
		events.CommandExited{Code: 1, DurationMS: 1500},
	} {
		e := reg.New(p)
		e.ID, e.Agg, e.Ver, e.At = ulid.Make(), cmd, uint64(i+1), at.Add(time.Duration(i)*1500*time.Millisecond)
		e.Cause = &events.Cause{Kind: "cli", Event: "exec", Ref: ulid.Make().String()}
		es = append(es, e)
	}
	if _, err := l.Append(t.Context(), events.Batch{Agg: cmd, Expect: 0, Events: es}); err != nil {
		t.Fatal(err)
	}

	sink := newTraceSink(t)
	runExporter(t, l, srv, sink.url())
	exportDrained(t, l, srv)
	spans, times, diff := sink.snapshot()
	for id, n := range times {
		if n != 1 {
			t.Errorf("span %s %q came %d times", id, spans[id].Name, n)
		}
	}
	if len(diff) > 0 {
		t.Errorf("spans sent again with other content: %v", diff)
	}
	by := trees(t, spans)
	// A session whose log names no model and closes no span (a prompt
	// interrupted before any reply, the turn left open) has sent no root
	// yet: it is sent with the first span the session closes (the
	// reconciler ending the turn, the session's end).
	silent := map[string]bool{}
	for id := range corpus {
		recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		silent[id] = !slices.ContainsFunc(recs, func(r events.Record) bool {
			switch d := r.Data.(type) {
			case events.SessionStarted:
				return false
			case events.SessionDescribed:
				return d.Model != ""
			}
			return otel.SpanTypes[r.Type]
		})
	}
	if want := len(corpus) - len(slices.Collect(func(yield func(bool) bool) {
		for _, v := range silent {
			if v && !yield(v) {
				return
			}
		}
	})) + 1; len(by) != want {
		t.Errorf("%d traces, want %d (one a session that named its model or closed a span)", len(by), want)
	}
	total := 0
	for id := range corpus {
		ss := by[otel.TraceID(id).String()]
		if _, ok := spans[otel.RootSpanID(id).String()]; !ok && !silent[id] {
			t.Errorf("corpus session %s: no root span among %v", id, names(ss))
		} else if silent[id] && len(ss) > 0 {
			t.Errorf("corpus session %s names no model and closes no span, yet sent %v", id, names(ss))
		}
		total += len(ss)
	}
	t.Logf("%d corpus sessions exported as %d spans", len(corpus), total)

	// The hooks' session, span by span.
	ss := by[otel.TraceID(sid).String()]
	named := map[string]span{}
	for _, s := range ss {
		named[s.Name] = s
	}
	rootSpan, turn, bash, read, review, end, command := named["invoke_agent claude-code"], named["turn 1"], named["execute_tool Bash"], named["execute_tool Read"], named["review Bash"], named["session.end"], named["command go"]
	for name, s := range map[string]span{"root": rootSpan, "turn": turn, "bash": bash, "read": read, "review": review, "end": end, "command": command} {
		if s.ID == "" {
			t.Fatalf("no %s span among %v", name, names(ss))
		}
	}
	if rootSpan.ID != otel.RootSpanID(sid).String() || turn.Parent != rootSpan.ID || bash.Parent != turn.ID || read.Parent != turn.ID ||
		review.Parent != bash.ID || end.Parent != rootSpan.ID || command.Parent != rootSpan.ID {
		t.Errorf("tree: root %s, turn %s→%s, bash →%s, read →%s, review →%s, end →%s, command →%s",
			rootSpan.ID, turn.ID, turn.Parent, bash.Parent, read.Parent, review.Parent, end.Parent, command.Parent)
	}
	if rootSpan.Attrs["gen_ai.operation.name"] != "invoke_agent" || rootSpan.Attrs["gen_ai.agent.name"] != "claude-code" || rootSpan.Attrs["gen_ai.conversation.id"] != sid {
		t.Errorf("root attributes %v", rootSpan.Attrs)
	}
	if bash.Attrs["gen_ai.operation.name"] != "execute_tool" || bash.Attrs["gen_ai.tool.name"] != "Bash" || bash.Attrs["gen_ai.tool.call.id"] != "toolu_1" || bash.Attrs["logbook.outcome"] != "ok" {
		t.Errorf("bash attributes %v", bash.Attrs)
	}
	if read.Status != "Error" || len(read.Events) != 1 || read.Events[0] != "logbook.entry_abandoned" || read.Attrs["logbook.outcome"] != "abandoned" {
		t.Errorf("read: status %s, events %v, attributes %v", read.Status, read.Events, read.Attrs)
	}
	if review.Attrs["logbook.review.verdict"] != events.VerdictAllow || review.Attrs["logbook.review.outcome"] != events.ReviewApproved || review.Attrs["logbook.review.decider"] == nil {
		t.Errorf("review attributes %v", review.Attrs)
	}
	if !turn.End.After(turn.Start) || !bash.Start.Before(bash.End) || bash.Start.Before(turn.Start) {
		t.Errorf("times: turn %s–%s, bash %s–%s", turn.Start, turn.End, bash.Start, bash.End)
	}
	if command.Attrs["process.exit.code"] != int64(1) || command.Status != "Error" {
		t.Errorf("command: status %s, attributes %v", command.Status, command.Attrs)
	}

	// A replay: the log read again makes the same spans.
	var all []events.Record
	for r, err := range l.Read(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	again := ptrace.NewSpanSlice()
	for _, r := range all {
		if !otel.SpanTypes[r.Type] {
			continue
		}
		var h []events.Record
		for _, o := range all {
			if o.Agg == r.Agg {
				h = append(h, o)
			}
		}
		otel.Spans(again, r, h)
	}
	if again.Len() != len(spans) {
		t.Fatalf("the replay made %d spans, the export %d", again.Len(), len(spans))
	}
	for i := 0; i < again.Len(); i++ {
		s := spanOf(again.At(i))
		if got := spans[s.ID]; got.Wire != s.Wire {
			t.Errorf("replayed span %s %q differs from the one exported", s.ID, s.Name)
		}
	}
}

func names(ss []span) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// TestExporter_RootAttributes: a Claude Code transcript names the
// session's cwd and model only after its first line, which starts the
// session (session.described gives them later); the root span still
// carries both, once, and the replay makes it alike. A session fed by
// hooks alone, whose model the log never learns, still has its root, sent
// with its first other span, with its cwd; one started naming its model
// and no cwd waits for the cwd too.
func TestExporter_RootAttributes(t *testing.T) {
	t.Parallel() // its own log, exporter and sink; it mostly waits on the export
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	const sid = "5e551011-0000-4000-8000-000000000001"
	path := "../../testdata/claude/projects/-home-user-project/" + sid + ".jsonl"
	if _, err := in.ImportFile(t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: sid}, nil); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	const hooked = "5e551011-0000-4000-8000-0000000000e2"
	for _, h := range []map[string]any{
		{"hook_event_name": "UserPromptSubmit", "prompt": "Go.", "prompt_id": "p1"},
		{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "toolu_1", "tool_input": map[string]any{"file_path": "/tmp/x"}},
		{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": "toolu_1", "tool_input": map[string]any{"file_path": "/tmp/x"}, "tool_response": map[string]any{"content": "x"}},
		{"hook_event_name": "Stop"},
	} {
		h["session_id"], h["cwd"] = hooked, "/home/user/hooked"
		b, _ := json.Marshal(h)
		if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: b}); err != nil {
			t.Fatal(err)
		}
	}
	// A session started naming its model and no cwd (as telemetry
	// starts one), the cwd named by the next hook.
	const later = "5e551011-0000-4000-8000-0000000000e3"
	for _, h := range []map[string]any{
		{"hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-4-5"},
		{"hook_event_name": "UserPromptSubmit", "prompt": "Go.", "prompt_id": "p1", "cwd": "/home/user/later"},
		{"hook_event_name": "Stop", "cwd": "/home/user/later"},
	} {
		h["session_id"] = later
		b, _ := json.Marshal(h)
		if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: b}); err != nil {
			t.Fatal(err)
		}
	}
	var all []events.Record
	for r, err := range l.Read(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	if i := slices.IndexFunc(all, func(r events.Record) bool { _, ok := r.Data.(events.SessionStarted); return ok && r.Agg.ID == later }); i < 0 {
		t.Fatal("the hooks started no session")
	} else if st := all[i].Data.(events.SessionStarted); st.Model == "" || st.Cwd != "" {
		t.Fatalf("the session started with model %q, cwd %q: want a model and no cwd", st.Model, st.Cwd)
	}
	if i := slices.IndexFunc(all, func(r events.Record) bool { _, ok := r.Data.(events.SessionStarted); return ok && r.Agg.ID == sid }); i < 0 {
		t.Fatal("the transcript started no session")
	} else if st := all[i].Data.(events.SessionStarted); st.Model != "" || st.Cwd != "" {
		t.Fatalf("the session started with model %q, cwd %q: the transcript no longer tests what arrives later", st.Model, st.Cwd)
	}

	sink := newTraceSink(t)
	runExporter(t, l, srv, sink.url())
	exportDrained(t, l, srv)
	spans, times, diff := sink.snapshot()
	if len(diff) > 0 {
		t.Errorf("spans sent again with other content: %v", diff)
	}
	trees(t, spans)
	for id, want := range map[string]map[string]any{
		sid:    {"gen_ai.request.model": "claude-opus-4-7", "logbook.cwd": "/home/user/project", "gen_ai.agent.name": "claude-code", "gen_ai.conversation.id": sid},
		hooked: {"logbook.cwd": "/home/user/hooked", "gen_ai.agent.name": "claude-code"},
		later:  {"logbook.cwd": "/home/user/later", "gen_ai.request.model": "claude-sonnet-4-5"},
	} {
		root := otel.RootSpanID(id).String()
		if times[root] != 1 {
			t.Errorf("%s: root span came %d times, want once", id, times[root])
			continue
		}
		for k, v := range want {
			if got := spans[root].Attrs[k]; got != v {
				t.Errorf("%s: root %s = %v, want %v (attributes %v)", id, k, got, v, spans[root].Attrs)
			}
		}
	}

	// A replay: the log read again makes the same spans.
	again := ptrace.NewSpanSlice()
	for _, r := range all {
		if !otel.SpanTypes[r.Type] {
			continue
		}
		var h []events.Record
		for _, o := range all {
			if o.Agg == r.Agg {
				h = append(h, o)
			}
		}
		otel.Spans(again, r, h)
	}
	if again.Len() != len(spans) {
		t.Fatalf("the replay made %d spans, the export %d", again.Len(), len(spans))
	}
	for i := 0; i < again.Len(); i++ {
		s := spanOf(again.At(i))
		if got := spans[s.ID]; got.Wire != s.Wire {
			t.Errorf("replayed span %s %q differs from the one exported", s.ID, s.Name)
		}
	}
}

// TestExporter_Retries: an endpoint that fails (503) is tried
// again with the batch kept; nothing is lost and the spans come once,
// every request with the exporter's headers.
func TestExporter_Retries(t *testing.T) {
	t.Parallel() // its own log, exporter and sink; it mostly waits out the retries' backoff (1 s, 2 s)
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []map[string]any{
		{"hook_event_name": "UserPromptSubmit", "prompt": "Go.", "prompt_id": "p1"},
		{"hook_event_name": "Stop"},
	} {
		h["session_id"], h["cwd"] = "s-retry", "/tmp"
		b, _ := json.Marshal(h)
		if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: b}); err != nil {
			t.Fatal(err)
		}
	}
	sink := newTraceSink(t)
	var mu sync.Mutex
	fails := 2
	var keys []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		f := fails > 0
		fails--
		mu.Unlock()
		if f {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		sink.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	runExporter(t, l, srv, front.URL+"/v1/traces", http.Header{"X-Api-Key": {"k1"}})
	exportDrained(t, l, srv)
	spans, times, _ := sink.snapshot()
	if len(spans) != 2 || times[otel.RootSpanID("s-retry").String()] != 1 {
		t.Fatalf("spans %v, times %v", spans, times)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 || keys[0] != "k1" || keys[2] != "k1" {
		t.Fatalf("X-Api-Key of each request: %q", keys)
	}
}

// TestShownURL: a password in the export URL is never shown in serve's
// log or an export error.
func TestShownURL(t *testing.T) {
	if got := otel.ShownURL("http://user:secret@127.0.0.1:4318/v1/traces"); got != "http://user:xxxxx@127.0.0.1:4318/v1/traces" {
		t.Errorf("ShownURL = %s", got)
	}
	if got := otel.ShownURL("http://127.0.0.1:4318/v1/traces"); got != "http://127.0.0.1:4318/v1/traces" {
		t.Errorf("ShownURL = %s", got)
	}
}
