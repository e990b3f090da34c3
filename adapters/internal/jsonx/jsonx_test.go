package jsonx

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestObject: members of the asked type read; any other type reads as
// the zero value and is named by its dotted path; absent and null read
// as zero without a problem; Quiet drops problems.
func TestObject(t *testing.T) {
	var probs []string
	o, ok := New(json.RawMessage(`{"s":"x","n":12,"b":true,"o":{"s":5,"a":[1,2]},"a":"no","z":null}`), "", &probs)
	if !ok {
		t.Fatal("not an object")
	}
	in, ok := o.Obj("o")
	if o.Str("s") != "x" || o.Number("n") != "12" || !o.Boolean("b") || !ok || len(in.Arr("a")) != 2 || o.Raw("z") != nil || o.Str("absent") != "" {
		t.Fatalf("reads: %+v", o)
	}
	if len(probs) != 0 {
		t.Fatalf("problems reading good members: %q", probs)
	}
	_ = in.Str("s")
	_ = o.Arr("a")
	_ = o.Number("s")
	_ = o.Quiet().Boolean("n")
	if _, ok := o.Obj("s"); ok {
		t.Error(`"s" read as an object`)
	}
	want := []string{
		`field "o.s": want string, got number`,
		`field "a": want array, got string`,
		`field "s": want number, got string`,
		`field "s": want object, got string`,
	}
	if !slices.Equal(probs, want) {
		t.Errorf("problems %q, want %q", probs, want)
	}
	for raw, k := range map[string]string{"": "nothing", " \n[1]": "array", `"x"`: "string", "-1": "number", "false": "boolean", "null": "null", "{}": "object"} {
		if got := Kind([]byte(raw)); got != k {
			t.Errorf("Kind(%q) = %s, want %s", raw, got, k)
		}
	}
	if _, ok := New(json.RawMessage(`[1]`), "p", nil); ok { // nil Probs drops the problem
		t.Error("an array read as an object")
	}
}
