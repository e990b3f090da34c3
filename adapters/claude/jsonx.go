package claude

import (
	"encoding/json"
	"fmt"
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
// null member reads as the zero value, and a member of another type than
// asked reads as the zero value and adds a line to *probs naming its path.
type object struct {
	m     map[string]json.RawMessage
	path  string    // dotted path of this object, "" at the top
	probs *[]string // where type problems go; never nil
}

// newObject decodes raw as an object at path. A non-object (other than
// null or absent) adds a problem and yields an empty object.
func newObject(raw json.RawMessage, path string, probs *[]string) (object, bool) {
	o := object{path: path, probs: probs}
	switch k := jsonKind(raw); k {
	case "object":
		if err := json.Unmarshal(raw, &o.m); err != nil {
			o.problem("", "object", k)
			return o, false
		}
		return o, true
	case "null", "nothing":
		return o, false
	default:
		o.problem("", "object", k)
		return o, false
	}
}

func (o object) at(key string) string {
	switch {
	case key == "":
		return o.path
	case o.path == "":
		return key
	}
	return o.path + "." + key
}

func (o object) problem(key, want, got string) {
	*o.probs = append(*o.probs, fmt.Sprintf("field %q: want %s, got %s", o.at(key), want, got))
}

// raw returns the member key, or nil when absent or null.
func (o object) raw(key string) json.RawMessage {
	r := o.m[key]
	if jsonKind(r) == "null" {
		return nil
	}
	return r
}

// str returns the string member key.
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

// boolean returns the boolean member key.
func (o object) boolean(key string) bool {
	r := o.raw(key)
	if r == nil {
		return false
	}
	var v bool
	if k := jsonKind(r); k != "boolean" || json.Unmarshal(r, &v) != nil {
		o.problem(key, "boolean", k)
		return false
	}
	return v
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

// obj returns the object member key; ok is false when it is absent, null
// or not an object.
func (o object) obj(key string) (object, bool) {
	return newObject(o.raw(key), o.at(key), o.probs)
}

// arr returns the elements of the array member key.
func (o object) arr(key string) []json.RawMessage {
	r := o.raw(key)
	if r == nil {
		return nil
	}
	var v []json.RawMessage
	if k := jsonKind(r); k != "array" || json.Unmarshal(r, &v) != nil {
		o.problem(key, "array", k)
		return nil
	}
	return v
}

// quiet returns o reading into a throwaway problem list: for members
// whose shape is probed, not required (a tool's result).
func (o object) quiet() object {
	o.probs = new([]string)
	return o
}

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
