package term

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Argv returns argv as one line a person reads and bash reads back as
// the same words, pasted into an interactive shell too: each element as
// is when bash would take it as one word unchanged, else quoted as
// mvdan.cc/sh/v3's syntax.Quote quotes it for bash ('a b', "it's", and
// $'a\nb' for a control character, a mark that is not printable or a
// byte that is not UTF-8; a \u escape there is read in a UTF-8 locale),
// joined by spaces; a word with a '!' or led by
// '^', which an interactive bash's history expansion would rewrite even
// inside double quotes, is single-quoted (a '!' in $'…' written \x21).
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
		b.WriteString(argvWord(a))
	}
	return b.String()
}

// argvWord is one word of Argv.
func argvWord(a string) string {
	q, err := syntax.Quote(a, syntax.LangBash)
	if err != nil {
		return strconv.Quote(a)
	}
	if !strings.Contains(a, "!") && !strings.HasPrefix(a, "^") {
		return q
	}
	if strings.HasPrefix(q, "$'") {
		return strings.ReplaceAll(q, "!", `\x21`)
	}
	// No control or other mark that needs $'…': single quotes hold every
	// byte as it is, and a quote is closed, escaped and opened again.
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
