// Package redact replaces secrets in text before it is appended to the
// log: in transcript lines and hook payloads (JSON, redacted string by
// string over the decoded text), in command argv, environment and output.
//
// Three rule sets apply, in this order:
//
//  1. built-in shapes (see Builtin): PEM and PGP private key blocks,
//     JWTs, credentials in URLs, HTTP Basic and Bearer credentials, and
//     the token formats of Anthropic, OpenAI, AWS, GitHub, GitLab,
//     Slack, Stripe, Google, npm and Azure storage;
//  2. the default rule set of gitleaks (its config/gitleaks.toml, the
//     version in go.mod; see GitleaksVersion): each rule's regex, secret
//     group, entropy threshold, keywords and allowlists (regexes and
//     stopwords; path and commit allowlists never apply to text);
//  3. assignments: the value assigned to a key named like a password,
//     secret, token, API key, access key or credential ("DB_PASSWORD=x",
//     "api_key: x", a JSON member "client_secret": "x");
//
// then the caller's own rules (New's extra patterns).
//
// Every rule is compiled lazily, on the first text that holds one of its
// keywords, so building a Redactor costs next to nothing and a process
// that redacts a few short texts compiles a few regular expressions, not
// hundreds.
package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Redactor replaces secrets in text with "[REDACTED:<rule>]". It is
// immutable once built and safe for concurrent use; one built by Live
// applies the rules its source names at each use.
type Redactor struct {
	extra []*rule
	once  sync.Once
	all   []*rule // shared rules then extra, built on first use
	// live, when set, names the Redactor whose rules apply now (Live).
	live func() *Redactor
}

// Live returns a Redactor that asks current, at the start of each use
// (each Redact, JSON, Rules or Check call, each piece a Stream lets
// go), for the Redactor whose rules that use applies, so rules that
// change while a process runs (a rules file edited) apply from the next
// use on, in the output of a command already running too. current must be
// safe for concurrent use, cheap (it runs on every use), and never return
// nil or a Redactor built by Live.
func Live(current func() *Redactor) *Redactor {
	return &Redactor{live: current}
}

// Pin returns the Redactor whose rules apply now: r itself, or, when r
// is Live, the Redactor its source returns at this call (never one built
// by Live). Uses that belong together, one request's checks, pin once
// rather than ask the source at each use (a Live source may look at a
// file each time); a change of the rules applies from the next Pin.
func (r *Redactor) Pin() *Redactor { return r.now() }

// now returns the Redactor whose rules apply to this use: r itself, or
// the one r's source names when r is Live.
func (r *Redactor) now() *Redactor {
	if r.live != nil {
		return r.live()
	}
	return r
}

// list returns every rule in order; the first call loads the shared
// rules (parsing gitleaks' rule set once per process).
func (r *Redactor) list() []*rule {
	r.once.Do(func() { r.all = append(slices.Clip(shared()), r.extra...) })
	return r.all
}

// rule is one compiled-on-demand rule.
type rule struct {
	name    string
	pattern string
	// keep is true when the pattern's first group is context to keep
	// (a header name, "password=", a URL's user).
	keep bool
	// group is the submatch holding the secret (gitleaks' secretGroup);
	// -1: the first non-empty group, or the whole match when there is
	// none (gitleaks' rule). Ignored when keep.
	group int
	// literal marks a custom rule: an empty match is left alone (a
	// pattern like "x*" must not flood the text).
	literal bool
	// hints are substrings every match contains, lower case when fold;
	// text holding none of them skips the rule. Empty: always run.
	hints []string
	fold  bool
	// entropy is the least Shannon entropy (bits per byte) a secret must
	// have; 0: no threshold.
	entropy float64
	// allow lists what a match may be without being a secret.
	allow []*allowlist
	// assign marks the assignment scanner (no regular expression).
	assign bool

	once sync.Once
	re   *regexp.Regexp
	err  error
}

// compiled returns the rule's regular expression, compiling it on first
// use.
func (ru *rule) compiled() (*regexp.Regexp, error) {
	ru.once.Do(func() { ru.re, ru.err = regexp.Compile(ru.pattern) })
	return ru.re, ru.err
}

// Spec is a built-in rule: its name, its Go regular expression, whether
// its first group is context kept in clear, and the substrings (lower
// case when Fold) one of which every match holds.
type Spec struct {
	Name    string
	Pattern string
	Keep    bool
	Hints   []string
	Fold    bool
}

// Builtin returns the built-in secret shapes, in the order they are
// applied: specific shapes first, so a token keeps its most telling name.
func Builtin() []Spec {
	return []Spec{
		// PEM and PGP private keys, up to their END line or, when cut, to
		// the end of the text.
		{Name: "private_key", Pattern: `(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`,
			Hints: []string{"PRIVATE KEY"}},
		// JSON Web Tokens: base64url header and payload, both "{"…".
		{Name: "jwt", Pattern: `\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`,
			Hints: []string{"eyJ"}},
		// Credentials in a URL: scheme://user:password@host keeps the user.
		{Name: "url_credentials", Pattern: `([A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'"<>\[\]]*:)[^\s/?#@'"<>]+(?:@)`, Keep: true,
			Hints: []string{"://"}},
		// Bearer credentials, as in "Authorization: Bearer <token>".
		{Name: "bearer", Pattern: `(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*`, Keep: true,
			Hints: []string{"bearer"}, Fold: true},
		// HTTP Basic credentials: "Authorization: Basic <base64>".
		{Name: "basic_auth", Pattern: `(?i)(\bbasic\s+)[A-Za-z0-9+/]{8,}={0,2}`, Keep: true,
			Hints: []string{"basic"}, Fold: true},
		// Anthropic API keys.
		{Name: "anthropic_key", Pattern: `\bsk-ant-[A-Za-z0-9_-]{16,}`,
			Hints: []string{"sk-ant-"}},
		// OpenAI-style secret keys: sk-…, sk-proj-…, sk-svcacct-….
		{Name: "openai_key", Pattern: `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`,
			Hints: []string{"sk-"}},
		// Stripe secret and restricted keys, live and test.
		{Name: "stripe_key", Pattern: `\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`,
			Hints: []string{"k_live_", "k_test_"}},
		// AWS access key ids (long-term AKIA, temporary ASIA).
		{Name: "aws_access_key", Pattern: `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
			Hints: []string{"AKIA", "ASIA"}},
		// GitHub tokens: classic ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained.
		{Name: "github_token", Pattern: `\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`,
			Hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
		// GitLab personal, deploy and runner tokens.
		{Name: "gitlab_token", Pattern: `\bgl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|soat|ffct)-[A-Za-z0-9_.-]{20,}`,
			Hints: []string{"gl"}},
		// Slack tokens: bot, app, user, refresh, session.
		{Name: "slack_token", Pattern: `\bxox[abprs]-[A-Za-z0-9-]{10,}`,
			Hints: []string{"xox"}},
		// Google API keys.
		{Name: "google_api_key", Pattern: `\bAIza[0-9A-Za-z_-]{35}`,
			Hints: []string{"AIza"}},
		// npm access tokens.
		{Name: "npm_token", Pattern: `\bnpm_[A-Za-z0-9]{36}`,
			Hints: []string{"npm_"}},
		// Azure storage account keys in connection strings.
		{Name: "azure_account_key", Pattern: `(?i)(\bAccountKey\s*=\s*)[A-Za-z0-9+/]{20,}={0,2}`, Keep: true,
			Hints: []string{"accountkey"}, Fold: true},
	}
}

// PatternError reports a redaction pattern that does not compile.
type PatternError struct {
	Index   int    // 1-based position in the extra patterns
	Pattern string // the pattern as given
	Err     error  // from regexp.Compile
}

// Error names the pattern.
func (e *PatternError) Error() string {
	return fmt.Sprintf("redact pattern %d %q: %v", e.Index, e.Pattern, e.Err)
}

// Unwrap returns the compile error.
func (e *PatternError) Unwrap() error { return e.Err }

// New returns a Redactor with the built-in rules, gitleaks' rules, the
// assignment rule, then extra: Go regular expressions whose whole matches
// become "[REDACTED:custom-<i>]" (i is 1-based). extra patterns are
// compiled at once; it returns a *PatternError for the first one that
// does not compile. The built-in and gitleaks rules are loaded on the
// first Redact, compiled one by one when a text first holds one of their
// keywords, and shared by every Redactor of the process.
func New(extra []string) (*Redactor, error) {
	r := &Redactor{}
	for i, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &PatternError{Index: i + 1, Pattern: p, Err: err}
		}
		name := "custom-" + strconv.Itoa(i+1)
		ru := &rule{name: name, pattern: p, literal: true}
		ru.once.Do(func() { ru.re = re })
		r.extra = append(r.extra, ru)
	}
	return r, nil
}

// Default returns the process's Redactor without extra rules.
func Default() *Redactor {
	return defaultRedactor()
}

var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, _ := New(nil)
	return r
})

// shared returns the built-in, gitleaks and assignment rules, built once
// per process (their regular expressions compile later, on demand).
var shared = sync.OnceValue(func() []*rule {
	var rules []*rule
	for _, s := range Builtin() {
		rules = append(rules, &rule{name: s.Name, pattern: s.Pattern, keep: s.Keep, hints: s.Hints, fold: s.Fold})
	}
	rules = append(rules, gitleaksRules()...)
	rules = append(rules, &rule{name: "assignment", assign: true, hints: secretKeys, fold: true})
	return rules
})

// sharedIndex is the keyword index of the shared rules.
var sharedIndex = sync.OnceValue(func() *keywordIndex { return newKeywordIndex(shared()) })

// Rules returns the rule names in the order they are applied.
func (r *Redactor) Rules() []string {
	r = r.now()
	names := make([]string, len(r.list()))
	for i, ru := range r.list() {
		names[i] = ru.name
	}
	return names
}

// Check compiles every rule now and returns the names of those that do
// not compile with Go's regexp (RE2) package, with why; such rules are
// skipped when redacting.
func (r *Redactor) Check() map[string]error {
	r = r.now()
	bad := map[string]error{}
	for _, ru := range r.list() {
		if ru.assign {
			continue
		}
		if _, err := ru.compiled(); err != nil {
			bad[ru.name] = err
		}
	}
	return bad
}

// Redact returns s with every match of every rule replaced, rule by rule
// in order. Valid UTF-8 in gives valid UTF-8 out.
func (r *Redactor) Redact(s string) string {
	r = r.now()
	if s == "" || !r.mayMatch(s) {
		return s
	}
	return r.apply(s, r.candidates(asciiLower(s)))
}

// mayMatch reports whether any rule could change s: s holds a keyword of
// a shared rule (in any case), or there are rules that run on every text
// (extra rules, shared rules without keywords). When it is false, Redact
// returns s as it is.
func (r *Redactor) mayMatch(s string) bool {
	if len(r.extra) > 0 {
		return true
	}
	ix := sharedIndex()
	return len(ix.always) > 0 || ix.any(s)
}

// candidates returns the rules whose hints occur in lower (a lower-cased
// text), in order.
func (r *Redactor) candidates(lower string) []*rule {
	all := r.list()
	base := shared()
	idx := sharedIndex().match(lower, len(base))
	out := make([]*rule, len(idx), len(idx)+len(r.extra))
	for i, ri := range idx {
		out[i] = all[ri]
	}
	return append(out, r.extra...)
}

// candidatesEach is candidates over the texts of toks joined by
// newlines, without joining them.
func (r *Redactor) candidatesEach(toks []jsonString) []*rule {
	ix := sharedIndex()
	if ix.newline {
		var all strings.Builder
		for _, t := range toks {
			all.WriteString(t.text)
			all.WriteByte('\n')
		}
		return r.candidates(asciiLower(all.String()))
	}
	all := r.list()
	idx := ix.matchEach(toks, len(shared()))
	out := make([]*rule, len(idx), len(idx)+len(r.extra))
	for i, ri := range idx {
		out[i] = all[ri]
	}
	return append(out, r.extra...)
}

// apply runs rules over s, each only when s still holds one of its hints.
func (r *Redactor) apply(s string, rules []*rule) string {
	if s == "" || len(rules) == 0 {
		return s
	}
	lower, lowered := "", false
	view, viewed := "", false
	for _, ru := range rules {
		if ru.fold && !lowered {
			lower, lowered = asciiLower(s), true
		}
		if !ru.hinted(s, lower) {
			continue
		}
		var out string
		if ru.assign {
			out = redactAssignments(s, lower, "[REDACTED:assignment]")
		} else {
			if !viewed {
				view, viewed = escapeView(s), true
			}
			out = ru.replace(s, view)
		}
		if out != s {
			s, lowered, viewed = out, false, false
		}
	}
	return s
}

// escapeView returns s with the two-byte escapes of JSON and C-like
// strings (\n, \r, \t, \b, \f, \", \/) turned into spaces (the quote
// kept), byte offsets unchanged: JSON printed as text ("{\"content\":
// \"a\ntoken\"}") is matched as a reader sees it, with a token after an
// escaped newline at a word boundary. Rules match on the view; their
// replacements apply to s.
func escapeView(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		switch b[i+1] {
		case 'n', 'r', 't', 'b', 'f', '/':
			b[i], b[i+1] = ' ', ' '
			i++
		case '"':
			b[i] = ' '
			i++
		case '\\':
			i++ // an escaped backslash: the next byte is text
		}
	}
	return string(b)
}

// replace replaces the secret of every match of ru in view (s, or s
// with escapes blanked, of the same length) in s.
func (ru *rule) replace(s, view string) string {
	re, err := ru.compiled()
	if err != nil {
		return s
	}
	ms := re.FindAllStringSubmatchIndex(view, -1)
	if len(ms) == 0 {
		return s
	}
	repl := "[REDACTED:" + ru.name + "]"
	var b strings.Builder
	last := 0
	for _, m := range ms {
		from, to := ru.secretSpan(m)
		if from < 0 || to <= from || from < last {
			continue
		}
		if ru.entropy > 0 && entropy(view[from:to]) < ru.entropy {
			continue
		}
		if ru.allowed(view, m, from, to) {
			continue
		}
		b.WriteString(s[last:from])
		b.WriteString(repl)
		last = to
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretSpan returns the part of match m (a submatch index slice) that is
// the secret.
func (ru *rule) secretSpan(m []int) (int, int) {
	switch {
	case ru.literal:
		return m[0], m[1]
	case ru.keep:
		// Keep group 1 (context before the secret); a second group, if
		// any, is context after it (the "@" of a URL).
		to := m[1]
		if len(m) >= 6 && m[4] >= 0 {
			to = m[4]
		} else if ru.name == "url_credentials" {
			to = m[1] - 1
		}
		return m[3], to
	case ru.group > 0 && 2*ru.group+1 < len(m):
		return m[2*ru.group], m[2*ru.group+1]
	case ru.group < 0:
		for g := 1; 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				return m[2*g], m[2*g+1]
			}
		}
	}
	return m[0], m[1]
}

// hinted reports whether s (or lower, its lower-case form, for a
// case-insensitive rule) holds one of the rule's hints.
func (ru *rule) hinted(s, lower string) bool {
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

// secretKeys are the lower-case endings of key names whose assigned
// values the assignment rule redacts: DB_PASSWORD, client_secret,
// GITHUB_TOKEN, aws_secret_access_key.
var secretKeys = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
	"accesskey", "access_key", "secret_key", "private_key", "privatekey", "credential", "credentials"}

// SecretKey reports whether a key (a JSON member name, an environment
// variable) names a secret: it ends, in any case, with one of the
// assignment rule's key names.
func SecretKey(key string) bool {
	k := asciiLower(key)
	for _, w := range secretKeys {
		if strings.HasSuffix(k, w) {
			return true
		}
	}
	return false
}

// asciiLower returns s with ASCII letters lowered; byte offsets are kept.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// redactAssignments replaces the value of every assignment to a secret
// key in s with repl. lower is asciiLower(s). An assignment is a key
// (secretKeys, any case, any prefix), an optional closing quote (' " or
// JSON-escaped \"), ':' or '=' with optional spaces around it, an
// optional opening quote, and a value of at least 4 bytes. A quoted value
// runs to its closing quote (or the end of the line); a bare one to the
// next space, quote, backslash, ',', ';' or '&'. So "password=hunter22",
// "DB_PASSWORD: hunter22" and "\"api_key\": \"abcd 1234\"" are redacted;
// "max_tokens=5", "the password is", "token: 42" and a path's last part
// before a colon ("/etc/passwd": …) are not.
func redactAssignments(s, lower, repl string) string {
	type span struct{ from, to int }
	var spans []span
	for _, key := range secretKeys {
		for i := 0; ; {
			k := strings.Index(lower[i:], key)
			if k < 0 {
				break
			}
			j := i + k + len(key)
			i = j
			if pathPart(lower, j-len(key)) && colonAfter(s, j) {
				continue // "/etc/passwd": a file named in a message, not a key
			}
			if paramRef(lower, j-len(key), j) {
				continue // ${AWS_SECRET_ACCESS_KEY:-unset}: a shell variable's name, no value
			}
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

// pathPart reports whether the key ending found at lower[at:] is the
// last part of a path: the name it ends (letters, digits, '_' and '-'
// before it) follows a '/'. Such a name followed by ':' (colonAfter) is
// a file a message names, not a key, so that `open "/etc/passwd": no
// such file` and `/run/secrets/token: denied` keep their words, while
// /srv/DB_PASSWORD=…, DB_PASSWORD: …, "api_key": … and
// spring.datasource.password=… are assignments still.
func pathPart(lower string, at int) bool {
	for at > 0 {
		c := lower[at-1]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return c == '/'
		}
		at--
	}
	return false
}

// paramRef reports whether the key ending found at lower[at:j] ends the
// name in a POSIX shell parameter expansion (POSIX.1-2017 XCU 2.6.2):
// the name (letters, digits and '_') follows "${", "${#" or "${!" and
// the expansion's operator (':' of ":-", ":=", ":?", ":+", or a bare
// '=') follows it at once. Such a key names a variable, so that
// "${AWS_SECRET_ACCESS_KEY:-unset}" and "${PASSWORD:=}" keep their
// words, while AWS_SECRET_ACCESS_KEY=… and "${X} password: …" are
// assignments still.
func paramRef(lower string, at, j int) bool {
	if j >= len(lower) || lower[j] != ':' && lower[j] != '=' {
		return false
	}
	for at > 0 {
		c := lower[at-1]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			break
		}
		at--
	}
	if at > 0 && (lower[at-1] == '#' || lower[at-1] == '!') {
		at--
	}
	return at >= 2 && lower[at-2:at] == "${"
}

// colonAfter reports whether the separator after a key ending at s[j:]
// (past an optional closing quote and spaces) is ':'.
func colonAfter(s string, j int) bool {
	if strings.HasPrefix(s[j:], `\"`) {
		j += 2
	} else if j < len(s) && (s[j] == '"' || s[j] == '\'') {
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j < len(s) && s[j] == ':'
}

// assignedValue reads what follows a secret key at s[j:]: an optional
// closing quote, a separator, an optional opening quote and the value. It
// returns the value's span.
func assignedValue(s string, j int) (from, to int, ok bool) {
	quote := func() string {
		if j+1 < len(s) && s[j] == '\\' && s[j+1] == '"' {
			j += 2
			return `\"`
		} else if j < len(s) && (s[j] == '"' || s[j] == '\'') {
			j++
			return s[j-1 : j]
		}
		return ""
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
	q := quote()
	from = j
	if q != "" && !strings.HasPrefix(s[j:], "[REDACTED:") {
		end := strings.Index(s[j:], q)
		nl := strings.IndexAny(s[j:], "\r\n")
		if end < 0 || nl >= 0 && nl < end {
			end = nl
		}
		if end < 0 {
			end = len(s) - j
		}
		j += end
	} else {
		for j < len(s) && !strings.ContainsRune(" \t\r\n\"'\\,;&", rune(s[j])) {
			j++
		}
	}
	if j-from < 4 || strings.HasPrefix(s[from:j], "[REDACTED:") {
		return 0, 0, false
	}
	return from, j, true
}
