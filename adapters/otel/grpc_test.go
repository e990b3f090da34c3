package otel_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"

	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/events"
)

// TestReceiver_GRPC: over OTLP/gRPC (pdata's own gRPC clients, gzip),
// Claude Code's events and spans make the session they make over HTTP,
// ready with its usage counted once; sent again they append nothing; a
// record naming its session with the wrong type is named in the partial
// success, the others taken; a message over the cap is refused with
// ResourceExhausted, appending nothing; metrics are taken and dropped.
// When its context ends, ServeGRPC returns nil.
func TestReceiver_GRPC(t *testing.T) {
	t.Parallel() // its own log and receiver
	f, sf := loadFixture(t), loadSpans(t)
	l, r, _ := newReceiver(t)
	lis, err := otel.ListenGRPC("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- r.ServeGRPC(ctx, lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	logs, traces := plogotlp.NewGRPCClient(cc), ptraceotlp.NewGRPCClient(cc)
	gz := grpc.UseCompressor(gzip.Name)

	const id = "5e551011-0000-4000-8000-0000000000f1"
	ld := logsOf(f, id)
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(2).Attributes().PutBool("session.id", true)
	lresp, err := logs.Export(ctx, plogotlp.NewExportRequestFromLogs(ld), gz)
	if err != nil {
		t.Fatal(err)
	}
	if ps := lresp.PartialSuccess(); ps.RejectedLogRecords() != 1 || !strings.Contains(ps.ErrorMessage(), "logRecords[2]") {
		t.Errorf("partial success %d %q", ps.RejectedLogRecords(), ps.ErrorMessage())
	}
	ld = logsOf(f, id)
	if _, err := logs.Export(ctx, plogotlp.NewExportRequestFromLogs(ld), gz); err != nil {
		t.Fatal(err)
	}
	tresp, err := traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(tracesOf(sf, id)), gz)
	if err != nil || tresp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("traces: %v, %d refused", err, tresp.PartialSuccess().RejectedSpans())
	}
	st, recs := fold(t, l, id)
	if st.Phase != events.PhaseReady || st.Turns != 1 || st.ToolCalls != 1 {
		t.Fatalf("phase %s, %d turns, %d tool calls; want ready, 1, 1", st.Phase, st.Turns, st.ToolCalls)
	}
	if got, want := spentOf(st), (spent{In: 17, Out: 100, Read: 650, Write: 50, Calls: 2}); got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	// The tool_decision refused at first and sent again after its call's
	// result is a late copy of a call closed: not kept. The interaction
	// span is two: its start and its end.
	if n := count(recs, "obs.otel"); n != len(f.Events)-1+len(sf.Spans)+1 {
		t.Fatalf("%d observations, want %d", n, len(f.Events)-1+len(sf.Spans)+1)
	}
	if _, err := logs.Export(ctx, plogotlp.NewExportRequestFromLogs(logsOf(f, id))); err != nil {
		t.Fatal(err)
	}
	if _, err := traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(tracesOf(sf, id))); err != nil {
		t.Fatal(err)
	}
	if _, again := fold(t, l, id); len(again) != len(recs) {
		t.Fatalf("the same records sent again appended %d events", len(again)-len(recs))
	}

	seq, err := l.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r.MaxBody = 1 << 10
	big := logsOf(f, "5e551011-0000-4000-8000-0000000000f2")
	big.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutStr("prompt", strings.Repeat("x", 4<<10))
	// The server's cap is set when it starts: a new one with the small cap.
	lis2, err := otel.ListenGRPC("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served2 := make(chan error, 1)
	go func() { served2 <- r.ServeGRPC(ctx, lis2) }()
	cc2, err := grpc.NewClient(lis2.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc2.Close()
	_, err = plogotlp.NewGRPCClient(cc2).Export(ctx, plogotlp.NewExportRequestFromLogs(big), gz)
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a message over the cap: %v, want ResourceExhausted", err)
	}
	if now, _ := l.LastSeq(t.Context()); now != seq {
		t.Errorf("a refused message appended %d events", now-seq)
	}
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetName("claude_code.token.usage")
	if _, err := pmetricotlp.NewGRPCClient(cc).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md)); err != nil {
		t.Errorf("metrics: %v", err)
	}
	cancel()
	for _, ch := range []chan error{served, served2} {
		if err := <-ch; err != nil {
			t.Errorf("ServeGRPC: %v", err)
		}
	}
}
