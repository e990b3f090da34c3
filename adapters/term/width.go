package term

import (
	"bufio"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// RuneWidth returns the columns r takes on a terminal: 0 for a control,
// a combining mark (Mn, Me) or another character without a width of its
// own (zero-width spaces and joiners, the byte order mark); 2 for an East
// Asian wide or fullwidth character (CJK, Hangul, kana, fullwidth forms,
// and the emoji Unicode gives a wide presentation); 1 for anything else,
// East Asian ambiguous characters included (as a terminal outside a CJK
// locale shows them).
func RuneWidth(r rune) int {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0
	case r < 0x300:
		return 1 // Latin: no need to look further
	case unicode.In(r, unicode.Mn, unicode.Me),
		r >= 0x200b && r <= 0x200f, r >= 0x2060 && r <= 0x2064, r == 0xfeff,
		r >= 0x1160 && r <= 0x11ff: // Hangul medial vowels and finals join the syllable's first letter
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// DisplayWidth returns the columns s takes on a terminal: the sum of its
// runes' RuneWidth (a byte that is not UTF-8 counts 1, as the U+FFFD a
// terminal shows for it).
func DisplayWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x20 && b < 0x7f {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += RuneWidth(r)
		i += size
	}
	return n
}

// tablePadding is the least space between two columns of a Table.
const tablePadding = 2

// widthTabber lays tab-separated cells out in columns as text/tabwriter
// does with the house layout (no minimum width, two spaces of padding,
// padded with spaces, no flags): a cell ended by a tab belongs to a
// column, the text after a line's last tab to none; a column is as wide
// as its widest cell in the run of adjacent lines that have that column,
// plus the padding. Unlike text/tabwriter it measures a cell by the
// columns it takes on a terminal (DisplayWidth), not by its runes, so
// CJK, emoji and combining marks keep the columns in line. It holds
// everything written until Flush. Not safe for concurrent use.
type widthTabber struct {
	w    io.Writer
	text []byte
}

// Write takes rows of cells separated by tabs and ended by newlines; it
// never fails.
func (t *widthTabber) Write(p []byte) (int, error) {
	t.text = append(t.text, p...)
	return len(p), nil
}

// Flush lays out and writes everything written since the last Flush; a
// last line without a newline is written without one.
func (t *widthTabber) Flush() error {
	if len(t.text) == 0 {
		return nil
	}
	text := string(t.text)
	t.text = t.text[:0]
	endsNL := strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	var lines [][]string
	for line := range strings.SplitSeq(text, "\n") {
		lines = append(lines, strings.Split(line, "\t"))
	}
	if last := lines[len(lines)-1]; !endsNL && len(last) > 1 && last[len(last)-1] == "" {
		// An unfinished line's empty last cell is no cell (as
		// text/tabwriter has it): the cell before it ends the line.
		lines[len(lines)-1] = last[:len(last)-1]
	}
	bw := bufio.NewWriterSize(t.w, 64<<10)
	var widths []int
	writeLines := func(line0, line1 int) {
		for i := line0; i < line1; i++ {
			for j, c := range lines[i] {
				bw.WriteString(c)
				if j < len(widths) {
					for range widths[j] - DisplayWidth(c) {
						bw.WriteByte(' ')
					}
				}
			}
			if i+1 < len(lines) || endsNL {
				bw.WriteByte('\n')
			}
		}
	}
	// format is text/tabwriter's: it lays out column len(widths) of
	// lines[line0:line1], block by block, and the columns to its right
	// within each block.
	var format func(line0, line1 int)
	format = func(line0, line1 int) {
		column := len(widths)
		for this := line0; this < line1; this++ {
			if column >= len(lines[this])-1 {
				continue
			}
			writeLines(line0, this)
			line0 = this
			w := 0
			for ; this < line1 && column < len(lines[this])-1; this++ {
				w = max(w, DisplayWidth(lines[this][column])+tablePadding)
			}
			widths = append(widths, w)
			format(line0, this)
			widths = widths[:len(widths)-1]
			line0 = this
		}
		writeLines(line0, line1)
	}
	format(0, len(lines))
	return bw.Flush()
}

// EllipsizeLeft keeps the end of s, at most width terminal columns
// (DisplayWidth) with the "…" that marks a cut at its start: the end of
// a path is what tells paths apart. A path keeps its last elements whole
// ("/a/very/long/path/to/somewhere" in 16 columns is "…/to/somewhere"),
// but for the last alone: with room for more, the end of the element
// before it goes with it ("…-long-name/sub"), never "…/sub" in a column of
// 40. A cut falls between characters, never
// inside one (a wide character that would straddle it goes whole) and
// never between a character and the combining marks that follow it.
// A width under 2 leaves s whole.
func EllipsizeLeft(s string, width int) string {
	if width < 2 || DisplayWidth(s) <= width {
		return s
	}
	room, start := width-1, len(s)
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		w := RuneWidth(r)
		if w > room {
			break
		}
		room -= w
		i -= size
		if w > 0 {
			start = i // a cut here keeps the marks after this character with it
		}
	}
	tail := s[start:]
	// Cut at a path separator, keeping whole elements (…/proj/sub),
	// unless that keeps only the last one: the end of the element before
	// it, as much as fits, tells more than "…/sub" in a column with room.
	if i := strings.IndexByte(tail, '/'); i > 0 && strings.IndexByte(tail[i+1:], '/') >= 0 {
		tail = tail[i:]
	}
	return "…" + tail
}

// Wrap wraps each line of s longer than width terminal columns
// (DisplayWidth) at spaces, its continuation lines indented four spaces:
// an audit line read on a terminal, not cut by it. A word longer than a
// line is left whole. Every line of the result ends in a newline.
func Wrap(s string, width int) string {
	var out strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		indent := ""
		for DisplayWidth(indent+line) > width {
			room := width - len(indent)
			cut, w := -1, 0
			for i, r := range line {
				if w > room {
					break
				}
				if r == ' ' && i > 0 {
					cut = i // the last space with at most room columns before it
				}
				w += RuneWidth(r)
			}
			if cut <= 0 {
				break
			}
			out.WriteString(indent + strings.TrimRight(line[:cut], " ") + "\n")
			line = strings.TrimLeft(line[cut:], " ")
			indent = "    "
		}
		out.WriteString(indent + line + "\n")
	}
	return out.String()
}

// EllipsizeRight keeps the start of s, at most width terminal columns
// (DisplayWidth) with the "…" that marks a cut at its end. A cut falls
// between characters, never inside one; a kept character keeps the
// combining marks that follow it. A width under 2 leaves s whole.
func EllipsizeRight(s string, width int) string {
	if width < 2 || DisplayWidth(s) <= width {
		return s
	}
	room, end := width-1, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		w := RuneWidth(r)
		if w > room {
			break
		}
		room -= w
		i += size
		end = i
	}
	return s[:end] + "…"
}
