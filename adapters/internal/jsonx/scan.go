package jsonx

import (
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/logbook-dev/logbook/events/jsonlex"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts:
// 10,000 (jsonlex.MaxDepth), the limit of encoding/json, so the two
// refuse the same texts.
const MaxDepth = jsonlex.MaxDepth

// Doc is one JSON text (RFC 8259) checked in a single pass, with every
// value indexed by its span, so its members are read where they lie,
// without decoding the text into maps. A Doc refers to the bytes it was
// parsed from; they must not change while it is read. A Doc is read-only
// once parsed and safe for concurrent reads.
type Doc struct {
	src   []byte
	nodes []node
}

// node is one value of a Doc, in the order its first byte appears: an
// object's members follow it as key and value pairs, an array's elements
// follow it, each up to next.
type node struct {
	start, end int32 // the value is src[start:end]; a string's quotes included
	next       int32 // the index of the first node after this value and all within it
	kind       byte  // '{', '[', '"', 't', 'f', 'n' or '0' (a number)
	esc        bool  // a string holding a backslash escape
	high       bool  // a string holding a byte outside ASCII
}

// MaxValues is the most values Parse indexes in one text: a text of more
// (a hostile line of a million tiny numbers, say) is refused, so its index
// never outgrows the text many times over; a caller reads it another way.
const MaxValues = 1 << 20

// Parse checks that src holds exactly one JSON value, with optional white
// space around it, as encoding/json's Valid does (bytes of strings are not
// checked as UTF-8; nesting deeper than MaxDepth is refused), and indexes
// it. ok is false for any other text, and for a text of 2 GiB or more or
// of more than MaxValues values, which a caller reads another way.
func Parse(src []byte) (d *Doc, ok bool) {
	d = new(Doc)
	if ok, _ := d.parse(src); !ok {
		return nil, false
	}
	return d, true
}

// Parse parses src into d as the function Parse does, reusing the room d
// has; d holds src afterwards (when it returns false, d is empty).
func (d *Doc) Parse(src []byte) bool {
	ok, _ := d.parse(src)
	return ok
}

// parse is Parse; over reports a text refused only for its size (2 GiB,
// MaxValues), not its syntax.
func (d *Doc) parse(src []byte) (ok, over bool) {
	d.src, d.nodes = nil, d.nodes[:0]
	if len(src) >= math.MaxInt32 {
		return false, true
	}
	if cap(d.nodes) == 0 {
		d.nodes = make([]node, 0, min(8+len(src)/12, 4096))
	}
	p := parser{src: src, d: d}
	i, ok := p.value(p.ws(0), 0)
	if !ok || p.ws(i) != len(src) {
		d.nodes = d.nodes[:0]
		return false, p.over
	}
	d.src = src
	return true, false
}

// Reset empties d, keeping its room for the next Parse, and lets go of
// the text it held. Objects read from d must not be used after.
func (d *Doc) Reset() { d.src, d.nodes = nil, d.nodes[:0] }

// Room returns how many values d has room for without growing.
func (d *Doc) Room() int { return cap(d.nodes) }

// Valid reports whether src holds exactly one JSON value, as Parse
// checks it, without indexing it.
func Valid(src []byte) bool {
	p := parser{src: src}
	i, ok := p.value(p.ws(0), 0)
	return ok && p.ws(i) == len(src)
}

// ValidString is Valid over the bytes of s, read in place.
func ValidString(s string) bool {
	return Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Object returns the reader of the document's top value at path, its
// problems going to probs; ok is false when that value is not an object.
func (d *Doc) Object(path string, probs *[]string) (Object, bool) {
	if len(d.nodes) == 0 || d.nodes[0].kind != '{' {
		return Object{Path: path, Probs: probs}, false
	}
	return Object{Path: path, Probs: probs, doc: d, at: 0}, true
}

// Scanned is New over the text raw, read with Parse rather than decoded
// into a map: the same result, problems and paths, for less work. Members
// of the object it returns are read where they lie in raw (Object.M is
// nil).
func Scanned(raw []byte, path string, probs *[]string) (o Object, ok bool) {
	o = Object{Path: path, Probs: probs}
	switch k := Kind(raw); k {
	case "object":
		d := new(Doc)
		if ok, over := d.parse(raw); over {
			return New(raw, path, probs)
		} else if !ok {
			o.Problem("", "object", k)
			return o, false
		}
		return Object{Path: path, Probs: probs, doc: d, at: 0}, true
	case "null", "nothing":
		return o, false
	default:
		o.Problem("", "object", k)
		return o, false
	}
}

// parser fills one Doc.
type parser struct {
	src  []byte
	d    *Doc
	over bool // more than MaxValues values
}

// ws returns the index of the first byte at or after i that is not JSON
// white space.
func (p *parser) ws(i int) int { return jsonlex.Space(p.src, i) }

// value reads the value starting at src[i] (no white space before it),
// nested depth containers deep, and returns the index just after it. It
// adds the value's node, and those within it, to p.d unless p.d is nil.
func (p *parser) value(i, depth int) (int, bool) {
	if i >= len(p.src) {
		return i, false
	}
	at := -1
	if p.d != nil {
		at = len(p.d.nodes)
		if at >= MaxValues {
			p.over = true
			return i, false
		}
		p.d.nodes = append(p.d.nodes, node{start: int32(i)})
	}
	var (
		ok        bool
		esc, high bool
		kind      byte
	)
	switch c := p.src[i]; {
	case c == '{':
		kind = '{'
		i, ok = p.object(i, depth+1)
	case c == '[':
		kind = '['
		i, ok = p.array(i, depth+1)
	case c == '"':
		kind = '"'
		i, esc, high, ok = jsonlex.String(p.src, i)
	case c == 't':
		kind = 't'
		i, ok = jsonlex.Literal(p.src, i, "true")
	case c == 'f':
		kind = 'f'
		i, ok = jsonlex.Literal(p.src, i, "false")
	case c == 'n':
		kind = 'n'
		i, ok = jsonlex.Literal(p.src, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		kind = '0'
		i, ok = jsonlex.Number(p.src, i)
	default:
		return i, false
	}
	if !ok {
		return i, false
	}
	if p.d != nil {
		n := &p.d.nodes[at]
		n.kind, n.esc, n.high, n.end, n.next = kind, esc, high, int32(i), int32(len(p.d.nodes))
	}
	return i, true
}

func (p *parser) object(i, depth int) (int, bool) {
	if depth > MaxDepth {
		return i, false
	}
	i = p.ws(i + 1)
	if i < len(p.src) && p.src[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(p.src) || p.src[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = p.value(i, depth); !ok {
			return i, false
		}
		i = p.ws(i)
		if i >= len(p.src) || p.src[i] != ':' {
			return i, false
		}
		if i, ok = p.value(p.ws(i+1), depth); !ok {
			return i, false
		}
		var done bool
		if i, done, ok = p.next(i, '}'); done || !ok {
			return i, ok
		}
	}
}

func (p *parser) array(i, depth int) (int, bool) {
	if depth > MaxDepth {
		return i, false
	}
	i = p.ws(i + 1)
	if i < len(p.src) && p.src[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = p.value(i, depth); !ok {
			return i, false
		}
		var done bool
		if i, done, ok = p.next(i, ']'); done || !ok {
			return i, ok
		}
	}
}

// next reads, from i and after white space, what follows a member of an
// object or an element of an array: ',' and the white space after it
// (another one follows: done false), or close (done true). It returns
// the offset after what it read; ok is false for anything else or the
// end of the input, at the offset of the fault.
func (p *parser) next(i int, close byte) (int, bool, bool) {
	i = p.ws(i)
	if i >= len(p.src) {
		return i, false, false
	}
	switch p.src[i] {
	case ',':
		return p.ws(i + 1), false, true
	case close:
		return i + 1, true, true
	}
	return i, false, false
}

// kindName names a node kind as Kind does.
func kindName(k byte) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// raw returns the text of node i.
func (d *Doc) raw(i int32) []byte {
	n := &d.nodes[i]
	return d.src[n.start:n.end:n.end]
}

// text returns the decoded text of string node i.
func (d *Doc) text(i int32) string {
	n := &d.nodes[i]
	inner := d.src[n.start+1 : n.end-1]
	if !n.esc && (!n.high || utf8.Valid(inner)) {
		return string(inner)
	}
	return unquote(inner)
}

// is reports whether string node i decodes to s.
func (d *Doc) is(i int32, s string) bool {
	n := &d.nodes[i]
	inner := d.src[n.start+1 : n.end-1]
	if !n.esc {
		if !n.high {
			return string(inner) == s
		}
		if string(inner) == s {
			return utf8.Valid(inner)
		}
		if utf8.Valid(inner) {
			return false
		}
	}
	return unquote(inner) == s
}

// member returns the node of the last member of object node at named
// key (the one encoding/json keeps), or -1.
func (d *Doc) member(at int32, key string) int32 {
	found := int32(-1)
	end := d.nodes[at].next
	for k := at + 1; k < end; {
		v := k + 1
		if d.is(k, key) {
			found = v
		}
		k = d.nodes[v].next
	}
	return found
}

// Unquote returns the text of the JSON string raw (quotes included), as
// encoding/json decodes it: escapes resolved, a lone or broken surrogate
// escape and each byte of invalid UTF-8 as U+FFFD. raw must be a
// well-formed JSON string.
func Unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			return unquote(inner)
		}
	}
	if utf8.Valid(inner) {
		return string(inner)
	}
	return unquote(inner)
}

// UnquoteString is Unquote over the bytes of s, read in place.
func UnquoteString(s string) string {
	return Unquote(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// unquote decodes the inside of a well-formed JSON string as
// encoding/json does (jsonlex.Unquote).
func unquote(s []byte) string {
	b, _ := jsonlex.Unquote(make([]byte, 0, len(s)), s, -1)
	return string(b)
}

// DuplicateKey returns the path of the first object member of the
// document whose name an earlier member of the same object already has,
// as the function DuplicateKey names it with fold false (names compare
// exactly, after decoding escapes), and whether there is one. Each
// object's names are compared where they lie; the path is found only
// when there is a duplicate.
func (d *Doc) DuplicateKey() (path string, found bool) {
	for i := range d.nodes {
		if d.nodes[i].kind == '{' && d.repeatsName(int32(i)) {
			return DuplicateKey(d.src, false)
		}
	}
	return "", false
}

// manyMembers is the most members repeatsName compares pairwise; past it
// the names go in a set.
const manyMembers = 32

// repeatsName reports whether object node at names a member twice.
func (d *Doc) repeatsName(at int32) bool {
	var small [manyMembers]int32
	keys := small[:0]
	var set map[string]struct{}
	end := d.nodes[at].next
	for k := at + 1; k < end; k = d.nodes[k+1].next {
		if set != nil {
			name := d.text(k)
			if _, dup := set[name]; dup {
				return true
			}
			set[name] = struct{}{}
			continue
		}
		for _, j := range keys {
			if d.sameName(j, k) {
				return true
			}
		}
		if len(keys) < manyMembers {
			keys = append(keys, k)
			continue
		}
		set = make(map[string]struct{}, 2*manyMembers)
		for _, j := range keys {
			set[d.text(j)] = struct{}{}
		}
		set[d.text(k)] = struct{}{}
	}
	return false
}

// sameName reports whether string nodes a and b decode to one text.
func (d *Doc) sameName(a, b int32) bool {
	na, nb := &d.nodes[a], &d.nodes[b]
	if !na.esc && !nb.esc && !na.high && !nb.high {
		return string(d.src[na.start:na.end]) == string(d.src[nb.start:nb.end])
	}
	return d.text(a) == d.text(b)
}
