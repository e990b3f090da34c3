package words

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		pl   []string
		want string
	}{
		{0, "line", nil, "0 lines"},
		{1, "line", nil, "1 line"},
		{2, "byte", nil, "2 bytes"},
		{-1, "file", nil, "-1 files"},
		{1, "entry", []string{"entries"}, "1 entry"},
		{3, "entry", []string{"entries"}, "3 entries"},
	} {
		if got := Plural(c.n, c.noun, c.pl...); got != c.want {
			t.Errorf("Plural(%d, %q, %q) = %q, want %q", c.n, c.noun, c.pl, got, c.want)
		}
	}
}
