package jsonfault

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestFault: each kind of encoding/json error on a text is said with the
// line and column it lies at.
func TestFault(t *testing.T) {
	type shape struct {
		Version int               `json:"version"`
		Models  map[string]string `json:"models"`
	}
	for name, c := range map[string]struct{ text, want string }{
		"syntax":        {"{\"version\": 1,\n models: {}}", "not valid JSON at line 2, column 2: invalid character 'm' looking for beginning of object key string"},
		"ends early":    {"{\n \"version\": 1", "not valid JSON at line 2, column 14: the text ends before the table does"},
		"empty":         {"", "not valid JSON at line 1, column 1: the text ends before the table does"},
		"wrong type":    {"{\n\"version\": \"1\"}", `line 2, column 14: "version" is a JSON string, want int`},
		"nested type":   {"{\"models\": {\"a\": 5}}", `line 1, column 18: "models" is a JSON number, want string`},
		"unknown":       {"{\n \"modles\":{}}", `line 2, column 2: unknown member "modles"`},
		"trailing text": {"{} x", ""},
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(c.text)))
		dec.DisallowUnknownFields()
		var s shape
		err := dec.Decode(&s)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if got := Fault([]byte(c.text), err, "the table").Error(); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
		if UnknownMember(err) != (name == "unknown") {
			t.Errorf("%s: UnknownMember = %v", name, !(name == "unknown"))
		}
	}
	// json.Unmarshal reports a text that ends early as a syntax error.
	var s shape
	b := []byte("{\n \"version\": 1")
	err := json.Unmarshal(b, &s)
	if got, want := Fault(b, err, "").Error(), "not valid JSON at line 2, column 13: unexpected end of JSON input"; got != want {
		t.Errorf("Unmarshal: %q, want %q", got, want)
	}
}

// TestFault_ByteOrderMark: a text saved with a UTF-8 byte order mark is
// told so, not "invalid character 'ï'".
func TestFault_ByteOrderMark(t *testing.T) {
	b := []byte("\xef\xbb\xbf{\"hooks\": {}}")
	var v map[string]any
	err := Fault(b, json.Unmarshal(b, &v), "")
	if err == nil || !strings.Contains(err.Error(), "line 1, column 1: the text starts with a UTF-8 byte order mark") {
		t.Errorf("Fault = %v", err)
	}
}
