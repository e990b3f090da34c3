package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadFirstRecord judges a file by its first line that is not blank:
// text and binary data are no JSON object, a torn or damaged object
// shows the keys before it stops, a whole one all of them.
func TestReadFirstRecord(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body    string
		line          int
		object, whole bool
		keys          string
		notObject     string
	}{
		{"empty", "", 0, false, false, "", ""},
		{"blank", "\n  \n", 0, false, false, "", ""},
		{"text", "not json at all\n", 1, false, false, "", "its first line is not a JSON object (it begins with a letter)"},
		{"binary", "\x00\x01\xffPK\x03\x04", 1, false, false, "", "its first line is not a JSON object (binary data)"},
		{"whole", "\n{\"type\":\"user\",\"x\":{\"type\":1}}\n", 2, true, true, "type,x", ""},
		{"damaged", "{\"type\":\"user\",\n", 1, true, false, "type", ""},
		{"pretty", "{\n  \"user\": \"u\"\n}\n", 1, true, false, "", ""},
		{"torn", "{\"parentUuid\":null,\"ty", 1, true, false, "parentUuid", ""},
	} {
		p := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := ReadFirstRecord(p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Line != c.line || r.Object != c.object || r.Whole != c.whole || strings.Join(r.Keys, ",") != c.keys || r.NotObject() != c.notObject {
			t.Errorf("%s: got line %d object %v whole %v keys %q notObject %q", c.name, r.Line, r.Object, r.Whole, r.Keys, r.NotObject())
		}
	}
}
