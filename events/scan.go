package events

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// This file holds the registry's first decoding tier: a hand-written
// scanner for envelopes (RFC 8259 JSON, the wire form MarshalJSON writes)
// that allocates little more than the strings it returns. It accepts a
// strict subset of what the encoding/json tier (decodeSlow)
// accept and builds the same value for it: keys spelled exactly as the
// wire form spells them, each at most once; strings without escapes or
// control bytes and in valid UTF-8; integers as plain digits; no null; only
// whitespace after the envelope. Anything else — including every input the
// encoding/json tiers refuse — makes it give up (ok false) before any
// error is reported, so errors always come from those tiers and read the
// same as before.

// Envelope member bits, for refusing duplicates.
const (
	mID = 1 << iota
	mType
	mV
	mAgg
	mVer
	mAt
	mCause
	mCorr
	mHost
	mActor
	mData
)

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte1 consumes c after whitespace.
func (s *scanner) byte1(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// raw returns the bytes of a string without escapes, control bytes or
// invalid UTF-8 (whose decoding by encoding/json would differ from the
// bytes), without its quotes.
func (s *scanner) raw() ([]byte, bool) {
	if !s.byte1('"') {
		return nil, false
	}
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

func (s *scanner) str() (string, bool) {
	v, ok := s.raw()
	return string(v), ok
}

// digits returns an integer literal: an optional minus (when neg) and
// digits without a leading zero.
func (s *scanner) digits(neg bool) ([]byte, bool) {
	s.ws()
	start := s.i
	if neg && s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	d := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == d || s.b[d] == '0' && s.i-d > 1 {
		return nil, false
	}
	// A fraction or exponent is a number encoding/json would refuse for
	// an integer: leave it to that tier.
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return nil, false
	}
	return s.b[start:s.i], true
}

// object calls member for each key of an object; member returns false to
// give up.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.byte1('{') {
		return false
	}
	if s.byte1('}') {
		return true
	}
	for {
		k, ok := s.raw()
		if !ok || !s.byte1(':') || !member(k) {
			return false
		}
		if s.byte1('}') {
			return true
		}
		if !s.byte1(',') {
			return false
		}
	}
}

// skip passes over one JSON value and returns its bytes. It checks
// nesting and strings only; the value's full syntax is checked by the
// decoder that reads it.
func (s *scanner) skip() ([]byte, bool) {
	s.ws()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			s.i++
			for {
				if s.i >= len(s.b) {
					return nil, false
				}
				c := s.b[s.i]
				s.i++
				if c == '\\' {
					s.i++
				} else if c == '"' {
					break
				}
			}
			if depth == 0 {
				return s.b[start:s.i], true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, false
			}
			if depth == 0 {
				s.i++
				return s.b[start:s.i], true
			}
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				if s.i == start {
					return nil, false
				}
				return s.b[start:s.i], true
			}
		}
		s.i++
	}
	if depth != 0 || s.i == start {
		return nil, false
	}
	return s.b[start:s.i], true
}

// decodeScan is the first decoding tier (see the top of this file). ok
// false means "not decided here"; err is only a Validate error of an
// envelope the other tiers would build identically.
func (r *Registry) decodeScan(b []byte) (e Envelope, ok bool, err error) {
	s := scanner{b: b}
	var (
		seen int
		at   []byte
		data []byte
		ti   *typeInfo
	)
	member := func(k []byte) bool {
		var bit int
		switch string(k) {
		case "id":
			bit = mID
			v, ok := s.raw()
			if !ok || e.ID.UnmarshalText(v) != nil {
				return false
			}
		case "type":
			bit = mType
			v, ok := s.raw()
			if !ok {
				return false
			}
			if ti, ok = r.types[string(v)]; !ok {
				return false
			}
			e.Type = ti.name
		case "v":
			bit = mV
			d, ok := s.digits(true)
			if !ok {
				return false
			}
			n, err := strconv.ParseInt(string(d), 10, 0)
			if err != nil {
				return false
			}
			e.V = int(n)
		case "agg":
			bit = mAgg
			var aseen int
			if !s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "kind":
					if aseen&1 != 0 {
						return false
					}
					aseen |= 1
					var v []byte
					if v, ok = s.raw(); ok {
						e.Agg.Kind = kindName(v)
					}
				case "id":
					if aseen&2 != 0 {
						return false
					}
					aseen |= 2
					e.Agg.ID, ok = s.str()
				}
				return ok
			}) {
				return false
			}
		case "ver":
			bit = mVer
			d, ok := s.digits(false)
			if !ok {
				return false
			}
			n, err := strconv.ParseUint(string(d), 10, 64)
			if err != nil {
				return false
			}
			e.Ver = n
		case "at":
			bit = mAt
			v, ok := s.raw()
			if !ok {
				return false
			}
			at = v
		case "cause":
			bit = mCause
			c := &Cause{}
			var cseen int
			if !s.object(func(k []byte) bool {
				var f *string
				var cb int
				switch string(k) {
				case "kind":
					f, cb = &c.Kind, 1
				case "event":
					f, cb = &c.Event, 2
				case "detail":
					f, cb = &c.Detail, 4
				case "ref":
					f, cb = &c.Ref, 8
				default:
					return false
				}
				if cseen&cb != 0 {
					return false
				}
				cseen |= cb
				var ok bool
				*f, ok = s.str()
				return ok
			}) {
				return false
			}
			e.Cause = c
		case "corr":
			bit = mCorr
			var ok bool
			if e.Corr, ok = s.str(); !ok {
				return false
			}
		case "host":
			bit = mHost
			var ok bool
			if e.Host, ok = s.str(); !ok {
				return false
			}
		case "actor":
			bit = mActor
			var ok bool
			if e.Actor, ok = s.str(); !ok {
				return false
			}
		case "data":
			bit = mData
			v, ok := s.skip()
			if !ok || v[0] != '{' {
				return false
			}
			data = v
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	if !s.object(member) {
		return Envelope{}, false, nil
	}
	s.ws()
	if s.i != len(b) || ti == nil || data == nil || e.V != ti.version {
		return Envelope{}, false, nil
	}
	t, perr := time.Parse(time.RFC3339Nano, string(at))
	if at == nil || perr != nil {
		return Envelope{}, false, nil
	}
	e.At = t.UTC()
	p, ok := ti.decodeData(data)
	if !ok {
		return Envelope{}, false, nil
	}
	e.Data = p
	if err := r.Validate(e); err != nil {
		return Envelope{}, true, err
	}
	return e, true, nil
}

// kindName returns the aggregate kind constant spelled v, so a decoded
// kind shares the constant's memory; other spellings are copied.
func kindName(v []byte) string {
	switch string(v) {
	case KindSession:
		return KindSession
	case KindCommand:
		return KindCommand
	case KindWorkspace:
		return KindWorkspace
	case KindProject:
		return KindProject
	case KindTask:
		return KindTask
	}
	return string(v)
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// field is one member of a flat payload struct the scanner can fill.
type field struct {
	name  string
	index int
	kind  reflect.Kind
}

// flatFields returns the fields of struct type t when every exported
// field is a string, bool or integer without embedding or tag options
// other than omitempty; ok is false otherwise and the payload is read by
// encoding/json.
func flatFields(t reflect.Type) (fs []field, ok bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts := tag, ""
		for j := 0; j < len(tag); j++ {
			if tag[j] == ',' {
				name, opts = tag[:j], tag[j+1:]
				break
			}
		}
		if opts != "" && opts != "omitempty" || name == "" {
			return nil, false
		}
		switch k := f.Type.Kind(); k {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if pt := reflect.PointerTo(f.Type); pt.Implements(textUnmarshaler) || pt.Implements(jsonUnmarshaler) {
				return nil, false
			}
			fs = append(fs, field{name: name, index: i, kind: k})
		default:
			return nil, false
		}
	}
	// Two names equal but for case would let encoding/json pick among
	// them; leave such a type to it.
	for i := range fs {
		for j := range i {
			if equalFold(fs[i].name, fs[j].name) {
				return nil, false
			}
		}
	}
	return fs, true
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// decodeData reads a payload object into a new value of the type: by the
// scanner when the type is flat, else by encoding/json, strictly. ok false
// means the other tiers decide.
func (ti *typeInfo) decodeData(data []byte) (Payload, bool) {
	pv := reflect.New(ti.typ)
	if !ti.isFlat {
		if decodeStrict(data, pv.Interface()) != nil {
			return nil, false
		}
		return pv.Elem().Interface().(Payload), true
	}
	v := pv.Elem()
	s := scanner{b: data}
	var seen uint64
	if !s.object(func(k []byte) bool {
		for n := range ti.flat {
			f := &ti.flat[n]
			if f.name != string(k) {
				continue
			}
			if n >= 64 || seen&(1<<n) != 0 {
				return false
			}
			seen |= 1 << n
			fv := v.Field(f.index)
			switch f.kind {
			case reflect.String:
				x, ok := s.str()
				fv.SetString(x)
				return ok
			case reflect.Bool:
				s.ws()
				switch {
				case hasPrefix(s.b[s.i:], "true"):
					s.i += 4
					fv.SetBool(true)
				case hasPrefix(s.b[s.i:], "false"):
					s.i += 5
				default:
					return false
				}
				return s.i >= len(s.b) || !isIdent(s.b[s.i])
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				d, ok := s.digits(true)
				if !ok {
					return false
				}
				x, err := strconv.ParseInt(string(d), 10, 64)
				if err != nil || fv.OverflowInt(x) {
					return false
				}
				fv.SetInt(x)
				return true
			default:
				d, ok := s.digits(false)
				if !ok {
					return false
				}
				x, err := strconv.ParseUint(string(d), 10, 64)
				if err != nil || fv.OverflowUint(x) {
					return false
				}
				fv.SetUint(x)
				return true
			}
		}
		return false
	}) {
		return nil, false
	}
	s.ws()
	if s.i != len(data) {
		return nil, false
	}
	return v.Interface().(Payload), true
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
