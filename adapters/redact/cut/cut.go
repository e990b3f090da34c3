// Package cut cuts text and writes JSON strings without the redaction
// rules: the part of package redact that a hook process needs to cut an
// over-cap payload (adapters/claude/hookspool.PrepareHook), kept apart so
// that it links no rule set. Package redact calls it (redact.CutText,
// redact.QuoteJSON, redact.CutStrings).
package cut

import (
	"strings"
	"unicode/utf8"
)

// Text returns text cut to at most max bytes: text itself when it is at
// most max bytes; else at the last space, newline or punctuation in the
// final quarter of its first max bytes, so no token is left half, else on
// the rune boundary at or before max. text must be valid UTF-8; a caller
// that has only a prefix of a longer text may pass any prefix of more
// than max bytes and gets the same cut.
func Text(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if i := strings.LastIndexAny(text[:cut], " \t\r\n,;:()[]{}<>\"'"); i >= max*3/4 {
		cut = i
	}
	return text[:cut]
}

// Prefix returns the longest prefix of s that is at most n bytes and ends
// on a rune boundary (n ≥ 0).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// QuoteJSON returns s as a JSON string, canonically: '"', '\\' and
// control characters escaped (\n, \r, \t, \b, \f, else \u00XX), every
// other character as itself (no HTML escaping), an invalid UTF-8 byte as
// \ufffd.
func QuoteJSON(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	WriteJSON(&b, s)
	return b.String()
}

// WriteJSON writes s to b as a JSON string, canonically, as QuoteJSON
// returns it.
func WriteJSON(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}
