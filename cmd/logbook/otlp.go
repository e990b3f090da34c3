package main

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/adapters/redact"
)

// otlpFlags are serve's OpenTelemetry flags: the OTLP/HTTP receiver's
// address (--otlp; "": none), the OTLP/gRPC receiver's (--otlp-grpc;
// "": none) and the traces endpoint sessions are exported to
// (--otlp-export; "": none).
type otlpFlags struct {
	addr, grpc, export string
	// headers are the exporter's, from the environment (exportHeaders).
	headers http.Header
}

func (f *otlpFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.addr, "otlp", "", "loopback host:port to take Claude Code's and Codex CLI's OpenTelemetry events and Claude Code's spans on (OTLP/HTTP, protobuf or JSON, POST /v1/logs and /v1/traces), such as 127.0.0.1:4318; off when empty")
	cmd.Flags().StringVar(&f.grpc, "otlp-grpc", "", "loopback host:port to take the same over OTLP/gRPC, such as 127.0.0.1:4317; off when empty")
	cmd.Flags().StringVar(&f.export, "otlp-export", "", "OTLP/HTTP traces URL to export sessions to as traces, such as http://127.0.0.1:4318/v1/traces, with the headers of $OTEL_EXPORTER_OTLP_TRACES_HEADERS or $OTEL_EXPORTER_OTLP_HEADERS (key=value,…); off when empty")
}

// check refuses an --otlp or --otlp-grpc whose host is not a loopback address (the
// receiver asks for no credentials, so only this machine may send), and
// an --otlp-export that is not an absolute http or https URL, naming
// each. Their ports are checkAddrFlags'.
func (f *otlpFlags) check() error {
	for _, a := range []struct{ flag, addr string }{{"otlp", f.addr}, {"otlp-grpc", f.grpc}} {
		if a.addr == "" {
			continue
		}
		h, _, err := net.SplitHostPort(a.addr)
		ip := net.ParseIP(h)
		if h == "localhost" {
			ip = net.IPv4(127, 0, 0, 1)
		}
		if err == nil && (ip == nil || !ip.IsLoopback()) {
			return usageErrorf("--%s %q: the receiver takes telemetry without credentials, so it listens on a loopback address only (127.0.0.1 or ::1), not %q; forward other machines' telemetry with an OpenTelemetry Collector on this one", a.flag, a.addr, h)
		}
	}
	if f.export == "" {
		return nil
	}
	u, err := url.Parse(f.export)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--otlp-export %q: want an http or https URL such as http://127.0.0.1:4318/v1/traces", f.export)
	}
	f.headers, err = exportHeaders(os.Getenv)
	return err
}

// exportHeaders returns the headers the exporter sends, read as the
// OpenTelemetry SDKs read them (the specification's "OTLP Exporter
// Configuration"): OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
// OTEL_EXPORTER_OTLP_HEADERS, a comma-separated list of key=value with
// the value percent-encoded. An entry that is not key=value is a usage
// error naming the variable and the entry's place, never its value (an
// API key).
func exportHeaders(getenv func(string) string) (http.Header, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	v := getenv(name)
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_HEADERS"
		v = getenv(name)
	}
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	h := http.Header{}
	for i, e := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if !ok || k == "" || err != nil || strings.ContainsAny(k, " \t\r\n:") {
			return nil, usageErrorf("$%s: entry %d is not key=value with a percent-encoded value", name, i+1)
		}
		h.Add(k, dec)
	}
	return h, nil
}

// newOTLPReceiver returns serve's OTLP receiver over p's log: records
// redacted by red with at most maxRaw bytes of each kept, decided by an
// ingester of each agent's own.
func newOTLPReceiver(p host.Parts, red *redact.Redactor, maxRaw int) (*otel.Receiver, error) {
	hostname, _ := os.Hostname()
	mk := func(actor string) (*ingest.Ingester, error) {
		return ingest.New(ingest.Config{Log: p.Log, Reg: p.Registry, Host: hostname, Command: "logbook serve --otlp", Actor: actor})
	}
	cl, err := mk(otel.AgentClaude)
	if err != nil {
		return nil, err
	}
	cx, err := mk(otel.AgentCodex)
	if err != nil {
		return nil, err
	}
	return &otel.Receiver{Parser: otel.NewParser(red, maxRaw), Claude: cl, Codex: cx, TrustedUIDs: host.TrustedUIDs()}, nil
}
