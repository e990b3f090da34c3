package claude

import (
	"encoding/json"
	"strings"

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

// newObject decodes raw as an object at path (jsonx.New).
func newObject(raw json.RawMessage, path string, probs *[]string) (object, bool) {
	o, ok := jsonx.New(raw, path, probs)
	return object{o}, ok
}

func (o object) at(key string) string             { return o.At(key) }
func (o object) problem(key, want, got string)    { o.Problem(key, want, got) }
func (o object) raw(key string) json.RawMessage   { return o.Raw(key) }
func (o object) str(key string) string            { return o.Str(key) }
func (o object) boolean(key string) bool          { return o.Boolean(key) }
func (o object) number(key string) string         { return o.Number(key) }
func (o object) arr(key string) []json.RawMessage { return o.Arr(key) }
func (o object) quiet() object                    { return object{o.Quiet()} }
func (o object) obj(key string) (object, bool)    { c, ok := o.Obj(key); return object{c}, ok }

// textOf returns the text of a content value: a string, or the "text" of
// each text block of an array, joined by newlines.
func textOf(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
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
