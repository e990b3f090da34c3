package replay

import (
	"fmt"
	"strconv"
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

// appendEscape appends Escape(s) to b, without allocating when s is
// printable ASCII throughout (then Escape(s) is s).
func appendEscape(b []byte, s string) []byte {
	if !printableASCII(s) {
		return append(b, Escape(s)...)
	}
	return append(b, s...)
}

// printableASCII reports whether every byte of s is printable ASCII
// (0x20–0x7e). It looks at eight bytes at a time: an audit's text is
// mostly such fields, and a byte loop over them was a tenth of its
// rendering.
func printableASCII(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// The high bit of a byte is set in w for a byte ≥ 0x80, in
		// w+ones for 0x7f (no byte below it carries), and in
		// (w-0x20…)&^w for a byte below 0x20 (a borrow only follows
		// such a byte, so a word without one never shows one).
		if (w|(w+ones)|((w-0x20*ones)&^w))&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
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

// Quote returns s double-quoted as strconv.Quote quotes it (Go syntax:
// every character that is not printable escaped, `\` and `"` too), but
// for the controls Go names by a letter (\a, \b, \f, \v), which it
// shows as Escape does (\x07, \x08, \x0c, \x0b): a bell reads the same
// in a quoted field as in any other.
func Quote(s string) string {
	q := strconv.Quote(s)
	if !strings.ContainsAny(s, "\a\b\f\v") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	for i := 0; i < len(q); i++ {
		if q[i] != '\\' || i+1 == len(q) {
			b.WriteByte(q[i])
			continue
		}
		i++
		switch q[i] {
		case 'a':
			b.WriteString(`\x07`)
		case 'b':
			b.WriteString(`\x08`)
		case 'f':
			b.WriteString(`\x0c`)
		case 'v':
			b.WriteString(`\x0b`)
		default: // an escape of its own: kept whole
			b.WriteByte('\\')
			b.WriteByte(q[i])
		}
	}
	return b.String()
}
