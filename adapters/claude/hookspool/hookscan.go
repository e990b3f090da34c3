package hookspool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/events/jsonlex"
)

// Limits on the shape of a hook payload, checked in the one pass that
// reads it before anything in it is decoded. A payload over one of them is
// refused with ErrTooDeep or ErrTooManyKeys.
const (
	// MaxHookDepth is the deepest nesting of objects and arrays in a hook
	// payload: 512 levels, the top-level object being the first.
	// Claude Code's payloads nest a few levels; encoding/json's own
	// limit is 10,000.
	MaxHookDepth = 512
	// MaxHookKeys is the most object members a hook payload may hold,
	// counted over all its objects: 65,536. Each member takes at least 5
	// bytes ("":0,), so a payload with more could not fit MaxHookSend
	// even with every string cut: the limit refuses early what cutting
	// would refuse anyway.
	MaxHookKeys = 1 << 16
)

// Errors of the shape limits; test with errors.Is.
var (
	// ErrTooDeep reports a hook payload nested deeper than MaxHookDepth.
	ErrTooDeep = errors.New("nested too deep")
	// ErrTooManyKeys reports a hook payload with more than MaxHookKeys
	// object members.
	ErrTooManyKeys = errors.New("too many keys")
)

// hookScan is one pass over a hook payload (JSON text, RFC 8259): it
// checks UTF-8, syntax, depth and key count, and picks out what a hook
// needs without decoding the rest: the top-level object's members, as
// raw values, and the spans of strings longer than a given size (to cut).
type hookScan struct {
	b     []byte
	i     int // next byte to read
	keys  int // object members seen
	limit error

	long    int    // record strings with more than long raw bytes; 0 records none
	longs   []span // b[from:to] of each such string, quotes included, in order
	objAt   int    // offset of the top-level value's first byte
	topSeen bool   // the top-level value is an object
	top     map[string]json.RawMessage
}

// span is b[from:to] of a payload.
type span struct{ from, to int }

// scanHook reads b, a hook payload without trailing whitespace, in one
// pass. long > 0 records every string longer than long bytes as written
// (its decoded text is at most as long). Errors: ErrInvalidUTF8 or
// ErrSyntax naming the byte, as encoding/json words the syntax error;
// ErrTooDeep; ErrTooManyKeys; ErrDuplicateKey naming a member given
// twice in one object, at any depth; ErrNotObject for well-formed JSON that is
// not an object.
func scanHook(b []byte, long int) (*hookScan, error) {
	if i := jsonlex.InvalidUTF8(b); i >= 0 {
		return nil, fmt.Errorf("%w at byte %d", ErrInvalidUTF8, i)
	}
	s := &hookScan{b: b, long: long}
	s.ws()
	s.objAt = s.i
	ok := s.value(1)
	if ok {
		s.ws()
		ok = s.i == len(b)
	}
	if !ok {
		if s.limit != nil {
			return nil, s.limit
		}
		// Word the syntax error as encoding/json does, which the parser
		// always has: it stops at the same byte.
		var v json.RawMessage
		if se, isSyntax := errors.AsType[*json.SyntaxError](json.Unmarshal(b, &v)); isSyntax {
			return nil, fmt.Errorf("%w at byte %d: %v", ErrSyntax, se.Offset, se)
		}
		return nil, fmt.Errorf("%w at byte %d", ErrSyntax, s.i+1)
	}
	if !s.topSeen {
		return nil, fmt.Errorf("%w: got %s", ErrNotObject, jsonx.Kind(b[s.objAt:]))
	}
	return s, nil
}

// ws skips JSON whitespace.
func (s *hookScan) ws() { s.i = jsonlex.Space(s.b, s.i) }

// value reads one JSON value at nesting level depth (1 for the top).
func (s *hookScan) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if depth > MaxHookDepth {
			s.limit = fmt.Errorf("%w: more than %d levels at byte %d", ErrTooDeep, MaxHookDepth, s.i)
			return false
		}
		if c == '{' {
			return s.object(depth)
		}
		return s.array(depth)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		var ok bool
		s.i, ok = jsonlex.Number(s.b, s.i)
		return ok
	}
	return false
}

// object reads an object; at depth 1 it keeps the members in s.top.
func (s *hookScan) object(depth int) bool {
	top := depth == 1
	if top {
		s.topSeen = true
		s.top = map[string]json.RawMessage{}
	}
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	var members memberSet // a nested object's names
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		s.keys++
		if s.keys > MaxHookKeys {
			s.limit = fmt.Errorf("%w: more than %d object members at byte %d", ErrTooManyKeys, MaxHookKeys, s.i)
			return false
		}
		k, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		from := s.i
		if !s.value(depth + 1) {
			return false
		}
		if top {
			name, ok := s.name(k)
			if !ok {
				return false
			}
			if _, dup := s.top[name]; dup {
				s.limit = fmt.Errorf("%w %q at byte %d: the object names it more than once", ErrDuplicateKey, name, k.from)
				return false
			}
			s.top[name] = s.b[from:s.i:s.i]
		} else if name, dup, ok := s.member(&members, k); !ok {
			return false
		} else if dup {
			s.limit = fmt.Errorf("%w %q at byte %d: the object names it more than once", ErrDuplicateKey, name, k.from)
			return false
		}
		if done, ok := s.next('}'); done || !ok {
			return ok
		}
	}
}

// memberSet holds the member names of one nested object, to find a name
// given twice: their spans while there are few (compared as written,
// decoded only when one holds an escape), decoded in a map past
// fewMembers.
type memberSet struct {
	spans []span
	names map[string]struct{}
}

// fewMembers is how many names a memberSet compares one by one.
const fewMembers = 16

// member adds name k to m and reports whether m held it already (dup),
// with the name decoded; ok is false for a name that does not decode.
func (s *hookScan) member(m *memberSet, k span) (name string, dup, ok bool) {
	if m.names == nil {
		for _, o := range m.spans {
			if same, ok := s.sameName(o, k); !ok || same {
				if !ok {
					return "", false, false
				}
				name, ok := s.name(k)
				return name, true, ok
			}
		}
		if len(m.spans) < fewMembers {
			m.spans = append(m.spans, k)
			return "", false, true
		}
		m.names = make(map[string]struct{}, 2*fewMembers)
		for _, o := range m.spans {
			n, ok := s.name(o)
			if !ok {
				return "", false, false
			}
			m.names[n] = struct{}{}
		}
	}
	name, ok = s.name(k)
	if !ok {
		return "", false, false
	}
	if _, dup := m.names[name]; dup {
		return name, true, true
	}
	m.names[name] = struct{}{}
	return name, false, true
}

// sameName reports whether member names a and b (spans, quotes included)
// decode to the same text.
func (s *hookScan) sameName(a, b span) (same, ok bool) {
	ra, rb := s.b[a.from:a.to], s.b[b.from:b.to]
	if bytes.Equal(ra, rb) {
		return true, true
	}
	if bytes.IndexByte(ra, '\\') < 0 && bytes.IndexByte(rb, '\\') < 0 {
		return false, true
	}
	na, ok := s.name(a)
	if !ok {
		return false, false
	}
	nb, ok := s.name(b)
	return ok && na == nb, ok
}

// array reads an array.
func (s *hookScan) array(depth int) bool {
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth + 1) {
			return false
		}
		if done, ok := s.next(']'); done || !ok {
			return ok
		}
	}
}

// next reads, after white space, what follows a member of an object or
// an element of an array: ',' and the white space after it (another
// one follows: done false), or close (done true); ok is false for
// anything else or the end of the input.
func (s *hookScan) next(close byte) (done, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return false, true
	case close:
		s.i++
		return true, true
	}
	return false, false
}

// name decodes a member name's span (quotes included) as encoding/json
// does (jsonlex.Unquote); ok is always true, the span being a string
// that str has read.
func (s *hookScan) name(sp span) (string, bool) {
	raw := s.b[sp.from+1 : sp.to-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	n, _ := jsonlex.Unquote(make([]byte, 0, len(raw)), raw, -1)
	return string(n), true
}

// str reads a string and returns its span, quotes included; one longer
// than s.long bytes between its quotes is recorded in s.longs.
func (s *hookScan) str() (span, bool) {
	from := s.i
	i, _, _, ok := jsonlex.String(s.b, s.i)
	s.i = i
	if !ok {
		return span{}, false
	}
	if s.long > 0 && i-from-2 > s.long {
		s.longs = append(s.longs, span{from, i})
	}
	return span{from, i}, true
}

// literal reads true, false or null.
func (s *hookScan) literal(lit string) bool {
	i, ok := jsonlex.Literal(s.b, s.i, lit)
	s.i = i
	return ok
}

// unquotePrefix decodes the JSON string raw (quotes included, already
// checked well-formed) as encoding/json does, but stops once it has more
// than n bytes: it returns the decoded text, or a prefix of it longer than
// n bytes. An escaped lone surrogate decodes to U+FFFD (jsonlex.Unquote).
func unquotePrefix(raw []byte, n int) string {
	raw = raw[1 : len(raw)-1]
	out, _ := jsonlex.Unquote(make([]byte, 0, min(len(raw), n+utf8.UTFMax)), raw, n)
	return string(out)
}
