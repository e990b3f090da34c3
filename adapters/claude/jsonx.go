package claude

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
)

// jsonKind names the JSON type of raw (jsonx.Kind).
func jsonKind(raw []byte) string { return jsonx.Kind(raw) }

// object is the parsers' strict reader of one untrusted JSON object
// (jsonx.Object) under the names the parsers use.
type object struct{ jsonx.Object }

// objectOf returns the reader of the decoded members m, at the top, its
// problems going to probs.
func objectOf(m map[string]json.RawMessage, probs *[]string) object {
	return object{jsonx.Object{M: m, Probs: probs}}
}

// newObject reads raw as an object at path (jsonx.Scanned: as jsonx.New
// does).
func newObject(raw json.RawMessage, path string, probs *[]string) (object, bool) {
	if decodeMaps.Load() {
		o, ok := jsonx.New(raw, path, probs)
		return object{o}, ok
	}
	o, ok := jsonx.Scanned(raw, path, probs)
	return object{o}, ok
}

// decodeMaps, when set, makes the parsers decode JSON into maps with
// encoding/json, as they did before they read it in one pass: the
// reference the tests hold the one-pass reading to.
var decodeMaps atomic.Bool

// lineObject reads the transcript line b as one JSON object, its problems
// going to probs. On failure it returns decodeObject's column and error
// (wrapping ErrInvalidUTF8, ErrSyntax or ErrNotObject): the text of every
// such refusal is encoding/json's; a line that names a member twice in
// one object, at any depth, is refused with ErrDuplicateKey naming its
// path (column 0). A line is read in one pass into d
// (jsonx.Doc.Parse) where it can be; the decoded members are the same
// either way. The object reads d: it must not be used once d is reused.
func lineObject(b []byte, d *jsonx.Doc, probs *[]string) (object, int, error) {
	if !decodeMaps.Load() && utf8.Valid(b) && d.Parse(b) {
		if o, ok := d.Object("", probs); ok {
			if k, dup := d.DuplicateKey(); dup {
				return object{}, 0, duplicateKey(k)
			}
			return object{o}, 0, nil
		}
	}
	top, col, err := decodeObject(b)
	if err != nil {
		return object{}, col, err
	}
	if k, dup := jsonx.DuplicateKey(b, false); dup {
		return object{}, 0, duplicateKey(k)
	}
	return objectOf(top, probs), 0, nil
}

// duplicateKey is the error of a line that names the member at path k
// twice in one object: a reader keeps one value and the line holds both,
// so the line is refused, as a hook payload that does is.
func duplicateKey(k string) error {
	return fmt.Errorf("%w %q: the object names it more than once", ErrDuplicateKey, k)
}

// lineDocs holds the documents transcript lines are read into, reused
// from line to line.
var lineDocs = sync.Pool{New: func() any { return new(jsonx.Doc) }}

// maxPooledDoc is the most values a document may have room for and go
// back to lineDocs: one of a huge line is left to the collector.
const maxPooledDoc = 1 << 16

// strOf returns the text of raw, a JSON string, as json.Unmarshal decodes
// it, or "" when raw is not one.
func strOf(raw []byte) string {
	if n := len(raw); !decodeMaps.Load() && n >= 2 && raw[0] == '"' && raw[n-1] == '"' && jsonx.Valid(raw) {
		return jsonx.Unquote(raw)
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func (o object) at(key string) string             { return o.At(key) }
func (o object) problem(key, want, got string)    { o.Problem(key, want, got) }
func (o object) raw(key string) json.RawMessage   { return o.Raw(key) }
func (o object) str(key string) string            { return o.Str(key) }
func (o object) boolean(key string) bool          { return o.Boolean(key) }
func (o object) number(key string) string         { return o.Number(key) }
func (o object) arr(key string) []json.RawMessage { return o.Arr(key) }
func (o object) objects(key string) iter.Seq[object] {
	return func(yield func(object) bool) {
		for c := range o.Objects(key) {
			if !yield(object{c}) {
				return
			}
		}
	}
}
func (o object) quiet() object                 { return object{o.Quiet()} }
func (o object) obj(key string) (object, bool) { c, ok := o.Obj(key); return object{c}, ok }

// textOf returns the text of a content value: a string, or the "text" of
// each text block of an array, joined by newlines.
func textOf(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "string":
		return strOf(raw)
	case "array":
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return ""
		}
		var parts []string
		for _, e := range elems {
			var b struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(e, &b) == nil && b.Type == "text" && b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
