package term

import "testing"

// TestLines: an error message's escape sequences show as text, its own
// line breaks stay.
func TestLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"/tmp/pr\x1b[31moj: no such file", `/tmp/pr\x1b[31moj: no such file`},
		{"first\nsecond \x1b]0;title\x07", `first` + "\n" + `second \x1b]0;title\x07`},
		{"Did you mean this?\n\tclaude\n", "Did you mean this?\n\tclaude\n"},
	} {
		if got := Lines(c.in); got != c.want {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
