package events

import "strings"

// HarnessObserved is one observation a harness other than Claude Code
// posted to the HTTP API (POST /v1/observations, schema
// "logbook-observation/1"): the harness fills Signals itself, so the
// session reducer decides from it as from a parsed hook. Key is
// "<harness>:<the harness's own id>", which makes a repeated post a no-op
// while the session remembers the key (session.RecentKeys).
type HarnessObserved struct{ Observation }

// EventType implements Payload.
func (HarnessObserved) EventType() string { return "obs.harness" }

// Harness returns the name of the harness that posted h: Key up to its
// first ':' ("" when Key holds none).
func (h HarnessObserved) Harness() string {
	name, _, ok := strings.Cut(h.Key, ":")
	if !ok {
		return ""
	}
	return name
}

// HarnessOf returns the harness that posted p when p is a
// HarnessObserved (by value or pointer), and whether it is one.
func HarnessOf(p Payload) (string, bool) {
	switch h := p.(type) {
	case HarnessObserved:
		return h.Harness(), true
	case *HarnessObserved:
		return h.Harness(), true
	}
	return "", false
}

// OTelObserved is one OpenTelemetry log record an agent exported over
// OTLP (Claude Code's claude_code.* events, Codex CLI's codex.* events),
// taken by serve --otlp and parsed by adapters/otel: Raw holds the
// record (its event name, time and attributes) as JSON, redacted and
// capped; Key is "otel:<event name>:<digest of the record>", so a record
// the exporter sends again appends nothing.
type OTelObserved struct{ Observation }

// EventType implements Payload.
func (OTelObserved) EventType() string { return "obs.otel" }
