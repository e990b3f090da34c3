package claude

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Redactor replaces secrets in text with "[REDACTED:<rule>]". It is
// immutable once built and safe for concurrent use.
type Redactor struct {
	rules []rule
}

type rule struct {
	name string
	re   *regexp.Regexp // nil for the assignment scanner
	repl string         // replacement template (regexp.Expand syntax)
	// literal marks a custom rule: repl is inserted as is, and an empty
	// match is left alone (a pattern like "x*" must not flood the text).
	literal bool
	// hints are substrings every match contains (lower case when fold);
	// text holding none of them skips the rule. Empty: always run.
	hints []string
	fold  bool
}

// ruleSpec is a rule before compilation. keep is true when the pattern's
// first group is context to keep (a header name, "password="). hints are
// substrings every match contains, lower case when fold (the pattern is
// case-insensitive): a cheap test that lets most text skip the pattern.
type ruleSpec struct {
	name, pattern string
	keep          bool
	hints         []string
	fold          bool
}

// defaultRules returns the built-in secret shapes, in the order they are
// applied: specific shapes first, so a token keeps its most telling name,
// then generic assignments.
func defaultRules() []ruleSpec {
	return []ruleSpec{
		// PEM private keys, up to their END line or, when cut, to the end.
		{name: "private_key", pattern: `(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)`,
			hints: []string{"PRIVATE KEY-----"}},
		// JSON Web Tokens: base64url header and payload, both "{"…".
		{name: "jwt", pattern: `\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`,
			hints: []string{"eyJ"}},
		// Bearer credentials, as in "Authorization: Bearer <token>".
		{name: "bearer", pattern: `(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*`, keep: true,
			hints: []string{"bearer"}, fold: true},
		// Anthropic API keys.
		{name: "anthropic_key", pattern: `\bsk-ant-[A-Za-z0-9_-]{16,}`,
			hints: []string{"sk-ant-"}},
		// OpenAI-style secret keys: sk-…, sk-proj-…, sk-svcacct-….
		{name: "openai_key", pattern: `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`,
			hints: []string{"sk-"}},
		// AWS access key ids (long-term AKIA, temporary ASIA).
		{name: "aws_access_key", pattern: `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
			hints: []string{"AKIA", "ASIA"}},
		// GitHub tokens: classic ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained.
		{name: "github_token", pattern: `\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`,
			hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
		// Slack tokens: bot, app, user, refresh, session.
		{name: "slack_token", pattern: `\bxox[abprs]-[A-Za-z0-9-]{10,}`,
			hints: []string{"xox"}},
	}
}

// PatternError reports a redaction pattern that does not compile.
type PatternError struct {
	Index   int    // 1-based position in Config.RedactPatterns
	Pattern string // the pattern as given
	Err     error  // from regexp.Compile
}

// Error names the pattern.
func (e *PatternError) Error() string {
	return fmt.Sprintf("redact pattern %d %q: %v", e.Index, e.Pattern, e.Err)
}

// Unwrap returns the compile error.
func (e *PatternError) Unwrap() error { return e.Err }

// NewRedactor compiles the default rules followed by extra, Go regular
// expressions whose whole matches become "[REDACTED:custom-<i>]" (i is
// 1-based). The default rules, in order: private_key (PEM blocks), jwt,
// bearer (the token after "Bearer "), anthropic_key (sk-ant-…),
// openai_key (sk-…), aws_access_key (AKIA…/ASIA…), github_token (ghp_,
// gho_, ghu_, ghs_, ghr_, github_pat_), slack_token (xoxa-, xoxb-, xoxp-,
// xoxr-, xoxs-), and assignment (the value assigned to a key named like a
// password, secret, token, API key or access key). It returns a
// *PatternError for the first extra pattern that does not compile.
func NewRedactor(extra []string) (*Redactor, error) {
	specs := defaultRules()
	r := &Redactor{rules: make([]rule, 0, len(specs)+len(extra))}
	for _, s := range specs {
		repl := "[REDACTED:" + s.name + "]"
		if s.keep {
			repl = "${1}" + repl
		}
		r.rules = append(r.rules, rule{name: s.name, re: regexp.MustCompile(s.pattern), repl: repl, hints: s.hints, fold: s.fold})
	}
	r.rules = append(r.rules, rule{name: "assignment", repl: "[REDACTED:assignment]", hints: secretKeys(), fold: true})
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &PatternError{Index: i + 1, Pattern: p, Err: err}
		}
		name := "custom-" + strconv.Itoa(i+1)
		r.rules = append(r.rules, rule{name: name, re: re, repl: "[REDACTED:" + name + "]", literal: true})
	}
	return r, nil
}

// Rules returns the rule names in the order they are applied.
func (r *Redactor) Rules() []string {
	names := make([]string, len(r.rules))
	for i, ru := range r.rules {
		names[i] = ru.name
	}
	return names
}

// Redact returns s with every match of every rule replaced, rule by rule
// in order. Valid UTF-8 in gives valid UTF-8 out.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	lower, lowered := "", false
	for _, ru := range r.rules {
		if ru.fold && !lowered {
			lower, lowered = asciiLower(s), true
		}
		switch {
		case !ru.hinted(s, lower):
		case ru.re == nil:
			if out := redactAssignments(s, lower, ru.repl); out != s {
				s, lowered = out, false
			}
		case !ru.re.MatchString(s):
		case ru.literal:
			s, lowered = ru.re.ReplaceAllStringFunc(s, func(m string) string {
				if m == "" {
					return m
				}
				return ru.repl
			}), false
		default:
			s, lowered = ru.re.ReplaceAllString(s, ru.repl), false
		}
	}
	return s
}

// hinted reports whether s (or lower, its lower-case form, for a
// case-insensitive rule) holds one of the rule's hints.
func (ru rule) hinted(s, lower string) bool {
	if len(ru.hints) == 0 {
		return true
	}
	if ru.fold {
		s = lower
	}
	for _, h := range ru.hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}

// secretKeys returns the lower-case key names whose assigned values the
// assignment rule redacts. A key may carry any prefix: DB_PASSWORD,
// client_secret, GITHUB_TOKEN.
func secretKeys() []string {
	return []string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key"}
}

// asciiLower returns s with ASCII letters lowered; byte offsets are kept.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// redactAssignments replaces the value of every assignment to a secret
// key in s with repl. lower is asciiLower(s). An assignment is a key
// (secretKeys, any case, any prefix), an optional closing quote (' " or
// JSON-escaped \"), ':' or '=' with optional spaces around it, an
// optional opening quote, and a value of at least 4 bytes running to the
// next space, quote, backslash, ',', ';' or '&'. So "password=hunter22",
// "DB_PASSWORD: hunter22" and "\"api_key\": \"abcd1234\"" are redacted;
// "max_tokens=5", "the password is" and "token: 42" are not.
func redactAssignments(s, lower, repl string) string {
	type span struct{ from, to int }
	var spans []span
	for _, key := range secretKeys() {
		for i := 0; ; {
			k := strings.Index(lower[i:], key)
			if k < 0 {
				break
			}
			j := i + k + len(key)
			i = j
			if v, w, ok := assignedValue(s, j); ok {
				spans = append(spans, span{v, w})
				i = w
			}
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.from < last {
			continue // inside a value already replaced
		}
		b.WriteString(s[last:sp.from])
		b.WriteString(repl)
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// assignedValue reads what follows a secret key at s[j:]: an optional
// closing quote, a separator, an optional opening quote and the value. It
// returns the value's span.
func assignedValue(s string, j int) (from, to int, ok bool) {
	quote := func() {
		if j+1 < len(s) && s[j] == '\\' && s[j+1] == '"' {
			j += 2
		} else if j < len(s) && (s[j] == '"' || s[j] == '\'') {
			j++
		}
	}
	space := func() {
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
	}
	quote()
	space()
	if j >= len(s) || s[j] != ':' && s[j] != '=' {
		return 0, 0, false
	}
	j++
	space()
	quote()
	from = j
	for j < len(s) && !strings.ContainsRune(" \t\r\n\"'\\,;&", rune(s[j])) {
		j++
	}
	if j-from < 4 {
		return 0, 0, false
	}
	return from, j, true
}
