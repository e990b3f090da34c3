package jsonx

import "testing"

// TestDuplicateKey: a repeated member name is found at any depth and
// named by its path; escapes are decoded before names compare; fold
// compares names as encoding/json matches struct fields; distinct
// names, repeats in different objects and invalid text report none.
func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		src  string
		fold bool
		want string
	}{
		{`{"session_id":"s1","session_id":"s2","hook_event_name":"Stop"}`, false, "session_id"},
		{`{"a":1,"\u0061":2}`, false, "a"},
		{`{"harness":"h","Harness":"evil"}`, true, "Harness"},
		{`{"harness":"h","Harness":"evil"}`, false, ""},
		{`{"meta":{"model":"a","model":"b"}}`, false, "meta.model"},
		{`{"signals":[{"kind":"x"},{"kind":"y","kind":"z"}]}`, false, "signals[1].kind"},
		{`{"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]}`, false, ""},
		{`[{"a":1},{"a":2}]`, false, ""},
		{`{"a":1,"a"`, false, ""},
		{`"text"`, false, ""},
	} {
		got, found := DuplicateKey([]byte(c.src), c.fold)
		if got != c.want || found != (c.want != "") {
			t.Errorf("DuplicateKey(%s, %v) = %q, %v; want %q", c.src, c.fold, got, found, c.want)
		}
	}
}

// TestDocDuplicateKey: a parsed document finds the same duplicate as
// DuplicateKey without fold, in objects small and large (past the
// members it compares pairwise), escapes decoded, at any depth.
func TestDocDuplicateKey(t *testing.T) {
	big := func(dup string) string {
		s := `{"x":{`
		for i := range 100 {
			s += `"k` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":1,`
		}
		return s + `"` + dup + `":2}}`
	}
	for _, c := range []struct{ src, want string }{
		{`{"type":"user","type":"assistant","message":{"role":"user","content":"hi"}}`, "type"},
		{`{"a":1,"\u0061":2}`, "a"},
		{`{"é":1,"\u00e9":2}`, "é"},
		{`{"harness":"h","Harness":"evil"}`, ""},
		{`{"message":{"content":[{"type":"text"},{"type":"text","text":"a","text":"b"}]}}`, "message.content[1].text"},
		{`{"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]}`, ""},
		{big("k42"), "x.k42"},
		{big("k99x"), ""},
		{`{}`, ""},
	} {
		d, ok := Parse([]byte(c.src))
		if !ok {
			t.Fatalf("Parse(%s) failed", c.src)
		}
		got, found := d.DuplicateKey()
		if got != c.want || found != (c.want != "") {
			t.Errorf("Doc.DuplicateKey(%s) = %q, %v; want %q", c.src, got, found, c.want)
		}
		if w, _ := DuplicateKey([]byte(c.src), false); w != got {
			t.Errorf("%s: Doc.DuplicateKey %q, DuplicateKey %q", c.src, got, w)
		}
	}
}
