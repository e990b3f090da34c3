package ingest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
)

// DefaultMaxRaw is the cap on Observation.Raw when ParserConfig.MaxRaw is
// 0: 64 KiB.
const DefaultMaxRaw = 64 << 10

// MaxSigText is the longest Sig.Text, in bytes, any agent's parser keeps.
const MaxSigText = 200

// ParserConfig configures an agent's parser: what of an observation is
// redacted and how much of its raw text is kept. The zero value is valid:
// default redaction rules and a DefaultMaxRaw cap.
type ParserConfig struct {
	// RedactPatterns are extra Go regular expressions (RE2 syntax, package
	// regexp) applied after the default rules; the i-th pattern's matches
	// (1-based) become "[REDACTED:custom-<i>]".
	RedactPatterns []string
	// Redactor, when not nil, is the redaction the parser applies in
	// place of the default rules and RedactPatterns (which must then be
	// empty): one built by redact.Live applies rules that change while
	// the process runs.
	Redactor *redact.Redactor
	// MaxRaw caps Observation.Raw in bytes, measured after redaction.
	// 0 means DefaultMaxRaw; a negative value is an error.
	MaxRaw int
}

// Compile returns cfg's redaction and its cap on Observation.Raw in
// bytes, for the parser named who (such as "claude parser"). Errors: a
// *redact.PatternError naming the first pattern of cfg.RedactPatterns
// that does not compile; an error naming who when cfg.MaxRaw is negative
// or both Redactor and RedactPatterns are set.
func (cfg ParserConfig) Compile(who string) (*redact.Redactor, int, error) {
	if cfg.MaxRaw < 0 {
		return nil, 0, fmt.Errorf("%s: MaxRaw %d is negative", who, cfg.MaxRaw)
	}
	red := cfg.Redactor
	if red != nil && len(cfg.RedactPatterns) > 0 {
		return nil, 0, errors.New(who + ": Redactor and RedactPatterns both set")
	}
	if red == nil {
		var err error
		if red, err = redact.New(cfg.RedactPatterns); err != nil {
			return nil, 0, err
		}
	}
	maxRaw := cfg.MaxRaw
	if maxRaw == 0 {
		maxRaw = DefaultMaxRaw
	}
	return red, maxRaw, nil
}

// Redaction is a compiled parser's redaction rules and its cap on
// Observation.Raw in bytes: what another agent's parser takes over so
// that both agents' observations are redacted alike.
type Redaction interface {
	Redactor() *redact.Redactor
	MaxRaw() int
}

// SecretID returns nil, or an error wrapping ErrSecretID that names the
// first of o's ids a rule of r matches, and the rules, never the id. The
// ids are Meta.SessionID, Meta.AgentID, Meta.ForkedFrom, UUID,
// ParentUUID and each signal's ID, Task and usage's CopiedFrom.
func SecretID(r *redact.Redactor, o events.Observation) error {
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
		if sg.Usage != nil {
			if err := check(sg.Kind+" copied-from session id", sg.Usage.CopiedFrom); err != nil {
				return err
			}
		}
	}
	return nil
}

// RedactKind returns kind and key as a parser stores them: a kind the
// parser knows (known) is vocabulary and kept; another is redacted by r
// as text, and the same text in key (where it follows the first ':') with
// it, so that distinct keys stay distinct.
func RedactKind(r *redact.Redactor, kind, key string, known bool) (string, string) {
	if known || kind == "" {
		return kind, key
	}
	red := r.Redact(kind)
	if red == kind {
		return kind, key
	}
	return red, strings.Replace(key, ":"+kind+":", ":"+red+":", 1)
}

// UsageRefused begins the Problems entry of a line whose usage a parser
// refused (an input or output count missing, a count negative, not a
// whole number or absurd): the line is recorded and its usage counts
// nothing. ImportFile warns of each.
const UsageRefused = "usage refused: "

// IsAbsent reports whether a member's raw JSON value is absent (nil) or
// null.
func IsAbsent(raw []byte) bool { return raw == nil || string(raw) == "null" }

// TokenCount reads one token count of a usage object from its raw JSON
// value: absent or null is 0; why is set when the value is refused
// (negative, fractional, non-numeric, over events.MaxUsageTokens).
func TokenCount(raw []byte) (n int64, why string) {
	switch k := jsonx.Kind(raw); k {
	case "nothing", "null":
		return 0, ""
	case "number":
		v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		switch {
		case err != nil:
			return 0, fmt.Sprintf("%s is not a whole number", raw)
		case v < 0:
			return 0, fmt.Sprintf("%d is negative", v)
		case v > events.MaxUsageTokens:
			return 0, fmt.Sprintf("%d is absurdly large", v)
		}
		return v, ""
	default:
		return 0, "want a number, got " + k
	}
}

// SanitizeID maps s onto the characters an aggregate id may hold
// ([A-Za-z0-9_-]), replacing the others with '_' and keeping at most 100
// bytes; "" becomes "unnamed". An agent names a session so when its
// file's name is all it has to go by.
func SanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if len(b) == 0 {
		return "unnamed"
	}
	return string(b)
}

// SessionIDProblem returns "" when id, the agent's own session id as a
// line names it in field (such as "sessionId"), is "" or can be recorded
// as the session's agent_session_id (events.ValidOwnSessionID:
// 1..events.MaxIDLen bytes of [A-Za-z0-9_-], not beginning with
// "agent-"); else a Problems entry saying that it is not recorded, with
// its length but none of its bytes (a control character or a megabyte
// has no place in a problem either). A parser that gets one leaves
// Meta.SessionID empty.
func SessionIDProblem(field, id string) string {
	if id == "" || events.ValidOwnSessionID(id) == nil {
		return ""
	}
	if events.ValidID(id) == nil {
		return fmt.Sprintf("%s begins with %q, which names a subagent's session, never an agent's own; not recorded", field, events.SubagentPrefix)
	}
	return fmt.Sprintf("%s (%d bytes) is no session id (1..%d bytes of [A-Za-z0-9_-]); not recorded", field, len(id), events.MaxIDLen)
}
