package term

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Argv returns argv as one line a person reads and bash reads back as
// the same words: each element as is when bash would take it as one word
// unchanged, else quoted as mvdan.cc/sh/v3's syntax.Quote quotes it for
// bash ('a b', "it's", and $'a\nb' for a control character, a mark
// that is not printable or a byte that is not UTF-8), joined by spaces.
// So ["a b"] and ["a", "b"], or a newline and a backslash followed by n,
// never show alike. An element holding a NUL byte, which no argument of
// a process holds, is shown as Go quotes it. The result is printable
// ASCII and UTF-8 without controls; pass it through Field or Cell as
// every other value.
func Argv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = strconv.Quote(a)
		}
		b.WriteString(q)
	}
	return b.String()
}
