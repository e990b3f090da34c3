package events

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/logbook-dev/logbook/events/jsonlex"
)

// This file holds the registry's first decoding tier: a hand-written
// scanner for envelopes (RFC 8259 JSON, the wire form MarshalJSON writes)
// that allocates little more than the strings and pointers it returns.
// It reads every payload type the codec of compile covers (strings, bools,
// integers, float64, nested structs, pointers, slices, json.Unmarshalers
// such as time.Time), so nested observations are read without
// encoding/json. It accepts a strict subset of what the encoding/json tier
// (decodeSlow) accepts and builds the same value for it: keys spelled
// exactly as the Go type's JSON names, each at most once; strings in
// valid UTF-8, without control bytes, with escapes other than lone UTF-16
// surrogates; integers as plain digits; no null; only whitespace after
// the envelope. Its strings, numbers and white space are read by
// events/jsonlex, the lexer the adapters' readers share. Anything else —
// including every input the encoding/json tier refuses — makes it give
// up (ok false) before any error is reported, so errors always come from
// that tier and read the same.
// TestDecodeScanMatchesReference and FuzzDecodeScan hold it to that.

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
	d *Decoder // its interned strings and scratch values; nil: none
}

// internLen is the longest string a Decoder interns, in bytes. Its table
// holds internFirst strings (a power of two) until it has read internGrow
// envelopes, then internSlots: a Decoder made for a few envelopes (an
// aggregate's load) does not pay for the table of a long read.
const (
	internLen   = 64
	internFirst = 64
	internGrow  = 64
	internSlots = 4096
)

// internHash hashes v (at most internLen bytes) for a Decoder's table: its
// length and its first and last eight bytes, all of them when it is
// shorter. Strings that differ only in between share a slot, and take it
// from each other.
func internHash(v []byte) uint64 {
	h := uint64(len(v))
	if len(v) >= 8 {
		h ^= binary.LittleEndian.Uint64(v)
		h *= 0x9e3779b97f4a7c15
		h ^= binary.LittleEndian.Uint64(v[len(v)-8:])
	} else {
		for _, c := range v {
			h = h<<8 | uint64(c)
		}
	}
	return h * 0x9e3779b97f4a7c15
}

// intern returns v as a string: the Decoder's copy when it holds one.
// The table is direct-mapped by the high bits of internHash: a string
// takes its slot from the one before it. Each slot keeps its string's
// hash, so a string that is not there is told from the one that is
// without reading the latter's bytes, and one shorter than eight bytes
// is found by its hash alone: on those, internHash is one to one.
func (s *scanner) intern(v []byte) string {
	if s.d == nil || len(v) > internLen {
		return string(v)
	}
	d := s.d
	if d.strs == nil {
		d.strs, d.shift = make([]internSlot, internFirst), 64-uint(bits.TrailingZeros(internFirst))
	}
	h := internHash(v)
	slot := &d.strs[h>>d.shift]
	if slot.h != h || len(slot.s) != len(v) || len(v) >= 8 && slot.s != string(v) {
		slot.h, slot.s = h, string(v)
	}
	return slot.s
}

// internSlot is one entry of a Decoder's table of strings: a string and
// its internHash.
type internSlot struct {
	h uint64
	s string
}

// Decoder decodes envelopes as Registry.Decode does, with the same
// results and errors, and shares the memory of short strings that recur
// from one envelope to the next (aggregate ids, causes, hosts, parsers,
// activities), so a long read allocates less. It holds up to 4,096 such
// strings of at most 64 bytes. Envelopes' causes are allocated 64 at a
// time, so a retained Envelope's Cause can keep 4 KiB alive. A Decoder is
// not safe for concurrent use; make one per goroutine with
// Registry.NewDecoder.
type Decoder struct {
	reg *Registry
	n   int // envelopes decoded
	// strs is the table of interned strings (see intern), allocated at
	// the first one; its length is 1<<(64-shift).
	strs  []internSlot
	shift uint
	// causes is where the next envelopes' causes are taken from (see
	// cause).
	causes []Cause
	// elems holds, at each slice codec's slot, a slice of its type,
	// which the scanner reads an array's elements into before copying
	// them to a slice of exactly their number. A slice is taken out (its
	// slot left invalid) while in use, so a nested array of the same
	// codec makes its own.
	elems []reflect.Value
}

// NewDecoder returns a Decoder of r's catalogue.
func (r *Registry) NewDecoder() *Decoder {
	return &Decoder{reg: r}
}

// Decode is Registry.Decode.
func (d *Decoder) Decode(b []byte) (Envelope, error) {
	if d.n++; d.n == internGrow {
		d.strs, d.shift = make([]internSlot, internSlots), 64-uint(bits.TrailingZeros(internSlots))
	}
	if e, ok, err := d.reg.decodeScan(b, d); ok {
		return e, err
	}
	return d.reg.decodeSlow(b)
}

// causeSlab is how many causes a Decoder allocates at once.
const causeSlab = 64

// cause returns a new, zero Cause: one of a slab of causeSlab that a
// Decoder allocates at once, which a retained cause keeps alive.
func (s *scanner) cause() *Cause {
	if s.d == nil {
		return &Cause{}
	}
	if len(s.d.causes) == 0 {
		s.d.causes = make([]Cause, causeSlab)
	}
	c := &s.d.causes[0]
	s.d.causes = s.d.causes[1:]
	return c
}

// payload reads a payload object of ti's type (which has a codec) into a
// new value and returns it.
func (s *scanner) payload(ti *typeInfo) (Payload, bool) {
	pv := reflect.New(ti.typ)
	if !s.value(ti.codec, pv.UnsafePointer()) {
		return nil, false
	}
	return ti.box(pv), true
}

// iface is the layout of a non-empty interface value such as a Payload:
// its itab (the dynamic type and its methods) and a pointer to the value,
// for a type that is not pointer-shaped (runtime/runtime2.go, Go 1.26).
type iface struct {
	tab  unsafe.Pointer
	data unsafe.Pointer
}

// payloadTab returns the itab of t as a Payload when a Payload of t
// holds a pointer to its value (t is a struct larger than a pointer,
// whose value implements Payload), which box then uses; nil otherwise.
// It checks the layout on a value it boxes both ways.
func payloadTab(t reflect.Type) unsafe.Pointer {
	if t.Kind() != reflect.Struct || t.Size() <= unsafe.Sizeof(uintptr(0)) || !t.Implements(payloadType) {
		return nil
	}
	zero := reflect.New(t)
	want := zero.Elem().Interface().(Payload)
	tab := (*iface)(unsafe.Pointer(&want)).tab
	var got Payload
	*(*iface)(unsafe.Pointer(&got)) = iface{tab: tab, data: zero.UnsafePointer()}
	if reflect.TypeOf(got) != t || !reflect.DeepEqual(got, want) {
		return nil
	}
	return tab
}

var payloadType = reflect.TypeFor[Payload]()

// box returns the payload pv (a *T of ti's type) points to, as a Payload.
// When ti.tab is set the Payload refers to *pv itself rather than to a
// copy: pv must be fresh and never written again.
func (ti *typeInfo) box(pv reflect.Value) Payload {
	if ti.tab == nil {
		return pv.Elem().Interface().(Payload)
	}
	var p Payload
	*(*iface)(unsafe.Pointer(&p)) = iface{tab: ti.tab, data: pv.UnsafePointer()}
	return p
}

// ws skips JSON white space.
func (s *scanner) ws() { s.i = jsonlex.Space(s.b, s.i) }

// byte1 consumes c after whitespace.
func (s *scanner) byte1(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c { // the wire form has no whitespace
		s.i++
		return true
	}
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
	next, esc, high, ok := jsonlex.String(s.b, s.i-1)
	if !ok || esc {
		return nil, false
	}
	v := s.b[s.i : next-1]
	s.i = next
	if high && !utf8.Valid(v) {
		return nil, false
	}
	return v, true
}

// str reads a string as encoding/json decodes it: escapes resolved. It
// gives up on invalid UTF-8 and on a \u escape of a lone UTF-16
// surrogate, which encoding/json turns into U+FFFD.
func (s *scanner) str() (string, bool) {
	if !s.byte1('"') {
		return "", false
	}
	next, esc, high, ok := jsonlex.String(s.b, s.i-1)
	if !ok {
		return "", false
	}
	v := s.b[s.i : next-1]
	s.i = next
	if esc {
		buf, lossy := jsonlex.Unquote(make([]byte, 0, len(v)), v, -1)
		if lossy {
			return "", false
		}
		return string(buf), true
	}
	if high && !utf8.Valid(v) {
		return "", false
	}
	return s.intern(v), true
}

// digits returns an integer literal: an optional minus (when neg) and
// digits without a leading zero, not followed by a fraction or exponent
// (a number encoding/json would refuse for an integer, left to that
// tier).
func (s *scanner) digits(neg bool) ([]byte, bool) {
	s.ws()
	start := s.i
	if !neg && s.i < len(s.b) && s.b[s.i] == '-' {
		return nil, false
	}
	next, ok := jsonlex.Integer(s.b, s.i)
	if !ok {
		return nil, false
	}
	s.i = next
	return s.b[start:s.i], true
}

// number returns a JSON number literal (RFC 8259 section 6).
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	start := s.i
	next, ok := jsonlex.Number(s.b, s.i)
	if !ok {
		return nil, false
	}
	s.i = next
	return s.b[start:s.i], true
}

// members calls member for each key of an object; member returns false to
// give up. known lists keys (`"name":`, as knownIn reads them) in the order the
// wire form writes them; a key among them is read without scanning it.
func (s *scanner) members(known []wireKey, member func(key []byte) bool) bool {
	if !s.byte1('{') {
		return false
	}
	if s.byte1('}') {
		return true
	}
	next := 0
	for {
		var k []byte
		start := s.i
		if n := s.knownIn(known, next); n >= 0 {
			k, next = s.b[start+1:s.i-2], n+1
		} else {
			var ok bool
			if k, ok = s.raw(); !ok || !s.byte1(':') {
				return false
			}
		}
		if !member(k) {
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
			next, _, _, ok := jsonlex.String(s.b, s.i)
			if !ok {
				return nil, false
			}
			s.i = next
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
// strs, when not nil, interns short strings (see Decoder).
func (r *Registry) decodeScan(b []byte, d *Decoder) (e Envelope, ok bool, err error) {
	s := scanner{b: b, d: d}
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
			n, ok := s.integer(true, strconv.IntSize)
			if !ok {
				return false
			}
			e.V = int(n)
		case "agg":
			bit = mAgg
			var aseen int
			if !s.members(aggKeys, func(k []byte) bool {
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
			n, ok := s.integer(false, 64)
			if !ok {
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
			c := s.cause()
			var cseen int
			if !s.members(causeKeys, func(k []byte) bool {
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
			if ti != nil && ti.codec != nil && seen&bit == 0 {
				// The usual order, type before data: read it in place.
				p, ok := s.payload(ti)
				if !ok {
					return false
				}
				e.Data = p
				break
			}
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
	if !s.members(envelopeKeys, member) {
		return Envelope{}, false, nil
	}
	s.ws()
	if s.i != len(b) || ti == nil || data == nil && e.Data == nil || e.V != ti.version {
		return Envelope{}, false, nil
	}
	if at == nil {
		return Envelope{}, false, nil
	}
	t, ok := parseTimeZ(at)
	if !ok {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, string(at)); err != nil {
			return Envelope{}, false, nil
		}
	}
	e.At = t.UTC()
	if e.Data == nil {
		p, ok := ti.decodeData(data, d)
		if !ok {
			return Envelope{}, false, nil
		}
		e.Data = p
	}
	if err := ti.validate(e); err != nil { // Validate, with ti known
		return Envelope{}, true, err
	}
	return e, true, nil
}

// parseTimeZ reads b as time.Parse(time.RFC3339Nano, b) does when b has
// the shape MarshalJSON writes: YYYY-MM-DDTHH:MM:SS, then a fraction of 1
// to 9 digits or none, then Z. ok false means another shape or a value
// out of range, which time.Parse decides.
func parseTimeZ(b []byte) (t time.Time, ok bool) {
	n := len(b)
	if n < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[n-1] != 'Z' {
		return time.Time{}, false
	}
	var bad byte // any bit 7 of a digit's value minus '0' or 9 minus it
	d2 := func(i int) int {
		x, y := b[i]-'0', b[i+1]-'0'
		bad |= (x | y | (9 - x) | (9 - y)) & 0x80
		return int(x)*10 + int(y)
	}
	year := d2(0)*100 + d2(2)
	month, day := d2(5), d2(8)
	hour, minute, sec := d2(11), d2(14), d2(17)
	if bad != 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns := 0
	if n > 20 {
		w := n - 21 // digits between '.' and 'Z'
		if b[19] != '.' || w < 1 || w > 9 {
			return time.Time{}, false
		}
		for _, c := range b[20 : n-1] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			ns = ns*10 + int(c-'0')
		}
		for range 9 - w {
			ns *= 10
		}
	}
	// Days from 1970-01-01 to the date in the proleptic Gregorian
	// calendar (eras of 400 years, the year starting in March).
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era)*146097 + int64(doe) - 719468
	return time.Unix(days*86400+int64(hour*3600+minute*60+sec), int64(ns)).UTC(), true
}

// daysIn returns the number of days of month (1–12) in year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
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
	case KindKey:
		return KindKey
	case KindNotification:
		return KindNotification
	case KindCheck:
		return KindCheck
	}
	return string(v)
}

// numberSlices gives each slice codec reachable from c that has no slot
// yet the next of the registry's slots (its index in a Decoder's elems),
// counting them in *n.
func (c *codec) numberSlices(n *int, seen map[*codec]bool) {
	if c == nil || seen[c] {
		return
	}
	seen[c] = true
	if c.kind == reflect.Slice {
		c.slot = *n
		*n++
	}
	c.elem.numberSlices(n, seen)
	for _, m := range c.members {
		m.c.numberSlices(n, seen)
	}
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// codec is how the scanner reads one JSON value into a Go value of one
// type, as encoding/json would: strings, bools, integers and float64,
// structs (embedded structs' members promoted), pointers and slices of
// those.
type codec struct {
	kind    reflect.Kind
	typ     reflect.Type
	bits    uint          // integers: the width in bits, for overflow
	members []member      // struct: its JSON members, declaration order
	keys    []wireKey     // struct: each member's key as the wire form spells it (`"name":`), in members' order
	elem    *codec        // pointer: the target; slice: the element
	empty   reflect.Value // slice: an empty, non-nil one
	slot    int           // slice: its index in a Decoder's elems (numberSlices)
	// unmarshal: the type is a json.Unmarshaler, handed a string
	// without escapes as encoding/json would hand it (quotes included).
	unmarshal bool
}

// member is one JSON member of a struct.
type member struct {
	name   string  // the wire name, exactly
	offset uintptr // the field's offset in the codec's struct, through embedded structs
	c      *codec
}

// compile returns t's codec, or ok false when t is not one the scanner
// reads the same way encoding/json does (a TextUnmarshaler that is no
// json.Unmarshaler, a map, an interface, []byte, float32, a "string"
// option, an embedded pointer or non-struct, members whose names differ
// only by case, …); its payloads are then read by encoding/json. done holds the codecs built so far, so
// a recursive type refers to itself.
func compile(t reflect.Type, done map[reflect.Type]*codec) (*codec, bool) {
	if c, ok := done[t]; ok {
		return c, true
	}
	c := &codec{kind: t.Kind(), typ: t, bits: uint(t.Size() * 8)}
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshaler) {
		c.unmarshal = true // such as time.Time
		return c, true
	} else if pt.Implements(textUnmarshaler) {
		return nil, false
	}
	done[t] = c
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return c, true
	case reflect.Pointer:
		var ok bool
		c.elem, ok = compile(t.Elem(), done)
		return c, ok
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // base64 in encoding/json
			return nil, false
		}
		var ok bool
		c.elem, ok = compile(t.Elem(), done)
		c.empty = reflect.MakeSlice(t, 0, 0)
		return c, ok
	case reflect.Struct:
		if !c.collect(t, 0, done) || len(c.members) > 64 {
			return nil, false
		}
		// Two names equal but for case would let encoding/json pick among
		// them; leave such a type to it.
		for i := range c.members {
			for j := range i {
				if equalFold(c.members[i].name, c.members[j].name) {
					return nil, false
				}
			}
		}
		names := make([]string, len(c.members))
		for i, m := range c.members {
			names[i] = `"` + m.name + `":`
		}
		c.keys = wireKeys(names...)
		return c, true
	}
	return nil, false
}

// collect adds the JSON members of struct t, which is at offset in the
// codec's type, promoting those of untagged embedded structs.
func (c *codec) collect(t reflect.Type, offset uintptr, done map[reflect.Type]*codec) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for o := range strings.SplitSeq(opts, ",") {
			if o == "string" {
				return false
			}
		}
		if f.Anonymous {
			if name != "" || f.Type.Kind() != reflect.Struct || !c.collect(f.Type, offset+f.Offset, done) {
				return false
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) {
			return false
		}
		fc, ok := compile(f.Type, done)
		if !ok {
			return false
		}
		c.members = append(c.members, member{name: name, offset: offset + f.Offset, c: fc})
	}
	return true
}

// plainName reports whether a member name is one encoding/json takes as
// spelled: letters, digits and underscores.
func plainName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if !isIdent(n[i]) {
			return false
		}
	}
	return true
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
// scanner when the type has a codec, else by encoding/json, strictly. ok
// false means the encoding/json tier decides.
func (ti *typeInfo) decodeData(data []byte, d *Decoder) (Payload, bool) {
	if ti.codec == nil {
		pv := reflect.New(ti.typ)
		if decodeStrict(data, pv.Interface()) != nil {
			return nil, false
		}
		return pv.Elem().Interface().(Payload), true
	}
	s := scanner{b: data, d: d}
	p, ok := s.payload(ti)
	if !ok {
		return nil, false
	}
	s.ws()
	if s.i != len(data) {
		return nil, false
	}
	return p, true
}

// value reads one JSON value of c's type into the value p points to,
// which holds the type's zero value: p is a field, element or payload
// of c's type, reached through the codecs' offsets. It gives up (false)
// on null and on anything encoding/json might read differently.
func (s *scanner) value(c *codec, p unsafe.Pointer) bool {
	if c.unmarshal {
		s.ws()
		start := s.i
		if _, ok := s.raw(); !ok {
			return false
		}
		return reflect.NewAt(c.typ, p).Interface().(json.Unmarshaler).UnmarshalJSON(s.b[start:s.i]) == nil
	}
	switch c.kind {
	case reflect.String:
		x, ok := s.str()
		*(*string)(p) = x
		return ok
	case reflect.Bool:
		s.ws()
		switch {
		case hasPrefix(s.b[s.i:], "true"):
			s.i += 4
			*(*bool)(p) = true
		case hasPrefix(s.b[s.i:], "false"):
			s.i += 5
		default:
			return false
		}
		return s.i >= len(s.b) || !isIdent(s.b[s.i])
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, ok := s.integer(c.kind <= reflect.Int64, int(c.bits))
		if !ok {
			return false
		}
		storeInt(p, c.bits, x)
		return true
	case reflect.Float64:
		d, ok := s.number()
		if !ok {
			return false
		}
		x, err := strconv.ParseFloat(string(d), 64)
		if err != nil {
			return false
		}
		*(*float64)(p) = x
		return true
	case reflect.Pointer:
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == 'n' { // null
			return false
		}
		q := reflect.New(c.typ.Elem()).UnsafePointer()
		if !s.value(c.elem, q) {
			return false
		}
		*(*unsafe.Pointer)(p) = q
		return true
	case reflect.Slice:
		return s.slice(c, reflect.NewAt(c.typ, p).Elem())
	case reflect.Struct:
		return s.object(c, p)
	}
	return false
}

// integer reads a JSON integer that fits in bits bits, signed or not; a
// signed one is returned as its two's complement. It gives up (false) on
// anything else: a fraction, an exponent, a value out of range.
func (s *scanner) integer(signed bool, bits int) (uint64, bool) {
	d, ok := s.digits(signed)
	if !ok {
		return 0, false
	}
	if signed {
		n, err := strconv.ParseInt(string(d), 10, bits)
		return uint64(n), err == nil
	}
	n, err := strconv.ParseUint(string(d), 10, bits)
	return n, err == nil
}

// storeInt writes the low bits bits (8, 16, 32 or 64) of x to the
// integer p points to. A signed value arrives as its two's complement,
// so one store serves int8 and uint8 alike.
func storeInt(p unsafe.Pointer, bits uint, x uint64) {
	switch bits {
	case 8:
		*(*uint8)(p) = uint8(x)
	case 16:
		*(*uint16)(p) = uint16(x)
	case 32:
		*(*uint32)(p) = uint32(x)
	default:
		*(*uint64)(p) = x
	}
}

// slice reads a JSON array into slice v: an empty array gives an empty,
// non-nil slice, as encoding/json does; others a slice of exactly their
// length.
func (s *scanner) slice(c *codec, v reflect.Value) bool {
	if !s.byte1('[') {
		return false
	}
	if s.byte1(']') {
		v.Set(c.empty)
		return true
	}
	// The elements go to a scratch slice first (the Decoder's when it has
	// one for c free), and then to v, allocated once at their number.
	var buf reflect.Value
	if s.d != nil && c.slot < len(s.d.elems) {
		buf, s.d.elems[c.slot] = s.d.elems[c.slot], reflect.Value{}
	}
	if !buf.IsValid() {
		buf = reflect.New(c.typ).Elem()
	}
	ok := s.elements(c, buf)
	if ok {
		n := buf.Len()
		v.Grow(n)
		v.SetLen(n)
		reflect.Copy(v, buf)
	}
	buf.Clear()
	buf.SetLen(0)
	if s.d != nil {
		if c.slot >= len(s.d.elems) {
			s.d.elems = append(s.d.elems, make([]reflect.Value, c.slot+1-len(s.d.elems))...)
		}
		s.d.elems[c.slot] = buf
	}
	return ok
}

// elements reads the elements of a non-empty array, after its '[', into
// buf, an empty addressable slice of c's type, up to and with the ']'.
func (s *scanner) elements(c *codec, buf reflect.Value) bool {
	for n := 0; ; n++ {
		if n == buf.Cap() {
			buf.Grow(1)
		}
		buf.SetLen(n + 1)
		if !s.value(c.elem, buf.Index(n).Addr().UnsafePointer()) {
			return false
		}
		if s.byte1(']') {
			return true
		}
		if !s.byte1(',') {
			return false
		}
	}
}

// object reads a JSON object into the struct p points to: each key
// spelled as a member is named, at most once.
func (s *scanner) object(c *codec, p unsafe.Pointer) bool {
	if !s.byte1('{') {
		return false
	}
	if s.byte1('}') {
		return true
	}
	var seen uint64
	next := 0 // members usually come in declaration order
	for {
		n := s.knownIn(c.keys, next)
		if n < 0 {
			k, ok := s.raw()
			if !ok || !s.byte1(':') {
				return false
			}
			for j := range c.members {
				at := next + j
				if at >= len(c.members) {
					at -= len(c.members)
				}
				if c.members[at].name == string(k) {
					n = at
					break
				}
			}
		}
		if n < 0 || seen&(1<<n) != 0 {
			return false
		}
		seen |= 1 << n
		next = n + 1
		m := &c.members[n]
		if !s.value(m.c, unsafe.Add(p, m.offset)) {
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

// wireKey is a member's key and colon as the wire form spells them
// (`"name":`), with its first eight bytes as a little-endian word (w) and
// the mask of the bytes it has among them, for knownIn.
type wireKey struct {
	s       string
	w, mask uint64
}

// wireKeys returns the wireKeys of keys, each spelled `"name":`.
func wireKeys(keys ...string) []wireKey {
	out := make([]wireKey, len(keys))
	for i, k := range keys {
		var b [8]byte
		n := copy(b[:], k)
		out[i] = wireKey{s: k, w: binary.LittleEndian.Uint64(b[:]), mask: ^uint64(0) >> (64 - 8*n)}
	}
	return out
}

// knownIn reads a key and its colon spelled as the wire form spells
// them (`"name":`, no escapes or whitespace) when they are one of keys,
// trying them from next on, and returns its index; -1 (nothing read)
// otherwise, for the general path. While eight bytes remain it compares
// a key's first eight at once.
func (s *scanner) knownIn(keys []wireKey, next int) int {
	b := s.b[s.i:]
	if len(b) < 2 || b[0] != '"' {
		return -1
	}
	var x uint64
	if len(b) >= 8 {
		x = binary.LittleEndian.Uint64(b)
	}
	for j := range keys {
		at := next + j
		if at >= len(keys) {
			at -= len(keys)
		}
		k := &keys[at]
		if len(b) >= 8 {
			if x&k.mask != k.w || len(k.s) > 8 && !hasPrefix(b[8:], k.s[8:]) {
				continue
			}
		} else if !hasPrefix(b, k.s) {
			continue
		}
		s.i += len(k.s)
		return at
	}
	return -1
}

// Keys as MarshalJSON writes them, in its order: of the envelope, its
// aggregate and its cause.
var (
	envelopeKeys = wireKeys(`"id":`, `"type":`, `"v":`, `"agg":`, `"ver":`, `"at":`, `"cause":`, `"corr":`, `"host":`, `"actor":`, `"data":`)
	aggKeys      = wireKeys(`"kind":`, `"id":`)
	causeKeys    = wireKeys(`"kind":`, `"event":`, `"detail":`, `"ref":`)
)

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
