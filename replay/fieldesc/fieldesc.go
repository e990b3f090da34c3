// Package fieldesc escapes a field of a line of text output so that it
// takes one line and cannot rewrite or reorder what a terminal shows. It
// imports only fmt, strings and unicode/utf8, so that logbook-hook,
// which starts for every hook event, links it without package replay,
// whose Escape it is.
package fieldesc

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s, a field of a line of text output, with every
// character that could end the line, rewrite it on a terminal or reorder
// it shown escaped: the C0 controls (tab, newline and carriage return as
// \t, \n, \r; the rest as \x1b …), DEL, the C1 controls (U+0080–U+009F),
// the line and paragraph separators (U+2028, U+2029), the bidirectional
// marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) and bytes that are not UTF-8 (\xNN). Every
// other character, a backslash included, passes unchanged, so a field
// without such characters prints as it is stored. A field printed through
// Escape takes one line whatever an agent or a person put in it: the log
// keeps what was said, the text shows it without obeying it.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether r, decoded from size bytes, is one Escape
// shows escaped.
func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
