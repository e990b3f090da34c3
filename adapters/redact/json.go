package redact

import (
	"strings"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact/cut"
)

// JSON redacts a JSON text (RFC 8259) string by string, over the decoded
// text of each string: a token after an escaped newline or tab, or one
// spelled with \u escapes, is seen as a reader of the JSON sees it. A
// string's value is redacted whole (as the assignment rule would) when
// it is the value of a member whose name is a secret key (SecretKey).
//
// Only strings that change are re-encoded, canonically: '"', '\\' and
// control characters escaped (\n, \r, \t, \b, \f, else \u00XX), every
// other character as itself (no HTML escaping). Every other byte of s is
// kept as it was, so the result is valid JSON whenever s is, and the same
// s always gives the same result.
//
// A text that is not well-formed JSON (a cut line, say) is redacted as
// plain text by Redact.
func (r *Redactor) JSON(s string) string {
	r = r.now()
	toks, ok := scanStrings(s)
	if !ok {
		return r.Redact(s)
	}
	if len(toks) == 0 {
		return s
	}
	// One keyword scan over all the decoded text picks the rules that
	// can match anywhere; each string then runs only those. A string
	// that holds no keyword of any rule is left as it is without it (no
	// rule could change it), and a text none of whose strings needs the
	// rules is not scanned at all.
	var (
		cands   []*rule
		scanned bool
	)
	return rewriteStrings(s, toks, func(t jsonString) string {
		if t.secretValue && len(t.text) > 0 && !strings.HasPrefix(t.text, "[REDACTED:") {
			return "[REDACTED:assignment]"
		}
		if !r.mayMatch(t.text) {
			return t.text
		}
		if !scanned {
			cands, scanned = r.candidatesEach(toks), true
		}
		return r.apply(t.text, cands)
	})
}

// rewriteStrings returns s with the string tokens toks (scanStrings(s))
// replaced by what f returns for each, written canonically by
// writeJSONString. A token for which f returns its own text keeps its
// bytes as they were, and s is returned as it is when no token changes.
// f is called once per token, in order.
func rewriteStrings(s string, toks []jsonString, f func(jsonString) string) string {
	var b strings.Builder
	last := 0
	for _, t := range toks {
		red := f(t)
		if red == t.text {
			continue
		}
		b.WriteString(s[last:t.from])
		writeJSONString(&b, red)
		last = t.to
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// jsonString is one string token of a JSON text: its span s[from:to]
// including the quotes, its decoded text, and whether it is the value of
// a member whose name is a secret key.
type jsonString struct {
	from, to    int
	text        string
	secretValue bool
}

// scanStrings returns the string tokens of s in order, or false when s is
// not well-formed JSON.
func scanStrings(s string) ([]jsonString, bool) {
	if !jsonx.ValidString(s) {
		return nil, false
	}
	toks := make([]jsonString, 0, strings.Count(s, `"`)/2)
	var prev byte
	key, keyPending := "", false
	for i := 0; i < len(s); {
		c := s[i]
		if c != '"' {
			switch c {
			case ' ', '\t', '\r', '\n':
			default:
				prev = c
				if c != ':' {
					keyPending = false
				}
			}
			i++
			continue
		}
		j := i + 1
		escaped := false
		for s[j] != '"' {
			if s[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		j++ // past the closing quote
		text := s[i+1 : j-1]
		if escaped {
			text = jsonx.UnquoteString(s[i:j])
		}
		t := jsonString{from: i, to: j, text: text}
		if prev == ':' && keyPending {
			t.secretValue = SecretKey(key)
			keyPending = false
		} else {
			// A member name when a ':' follows.
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r' || s[k] == '\n') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				key, keyPending = text, true
			}
		}
		toks = append(toks, t)
		prev = '"'
		i = j
	}
	return toks, true
}

// writeJSONString writes s as a JSON string, canonically (see JSON):
// cut.WriteJSON.
func writeJSONString(b *strings.Builder, s string) { cut.WriteJSON(b, s) }

// CutStrings returns the JSON text s with every string longer than max
// bytes (decoded) cut to at most max bytes: at the last space, newline or
// punctuation in its final quarter, so no token is left half, else on a
// rune boundary. Other bytes are kept. It returns false when s is not
// well-formed JSON.
func CutStrings(s string, max int) (string, bool) {
	toks, ok := scanStrings(s)
	if !ok {
		return s, false
	}
	return rewriteStrings(s, toks, func(t jsonString) string {
		if len(t.text) <= max {
			return t.text
		}
		return CutText(t.text, max)
	}), true
}

// CutText returns text cut to at most max bytes as CutStrings cuts each
// string: text itself when it is at most max bytes; else at the last
// space, newline or punctuation in the final quarter of its first max
// bytes, else on the rune boundary at or before max. text must be valid
// UTF-8; a caller that has only a prefix of a longer text may pass any
// prefix of more than max bytes and gets the same cut. It is cut.Text.
func CutText(text string, max int) string { return cut.Text(text, max) }

// QuoteJSON returns s as a JSON string, canonically: '"', '\\' and
// control characters escaped (\n, \r, \t, \b, \f, else \u00XX), every
// other character as itself (no HTML escaping), an invalid UTF-8 byte as
// \ufffd. It is how JSON and CutStrings write the strings they change
// (cut.QuoteJSON).
func QuoteJSON(s string) string { return cut.QuoteJSON(s) }
