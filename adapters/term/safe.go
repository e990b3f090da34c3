package term

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/replay"
)

// Terminal output is hostile: a command's output, a session's title or an
// argv can carry escape sequences that set the window title, write the
// clipboard (OSC 52), plant hyperlinks, move the cursor or hide text. What
// Logbook prints to a terminal passes through Sanitize, which follows
// ECMA-48 (5th edition) for the shape of sequences:
//
//   - CSI (ESC [ … final byte), OSC (ESC ] … BEL or ST), DCS, SOS, PM and
//     APC strings (ESC P, X, ^, _ … ST) and other escape sequences are
//     removed whole;
//   - every other C0 control but newline and tab, a carriage return not
//     followed by a newline, DEL, the C1 controls (U+0080–U+009F), the
//     bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069)
//     and bytes that are not UTF-8 are shown escaped, as \r, \x07, \u202e;
//   - everything else passes unchanged.
//
// A verb's --raw and --json give the exact bytes instead.

// maxSeq bounds an escape sequence or control string held back while it is
// incomplete; a longer one is dropped as far as it got.
const maxSeq = 4096

// Sanitize appends src to dst made safe for a terminal and returns it,
// with the tail of src that may be the start of a sequence or character
// completed by the next piece (nil when final: then an incomplete tail is
// removed if it is a sequence and escaped if it is text).
func Sanitize(dst, src []byte, final bool) (out, rest []byte) {
	i := 0
	for i < len(src) {
		b := src[i]
		if b >= 0x20 && b < 0x7f {
			// A run of printable ASCII goes as it is, in one append.
			j := i + 1
			for j < len(src) && src[j] >= 0x20 && src[j] < 0x7f {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		switch {
		case b == 0x1b:
			n, complete := escapeLen(src[i:])
			if !complete && !final && len(src)-i < maxSeq {
				return dst, src[i:]
			}
			i += n
		case b == '\n' || b == '\t':
			dst = append(dst, b)
			i++
		case b == '\r':
			if i+1 == len(src) && !final {
				return dst, src[i:]
			}
			if i+1 < len(src) && src[i+1] == '\n' {
				dst = append(dst, '\r', '\n')
				i += 2
				continue
			}
			dst = append(dst, `\r`...)
			i++
		case b < 0x20 || b == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, b)
			i++
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				if !final && !utf8.FullRune(src[i:]) {
					return dst, src[i:]
				}
				dst = fmt.Appendf(dst, `\x%02x`, b)
				i++
				continue
			}
			if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				dst = fmt.Appendf(dst, `\u%04x`, r)
			} else {
				dst = append(dst, src[i:i+size]...)
			}
			i += size
		}
	}
	return dst, nil
}

// escapeLen returns the length of the escape sequence at the start of s
// (s[0] is ESC) and whether it is complete within s.
func escapeLen(s []byte) (int, bool) {
	if len(s) < 2 {
		return len(s), false
	}
	switch s[1] {
	case '[': // CSI: parameter and intermediate bytes, then a final byte
		for i := 2; i < len(s); i++ {
			switch c := s[i]; {
			case c >= 0x20 && c <= 0x3f:
			case c >= 0x40 && c <= 0x7e:
				return i + 1, true
			default:
				return i, true // malformed: drop what came so far, keep c
			}
		}
		return len(s), false
	case ']', 'P', 'X', '^', '_': // control strings, to BEL (OSC) or ST
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1, true
			}
			if s[i] == 0x1b {
				if i+1 == len(s) {
					return len(s), false
				}
				if s[i+1] == '\\' {
					return i + 2, true
				}
			}
		}
		return len(s), false
	}
	// nF / Fp / Fe / Fs: intermediate bytes, then one final byte.
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x20 && c <= 0x2f:
		case c >= 0x30 && c <= 0x7e:
			return i + 1, true
		default:
			return i, true
		}
	}
	return len(s), false
}

// Safe returns s made safe for a terminal (see Sanitize).
func Safe(s string) string {
	out, _ := Sanitize(nil, []byte(s), true)
	return string(out)
}

// Writer is an io.Writer that passes what it is given to w made safe
// for a terminal, a sequence split across writes included. Close writes
// what is held back. Not safe for concurrent use.
type Writer struct {
	w    io.Writer
	pend []byte
	buf  []byte
}

// NewWriter returns a Writer passing its text to w, which it never closes.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sanitizes p and writes the result; it reports len(p) on success.
func (t *Writer) Write(p []byte) (int, error) {
	src := p
	if len(t.pend) > 0 {
		src = append(t.pend, p...)
	}
	var rest []byte
	t.buf, rest = Sanitize(t.buf[:0], src, false)
	t.pend = append(t.pend[:0:0], rest...)
	if len(t.buf) > 0 {
		if _, err := t.w.Write(t.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes what Write held back, as if the input ended there. It does
// not close w.
func (t *Writer) Close() error {
	if len(t.pend) == 0 {
		return nil
	}
	out, _ := Sanitize(nil, t.pend, true)
	t.pend = nil
	if len(out) == 0 {
		return nil
	}
	_, err := t.w.Write(out)
	return err
}

// Print runs print on a writer that passes its text to w made safe for
// a terminal: for tables and reports whose fields come from the log. The
// text reaches w in writes of up to 64 KiB, not one per line: a table of
// 10,000s of rows is not 10,000s of system calls.
func Print(w io.Writer, print func(io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := NewWriter(bw)
	err := print(tw)
	return Flushed(errors.Join(err, tw.Close()), bw)
}

// Flushed returns err when it is not nil, else bw's Flush: a write that
// failed through bw (a full disk, a closed pipe) is failed once, not a
// second time by the Flush that would report the same error again.
func Flushed(err error, bw *bufio.Writer) error {
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Table is a table of tab-separated cells (widthTabber) whose cells are
// measured as they are printed: what is written passes Sanitize
// before a cell's width is taken (in terminal columns: DisplayWidth), so
// a field holding escape sequences or controls lines up by its escaped
// form, and one holding CJK, emoji or combining marks by the columns it
// takes. Fields from the log go through Cell, which keeps a tab or
// newline in them from splitting a cell or a row. Flush ends the table.
// Not safe for concurrent use.
type Table struct {
	tw   *widthTabber
	safe *Writer
}

// NewTable returns a Table writing to w with the house layout (two
// spaces between columns).
func NewTable(w io.Writer) *Table {
	tw := &widthTabber{w: w}
	return &Table{tw: tw, safe: NewWriter(tw)}
}

// Write takes rows of cells separated by tabs and ended by newlines.
func (t *Table) Write(p []byte) (int, error) { return t.safe.Write(p) }

// Flush writes what is held back and lays the table out.
func (t *Table) Flush() error { return errors.Join(t.safe.Close(), t.tw.Flush()) }

// Lines returns s, a message of one or more lines (an error, say) whose
// words may come from input (paths, names), made safe for a terminal as
// Field makes each of its parts: an escape sequence shows as text
// (`\x1b[2J`) rather than being removed, so a name printed cannot pass
// for another one; the message's own line breaks and tabs stay.
func Lines(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return Field(s)
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ps := strings.Split(l, "\t")
		for j, p := range ps {
			ps[j] = Field(p)
		}
		ls[i] = strings.Join(ps, "\t")
	}
	return strings.Join(ls, "\n")
}

// Cell returns s, a field for a table cell, made safe for a terminal
// (Field): its width is then that of the text printed.
func Cell(s string) string { return Field(s) }

// Field returns s, one field of a line of text output whose value comes
// from the log (an agent's tool name, a principal, a reason, a path),
// made safe for a terminal and kept on one line: every control character
// (an escape sequence's ESC included, so the sequence shows as text
// rather than being removed, and a field cannot pass for another value),
// line or paragraph separator and bidirectional mark is shown escaped
// (replay.Escape). Every agent- or operator-supplied value a human output
// prints passes Field (or Cell, in tables).
func Field(s string) string { return replay.Escape(s) }

// maxBlanks is the longest run of blanks Blanks leaves as it is.
const maxBlanks = 8

// newlineMark is how Blanks shows a newline.
const newlineMark = "[newline]"

// Blanks returns s, a command shown to a person for approval, with every
// run of more than maxBlanks blank characters (spaces, tabs and the other
// Unicode spaces) replaced by a mark saying how many there were, such as
// "[300 spaces]": a long run cannot push the rest of the command past
// the end of a terminal line, out of sight. Each newline is shown as the
// mark "[newline]": Field would show it as \n, as it shows a command
// that holds a backslash and an n, so `echo safe` and a second command
// on the next line could pass for one echo.
func Blanks(s string) string {
	var b strings.Builder
	run, n := 0, 0 // where the current run of blanks starts, and its length
	flush := func(end int) {
		if n > maxBlanks {
			fmt.Fprintf(&b, "[%d spaces]", n)
		} else {
			b.WriteString(s[run:end])
		}
		n = 0
	}
	for i, r := range s {
		if r == '\n' {
			if n > 0 {
				flush(i)
			}
			b.WriteString(newlineMark)
			continue
		}
		if unicode.IsSpace(r) {
			if n == 0 {
				run = i
			}
			n++
			continue
		}
		if n > 0 {
			flush(i)
		}
		b.WriteRune(r)
	}
	if n > 0 {
		flush(len(s))
	}
	return b.String()
}
