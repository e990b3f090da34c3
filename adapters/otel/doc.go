// Package otel is Logbook's OpenTelemetry side, in and out.
//
// In: Receiver answers OTLP/HTTP (POST /v1/logs and /v1/traces,
// protobuf or JSON, as the OpenTelemetry Protocol specification's
// "OTLP/HTTP" section has it) and OTLP/gRPC (its LogsService and
// TraceService), decoded by the OpenTelemetry Collector's pdata module,
// and turns Claude Code's and Codex CLI's telemetry events, and Claude
// Code's spans, into observations (events.OTelObserved) on the sessions
// they name, decided by the same session reducer as hooks, with the same
// idempotency (a digest of the record), redaction and caps. The end of
// Claude Code's claude_code.interaction span is its turn's end, as the
// Stop hook is. What each event's and span's attributes mean, and which
// agent version added them, is in Parser's doc and the README's
// "OpenTelemetry" section, each with its source: Claude Code's
// "Monitoring" page (code.claude.com/docs/en/monitoring-usage) and
// Codex CLI's docs/config.md "Observability and telemetry" with its
// codex-rs/otel sources.
//
// Out: Exporter follows the log on a durable JetStream consumer and
// sends sessions to an OTLP/HTTP traces endpoint as traces: a session a
// trace, its turns, tool calls, reviews and commands spans, abandonment
// marks span events, with ids derived from the session's and the
// events' ids, so a replayed log exports the same trace.
package otel
