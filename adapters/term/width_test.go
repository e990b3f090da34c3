package term

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	"pgregory.net/rapid"
)

// TestDisplayWidth: a string's width is the columns a terminal gives it:
// CJK, Hangul, fullwidth forms and emoji take two, combining marks and
// zero-width joiners none, halfwidth kana and East Asian ambiguous
// characters one.
func TestDisplayWidth(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"日本語", 6},
		{"ホーム", 6},
		{"한국어", 6},
		{"Ａｂ", 4}, // fullwidth forms
		{"ｱｲ", 2}, // halfwidth katakana
		{"😀", 2},  // emoji, wide presentation
		{"🎉ok", 4},
		{"cafe\u0301", 4},    // e and a combining acute accent
		{"a\u0308\u0323", 1}, // two combining marks on one letter
		{"\u0301", 0},
		{"a\u200db", 2}, // zero-width joiner
		{"ü", 1},
		{"±§", 2}, // East Asian ambiguous: narrow outside a CJK locale
		{"\\u202e", 6},
	} {
		if got := DisplayWidth(tc.s); got != tc.want {
			t.Errorf("DisplayWidth(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestWidthTabber_AlignsWideAndCombining: a table lines its columns up
// by the columns its cells take on a terminal, not by their runes.
func TestWidthTabber_AlignsWideAndCombining(t *testing.T) {
	var buf bytes.Buffer
	tw := &widthTabber{w: &buf}
	tw.Write([]byte("NAME\tNOTE\tX\n日本語\tcafe\u0301\tz\n😀\tok\tz\nab\u0308c\t한\tz\n"))
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME    NOTE  X\n" +
		"日本語  cafe\u0301  z\n" +
		"😀      ok    z\n" +
		"ab\u0308c     한    z\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestWidthTabber_IsTabwriterOnASCII: on text whose every character takes
// one column, the layout is text/tabwriter's with the house settings,
// byte for byte: blocks of adjacent lines, cells after a line's last tab
// outside every column, empty cells, a last line without a newline.
func TestWidthTabber_IsTabwriterOnASCII(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cell := rapid.StringMatching(`[a-z ]{0,7}`)
		lines := rapid.SliceOfN(rapid.SliceOfN(cell, 1, 5), 0, 8).Draw(t, "lines")
		var in strings.Builder
		for i, l := range lines {
			in.WriteString(strings.Join(l, "\t"))
			if i+1 < len(lines) || rapid.Bool().Draw(t, "newline") {
				in.WriteString("\n")
			}
		}
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		tw.Write([]byte(in.String()))
		tw.Flush()
		wt := &widthTabber{w: &got}
		// In pieces, as fmt.Fprintf writes a table.
		for _, piece := range strings.SplitAfter(in.String(), "\t") {
			wt.Write([]byte(piece))
		}
		if err := wt.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("input %q:\ngot  %q\nwant %q", in.String(), got.String(), want.String())
		}
	})
}

// TestEllipsizeLeft_Width: a cut keeps at most width terminal columns,
// "…" included; a wide character that would straddle the cut goes whole,
// and a combining mark stays with its letter or goes with it. A path
// keeps its last elements whole, but never its last alone when the
// element before it has room: the end of that one goes too.
func TestEllipsizeLeft_Width(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  string
	}{
		{"/src/app", 40, "/src/app"},
		{"/aaaa/bbbb/cccc", 10, "…bbbb/cccc"},
		{"/aaaa/bbbb/cccc", 11, "…/bbbb/cccc"},
		{"/a/bb/cccc", 7, "…b/cccc"},
		// A long element before the last: its end goes with it, not "…/pkg".
		{"/srv/build/feature-branch-with-a-very-long-descriptive-name/pkg", 40, "…h-with-a-very-long-descriptive-name/pkg"},
		{"~/src/github.com/some-organization/a-rather-long-repository-name/services/api", 40, "…/services/api"},
		{"/a/very/long/path/to/somewhere", 16, "…/to/somewhere"},
		{"/home/user/a-last-element-longer-than-the-whole-column-is", 20, "…the-whole-column-is"},
		{"/ホーム/プロジェクト", 40, "/ホーム/プロジェクト"},
		{"/ホーム/プロジェクト", 10, "…ジェクト"},
		{"/ホーム/プロジェクト", 11, "…ロジェクト"},
		{"/ホーム/プロジェクト", 14, "…/プロジェクト"},
		{"xx😀😀😀", 6, "…😀😀"},
		{"abcde\u0301fg", 4, "…e\u0301fg"},
		{"abcde\u0301fg", 3, "…fg"},
	} {
		got := EllipsizeLeft(tc.s, tc.width)
		if got != tc.want {
			t.Errorf("EllipsizeLeft(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
		if w := DisplayWidth(got); w > tc.width {
			t.Errorf("EllipsizeLeft(%q, %d) = %q: %d columns", tc.s, tc.width, got, w)
		}
	}
}

// TestWrapLines_Width: audit lines wrap by terminal columns: a line of
// CJK words wraps where its columns, not its runes, reach the width.
func TestWrapLines_Width(t *testing.T) {
	got := Wrap("日本語 日本語 日本語\nshort\n", 10)
	want := "日本語\n    日本語\n    日本語\nshort\n"
	if got != want {
		t.Errorf("Wrap:\n%s\nwant:\n%s", got, want)
	}
}
