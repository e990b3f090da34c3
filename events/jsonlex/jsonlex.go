// Package jsonlex is the project's one JSON lexer: the tokens of JSON
// text as RFC 8259 defines it (white space, strings, numbers, the
// literals true, false and null) read in place from a byte slice, and
// strings decoded as encoding/json decodes them. The three readers built
// on it — the registry's envelope scanner (events), the adapters' indexed
// documents (adapters/internal/jsonx) and the hook payload check
// (adapters/claude/hookspool) — keep their own grammar of objects and
// arrays, nesting limits and policies on top, and share these functions
// so that a string, a number or a UTF-8 rule is read one way everywhere.
//
// Every function takes the text b and an offset i into it and returns an
// offset, never a copy of the text: the caller owns b, and nothing here
// retains it. Offsets are byte offsets; an offset past a token is the
// index of its first byte after it. The functions allocate only where a
// decoded string is appended to a caller's buffer. They are pure and
// safe for concurrent use.
//
// Strictness beyond RFC 8259 is the caller's: String does not check
// UTF-8 (it reports bytes outside ASCII so a caller can, with
// utf8.Valid or InvalidUTF8), nor do any of these refuse duplicate names
// or deep nesting, which need the grammar around them. MaxDepth is the
// nesting limit the readers share with encoding/json.
package jsonlex

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that
// encoding/json accepts, 10,000 levels: a reader that must refuse the
// same texts as encoding/json refuses deeper ones.
const MaxDepth = 10000

// Space returns the index of the first byte of b at or after i that is
// not JSON white space (space, tab, line feed, carriage return; RFC 8259
// section 2), or len(b).
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Tables of the bytes a string holds as they are. ascii: printable ASCII
// other than '"' and '\\'. held: those and every byte of 0x80 or more.
// Both are read only.
var ascii, held = func() (a, h [256]bool) {
	for c := 0x20; c < 256; c++ {
		h[c] = c != '"' && c != '\\'
		a[c] = h[c] && c < utf8.RuneSelf
	}
	return a, h
}()

// Masks for the eight-bytes-at-a-time tests of plainASCII and plainHeld:
// a lane's bit in msb8 is set for a byte the test stops at, and the
// lowest set bit is exact (a borrow only sets bits above a lane that is
// already set).
const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// plainASCII returns the index of the first byte of b at or after i that
// is a quote, a backslash, a control byte or a byte of 0x80 or more, or
// len(b).
func plainASCII(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (lsb8 * '"')
		e := x ^ (lsb8 * '\\')
		if m := ((x-lsb8*0x20)&^x | (q-lsb8)&^q | (e-lsb8)&^e | x) & msb8; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(b) && ascii[b[i]] {
		i++
	}
	return i
}

// plainHeld is plainASCII passing over bytes of 0x80 or more.
func plainHeld(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (lsb8 * '"')
		e := x ^ (lsb8 * '\\')
		if m := ((x-lsb8*0x20)&^x | (q-lsb8)&^q | (e-lsb8)&^e) & msb8; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(b) && held[b[i]] {
		i++
	}
	return i
}

// String reads the JSON string whose opening quote is b[i] (RFC 8259
// section 7): no control byte (below 0x20) unescaped, and each escape one
// of \" \\ \/ \b \f \n \r \t or \u and four hex digits. It returns the
// index just past the closing quote; esc reports a backslash escape in
// the string, high a byte of 0x80 or more. Neither UTF-8 nor the pairing
// of \u surrogates is checked: a caller that requires valid UTF-8 checks
// the bytes when high is set, and Unquote reports a lone surrogate. ok is
// false for a string that is not well formed or not closed, and next is
// then the offset of the byte that ends it (len(b) when unclosed). It
// reads eight bytes at a time: until the first byte of 0x80 or more,
// stopping at it, and then passing over such bytes.
func String(b []byte, i int) (next int, esc, high, ok bool) {
	for i++; ; {
		if high {
			i = plainHeld(b, i)
		} else {
			i = plainASCII(b, i)
		}
		if i >= len(b) {
			return i, esc, high, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, high, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, high, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, esc, high, false
				}
				i += 6
			default:
				return i, esc, high, false
			}
		case c < 0x20:
			return i, esc, high, false
		default: // c >= utf8.RuneSelf
			high = true
			i++
		}
	}
}

// isHex4 reports whether h holds four hex digits, of either case.
func isHex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// hex4 returns the value of four hex digits, which isHex4 has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Number reads the JSON number that starts at b[i] (RFC 8259 section 6):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and returns the index
// just past it. A leading zero ends the number ("01" reads as 0 with
// "1" after it, which the grammar around refuses). ok is false when b[i:]
// does not start with a number.
func Number(b []byte, i int) (next int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	default:
		if i, ok = digits(b, i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(b, i+1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(b, i); !ok {
			return i, false
		}
	}
	return i, true
}

// digits returns the index past the digits at b[i:]; ok is false when
// there are none.
func digits(b []byte, i int) (int, bool) {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j, j > i
}

// Integer reads the JSON number at b[i] when it is an integer written as
// encoding/json reads it into a Go integer: -?(0|[1-9][0-9]*), not
// followed by a fraction, an exponent or another digit. It returns the
// index just past it; ok is false for anything else, including a number
// with a fraction or exponent. Its range is not checked.
func Integer(b []byte, i int) (next int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	d := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == d || b[d] == '0' && i-d > 1 {
		return i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return i, false
	}
	return i, true
}

// Literal reads word (true, false or null) at b[i] and returns the index
// just past it; ok is false when b[i:] does not start with word.
func Literal(b []byte, i int, word string) (next int, ok bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// InvalidUTF8 returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence (RFC 3629, as utf8.Valid reads it: no
// surrogates, no overlong forms), or -1 when b is valid UTF-8.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// Unquote appends to dst the text of the inside of a JSON string (its
// bytes between the quotes, which String has read as well formed), as
// encoding/json decodes it: escapes resolved, a \u surrogate pair joined,
// a lone or broken surrogate escape and each byte of invalid UTF-8 as
// U+FFFD. It returns the extended buffer, as append does (it may share
// dst's memory; inner is only read); lossy reports that a U+FFFD stood
// for a lone surrogate or an invalid byte, which a strict reader refuses.
//
// max ≥ 0 stops the decoding once the text appended is longer than max
// bytes: the text is then a prefix of the decoded string, longer than
// max, and possibly cut inside a character; max < 0 decodes it all.
func Unquote(dst, inner []byte, max int) (out []byte, lossy bool) {
	base := len(dst)
	for i := 0; i < len(inner) && (max < 0 || len(dst)-base <= max); {
		c := inner[i]
		if c != '\\' {
			// A run of ASCII, copied at once (up to max+1 bytes in all).
			j := i
			for j < len(inner) && inner[j] != '\\' && inner[j] < utf8.RuneSelf {
				j++
			}
			if j > i {
				if max >= 0 {
					j = min(j, i+max+1-(len(dst)-base))
				}
				dst = append(dst, inner[i:j]...)
				i = j
				continue
			}
			// One character outside ASCII, or a byte of invalid UTF-8.
			r, n := utf8.DecodeRune(inner[i:])
			if r == utf8.RuneError && n == 1 {
				dst, lossy = utf8.AppendRune(dst, utf8.RuneError), true
			} else {
				dst = append(dst, inner[i:i+n]...)
			}
			i += n
			continue
		}
		switch e := inner[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(inner[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(inner) && inner[i] == '\\' && inner[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(inner[i+2:i+6])); d != utf8.RuneError {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
				}
				r, lossy = utf8.RuneError, true
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst, lossy
}
