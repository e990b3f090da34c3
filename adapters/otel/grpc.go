package otel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	// The gzip compressor, which OTLP/gRPC exporters may use
	// (OTEL_EXPORTER_OTLP_COMPRESSION=gzip).
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
)

// ServeGRPC answers OTLP/gRPC (the OpenTelemetry Protocol
// specification's "OTLP/gRPC": the LogsService, TraceService and
// MetricsService Export calls, registered through pdata's plogotlp,
// ptraceotlp and pmetricotlp) on l until ctx is done, then stops taking
// calls and waits up to 5 s for those under way. Logs and traces are
// taken as over HTTP (ExportLogs, ExportTraces), metrics dropped. A
// message over MaxBody (decompressed; gzip is understood) is refused with
// ResourceExhausted, one over MaxRecords with InvalidArgument, a failure
// of the log with Unavailable (which OTLP exporters retry). It returns
// nil once ctx is done, else the server's error.
func (r *Receiver) ServeGRPC(ctx context.Context, l net.Listener) error {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(r.maxBody())), grpc.UnaryInterceptor(r.peerInterceptor))
	plogotlp.RegisterGRPCServer(s, &grpcLogs{r: r})
	ptraceotlp.RegisterGRPCServer(s, &grpcTraces{r: r})
	pmetricotlp.RegisterGRPCServer(s, &grpcMetrics{})
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("otlp grpc: %w", err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.Stop()
	}
	<-done
	return nil
}

// peerInterceptor refuses a call whose connection's peer is not one of
// TrustedUIDs with PermissionDenied (Receiver.TrustedUIDs).
func (r *Receiver) peerInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r.TrustedUIDs != nil {
		p, ok := peer.FromContext(ctx)
		if !ok {
			return nil, status.Error(codes.PermissionDenied, "the sender's user is not known: OpenTelemetry is taken only from serve's own user")
		}
		if err := r.peerAllowed(p.Addr, p.LocalAddr); err != nil {
			return nil, status.Error(codes.PermissionDenied, err.Error())
		}
	}
	return handler(ctx, req)
}

// grpcError returns err as a gRPC status: InvalidArgument for a request
// refused (an *httpError of 400), Unavailable for anything else (the
// log's failure), saying it on r.say.
func (r *Receiver) grpcError(call string, err error) error {
	if err == nil {
		return nil
	}
	r.say("otlp grpc: %s: %v", call, err)
	code := codes.Unavailable
	if he, ok := errors.AsType[*httpError](err); ok && he.code == http.StatusBadRequest {
		code = codes.InvalidArgument
	}
	return status.Error(code, "logbook otlp: "+err.Error())
}

type grpcLogs struct {
	plogotlp.UnimplementedGRPCServer
	r *Receiver
}

func (g *grpcLogs) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	resp, err := g.r.ExportLogs(ctx, req)
	return resp, g.r.grpcError("LogsService/Export", err)
}

type grpcTraces struct {
	ptraceotlp.UnimplementedGRPCServer
	r *Receiver
}

func (g *grpcTraces) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	resp, err := g.r.ExportTraces(ctx, req)
	return resp, g.r.grpcError("TraceService/Export", err)
}

// grpcMetrics takes metrics and drops them, as POST /v1/metrics does.
type grpcMetrics struct {
	pmetricotlp.UnimplementedGRPCServer
}

func (grpcMetrics) Export(context.Context, pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	return pmetricotlp.NewExportResponse(), nil
}
