package events

import (
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// observationOf returns the Observation a payload type that embeds one
// alone (ClaudeLineObserved, CodexLineObserved, …) carries, and whether
// p is such a type. json.Marshal writes such a payload as it writes the
// Observation itself: the embedded struct's fields are promoted.
func observationOf(p Payload) (*Observation, bool) {
	switch v := p.(type) {
	case ClaudeLineObserved:
		return &v.Observation, true
	case ClaudeHookObserved:
		return &v.Observation, true
	case CodexLineObserved:
		return &v.Observation, true
	case CodexNotifyObserved:
		return &v.Observation, true
	case AgentLineObserved:
		return &v.Observation, true
	case HarnessObserved:
		return &v.Observation, true
	case OTelObserved:
		return &v.Observation, true
	}
	return nil, false
}

// appendObservation appends json.Marshal's bytes for o to b, written
// without reflection: members in Observation's field order, optional
// ones left out as their omitempty and omitzero tags say, strings
// escaped as encoding/json escapes them (appendMarshalString). It
// returns false, and b as it was, for what it does not write itself
// (a Process, Sender, Tick or a signal's Limit; a Received or Written
// that is not in UTC or whose year is outside 0…9999), and whenever the fields of
// Observation or of a type it holds are not the ones it was written for
// (observationFieldsKnown): the caller then uses json.Marshal.
func appendObservation(b []byte, o *Observation) ([]byte, bool) {
	if !observationFieldsKnown() || o.Process != nil || o.Sender != nil || o.Tick != nil {
		return b, false
	}
	for _, t := range [...]time.Time{o.Received, o.Written} {
		if !t.IsZero() && (t.Location() != time.UTC || t.Year() < 0 || t.Year() > 9999) {
			return b, false
		}
	}
	for i := range o.Signals {
		if o.Signals[i].Limit != nil {
			return b, false
		}
	}
	b = append(b, `{"key":`...)
	b = appendMarshalString(b, o.Key)
	b = append(b, `,"parser":`...)
	b = appendMarshalString(b, o.Parser)
	b = appendStringMember(b, `,"path":`, o.Path)
	b = appendIntMember(b, `,"line":`, int64(o.Line))
	b = append(b, `,"kind":`...)
	b = appendMarshalString(b, o.Kind)
	b = appendStringMember(b, `,"uuid":`, o.UUID)
	b = appendStringMember(b, `,"parent_uuid":`, o.ParentUUID)
	b = appendStringMember(b, `,"agent_time":`, o.AgentTime)
	if o.Meta != (Meta{}) {
		b = appendMeta(append(b, `,"meta":`...), &o.Meta)
	}
	if len(o.Signals) > 0 {
		b = append(b, `,"signals":[`...)
		for i := range o.Signals {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSig(b, &o.Signals[i])
		}
		b = append(b, ']')
	}
	b = appendStringMember(b, `,"raw":`, o.Raw)
	if c := o.Cut; c != nil {
		b = append(b, `,"cut":{"size":`...)
		b = strconv.AppendInt(b, c.Size, 10)
		b = append(b, `,"sha256":`...)
		b = appendMarshalString(b, c.SHA256)
		b = append(b, `,"kept":`...)
		b = strconv.AppendInt(b, int64(c.Kept), 10)
		b = append(b, '}')
	}
	if len(o.Problems) > 0 {
		b = append(b, `,"problems":[`...)
		for i, p := range o.Problems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendMarshalString(b, p)
		}
		b = append(b, ']')
	}
	if f := o.Fingerprint; f != nil {
		b = append(b, `,"fingerprint":{"line":`...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, f.Offset, 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, f.End, 10)
		b = appendStringMember(b, `,"sha256":`, f.SHA256)
		b = append(b, '}')
	}
	if !o.Received.IsZero() {
		// time.Time's MarshalJSON: RFC 3339 with the fraction's
		// trailing zeros dropped.
		b = append(b, `,"received":"`...)
		b = o.Received.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = appendTrueMember(b, `,"live":true`, o.Live)
	b = appendTrueMember(b, `,"more":true`, o.More)
	b = appendTrueMember(b, `,"held":true`, o.Held)
	b = appendIntMember(b, `,"held_line":`, int64(o.HeldLine))
	b = appendStringMember(b, `,"rewritten_from":`, o.RewrittenFrom)
	b = appendIntMember(b, `,"copied":`, int64(o.Copied))
	if !o.Written.IsZero() {
		b = append(b, `,"written":"`...)
		b = o.Written.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// appendMeta appends json.Marshal's bytes for m to b.
func appendMeta(b []byte, m *Meta) []byte {
	start := len(b)
	b = append(b, '{')
	for _, f := range [...]struct{ name, v string }{
		{`"session_id":`, m.SessionID}, {`"agent_id":`, m.AgentID}, {`"agent_type":`, m.AgentType},
		{`"cwd":`, m.Cwd}, {`"model":`, m.Model}, {`"version":`, m.Version}, {`"git_branch":`, m.GitBranch},
		{`"agent_mode":`, m.AgentMode}, {`"title":`, m.Title}, {`"agent":`, m.Agent}, {`"forked_from":`, m.ForkedFrom},
	} {
		if f.v != "" {
			b = appendComma(b, start)
			b = append(b, f.name...)
			b = appendMarshalString(b, f.v)
		}
	}
	if m.Depth != 0 {
		b = appendComma(b, start)
		b = append(b, `"depth":`...)
		b = strconv.AppendInt(b, int64(m.Depth), 10)
	}
	return append(b, '}')
}

// appendSig appends json.Marshal's bytes for s (whose Limit is nil) to b.
func appendSig(b []byte, s *Sig) []byte {
	b = append(b, `{"kind":`...)
	b = appendMarshalString(b, s.Kind)
	b = appendStringMember(b, `,"id":`, s.ID)
	b = appendStringMember(b, `,"name":`, s.Name)
	b = appendStringMember(b, `,"task":`, s.Task)
	b = appendStringMember(b, `,"status":`, s.Status)
	b = appendStringMember(b, `,"text":`, s.Text)
	b = appendTrueMember(b, `,"background":true`, s.Background)
	b = appendStringMember(b, `,"agent_type":`, s.AgentType)
	b = appendStringMember(b, `,"by":`, s.By)
	if s.Usage != nil {
		b = appendUsage(append(b, `,"usage":`...), s.Usage)
	}
	b = appendStringMember(b, `,"request":`, s.Request)
	b = appendStringMember(b, `,"counted":`, s.Counted)
	return append(b, '}')
}

// appendUsage appends json.Marshal's bytes for u to b.
func appendUsage(b []byte, u *Usage) []byte {
	start := len(b)
	b = append(b, '{')
	if u.Model != "" {
		b = append(b, `"model":`...)
		b = appendMarshalString(b, u.Model)
	}
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`"input":`, u.Input}, {`"output":`, u.Output}, {`"cache_write":`, u.CacheWrite}, {`"cache_read":`, u.CacheRead},
		{`"reasoning":`, u.Reasoning}, {`"cache_write_1h":`, u.CacheWrite1h}} {
		if f.v != 0 {
			b = appendComma(b, start)
			b = append(b, f.name...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	if u.ServiceTier != "" {
		b = appendComma(b, start)
		b = append(b, `"service_tier":`...)
		b = appendMarshalString(b, u.ServiceTier)
	}
	if u.RunningTotal != nil {
		b = appendComma(b, start)
		b = appendUsage(append(b, `"running_total":`...), u.RunningTotal)
	}
	if u.Cumulative {
		b = appendComma(b, start)
		b = append(b, `"cumulative":true`...)
	}
	if u.CopiedFrom != "" {
		b = appendComma(b, start)
		b = append(b, `"copied_from":`...)
		b = appendMarshalString(b, u.CopiedFrom)
	}
	return append(b, '}')
}

// appendComma appends the comma before a member of the object that
// starts at b[start], unless the member is its first.
func appendComma(b []byte, start int) []byte {
	if len(b) > start+1 {
		b = append(b, ',')
	}
	return b
}

// appendStringMember appends name (`,"name":`) and v unless v is empty.
func appendStringMember(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendMarshalString(append(b, name...), v)
}

// appendIntMember appends name (`,"name":`) and v unless v is 0.
func appendIntMember(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), v, 10)
}

// appendTrueMember appends member (`,"name":true`) when v is set.
func appendTrueMember(b []byte, member string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, member...)
}

// appendMarshalString appends s as json.Marshal writes a string: '"',
// '\\', <, > and & and control bytes escaped (\b, \f, \n, \r, \t, else
// \u00XX), invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and
// \u2029, everything else as itself (encoding/json's appendString with
// HTML escaping).
func appendMarshalString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plainByte[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainByte holds, for each ASCII byte, whether appendMarshalString
// writes it as itself.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// observationFields is each struct type appendObservation writes, with
// its fields as it was written for them: name, Go type and json tag, in
// order.
var observationFields = map[reflect.Type][]string{
	reflect.TypeFor[Observation](): {
		"Key string key", "Parser string parser", "Path string path,omitempty", "Line int line,omitempty",
		"Kind string kind", "UUID string uuid,omitempty", "ParentUUID string parent_uuid,omitempty",
		"AgentTime string agent_time,omitempty", "Meta events.Meta meta,omitzero", "Signals []events.Sig signals,omitempty",
		"Raw string raw,omitempty", "Cut *events.Cut cut,omitempty", "Problems []string problems,omitempty",
		"Fingerprint *events.Fingerprint fingerprint,omitempty", "Process *events.Process process,omitempty",
		"Sender *events.Sender sender,omitempty", "Received time.Time received,omitzero", "Live bool live,omitempty",
		"More bool more,omitempty", "Held bool held,omitempty", "HeldLine int held_line,omitempty", "Tick *events.Tick tick,omitempty", "RewrittenFrom string rewritten_from,omitempty",
		"Copied int copied,omitempty", "Written time.Time written,omitzero",
	},
	reflect.TypeFor[Meta](): {
		"SessionID string session_id,omitempty", "AgentID string agent_id,omitempty", "AgentType string agent_type,omitempty",
		"Cwd string cwd,omitempty", "Model string model,omitempty", "Version string version,omitempty",
		"GitBranch string git_branch,omitempty", "AgentMode string agent_mode,omitempty", "Title string title,omitempty",
		"Agent string agent,omitempty", "ForkedFrom string forked_from,omitempty", "Depth int depth,omitempty",
	},
	reflect.TypeFor[Sig](): {
		"Kind string kind", "ID string id,omitempty", "Name string name,omitempty", "Task string task,omitempty",
		"Status string status,omitempty", "Text string text,omitempty", "Background bool background,omitempty",
		"AgentType string agent_type,omitempty", "By string by,omitempty", "Usage *events.Usage usage,omitempty",
		"Request string request,omitempty", "Counted string counted,omitempty", "Limit *events.Limit limit,omitempty",
	},
	reflect.TypeFor[Usage](): {
		"Model string model,omitempty", "Input int64 input,omitempty", "Output int64 output,omitempty",
		"CacheWrite int64 cache_write,omitempty", "CacheRead int64 cache_read,omitempty", "Reasoning int64 reasoning,omitempty",
		"CacheWrite1h int64 cache_write_1h,omitempty", "ServiceTier string service_tier,omitempty",
		"RunningTotal *events.Usage running_total,omitempty", "Cumulative bool cumulative,omitempty",
		"CopiedFrom string copied_from,omitempty",
	},
	reflect.TypeFor[Cut](): {"Size int64 size", "SHA256 string sha256", "Kept int kept"},
	reflect.TypeFor[Fingerprint](): {
		"Line int line", "Offset int64 offset", "End int64 end", "SHA256 string sha256,omitempty",
	},
}

// observationFieldsKnown returns observationFieldsCheck's answer, taken
// once, at the first observation encoded: not as the package
// initializes, which every logbook process, encoding or not, paid for
// at its start (the check reflects over a dozen types and their fields).
var observationFieldsKnown = sync.OnceValue(observationFieldsCheck)

// observationFieldsCheck reports whether every type appendObservation
// writes has the fields it was written for (observationFields), and
// none of them a method that changes how json.Marshal writes it: a field
// added, moved or retagged since turns appendObservation off, so
// json.Marshal writes observations as before.
func observationFieldsCheck() bool {
	marshaler := reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()
	text := reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
	for t, want := range observationFields {
		if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) || t.Implements(text) || reflect.PointerTo(t).Implements(text) {
			return false
		}
		if t.NumField() != len(want) {
			return false
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name+" "+f.Type.String()+" "+f.Tag.Get("json") != want[i] || !f.IsExported() || f.Anonymous {
				return false
			}
		}
	}
	// Each payload observationOf knows holds its Observation alone, as
	// an embedded field, and writes nothing of its own.
	for _, p := range []Payload{ClaudeLineObserved{}, ClaudeHookObserved{}, CodexLineObserved{}, CodexNotifyObserved{},
		AgentLineObserved{}, HarnessObserved{}, OTelObserved{}} {
		t := reflect.TypeOf(p)
		if t.NumField() != 1 || !t.Field(0).Anonymous || t.Field(0).Type != reflect.TypeFor[Observation]() || t.Field(0).Tag != "" ||
			t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) || t.Implements(text) || reflect.PointerTo(t).Implements(text) {
			return false
		}
	}
	// Meta is compared with == for omitzero; json.Marshal's omitzero
	// asks an IsZero method first when the type has one.
	if _, ok := reflect.TypeFor[Meta]().MethodByName("IsZero"); ok {
		return false
	}
	return true
}
