package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Aggregate kinds. Each names a subject family lb.ev.<kind>.<id>.
const (
	KindSession   = "session"
	KindWorkspace = "workspace"
	KindProject   = "project"
	KindCommand   = "command"
)

// Subject prefixes of the LOGBOOK stream.
const (
	// SubjectEvents prefixes every aggregate's subject: lb.ev.<kind>.<id>.
	SubjectEvents = "lb.ev"
	// SubjectOutput prefixes bulk command output: lb.out.<command-id>.
	SubjectOutput = "lb.out"
)

// MaxIDLen is the longest aggregate id accepted, in bytes.
const MaxIDLen = 128

// Aggregate names one consistency boundary: every event of an aggregate
// shares one subject, so optimistic concurrency works per aggregate.
type Aggregate struct {
	Kind string `json:"kind"` // one of the Kind constants
	ID   string `json:"id"`   // [A-Za-z0-9_-], 1..MaxIDLen bytes
}

// String returns "kind/id".
func (a Aggregate) String() string { return a.Kind + "/" + a.ID }

// Subject returns the aggregate's subject, lb.ev.<kind>.<id>. It does not
// validate; call Validate first for input from outside.
func (a Aggregate) Subject() string { return SubjectEvents + "." + a.Kind + "." + a.ID }

// OnSubject reports whether subject is a.Subject(), without building it:
// the check a reader makes of every stored event.
func (a Aggregate) OnSubject(subject string) bool {
	rest, ok := strings.CutPrefix(subject, SubjectEvents+".")
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, a.Kind)
	return ok && len(rest) == len(a.ID)+1 && rest[0] == '.' && rest[1:] == a.ID
}

// Validate reports, wrapping ErrMalformed, a kind outside the catalogue or
// an id that is empty, too long, or holds a byte outside [A-Za-z0-9_-]
// (a dot or wildcard would break the one-subject-per-aggregate rule).
func (a Aggregate) Validate() error {
	switch a.Kind {
	case KindSession, KindWorkspace, KindProject, KindCommand, KindTask, KindKey, KindNotification, KindCheck:
	default:
		return fmt.Errorf("%w: aggregate kind %q", ErrMalformed, a.Kind)
	}
	if err := ValidID(a.ID); err != nil {
		return fmt.Errorf("aggregate %s: %w", a.Kind, err)
	}
	return nil
}

// ValidID reports, wrapping ErrMalformed, an id that cannot be one subject
// token: empty, longer than MaxIDLen, or with a byte outside [A-Za-z0-9_-].
func ValidID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: id %q: want 1..%d bytes", ErrMalformed, id, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: id %q: byte %s at %d is not [A-Za-z0-9_-]", ErrMalformed, id, ByteName(c), i)
		}
	}
	return nil
}

// ParseSubject returns the aggregate of an lb.ev.<kind>.<id> subject.
func ParseSubject(subject string) (Aggregate, error) {
	rest, ok := strings.CutPrefix(subject, SubjectEvents+".")
	if !ok {
		return Aggregate{}, fmt.Errorf("%w: subject %q is not under %s", ErrMalformed, subject, SubjectEvents)
	}
	kind, id, ok := strings.Cut(rest, ".")
	if !ok {
		return Aggregate{}, fmt.Errorf("%w: subject %q: want %s.<kind>.<id>", ErrMalformed, subject, SubjectEvents)
	}
	a := Aggregate{Kind: kind, ID: id}
	return a, a.Validate()
}

// Cause says why an event was decided: what was seen (an observation, a
// CLI request, a worker report) and a reference to it. Transitions,
// verdicts and abandonment marks must carry a complete cause: Kind, Event
// and Ref all set.
type Cause struct {
	Kind   string `json:"kind"`             // "hook", "transcript", "cli", "worker", "system", …
	Event  string `json:"event"`            // what happened, e.g. "PreToolUse", "assistant"
	Detail string `json:"detail,omitempty"` // e.g. the tool name
	Ref    string `json:"ref"`              // id of the observation or request that caused it
}

// CauseGate is the Cause.Kind of what the gate (adapters/gate) decides on
// a session: its reviews and verdicts. They may share a batch, and the
// Ref, with the hook observation that asked, but they are the gate's
// decisions, not the session decider's on that observation.
const CauseGate = "gate"

// complete reports whether every required part is set.
func (c *Cause) complete() bool {
	return c != nil && c.Kind != "" && c.Event != "" && c.Ref != ""
}

// Payload is the typed data of one event type. Implementations are plain
// structs with JSON tags; their field names are part of the wire contract.
type Payload interface {
	// EventType returns the wire name, e.g. "session.transitioned".
	EventType() string
}

// Envelope is one event as it travels on the log. Data holds the typed
// payload; its JSON is the "data" member of the wire form.
type Envelope struct {
	ID    ulid.ULID // unique; also the message's Nats-Msg-Id
	Type  string    // wire name of Data's type
	V     int       // schema version of Data, ≥ 1
	Agg   Aggregate // the aggregate the event belongs to
	Ver   uint64    // 1-based, dense position within Agg
	At    time.Time // time of the fact, UTC, microsecond precision
	Cause *Cause    // why; required for transitions, verdicts and abandonment marks
	Corr  string    // correlation id (a turn, a request), optional
	Host  string    // host that decided it, optional
	Actor string    // who acted: "claude-code", "logbook", a user name, optional
	Data  Payload   // typed payload; never nil in a valid envelope
}

// wire is the JSON shape of an Envelope.
type wire struct {
	ID    ulid.ULID       `json:"id"`
	Type  string          `json:"type"`
	V     int             `json:"v"`
	Agg   Aggregate       `json:"agg"`
	Ver   uint64          `json:"ver"`
	At    string          `json:"at"`
	Cause *Cause          `json:"cause,omitempty"`
	Corr  string          `json:"corr,omitempty"`
	Host  string          `json:"host,omitempty"`
	Actor string          `json:"actor,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// TimeFormat is the layout of the envelope's "at": RFC 3339, UTC, always
// six fractional digits, so equal instants have equal bytes.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// MarshalJSON returns the envelope's wire form. It fails if Data is nil.
func (e Envelope) MarshalJSON() ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("%w: %s %s: no data", ErrMalformed, e.Type, e.ID)
	}
	if o, ok := observationOf(e.Data); ok {
		// An observation's data is written in place, without
		// reflection, as json.Marshal would write it (appendObservation),
		// into a scratch buffer, and the result copied out at its size:
		// what a batch keeps of each event until it is stored is its
		// bytes, not the room a guess at its size left.
		bp := wireScratch.Get().(*[]byte)
		b := e.appendWireHead((*bp)[:0])
		var out []byte
		if b, ok = appendObservation(b, o); ok {
			b = append(b, '}')
			out = bytes.Clone(b)
		}
		if cap(b) <= maxWireScratch {
			*bp = b[:0]
			wireScratch.Put(bp)
		}
		if ok {
			return out, nil
		}
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("marshal %s data: %w", e.Type, err)
	}
	return e.appendWire(make([]byte, 0, len(data)+256), data), nil
}

// AppendJSON appends the envelope's wire form, the bytes MarshalJSON
// returns, to b and returns the extended buffer; on an error (MarshalJSON's)
// it returns b as it was. The caller owns b and what it returns.
func (e Envelope) AppendJSON(b []byte) ([]byte, error) {
	if e.Data == nil {
		return b, fmt.Errorf("%w: %s %s: no data", ErrMalformed, e.Type, e.ID)
	}
	if o, ok := observationOf(e.Data); ok {
		if out, ok := appendObservation(e.appendWireHead(b), o); ok {
			return append(out, '}'), nil
		}
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return b, fmt.Errorf("marshal %s data: %w", e.Type, err)
	}
	return e.appendWire(b, data), nil
}

// wireScratch holds *[]byte buffers MarshalJSON writes an observation's
// envelope into before copying it out; one that grew past
// maxWireScratch bytes (an oversized line's) is let go.
var wireScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxWireScratch is the largest buffer, in bytes, wireScratch keeps.
const maxWireScratch = 256 << 10

// appendWire appends the wire form of e, with data (json.Marshal's output
// for e.Data) as its "data", to b: the bytes json.Marshal of a wire gives
// (members in wire's order, empty optional members left out, strings
// escaped as encoding/json escapes them), written without reflection or a
// second pass over data, which json.Marshal's output needs none of (it is
// compact and HTML-escaped already).
func (e Envelope) appendWire(b, data []byte) []byte {
	b = e.appendWireHead(b)
	b = append(b, data...)
	return append(b, '}')
}

// appendWireHead appends the wire form of e up to its data: everything
// appendWire writes before data (ending in `,"data":`).
func (e Envelope) appendWireHead(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.ID.String()...)
	b = append(b, `","type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, `,"agg":{"kind":`...)
	b = appendJSONString(b, e.Agg.Kind)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, e.Agg.ID)
	b = append(b, `},"ver":`...)
	b = strconv.AppendUint(b, e.Ver, 10)
	b = append(b, `,"at":"`...)
	b = e.At.UTC().AppendFormat(b, TimeFormat)
	b = append(b, '"')
	if c := e.Cause; c != nil {
		b = append(b, `,"cause":{"kind":`...)
		b = appendJSONString(b, c.Kind)
		b = append(b, `,"event":`...)
		b = appendJSONString(b, c.Event)
		if c.Detail != "" {
			b = append(b, `,"detail":`...)
			b = appendJSONString(b, c.Detail)
		}
		b = append(b, `,"ref":`...)
		b = appendJSONString(b, c.Ref)
		b = append(b, '}')
	}
	for _, f := range [...]struct{ name, v string }{{`,"corr":`, e.Corr}, {`,"host":`, e.Host}, {`,"actor":`, e.Actor}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendJSONString(b, f.v)
		}
	}
	return append(b, `,"data":`...)
}

// appendJSONString appends s as a JSON string, as encoding/json writes it:
// printable ASCII other than the quote, the backslash and <, > and & as
// is; anything else through json.Marshal, so every escape (control
// bytes, HTML characters, U+2028 and U+2029, invalid UTF-8) is its.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Record is an Envelope as stored: with its position in the whole log.
type Record struct {
	Seq     uint64 // stream sequence: the global order and the checkpoint unit
	Subject string // the message's subject
	// Quarantined marks an event the log's reads leave out of every fold
	// (its signature, key or role refused): a Read or Follow yields it
	// only under a ctx from WithQuarantined, so a reader that keeps a
	// position (a projection's checkpoint) moves past it. Never fold one.
	Quarantined bool
	// Signer is who signed the stored event, as the log's verifier judged
	// it when the log read it; its zero value (Status "") when the log
	// reads unjudged (no admin key pinned) or the record was not read.
	Signer Signer
	Envelope
}

// Signer is the verifier's judgement of who signed a stored event. The
// strings are the verifier's (adapters/attestation), copied, not parsed.
type Signer struct {
	Status    string // "attested", "before-signing", or why it was quarantined
	Key       string // the signing key's id (16 hex), "" when unsigned
	Principal string // the key's principal when registered ("admin" for the admin key)
	Role      string // the key's role when registered: serve, writer, worker, admin
}

// decodeStrict unmarshals b, one JSON value (RFC 8259), into v, refusing
// unknown fields and anything but whitespace after the value.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if off := d.InputOffset(); len(bytes.TrimLeft(b[off:], " \t\r\n")) != 0 {
		return fmt.Errorf("trailing data after JSON value at offset %d", off)
	}
	return nil
}

// MarshalJSON returns {"seq":…,"subject":…,"event":<envelope>}. Without
// it, the embedded Envelope's MarshalJSON would be promoted and drop Seq
// and Subject.
func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq     uint64   `json:"seq"`
		Subject string   `json:"subject"`
		Event   Envelope `json:"event"`
	}{r.Seq, r.Subject, r.Envelope})
}

// ByteName names one byte of input for an error message, quoted as Go
// quotes a rune ('/', '\n', '\x00'), a byte past ASCII in hex ('\xc3',
// the first byte of "é"), never as the Latin-1 letter it would pass for.
func ByteName(c byte) string {
	if c < 0x80 {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf(`'\x%02x'`, c)
}

// IsUUID reports whether s has a UUID's text shape, 8-4-4-4-12
// hexadecimal digits of either case: the shape of the session ids
// Claude Code and Codex CLI give their sessions (and name transcripts
// after).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
