package claude

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact/cut"
	"github.com/logbook-dev/logbook/events"
)

// Parser names and versions stamped on Observation.Parser. A change in
// what a parser emits for the same input bumps its version.
const (
	ParserLine = "claude-transcript/4" // 3: usage signals; 4: answer signals, prefilled questions
	ParserHook = "claude-hook/3"       // 3: answer signals, prefilled questions
)

// DefaultMaxRaw is the cap on Observation.Raw when Config.MaxRaw is 0:
// 64 KiB.
const DefaultMaxRaw = 64 << 10

// MaxSigText is the longest Sig.Text, in bytes.
const MaxSigText = 200

// Config configures parsing. The zero value is valid: default redaction
// rules and a DefaultMaxRaw cap.
type Config struct {
	// RedactPatterns are extra Go regular expressions (RE2 syntax, package
	// regexp) applied after the default rules; the i-th pattern's matches
	// (1-based) become "[REDACTED:custom-<i>]".
	RedactPatterns []string
	// Redactor, when not nil, is the redaction the parser applies in
	// place of the default rules and RedactPatterns (which must then be
	// empty): one built by redact.Live applies rules that change while
	// the process runs.
	Redactor *Redactor
	// MaxRaw caps Observation.Raw in bytes, measured after redaction.
	// 0 means DefaultMaxRaw; a negative value is an error.
	MaxRaw int
}

// Parser parses transcript lines and hook payloads with one compiled
// Config. Build it once with NewParser and reuse it: it is immutable and
// safe for concurrent use.
type Parser struct {
	red    *Redactor
	maxRaw int
}

// NewParser compiles cfg. It returns a *PatternError naming the first
// pattern of cfg.RedactPatterns that does not compile, or an error if
// cfg.MaxRaw is negative.
func NewParser(cfg Config) (*Parser, error) {
	if cfg.MaxRaw < 0 {
		return nil, fmt.Errorf("claude parser: MaxRaw %d is negative", cfg.MaxRaw)
	}
	red := cfg.Redactor
	if red != nil && len(cfg.RedactPatterns) > 0 {
		return nil, errors.New("claude parser: Redactor and RedactPatterns both set")
	}
	if red == nil {
		var err error
		if red, err = NewRedactor(cfg.RedactPatterns); err != nil {
			return nil, err
		}
	}
	maxRaw := cfg.MaxRaw
	if maxRaw == 0 {
		maxRaw = DefaultMaxRaw
	}
	return &Parser{red: red, maxRaw: maxRaw}, nil
}

// Redactor returns the parser's redaction rules.
func (p *Parser) Redactor() *Redactor { return p.red }

// MaxRaw returns the cap on Observation.Raw in bytes.
func (p *Parser) MaxRaw() int { return p.maxRaw }

// Errors a parse wraps; test with errors.Is.
var (
	// ErrLineTooLong reports a transcript line longer than MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
	// ErrSecretID reports an id that a redaction rule matches. An id
	// names things on the log for good (an aggregate, a tool call, a
	// line's link), so it is neither stored as it is nor rewritten (a
	// rewritten id is no longer valid, or names another's entry): the
	// input is refused.
	ErrSecretID = errors.New("looks like a secret to a redaction rule, and an id is never redacted: send ids that hold none, or narrow the rule")
)

// SecretID returns nil, or an error wrapping ErrSecretID that names the
// first of o's ids a rule of r matches, and the rules, never the id. The
// ids are Meta.SessionID, Meta.AgentID, Meta.ForkedFrom, UUID,
// ParentUUID and each signal's ID and Task.
func SecretID(r *Redactor, o events.Observation) error {
	check := func(what, v string) error {
		if v == "" {
			return nil
		}
		rules := r.Matches(v)
		if rules == nil {
			return nil
		}
		return fmt.Errorf("%s %w (rule %s)", what, ErrSecretID, strings.Join(rules, ", "))
	}
	for _, f := range []struct{ what, v string }{
		{"session id", o.Meta.SessionID}, {"agent id", o.Meta.AgentID}, {"forked-from session id", o.Meta.ForkedFrom},
		{"uuid", o.UUID}, {"parent uuid", o.ParentUUID},
	} {
		if err := check(f.what, f.v); err != nil {
			return err
		}
	}
	for _, sg := range o.Signals {
		if err := check(sg.Kind+" id", sg.ID); err != nil {
			return err
		}
		if err := check(sg.Kind+" task id", sg.Task); err != nil {
			return err
		}
	}
	return nil
}

// RedactKind returns kind and key as finish stores them: a kind the
// parser knows (known) is vocabulary and kept; another is redacted as
// text, and the same text in key (where it follows the first ':') with
// it, so that distinct keys stay distinct.
func RedactKind(r *Redactor, kind, key string, known bool) (string, string) {
	if known || kind == "" {
		return kind, key
	}
	red := r.Redact(kind)
	if red == kind {
		return kind, key
	}
	return red, strings.Replace(key, ":"+kind+":", ":"+red+":", 1)
}

// LineError reports a transcript line that could not be parsed, or read.
// It wraps ErrSyntax, ErrInvalidUTF8, ErrNotObject or ErrLineTooLong.
type LineError struct {
	Path string // transcript path as given
	Line int    // 1-based line number
	Col  int    // 1-based byte column where the problem was found; 0 if unknown
	Err  error
}

// Error returns "path:line: what" or "path:line:col: what".
func (e *LineError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.Path, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// decodeObject checks that b is valid UTF-8 holding one JSON object and
// returns its members. On failure it returns the 1-based byte column of
// the problem (0 if none applies) and an error wrapping ErrInvalidUTF8,
// ErrSyntax or ErrNotObject.
func decodeObject(b []byte) (map[string]json.RawMessage, int, error) {
	if i := invalidUTF8(b); i >= 0 {
		return nil, i + 1, fmt.Errorf("%w at byte %d", ErrInvalidUTF8, i)
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(b, &m)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return nil, int(se.Offset), fmt.Errorf("%w at byte %d: %v", ErrSyntax, se.Offset, se)
	}
	if err != nil || m == nil {
		return nil, 1, fmt.Errorf("%w: got %s", ErrNotObject, jsonKind(bytes.TrimSpace(b)))
	}
	return m, 0, nil
}

// invalidUTF8 returns the offset of the first byte of b that is not part
// of a valid UTF-8 sequence, or -1 (jsonx.InvalidUTF8).
func invalidUTF8(b []byte) int { return jsonx.InvalidUTF8(b) }

// trimEOL removes one trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// finish redacts o's text fields, sets Raw from orig (redacted, cut to the
// cap, Cut set when cut) and returns o. o's ids are not redacted: the
// caller has refused those a rule matches (SecretID). A kind the parser
// knows (knownKind) is kept; another is redacted, in Key too.
func (p *Parser) finish(o events.Observation, orig []byte) events.Observation {
	r := p.red
	for i := range o.Signals {
		s := &o.Signals[i]
		s.Text = shorten(r.Redact(s.Text), MaxSigText)
		s.Name = r.Redact(s.Name)
	}
	m := &o.Meta
	for _, f := range []*string{&m.AgentType, &m.Cwd, &m.Model, &m.Version, &m.GitBranch, &m.AgentMode, &m.Title} {
		*f = r.Redact(*f)
	}
	o.Kind, o.Key = RedactKind(r, o.Kind, o.Key, knownKind(o.Kind))
	o.AgentTime = r.Redact(o.AgentTime)
	for i := range o.Problems {
		o.Problems[i] = r.Redact(o.Problems[i])
	}
	// Raw is redacted over the decoded text of its JSON strings, and
	// stays JSON (see redact.Redactor.JSON).
	raw := string(orig)
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	raw = r.JSON(raw)
	if o.Cut != nil {
		// The payload was cut before it was sent (PrepareHook); the Cut
		// it carries names the original.
		raw = cutUTF8(raw, p.maxRaw)
		o.Cut.Kept = len(raw)
	} else if len(raw) > p.maxRaw {
		kept := cutUTF8(raw, p.maxRaw)
		sum := sha256.Sum256(orig)
		o.Cut = &events.Cut{Size: int64(len(orig)), SHA256: hex.EncodeToString(sum[:]), Kept: len(kept)}
		raw = kept
	}
	o.Raw = raw
	return o
}

// cutUTF8 returns the longest prefix of s that is at most n bytes and ends
// on a rune boundary (cut.Prefix).
func cutUTF8(s string, n int) string { return cut.Prefix(s, n) }

// tailUTF8 returns the longest suffix of s that is at most n bytes and
// starts on a rune boundary.
func tailUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// ellipsis joins the head and tail of a shortened text.
const ellipsis = " … "

// shorten returns s if it fits in n bytes, else its head and its tail
// joined by " … ", n bytes at most. Keeping the tail keeps how a text
// ends (a question mark, an exit code) visible in a short signal.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	room := n - len(ellipsis)
	head := cutUTF8(s, room*2/3)
	tail := tailUTF8(s, room-len(head))
	return strings.TrimSpace(head) + ellipsis + strings.TrimSpace(tail)
}
