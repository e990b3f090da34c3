package codex

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// jsonKind names the JSON type of raw: "object", "array", "string",
// "number", "boolean", "null", or "nothing" when raw is empty.
func jsonKind(raw []byte) string {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
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
		default:
			return "number"
		}
	}
	return "nothing"
}

// object reads members of a decoded JSON object leniently: an absent or
// null member reads as the zero value; a member of another type than
// asked reads as the zero value and adds a line to *probs naming it.
type object struct {
	m     map[string]json.RawMessage
	path  string
	probs *[]string
}

func (o object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o object) problem(key, want, got string) {
	if o.probs != nil {
		*o.probs = append(*o.probs, fmt.Sprintf("field %q: want %s, got %s", o.at(key), want, got))
	}
}

func (o object) raw(key string) json.RawMessage {
	r := o.m[key]
	if jsonKind(r) == "null" {
		return nil
	}
	return r
}

func (o object) str(key string) string {
	r := o.raw(key)
	if r == nil {
		return ""
	}
	var s string
	if k := jsonKind(r); k != "string" || json.Unmarshal(r, &s) != nil {
		o.problem(key, "string", k)
		return ""
	}
	return s
}

// number returns the number member key as its JSON text ("" if absent).
func (o object) number(key string) string {
	r := o.raw(key)
	if r == nil {
		return ""
	}
	if k := jsonKind(r); k != "number" {
		o.problem(key, "number", k)
		return ""
	}
	return strings.TrimSpace(string(r))
}

func (o object) obj(key string) (object, bool) {
	r := o.raw(key)
	c := object{path: o.at(key), probs: o.probs}
	switch k := jsonKind(r); k {
	case "object":
		if json.Unmarshal(r, &c.m) == nil {
			return c, true
		}
		o.problem(key, "object", k)
	case "null", "nothing":
	default:
		o.problem(key, "object", k)
	}
	return c, false
}

// quiet returns o reading into a throwaway problem list, for members
// whose shape is probed, not required.
func (o object) quiet() object {
	o.probs = new([]string)
	return o
}

// contentText returns the text of a content value: a string, or the
// "text" of each element of an array of content items (input_text,
// output_text, text, Text), joined by newlines.
func contentText(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
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
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
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
	for f := range ch.m {
		files = append(files, f)
	}
	sort.Strings(files)
	return strings.Join(files, " ")
}
