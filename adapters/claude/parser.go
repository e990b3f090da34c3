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

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact/cut"
	"github.com/logbook-dev/logbook/events"
)

// Parser names and versions stamped on Observation.Parser. A change in
// what a parser emits for the same input bumps its version.
const (
	ParserLine = "claude-transcript/5" // 3: usage signals; 4: answer signals, prefilled questions; 5: a fork's copied usage (Usage.CopiedFrom)
	ParserHook = "claude-hook/3"       // 3: answer signals, prefilled questions
)

// DefaultMaxRaw is the cap on Observation.Raw when Config.MaxRaw is 0:
// 64 KiB (ingest.DefaultMaxRaw).
const DefaultMaxRaw = ingest.DefaultMaxRaw

// MaxSigText is the longest Sig.Text, in bytes (ingest.MaxSigText).
const MaxSigText = ingest.MaxSigText

// Config configures parsing: extra redaction patterns or a Redactor, and
// the cap on Observation.Raw (ingest.ParserConfig). The zero value is
// valid.
type Config = ingest.ParserConfig

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
	red, maxRaw, err := cfg.Compile("claude parser")
	if err != nil {
		return nil, err
	}
	return &Parser{red: red, maxRaw: maxRaw}, nil
}

// Redactor returns the parser's redaction rules.
func (p *Parser) Redactor() *Redactor { return p.red }

// MaxRaw returns the cap on Observation.Raw in bytes.
func (p *Parser) MaxRaw() int { return p.maxRaw }

// Errors a parse wraps; test with errors.Is: ingest's values.
var (
	// ErrLineTooLong is ingest.ErrLineTooLong: a transcript line longer
	// than MaxLineBytes.
	ErrLineTooLong = ingest.ErrLineTooLong
	// ErrSecretID is ingest.ErrSecretID: an id that a redaction rule
	// matches, refused, never redacted.
	ErrSecretID = ingest.ErrSecretID
)

// MaxLineBytes is the longest transcript line read whole:
// ingest.MaxLineBytes, 64 MiB.
const MaxLineBytes = ingest.MaxLineBytes

// LineError reports a transcript line that could not be parsed, or read
// (ingest.LineError).
type LineError = ingest.LineError

// SecretID is ingest.SecretID: nil, or an error wrapping ErrSecretID
// naming the first of o's ids a rule of r matches.
func SecretID(r *Redactor, o events.Observation) error { return ingest.SecretID(r, o) }

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
	o.Kind, o.Key = ingest.RedactKind(r, o.Kind, o.Key, knownKind(o.Kind))
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
