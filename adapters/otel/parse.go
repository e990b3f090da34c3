package otel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/redact/cut"
	"github.com/logbook-dev/logbook/events"
)

// Parser names stamped on the observations (events.Observation.Parser).
const (
	ParserClaude = "otel-claude-code/1"
	ParserCodex  = "otel-codex/1"
)

// Agent names, as events.Meta.Agent and the ingesters' actors have them.
const (
	AgentClaude = "claude-code"
	AgentCodex  = "codex"
)

// MaxRecords is the most log records, or spans, one request may carry;
// a request with more is refused whole (ErrTooMany).
const MaxRecords = 10_000

// Errors a record or a request is refused with; test with errors.Is.
var (
	// ErrNoSession: the record names no session (Claude Code's
	// session.id, Codex CLI's conversation.id), so it has nowhere to go.
	ErrNoSession = errors.New("names no session")
	// ErrNotAgent: the record is neither Claude Code's nor Codex CLI's
	// (no claude_code. or codex. event name, no service.name of theirs).
	ErrNotAgent = errors.New("is not a Claude Code or Codex CLI event")
	// ErrTooMany: a request over MaxRecords log records or spans.
	ErrTooMany = errors.New("too many records")
)

// Item is one log record, or one span, read as an observation of the
// session Agg.
type Item struct {
	// Where names the record in its request:
	// "resourceLogs[i].scopeLogs[j].logRecords[k]", or
	// "resourceSpans[i].scopeSpans[j].spans[k]".
	Where string
	// Agent is AgentClaude or AgentCodex.
	Agent string
	Agg   events.Aggregate
	// At is the record's own time (its timestamp, else its observed
	// timestamp, else its event.timestamp attribute; a span's end, else
	// its start); zero when it has none.
	At  time.Time
	Obs events.Observation
}

// Rejected is a record that cannot be used, with why (wrapping
// ErrNoSession, ErrNotAgent, events.ErrMalformed, ingest.ErrSecretID or
// ingest.ErrDuplicateKey).
type Rejected struct {
	Where string
	Err   error
}

// Parser reads OTLP log records and spans as observations, with the data dir's
// redaction rules. It holds no state and is safe for concurrent use.
type Parser struct {
	red    *redact.Redactor
	maxRaw int
}

// NewParser returns a Parser redacting with red (nil: redact.Default())
// and keeping at most maxRaw bytes of a record's text in Observation.Raw
// (≤ 0: ingest.DefaultMaxRaw).
func NewParser(red *redact.Redactor, maxRaw int) *Parser {
	if red == nil {
		red = redact.Default()
	}
	if maxRaw <= 0 {
		maxRaw = ingest.DefaultMaxRaw
	}
	return &Parser{red: red, maxRaw: maxRaw}
}

// Logs reads every log record of ld, in order, as an Item, or as a
// Rejected record when it cannot be placed on a session. A request over
// MaxRecords records is refused whole: nil, nil and ErrTooMany.
//
// Each record becomes one observation: Kind its full event name
// (claude_code.tool_result), Key "otel:<name>:<digest>" (the first 16
// bytes of the SHA-256 of its name, time and attributes, hex: the same
// record sent again is the same observation), Raw its name, time and
// attributes as a JSON object (redacted over its strings, cut to the cap
// with Cut set), Meta from the standard attributes, AgentTime the
// record's time, and Signals by its event (see claudeSignals and
// codexSignals). A record of an event this package does not map, or with
// an attribute of the wrong type, is kept with a Problems entry naming it,
// and no signals: it decides nothing.
func (p *Parser) Logs(ld plog.Logs) ([]Item, []Rejected, error) {
	if n := ld.LogRecordCount(); n > MaxRecords {
		return nil, nil, fmt.Errorf("%w: %d log records, at most %d in one request", ErrTooMany, n, MaxRecords)
	}
	var items []Item
	var rej []Rejected
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		res := rl.Resource().Attributes()
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				where := fmt.Sprintf("resourceLogs[%d].scopeLogs[%d].logRecords[%d]", i, j, k)
				it, err := p.record(res, lrs.At(k))
				if err != nil {
					rej = append(rej, Rejected{Where: where, Err: err})
					continue
				}
				it.Where = where
				items = append(items, it)
			}
		}
	}
	return items, rej, nil
}

// maxSigID is the most bytes a signal's id, request id or tool name may
// hold, as in a hook payload (adapters/http's observations alike).
const maxSigID = 256

// record reads one log record under its resource's attributes res.
func (p *Parser) record(res pcommon.Map, lr plog.LogRecord) (Item, error) {
	a := attrs{rec: lr.Attributes(), res: res}
	name, agent := eventName(lr, a)
	if agent == "" {
		return Item{}, fmt.Errorf("event %q: %w", cut.Text(p.red.Redact(name), 64), ErrNotAgent)
	}
	at := recordTime(lr, a)
	sigs := claudeSignals
	if agent == AgentCodex {
		sigs = codexSignals
	}
	return p.item("event", name, agent, a, at, rawOf(name, at, lr.Attributes()), sigs)
}

// item reads one record (what: "event" or "span") named name of agent,
// with attributes a, its own time at (zero: none) and raw, the bytes
// kept in Raw and digested into its key, as an observation of the
// session a names, with the signals sigs gives. Errors: ErrNoSession,
// events.ErrMalformed for a session id of the wrong type or form,
// ingest.ErrSecretID.
func (p *Parser) item(what, name, agent string, a attrs, at time.Time, raw []byte, sigs func(string, attrs, *[]string) []events.Sig) (Item, error) {
	it := Item{Agent: agent}
	for _, m := range []struct {
		whose string
		m     pcommon.Map
	}{{"", a.rec}, {"resource ", a.res}} {
		if path, dup := repeatedKey(m.m); dup {
			// A reader keeps one of the values, the raw copy (a JSON
			// object) another: the record is refused, as a hook or an
			// observation that gives a member twice is.
			return Item{}, fmt.Errorf("%s %s: %sattribute %s: %w: given more than once", what, name, m.whose, cut.Text(p.red.Redact(path), 128), ingest.ErrDuplicateKey)
		}
	}
	sessionKey, parser := "session.id", ParserClaude
	if agent == AgentCodex {
		sessionKey, parser = "conversation.id", ParserCodex
	}
	v, ok := a.get(sessionKey)
	if !ok || v.Type() == pcommon.ValueTypeEmpty {
		return Item{}, fmt.Errorf("%s %s: attribute %s: %w", what, name, sessionKey, ErrNoSession)
	}
	if v.Type() != pcommon.ValueTypeStr {
		return Item{}, fmt.Errorf("%s %s: attribute %s: %w: want a string, got %s", what, name, sessionKey, events.ErrMalformed, v.Type())
	}
	sid := v.Str()
	// A subagent's reports carry its parent's session id: one of a
	// subagent's shape ("agent-<id>") would make a session that takes in
	// the subagent's hooks, whoever its parent is.
	err := events.ValidOwnSessionID(sid)
	if err == nil && agent == AgentClaude {
		it.Agg, err = hookspool.SessionAggregate(sid, "")
	} else if err == nil {
		it.Agg = events.Aggregate{Kind: events.KindSession, ID: sid}
		err = it.Agg.Validate()
	}
	if err != nil {
		return Item{}, fmt.Errorf("%s %s: attribute %s: %w", what, name, sessionKey, err)
	}
	it.At = at
	o := events.Observation{Parser: parser, Kind: name, Meta: events.Meta{SessionID: sid}}
	if agent == AgentCodex {
		o.Meta.Agent = AgentCodex
	}
	if !it.At.IsZero() {
		o.AgentTime = it.At.UTC().Format(time.RFC3339Nano)
	}
	var probs []string
	o.Meta.Version, _ = a.str("app.version", &probs)
	if agent == AgentCodex {
		o.Meta.Model, _ = a.str("model", &probs)
	}
	o.Signals = sigs(name, a, &probs)
	if len(probs) > 0 {
		// A record with a field of the wrong type, or one this package
		// cannot read, is kept for the record and decides nothing: a
		// tool_result whose success is "maybe" closes no call as ok.
		o.Signals = nil
	}
	for _, g := range o.Signals {
		for _, f := range []struct{ name, v string }{{"id", g.ID}, {"request", g.Request}, {"name", g.Name}} {
			if len(f.v) > maxSigID {
				// As a hook's ids: one this long names nothing an agent
				// makes, and would name an entry on the log for good.
				return Item{}, fmt.Errorf("%s %s: signal %s's %s: %d bytes, the most is %d: %w", what, name, g.Kind, f.name, len(f.v), maxSigID, events.ErrMalformed)
			}
		}
	}
	for i := range o.Signals {
		if u := o.Signals[i].Usage; u != nil && u.Model != "" {
			o.Meta.Model = u.Model
		}
	}
	o.Problems = probs
	sum := sha256.Sum256(raw)
	o.Key = "otel:" + name + ":" + hex.EncodeToString(sum[:16])
	if err := ingest.SecretID(p.red, o); err != nil {
		return Item{}, fmt.Errorf("%s %s: %w", what, name, err)
	}
	it.Obs = p.finish(o, raw)
	return it, nil
}

// finish redacts o's text and sets Raw from raw, redacted and cut to
// the cap.
func (p *Parser) finish(o events.Observation, raw []byte) events.Observation {
	r := p.red
	for i := range o.Signals {
		s := &o.Signals[i]
		s.Text = cut.Text(r.Redact(s.Text), ingest.MaxSigText)
		s.Name = r.Redact(s.Name)
	}
	for _, f := range []*string{&o.Meta.Model, &o.Meta.Version} {
		*f = r.Redact(*f)
	}
	o.Kind, o.Key = ingest.RedactKind(r, o.Kind, o.Key, known(o.Kind))
	for i := range o.Problems {
		o.Problems[i] = r.Redact(o.Problems[i])
	}
	text := r.JSON(string(raw))
	if len(text) > p.maxRaw {
		kept := cut.Prefix(text, p.maxRaw)
		sum := sha256.Sum256(raw)
		o.Cut = &events.Cut{Size: int64(len(raw)), SHA256: hex.EncodeToString(sum[:]), Kept: len(kept)}
		text = kept
	}
	o.Raw = text
	return o
}

// rawOf returns a record as the JSON object kept in Raw and digested into
// its key: {"event": name, "time": RFC 3339 or absent, "attributes": its
// own attributes (not its resource's), as OTLP/JSON values read}.
// encoding/json sorts the members of a map, so equal records give equal
// bytes.
func rawOf(name string, at time.Time, m pcommon.Map) []byte {
	v := map[string]any{"event": name, "attributes": m.AsRaw()}
	if !at.IsZero() {
		v["time"] = at.UTC().Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(v)
	if err != nil {
		// A double that is not a number (NaN, ±Inf) has no JSON form.
		b, _ = json.Marshal(map[string]any{"event": name, "time": v["time"], "attributes": fmt.Sprint(m.AsRaw())})
	}
	return b
}

// eventName returns the record's full event name and the agent it is
// of: its EventName (OTLP 1.5), else its event.name attribute, else its
// body when that is a string; a short name (Claude Code's event.name is
// "user_prompt") gets the prefix of the agent its service.name names.
// The agent is "" when neither the name nor service.name tells it.
func eventName(lr plog.LogRecord, a attrs) (string, string) {
	name := lr.EventName()
	if name == "" {
		if v, ok := a.get("event.name"); ok && v.Type() == pcommon.ValueTypeStr {
			name = v.Str()
		}
	}
	if name == "" && lr.Body().Type() == pcommon.ValueTypeStr {
		name = lr.Body().Str()
	}
	name = cut.Prefix(name, 128)
	switch {
	case strings.HasPrefix(name, "claude_code."):
		return name, AgentClaude
	case strings.HasPrefix(name, "codex."):
		return name, AgentCodex
	}
	service := ""
	if v, ok := a.res.Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
		service = v.Str()
	}
	switch {
	case name == "":
		return name, ""
	case strings.HasPrefix(service, "claude-code"):
		return "claude_code." + name, AgentClaude
	case strings.HasPrefix(service, "codex"):
		return "codex." + name, AgentCodex
	}
	return name, ""
}

// recordTime returns the record's time: its timestamp, else its observed
// timestamp, else its event.timestamp attribute (ISO 8601), else zero.
func recordTime(lr plog.LogRecord, a attrs) time.Time {
	if t := lr.Timestamp(); knownTime(t) {
		return asTime(t)
	}
	if t := lr.ObservedTimestamp(); knownTime(t) {
		return asTime(t)
	}
	if v, ok := a.get("event.timestamp"); ok && v.Type() == pcommon.ValueTypeStr {
		if t, err := time.Parse(time.RFC3339Nano, v.Str()); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// earliest is 2000-01-01T00:00:00Z in nanoseconds since the Unix epoch:
// no agent this receiver reads ran before it.
const earliest pcommon.Timestamp = 946684800 * 1e9

// knownTime reports whether ts is a time at all: 0 is OTLP's "unknown", and a
// time before 2000 (a sender's 1 ns, a clock at its epoch) is read as
// unknown too, so the record is dated by what comes next (the observed
// timestamp, the attribute, or its receipt), never by 1970.
func knownTime(ts pcommon.Timestamp) bool { return ts >= earliest }

// asTime returns ts (nanoseconds since the Unix epoch, unsigned on the
// wire) in UTC; one past the largest int64 is read as that largest
// time, never wrapped to a time before 1970, so the receiver's bound on
// future times applies to it.
func asTime(ts pcommon.Timestamp) time.Time {
	if uint64(ts) > math.MaxInt64 {
		return time.Unix(0, math.MaxInt64).UTC()
	}
	return ts.AsTime().UTC()
}

// attrs reads a record's attributes, then its resource's: the standard
// attributes may come on either (OTEL_RESOURCE_ATTRIBUTES).
type attrs struct{ rec, res pcommon.Map }

func (a attrs) get(k string) (pcommon.Value, bool) {
	if v, ok := a.rec.Get(k); ok {
		return v, true
	}
	return a.res.Get(k)
}

// str returns attribute k as a string: "" when absent; a value of
// another type is read as its text (a number, a bool) with no problem, or
// as "" with a Problems entry (a map, a list, bytes).
func (a attrs) str(k string, probs *[]string) (string, bool) {
	v, ok := a.get(k)
	if !ok {
		return "", false
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str(), true
	case pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
		return v.AsString(), true
	case pcommon.ValueTypeEmpty:
		return "", false
	}
	*probs = append(*probs, fmt.Sprintf("attribute %q: want a string, got %s", k, v.Type()))
	return "", false
}

// count returns attribute k as a token count: an int, a whole double, or
// a string of digits (Claude Code before 2.1.122 sent numbers as
// strings); absent is 0 and ok. Anything else, or a count below 0 or
// over events.MaxUsageTokens, is not ok, with why.
func (a attrs) count(k string) (n int64, why string) {
	v, present := a.get(k)
	if !present || v.Type() == pcommon.ValueTypeEmpty {
		return 0, ""
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		n = v.Int()
	case pcommon.ValueTypeDouble:
		d := v.Double()
		if d != math.Trunc(d) || math.IsInf(d, 0) || math.IsNaN(d) || math.Abs(d) > float64(events.MaxUsageTokens) {
			return 0, fmt.Sprintf("%v is not a whole number of tokens", d)
		}
		n = int64(d)
	case pcommon.ValueTypeStr:
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64); err != nil {
			return 0, fmt.Sprintf("string %q is not a whole number", cut.Text(v.Str(), 32))
		}
	default:
		return 0, fmt.Sprintf("want a number, got %s", v.Type())
	}
	if n < 0 || n > events.MaxUsageTokens {
		return 0, fmt.Sprintf("%d is out of range [0, %d]", n, int64(events.MaxUsageTokens))
	}
	return n, ""
}

// boolean returns attribute k as true or false: a bool, or the strings
// "true" and "false" (Claude Code's and Codex CLI's success); ok false
// when absent or anything else.
func (a attrs) boolean(k string) (b, ok bool) {
	v, present := a.get(k)
	if !present {
		return false, false
	}
	switch v.Type() {
	case pcommon.ValueTypeBool:
		return v.Bool(), true
	case pcommon.ValueTypeStr:
		switch strings.ToLower(v.Str()) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// repeatedKey returns the first key m gives more than once, at any
// depth (in a map value, or a map in a list), as a path of quoted keys
// and list indexes: `"k"`, `"k"."inner"`, `"k"[2]."x"`.
func repeatedKey(m pcommon.Map) (string, bool) {
	seen := make(map[string]bool, m.Len())
	for k, v := range m.All() {
		if seen[k] {
			return strconv.Quote(k), true
		}
		seen[k] = true
		if path, dup := repeatedIn(v); dup {
			return strconv.Quote(k) + path, true
		}
	}
	return "", false
}

// repeatedIn is repeatedKey of the maps value v holds, the path given
// from v.
func repeatedIn(v pcommon.Value) (string, bool) {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		if path, dup := repeatedKey(v.Map()); dup {
			return "." + path, true
		}
	case pcommon.ValueTypeSlice:
		for i, e := range v.Slice().All() {
			if path, dup := repeatedIn(e); dup {
				return fmt.Sprintf("[%d]%s", i, path), true
			}
		}
	}
	return "", false
}
