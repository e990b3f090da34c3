// Package jsonx is the strict, problem-collecting reader of one untrusted
// JSON object that the agent adapters (adapters/claude for Claude Code
// transcripts and hooks, adapters/codex for Codex rollouts) read their
// input with: a member of the wrong type reads as its zero value and adds
// a line naming its dotted path to the caller's problem list, so hostile
// input is refused the same way in every parser, and a fix to how it is
// refused lands once.
package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/events/jsonlex"
)

// InvalidUTF8 returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence, or -1 when b is valid UTF-8
// (jsonlex.InvalidUTF8).
func InvalidUTF8(b []byte) int { return jsonlex.InvalidUTF8(b) }

// Kind names the JSON type of raw: "object", "array", "string", "number",
// "boolean", "null", or "nothing" when raw is empty. It reads the first
// byte that is not white space, nothing more.
func Kind(raw []byte) string {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return kindName(c)
	}
	return "nothing"
}

// Object reads the members of one decoded JSON object leniently: an absent
// or null member reads as the zero value, and a member of another type
// than asked reads as the zero value and adds a line to *Probs naming its
// path ("field \"message.usage\": want object, got string"). An Object is
// a value; copies share M and Probs. One read from a Doc (Doc.Object,
// Scanned, and the objects within them) reads its members where they lie
// in the document's text, with the same results, and has M nil; its
// Raw values are slices of that text.
type Object struct {
	M     map[string]json.RawMessage // the members; nil reads as empty
	Path  string                     // dotted path of this object, "" at the top
	Probs *[]string                  // where type problems go; nil drops them

	// doc, when set, holds the members instead of M: the object is node
	// at of a parsed document (Doc.Object, Scanned).
	doc *Doc
	at  int32
}

// New decodes raw as an object at path. A non-object (other than null or
// absent) adds a problem and yields an empty object; ok is true only for
// an object.
func New(raw json.RawMessage, path string, probs *[]string) (o Object, ok bool) {
	o = Object{Path: path, Probs: probs}
	switch k := Kind(raw); k {
	case "object":
		if err := json.Unmarshal(raw, &o.M); err != nil {
			o.Problem("", "object", k)
			return o, false
		}
		return o, true
	case "null", "nothing":
		return o, false
	default:
		o.Problem("", "object", k)
		return o, false
	}
}

// At returns the dotted path of member key ("" for the object itself).
func (o Object) At(key string) string {
	switch {
	case key == "":
		return o.Path
	case o.Path == "":
		return key
	}
	return o.Path + "." + key
}

// Problem adds a line to *Probs: member key is not of the type wanted.
func (o Object) Problem(key, want, got string) {
	if o.Probs != nil {
		*o.Probs = append(*o.Probs, fmt.Sprintf("field %q: want %s, got %s", o.At(key), want, got))
	}
}

// node returns the document node of member key, or -1 when it is absent
// or null; ok is false when o is not read from a document.
func (o Object) node(key string) (i int32, ok bool) {
	if o.doc == nil {
		return -1, false
	}
	i = o.doc.member(o.at, key)
	if i >= 0 && o.doc.nodes[i].kind == 'n' {
		i = -1
	}
	return i, true
}

// Raw returns the member key, or nil when absent or null.
func (o Object) Raw(key string) json.RawMessage {
	if i, ok := o.node(key); ok {
		if i < 0 {
			return nil
		}
		return o.doc.raw(i)
	}
	r := o.M[key]
	if Kind(r) == "null" {
		return nil
	}
	return r
}

// Str returns the string member key.
func (o Object) Str(key string) string {
	if i, ok := o.node(key); ok {
		switch {
		case i < 0:
			return ""
		case o.doc.nodes[i].kind != '"':
			o.Problem(key, "string", kindName(o.doc.nodes[i].kind))
			return ""
		}
		return o.doc.text(i)
	}
	r := o.Raw(key)
	if r == nil {
		return ""
	}
	var s string
	if k := Kind(r); k != "string" || json.Unmarshal(r, &s) != nil {
		o.Problem(key, "string", k)
		return ""
	}
	return s
}

// Boolean returns the boolean member key.
func (o Object) Boolean(key string) bool {
	if i, ok := o.node(key); ok {
		if i < 0 {
			return false
		}
		switch k := o.doc.nodes[i].kind; k {
		case 't':
			return true
		case 'f':
			return false
		default:
			o.Problem(key, "boolean", kindName(k))
			return false
		}
	}
	r := o.Raw(key)
	if r == nil {
		return false
	}
	var v bool
	if k := Kind(r); k != "boolean" || json.Unmarshal(r, &v) != nil {
		o.Problem(key, "boolean", k)
		return false
	}
	return v
}

// Number returns the number member key as its JSON text ("" if absent).
func (o Object) Number(key string) string {
	r := o.Raw(key)
	if r == nil {
		return ""
	}
	if k := Kind(r); k != "number" {
		o.Problem(key, "number", k)
		return ""
	}
	return strings.TrimSpace(string(r))
}

// Obj returns the object member key; ok is false when it is absent, null
// or not an object.
func (o Object) Obj(key string) (Object, bool) {
	if i, ok := o.node(key); ok {
		c := Object{Path: o.At(key), Probs: o.Probs}
		switch {
		case i < 0:
			return c, false
		case o.doc.nodes[i].kind != '{':
			c.Problem("", "object", kindName(o.doc.nodes[i].kind))
			return c, false
		}
		c.doc, c.at = o.doc, i
		return c, true
	}
	return New(o.Raw(key), o.At(key), o.Probs)
}

// Arr returns the elements of the array member key.
func (o Object) Arr(key string) []json.RawMessage {
	if i, ok := o.node(key); ok {
		switch {
		case i < 0:
			return nil
		case o.doc.nodes[i].kind != '[':
			o.Problem(key, "array", kindName(o.doc.nodes[i].kind))
			return nil
		}
		var v []json.RawMessage
		for e := i + 1; e < o.doc.nodes[i].next; e = o.doc.nodes[e].next {
			v = append(v, o.doc.raw(e))
		}
		if v == nil {
			v = []json.RawMessage{}
		}
		return v
	}
	r := o.Raw(key)
	if r == nil {
		return nil
	}
	var v []json.RawMessage
	if k := Kind(r); k != "array" || json.Unmarshal(r, &v) != nil {
		o.Problem(key, "array", k)
		return nil
	}
	return v
}

// Objects yields the elements of the array member key that are objects,
// each read as New reads it at path "<key's path>[i]": an element of
// another type (null aside) adds a problem and is not yielded. A member
// that is not an array adds a problem, as Arr does, and yields nothing.
func (o Object) Objects(key string) iter.Seq[Object] {
	return func(yield func(Object) bool) {
		i, ok := o.node(key)
		if !ok {
			for n, raw := range o.Arr(key) {
				if c, ok := New(raw, o.At(key)+"["+strconv.Itoa(n)+"]", o.Probs); ok && !yield(c) {
					return
				}
			}
			return
		}
		switch {
		case i < 0:
			return
		case o.doc.nodes[i].kind != '[':
			o.Problem(key, "array", kindName(o.doc.nodes[i].kind))
			return
		}
		n := 0
		for e := i + 1; e < o.doc.nodes[i].next; e, n = o.doc.nodes[e].next, n+1 {
			switch k := o.doc.nodes[e].kind; k {
			case 'n':
			case '{':
				if !yield(Object{Path: o.At(key) + "[" + strconv.Itoa(n) + "]", Probs: o.Probs, doc: o.doc, at: e}) {
					return
				}
			default:
				c := Object{Path: o.At(key) + "[" + strconv.Itoa(n) + "]", Probs: o.Probs}
				c.Problem("", "object", kindName(k))
			}
		}
	}
}

// Quiet returns o reading into a throwaway problem list: for members
// whose shape is probed, not required.
func (o Object) Quiet() Object {
	o.Probs = new([]string)
	return o
}

// MarshalPlain encodes v as json.Marshal does, but with <, > and & left as
// they are rather than escaped to six bytes each (\u003c), and with no
// trailing newline. Its errors are json.Marshal's.
func MarshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
