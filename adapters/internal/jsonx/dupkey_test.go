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
