package replay

import (
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/replay/fieldesc"
)

// Escape returns s, a field of a line of text output, with every
// character that could end the line, rewrite it on a terminal or reorder
// it shown escaped: fieldesc.Escape, which says which and how.
func Escape(s string) string { return fieldesc.Escape(s) }

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
