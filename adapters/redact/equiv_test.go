package redact

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
)

// refRedact is Redact without its keyword check: every text runs the
// rules its keywords pick.
func refRedact(r *Redactor, s string) string {
	if s == "" {
		return s
	}
	return r.apply(s, r.candidates(asciiLower(s)))
}

// refJSON is JSON as it was before it left strings without keywords
// alone: every string run through the rules the whole text's keywords
// pick. It takes the string tokens from scanStrings after checking them
// against encoding/json: the same texts are well-formed (Valid), and each
// token with an escape decodes (Unmarshal) to the text scanStrings gives
// (one without is its bytes between the quotes).
func refJSON(t testing.TB, r *Redactor, s string) string {
	t.Helper()
	toks, ok := scanStrings(s)
	if valid := json.Valid([]byte(s)); ok != valid {
		t.Fatalf("scanStrings(%q) well-formed = %v, json.Valid = %v", s, ok, valid)
	}
	if !ok {
		return refRedact(r, s)
	}
	for _, tok := range toks {
		raw := s[tok.from:tok.to]
		want := raw[1 : len(raw)-1]
		if strings.Contains(want, `\`) {
			if err := json.Unmarshal([]byte(raw), &want); err != nil {
				t.Fatalf("scanStrings(%q): token %q: %v", s, raw, err)
			}
		}
		if tok.text != want {
			t.Fatalf("scanStrings(%q): token %q scanned as %q, want %q", s, raw, tok.text, want)
		}
	}
	if len(toks) == 0 {
		return s
	}
	var all strings.Builder
	for _, tok := range toks {
		all.WriteString(tok.text)
		all.WriteByte('\n')
	}
	cands := r.candidates(asciiLower(all.String()))
	return rewriteStrings(s, toks, func(tok jsonString) string {
		if tok.secretValue && len(tok.text) > 0 && !strings.HasPrefix(tok.text, "[REDACTED:") {
			return "[REDACTED:assignment]"
		}
		return r.apply(tok.text, cands)
	})
}

// equivTexts returns plain texts and JSON texts holding every fake
// secret shape in several places, keywords in several cases, escapes,
// invalid UTF-8 and words near the rules' keywords.
func equivTexts() []string {
	var out []string
	words := []string{"token", "TOKEN", "Api_Key", "password=hunter2222", "passwd", "secret", "Bearer ", "basic ", "AccountKey=",
		"https://u:p4ssw0rd@host/x", "sk-", "ghp_", "xoxb-", "AKIA", "eyJ", "PRIVATE KEY", "private key", "input_tokens", "key", "auth",
		"\xff", "é", "\\n", "\"", "plain words", "ok   pkg1 0.412s"}
	for _, sh := range redacttest.Shapes() {
		for pos, text := range positions(sh.Text) {
			out = append(out, text)
			for _, key := range []string{"content", "api_key", "Client_Secret", "x"} {
				js, _ := json.Marshal(map[string]any{"type": "tool_result", key: text, "n": 1, "a": []any{text, pos}})
				out = append(out, string(js))
			}
		}
	}
	r := rand.New(rand.NewPCG(9, 3))
	for range 400 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteString([]string{" ", "\n", "\t", "", ":", "="}[r.IntN(6)])
		}
		s := b.String()
		js, _ := json.Marshal(map[string]string{words[r.IntN(len(words))]: s, "k": s})
		out = append(out, s, string(js), `{"password": "`+s+`"}`, `["`+strings.ReplaceAll(s, `"`, `\"`)+`"]`)
	}
	return out
}

// positions places text on its own line, after a tab, in a sentence and
// inside JSON printed as text.
func positions(text string) map[string]string {
	js, _ := json.Marshal(map[string]string{"content": "x\n" + text + "\ty"})
	return map[string]string{
		"own_line":     "first line\n" + text + "\nlast line",
		"after_tab":    "col1\t" + text + "\tcol3",
		"sentence":     "the value is " + text + " here",
		"json_as_text": "printed: " + string(js),
	}
}

// TestRedact_SameAsEveryRuleRun: Redact and JSON, which leave texts and
// strings without any rule's keyword alone, give what running the
// keyword-picked rules over every text and string gives, with and
// without extra rules.
func TestRedact_SameAsEveryRuleRun(t *testing.T) {
	texts := equivTexts()
	for _, extra := range [][]string{nil, {`hunter\d+`}} {
		r, err := New(extra)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			if got, want := r.Redact(s), refRedact(r, s); got != want {
				t.Fatalf("Redact(%q) = %q, want %q", s, got, want)
			}
			if got, want := r.JSON(s), refJSON(t, r, s); got != want {
				t.Fatalf("JSON(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

// FuzzJSON: JSON and Redact agree with the reference on every input.
func FuzzJSON(f *testing.F) {
	for i, s := range equivTexts() {
		if i%7 == 0 {
			f.Add(s)
		}
	}
	r := Default()
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := r.Redact(s), refRedact(r, s); got != want {
			t.Fatalf("Redact(%q) = %q, want %q", s, got, want)
		}
		if got, want := r.JSON(s), refJSON(t, r, s); got != want {
			t.Fatalf("JSON(%q) = %q, want %q", s, got, want)
		}
	})
}
