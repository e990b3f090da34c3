package otel

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/logbook-dev/logbook/adapters/redact/cut"
)

// Traces reads every span of td, in order, as an Item, or as a Rejected
// span when it cannot be placed on a session; a span of Codex CLI is
// neither (its spans are not documented: see spanAgent) and is left out
// silently. A request over MaxRecords spans is refused whole: nil, nil
// and ErrTooMany.
//
// Each span of Claude Code becomes one observation, as a log record does
// (see Logs), and claude_code.interaction two, its start and its end
// (see claudeSpanSignals): Kind its name (claude_code.interaction), Key
// "otel:<name>:<digest>" (the first 16 bytes of the SHA-256 of its name,
// trace and span ids, parent span id, start and end times, status,
// attributes and part, hex: the same span sent again is the same
// observations), Raw those as a JSON object (redacted, cut to the cap),
// Meta from the standard attributes (Claude Code puts them on every span
// [MON] "Span attributes"), AgentTime the span's end, else its start (the
// interaction's start part: its start), and Signals by its name. The
// session is the span's session.id, as for a log record.
func (p *Parser) Traces(td ptrace.Traces) ([]Item, []Rejected, error) {
	if n := td.SpanCount(); n > MaxRecords {
		return nil, nil, fmt.Errorf("%w: %d spans, at most %d in one request", ErrTooMany, n, MaxRecords)
	}
	var items []Item
	var rej []Rejected
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				where := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				its, err := p.span(res, sps.At(k))
				if err != nil {
					rej = append(rej, Rejected{Where: where, Err: err})
					continue
				}
				for _, it := range its {
					it.Where = where
					items = append(items, it)
				}
			}
		}
	}
	return items, rej, nil
}

// span reads one span under its resource's attributes res: one Item,
// or, for claude_code.interaction, two (its start, its end: see
// claudeSpanSignals); none for a span this package takes and does not
// keep (Codex CLI's).
func (p *Parser) span(res pcommon.Map, sp ptrace.Span) ([]Item, error) {
	a := attrs{rec: sp.Attributes(), res: res}
	name := cut.Prefix(sp.Name(), 128)
	switch spanAgent(name, a) {
	case AgentClaude:
	case AgentCodex:
		return nil, nil
	default:
		return nil, fmt.Errorf("span %q: %w", cut.Text(p.red.Redact(name), 64), ErrNotAgent)
	}
	start, end := spanTime(sp.StartTimestamp()), spanTime(sp.EndTimestamp())
	if end.IsZero() {
		end = start
	}
	if name != interaction {
		it, err := p.item("span", name, AgentClaude, a, end, rawOfSpan(name, sp, ""), claudeSpanSignals)
		if err != nil {
			return nil, err
		}
		return []Item{it}, nil
	}
	// The turn's start, dated by the span's start, then its end.
	first, err := p.item("span", name, AgentClaude, a, start, rawOfSpan(name, sp, "start"), interactionStart)
	if err != nil {
		return nil, err
	}
	last, err := p.item("span", name, AgentClaude, a, end, rawOfSpan(name, sp, "end"), claudeSpanSignals)
	if err != nil {
		return nil, err
	}
	return []Item{first, last}, nil
}

// spanTime returns ts in UTC, zero for 0 and any time knownTime refuses.
func spanTime(ts pcommon.Timestamp) time.Time {
	if !knownTime(ts) {
		return time.Time{}
	}
	return asTime(ts)
}

// spanAgent returns the agent a span is of: Claude Code's when its name
// has the claude_code. prefix or its service.name is Claude Code's
// (claude-code, claude-code-desktop [MON]), Codex CLI's when its
// service.name is (codex_cli_rs and the like [DOC]), else "".
func spanAgent(name string, a attrs) string {
	if strings.HasPrefix(name, "claude_code.") {
		return AgentClaude
	}
	service := ""
	if v, ok := a.res.Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
		service = v.Str()
	}
	switch {
	case strings.HasPrefix(service, "claude-code"):
		return AgentClaude
	case strings.HasPrefix(service, "codex"):
		return AgentCodex
	}
	return ""
}

// rawOfSpan returns a span as the JSON object kept in Raw and digested
// into its key: {"span": name, "trace_id", "span_id", "parent_span_id"
// (hex, absent when empty), "start", "end" (RFC 3339, absent when zero),
// "status" (Unset, Ok, Error), "attributes": its own attributes, "part":
// part when not ""}. encoding/json sorts the members of a map, so equal
// spans give equal bytes.
func rawOfSpan(name string, sp ptrace.Span, part string) []byte {
	v := map[string]any{"span": name, "status": sp.Status().Code().String(), "attributes": sp.Attributes().AsRaw()}
	if part != "" {
		v["part"] = part
	}
	if id := sp.TraceID(); !id.IsEmpty() {
		v["trace_id"] = id.String()
	}
	if id := sp.SpanID(); !id.IsEmpty() {
		v["span_id"] = id.String()
	}
	if id := sp.ParentSpanID(); !id.IsEmpty() {
		v["parent_span_id"] = id.String()
	}
	for k, ts := range map[string]pcommon.Timestamp{"start": sp.StartTimestamp(), "end": sp.EndTimestamp()} {
		if ts != 0 {
			v[k] = asTime(ts).Format(time.RFC3339Nano)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		// A double that is not a number (NaN, ±Inf) has no JSON form.
		v["attributes"] = fmt.Sprint(sp.Attributes().AsRaw())
		b, _ = json.Marshal(v)
	}
	return b
}
