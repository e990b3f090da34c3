package cut

import "testing"

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 3, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"éé", 3, "é"}, {"é", 0, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestTextAndQuote(t *testing.T) {
	if got := Text("hello world foo", 13); got != "hello world" {
		t.Errorf("Text = %q, want the cut at the last space", got)
	}
	if got := QuoteJSON("a\"\\\n\x01\xff<"); got != `"a\"\\\n\u0001\ufffd<"` {
		t.Errorf("QuoteJSON = %s", got)
	}
}
