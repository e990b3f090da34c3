package replay

import "testing"

// TestQuote: Go's quoting, but a control Go names by a letter is shown
// as Escape shows it; an escaped backslash before a letter stays one.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":         `"plain"`,
		"a b":           `"a b"`,
		"bell\a":        `"bell\x07"`,
		"\b\f\v":        `"\x08\x0c\x0b"`,
		`back\a` + "\a": `"back\\a\x07"`,
		"tab\tnl\n\x1b": `"tab\tnl\n\x1b"`,
		`"q"` + "\a":    `"\"q\"\x07"`,
		"\u202e\a":      `"\u202e\x07"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
		if Escape("\a") != `\x07` {
			t.Fatalf("Escape shows a bell as %s", Escape("\a"))
		}
	}
}
