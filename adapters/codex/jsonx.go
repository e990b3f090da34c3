package codex

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
)

// jsonKind names the JSON type of raw (jsonx.Kind).
func jsonKind(raw []byte) string { return jsonx.Kind(raw) }

// stringOf returns raw, a JSON string, decoded; "" if it is not one.
func stringOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// object is the parser's strict reader of one untrusted JSON object
// (jsonx.Object) under the names the parser uses.
type object struct{ jsonx.Object }

// objectOf returns the reader of the decoded members m, at the top, its
// problems going to probs.
func objectOf(m map[string]json.RawMessage, probs *[]string) object {
	return object{jsonx.Object{M: m, Probs: probs}}
}

func (o object) at(key string) string           { return o.At(key) }
func (o object) raw(key string) json.RawMessage { return o.Raw(key) }
func (o object) str(key string) string          { return o.Str(key) }
func (o object) number(key string) string       { return o.Number(key) }
func (o object) quiet() object                  { return object{o.Quiet()} }
func (o object) obj(key string) (object, bool)  { c, ok := o.Obj(key); return object{c}, ok }

// contentText returns the text of a content value: a string, or the
// "text" of each element of an array of content items (input_text,
// output_text, text, Text), joined by newlines.
func contentText(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "string":
		return stringOf(raw)
	case "array":
		var elems []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &elems) != nil {
			var any []json.RawMessage
			if json.Unmarshal(raw, &any) != nil {
				return ""
			}
			var parts []string
			for _, e := range any {
				if s := contentText(e); s != "" {
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, "\n")
		}
		var parts []string
		for _, e := range elems {
			if e.Text != "" {
				parts = append(parts, e.Text)
			}
		}
		return strings.Join(parts, "\n")
	case "object":
		var e struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &e)
		return e.Text
	}
	return ""
}

// outputText returns the text of a tool output: a string, an array of
// content items, or an object {content | output, …} (legacy outputs are
// JSON text {"output", "metadata": {"exit_code"}}, read as they are).
func outputText(raw json.RawMessage) string {
	if jsonKind(raw) == "object" {
		var v struct {
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(raw, &v)
		if v.Content != nil {
			return contentText(v.Content)
		}
		return contentText(v.Output)
	}
	return contentText(raw)
}

// commandText returns a command as one line: a string, or an argv array
// joined by spaces (the "bash -lc <script>" wrapper dropped).
func commandText(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "string":
		return stringOf(raw)
	case "array":
		var argv []string
		if json.Unmarshal(raw, &argv) != nil {
			return ""
		}
		if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2]
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// patchText names the files an apply_patch approval request would change.
func patchText(pl object) string {
	ch, ok := pl.quiet().obj("changes")
	if !ok {
		return pl.quiet().str("reason")
	}
	var files []string
	for f := range ch.M {
		files = append(files, f)
	}
	sort.Strings(files)
	return strings.Join(files, " ")
}
