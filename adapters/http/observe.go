package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// ObservationSchema names the JSON schema POST /v1/observations follows.
const ObservationSchema = "logbook-observation/1"

// Observation is the body of POST /v1/observations, schema
// "logbook-observation/1": one thing a harness saw of its agent, already
// reduced to agent-neutral signals. It becomes one obs.harness event on
// session "<harness>-<session>" and the decisions the session reducer
// takes from it, in one batch. A session is its harness's: another
// harness's observation on it is refused (session.Decide).
//
// The server trusts no string of it: kind, every meta value and every
// signal's id, name, task, status and text pass through the server's
// Redactor (Config.Redactor) before anything is decided or appended. The
// ids that name things on the log (harness, session, parent) and the
// idempotency id cannot be redacted without merging what they tell
// apart, so one that looks like a secret is refused instead.
type Observation struct {
	// Harness names the posting program: [a-z0-9_], 1..32 bytes (no
	// '-': the session aggregate's first '-' ends the harness's name, so
	// two harnesses never name one session).
	Harness string `json:"harness"`
	// ID is the harness's own id of this observation, 1..128 bytes: a
	// repeat of an id the session remembers (its last session.RecentKeys
	// observations) appends nothing.
	ID string `json:"id"`
	// Session is the harness's session id, [A-Za-z0-9_-]; the aggregate
	// is "<harness>-<session>", at most 128 bytes in all.
	Session string `json:"session"`
	// Parent, for a subagent, is the harness's session id of its parent.
	Parent string `json:"parent,omitempty"`
	// At is when it happened (RFC 3339); absent: when the server got it.
	// One past the server's clock is recorded at its receipt (nothing
	// happened after the server heard of it; events.BoundTime), the
	// posted time kept as the observation's agent_time.
	At Instant `json:"at,omitzero"`
	// Kind is the harness's own name of what happened (≤ 64 bytes),
	// kept for the audit timeline: "tool_start", "turn_done", ….
	Kind    string       `json:"kind"`
	Meta    events.Meta  `json:"meta,omitzero"`
	Signals []events.Sig `json:"signals"`
}

// Instant is a time in a request body: a JSON string in RFC 3339 format
// ("2026-11-30T23:55:00Z", "2026-11-30T23:55:00.123+01:00"); null or
// absent is the zero time. Anything else is refused with a
// *json.UnmarshalTypeError whose Type is instantType, which decodeBody
// turns into an error naming the field and the format; the zero time
// itself given (0001-01-01T00:00:00Z, which would read as absent) with
// one whose Type is zeroInstantType.
type Instant struct{ time.Time }

// instantType marks the decode errors of an Instant.
var instantType = reflect.TypeFor[Instant]()

// zeroInstantType marks an Instant given as the zero time.
var zeroInstantType = reflect.TypeFor[struct{ zero time.Time }]()

// UnmarshalJSON implements json.Unmarshaler.
func (t *Instant) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: instantType}
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: strconv.Quote(redact.CutText(s, 64)), Type: instantType}
	}
	if v.IsZero() {
		return &json.UnmarshalTypeError{Value: strconv.Quote(s), Type: zeroInstantType}
	}
	t.Time = v
	return nil
}

// jsonValueKind names the kind of the JSON value b as
// json.UnmarshalTypeError.Value does: "number", "object", ….
func jsonValueKind(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	}
	return "number"
}

// Signal kinds a harness may post (events.Sig*).
var signalKinds = []string{
	events.SigSessionStart, events.SigPrompt, events.SigThinking, events.SigText, events.SigToolUse,
	events.SigToolResult, events.SigTurnEnd, events.SigInterrupt, events.SigPermission, events.SigQuestion,
	events.SigAnswer, events.SigIdle, events.SigCompactStart, events.SigCompactEnd, events.SigBackgroundDone,
	events.SigSubagentStart, events.SigSubagentStop, events.SigMode, events.SigSessionEnd, events.SigAPIError,
}

// Caps on an observation's parts, in bytes.
const (
	maxObservationBody = 64 << 10
	maxSignals         = 64
	maxSigText         = 200
	maxSigField        = 256
)

// check validates o and returns the session aggregate it goes to. red
// tells the ids that look like secrets, which are refused: an error
// names the field, never the value.
func (o Observation) check(red *redact.Redactor) (events.Aggregate, error) {
	bad := func(format string, args ...any) (events.Aggregate, error) {
		return events.Aggregate{}, fmt.Errorf("%w: observation: "+format, append([]any{errBadRequest}, args...)...)
	}
	if o.Harness == "" || len(o.Harness) > 32 {
		return bad("harness %q: want 1..32 bytes of [a-z0-9_]", o.Harness)
	}
	for _, c := range []byte(o.Harness) {
		if c == '-' {
			// The session aggregate is "<harness>-<session>": a dash in
			// the harness would let two harnesses name one session
			// ("a-b" + "c" and "a" + "b-c").
			return bad("harness %q: '-' separates the harness from the session in the session id, so a harness name holds none: want [a-z0-9_]", o.Harness)
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return bad("harness %q: byte %s is not [a-z0-9_]", o.Harness, events.ByteName(c))
		}
	}
	if o.ID == "" || len(o.ID) > 128 || !utf8.ValidString(o.ID) {
		return bad("id: want 1..128 bytes of UTF-8")
	}
	if o.Kind == "" || len(o.Kind) > 64 || !utf8.ValidString(o.Kind) {
		return bad("kind %q: want 1..64 bytes of UTF-8", o.Kind)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: o.Harness + "-" + o.Session}
	if err := events.ValidID(o.Session); err != nil {
		return bad("session: %v", err)
	}
	if err := agg.Validate(); err != nil {
		return bad("session: %v", err)
	}
	for _, id := range []struct{ name, v string }{{"session", agg.ID}, {"parent", o.Harness + "-" + o.Parent}} {
		if id.name == "parent" && o.Parent == "" {
			continue
		}
		if why := agentSessionShape(id.v); why != "" {
			return bad("%s %q: %s; a harness's sessions never take the ids the agents Logbook reads name theirs with, so that one posted first cannot keep the agent's own session out", id.name, id.v, why)
		}
	}
	if o.Parent != "" {
		if err := events.ValidID(o.Harness + "-" + o.Parent); err != nil {
			return bad("parent: %v", err)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"harness", o.Harness}, {"id", o.ID}, {"session", o.Session}, {"parent", o.Parent},
		{"session aggregate", agg.ID}, {"parent aggregate", o.Harness + "-" + o.Parent},
	} {
		if f.v != "" && red.Redact(f.v) != f.v {
			return bad("%s looks like a secret: it names things on the log for good and cannot be redacted, so send an id that holds none", f.name)
		}
	}
	if len(o.Signals) > maxSignals {
		return bad("%d signals, the most is %d", len(o.Signals), maxSignals)
	}
	for i, sg := range o.Signals {
		if !slices.Contains(signalKinds, sg.Kind) {
			return bad("signals[%d].kind %q: want one of %v", i, sg.Kind, signalKinds)
		}
		if len(sg.Text) > maxSigText || !utf8.ValidString(sg.Text) {
			return bad("signals[%d].text: want at most %d bytes of UTF-8", i, maxSigText)
		}
		if sg.Usage != nil || sg.Limit != nil {
			return bad("signals[%d]: usage and limit are not taken from a harness", i)
		}
		if sg.Counted != "" {
			return bad("signals[%d].counted %q: usage evidence is the decider's, not taken from a harness", i, sg.Counted)
		}
		for _, f := range []string{sg.ID, sg.Name, sg.Task, sg.Status} {
			if len(f) > maxSigField || !utf8.ValidString(f) {
				return bad("signals[%d]: id, name, task and status want at most %d bytes of UTF-8", i, maxSigField)
			}
		}
	}
	m := o.Meta
	if own := ownAgentName(m.Agent); own != "" {
		return bad("meta.agent %q: reads as %s, an agent Logbook reads itself; a harness names its own agent", m.Agent, own)
	}
	if own := ownAgentName(o.Harness); m.Agent == "" && own != "" {
		// The agent defaults to the harness's name.
		return bad("harness %q with no meta.agent: the session's agent would be %q, which reads as %s, an agent Logbook reads itself; name the harness's own agent in meta.agent", o.Harness, o.Harness, own)
	}
	for _, f := range []string{m.Agent, m.SessionID, m.AgentID, m.AgentType, m.Cwd, m.Model, m.Version, m.GitBranch, m.AgentMode, m.Title, m.ForkedFrom} {
		if len(f) > 4096 || !utf8.ValidString(f) {
			return bad("meta: each field wants at most 4096 bytes of UTF-8")
		}
	}
	// The other ids are not redacted either (a rewritten id names another's
	// entry, or none): one that looks like a secret is refused too.
	if err := claude.SecretID(red, events.Observation{Meta: m, Signals: o.Signals}); err != nil {
		return bad("%v", err)
	}
	return agg, nil
}

// redacted returns o's kind, meta and signals with every string but the
// ids (refused by check when a rule matches them) passed through red, a signal's text cut again to maxSigText bytes when its
// redaction made it longer, and the question of each call to a tool that
// waits on the user (withQuestions). o's own slices are not changed.
func (o Observation) redacted(red *redact.Redactor) Observation {
	o.Kind = red.Redact(o.Kind)
	m := &o.Meta
	for _, f := range []*string{&m.Agent, &m.AgentType, &m.Cwd, &m.Model, &m.Version, &m.GitBranch, &m.AgentMode, &m.Title} {
		*f = red.Redact(*f)
	}
	sigs := make([]events.Sig, len(o.Signals))
	for i, sg := range o.Signals {
		sg.Name, sg.Status = red.Redact(sg.Name), red.Redact(sg.Status)
		sg.Text = redact.CutText(red.Redact(sg.Text), maxSigText)
		sigs[i] = sg
	}
	o.Signals = withQuestions(sigs)
	return o
}

// withQuestions returns sigs with a question signal after each tool_use
// of a tool that waits on the user (claude.BlocksOnUser: AskUserQuestion,
// ExitPlanMode) that sigs do not already ask with a question of the
// same id, as Claude Code's transcript parser gives it: the session waits
// on a person while the call is open, and is never marked stale. sigs
// itself is not changed.
func withQuestions(sigs []events.Sig) []events.Sig {
	out := make([]events.Sig, 0, len(sigs))
	for _, sg := range sigs {
		out = append(out, sg)
		if sg.Kind == events.SigToolUse && claude.BlocksOnUser(sg.Name) && !slices.ContainsFunc(sigs, func(q events.Sig) bool {
			return q.Kind == events.SigQuestion && q.ID == sg.ID
		}) {
			out = append(out, events.Sig{Kind: events.SigQuestion, ID: sg.ID, Name: sg.Name, Text: sg.Text})
		}
	}
	return out
}

// observer appends harness observations through the session reducer.
type observer struct {
	x     *events.Executor[session.State]
	reg   *events.Registry
	clock func() time.Time
	red   *redact.Redactor
}

func newObserver(cfg Config) *observer {
	return &observer{
		x: &events.Executor[session.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: session.Init, Evolve: session.Evolve, IDs: ulid.Make, Host: cfg.Host,
		},
		reg: cfg.Reg, clock: cfg.Clock, red: cfg.Redactor,
	}
}

// observeReply is POST /v1/observations's answer: the session aggregate,
// the stream sequences of the batch (0 and duplicate true when the
// observation was seen before), and the session's phase after it.
type observeReply struct {
	Session   string `json:"session"`
	First     uint64 `json:"first"`
	Last      uint64 `json:"last"`
	Duplicate bool   `json:"duplicate"`
	Phase     string `json:"phase"`
	Activity  string `json:"activity"`
}

func (s *Server) observe(w http.ResponseWriter, r *http.Request) {
	var o Observation
	if err := decodeBody(r, &o, maxObservationBody); err != nil {
		s.fail(w, r, err)
		return
	}
	agg, err := o.check(s.obs.red)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o = o.redacted(s.obs.red)
	now := s.obs.clock()
	at := o.At.Time
	if at.IsZero() {
		at = now
	}
	// An at past the server's clock is recorded at its receipt, the
	// posted time kept beside it (AgentTime): a harness whose clock runs
	// ahead is on the clock of its observations that carry no at.
	future := o.At.Time.After(now)
	at, _ = events.BoundTime(at, now)
	meta := o.Meta
	if meta.Agent == "" {
		meta.Agent = o.Harness
	}
	meta.SessionID, meta.AgentID = agg.ID, ""
	if o.Parent != "" {
		meta.SessionID, meta.AgentID = o.Harness+"-"+o.Parent, agg.ID
		parent, err := s.obs.x.State(r.Context(), events.Aggregate{Kind: events.KindSession, ID: meta.SessionID})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch {
		case meta.SessionID == agg.ID:
			s.fail(w, r, fmt.Errorf("%w: observation: parent %q: a session cannot be its own parent", errBadRequest, o.Parent))
			return
		case !parent.Exists():
			s.fail(w, r, fmt.Errorf("%w: observation: parent %q: session %s does not exist: post an observation that starts it first", errBadRequest, o.Parent, meta.SessionID))
			return
		case parent.Parent == agg.ID:
			s.fail(w, r, fmt.Errorf("%w: observation: parent %q: session %s is a subagent of %s, so it cannot be its parent", errBadRequest, o.Parent, meta.SessionID, agg.ID))
			return
		}
	}
	sum := sha256.Sum256([]byte(o.ID))
	obs := events.Observation{
		Key:     o.Harness + ":" + hex.EncodeToString(sum[:16]),
		Parser:  ObservationSchema,
		Kind:    o.Kind,
		Meta:    meta,
		Signals: o.Signals,
		// A posted observation arrives as the harness runs: it is
		// dated by its receipt here.
		Received: now.UTC().Truncate(time.Microsecond),
		Live:     true,
	}
	if future {
		obs.AgentTime = o.At.UTC().Format(time.RFC3339Nano)
	}
	env := s.obs.reg.New(events.HarnessObserved{Observation: obs})
	env.ID, env.Agg, env.At = ulid.Make(), agg, at.UTC().Truncate(time.Microsecond)
	env.Actor = "harness:" + o.Harness
	ap, st, err := s.obs.x.Execute(r.Context(), agg, func(st session.State) (events.Decision, error) {
		// A repeat is by id alone (the harness's idempotency key): one
		// under a new id is stored, even when its signals only repeat a
		// closed call or a prompt already taken, which the session
		// reducer then decides nothing of (session.State.LateDuplicate).
		if st.RecentKeys.Has(obs.Key) {
			return nil, nil
		}
		// A parent is recorded when a session starts, never later: one
		// that would not be applied is refused, not dropped.
		if o.Parent != "" && st.Exists() && st.Parent != meta.SessionID {
			was := "no parent"
			if st.Parent != "" {
				was = "parent " + st.Parent
			}
			return nil, fmt.Errorf("%w: observation: parent %q: session %s started with %s, and a parent is set only when a session starts", errBadRequest, o.Parent, agg.ID, was)
		}
		decs, err := session.Decide(st, session.Observe{Obs: env})
		if err != nil {
			return nil, err
		}
		batch := append([]events.Envelope{env}, decs...)
		if !st.Exists() {
			// A session is started by what it observes; an observation
			// that starts nothing would leave an event on a session that
			// is not there.
			next := st
			for _, e := range batch {
				next = session.Evolve(next, e)
			}
			if !next.Exists() {
				return nil, fmt.Errorf("%w: observation: session %s does not exist, and this observation does not start it: send one with a session_start or prompt signal first", errBadRequest, agg.ID)
			}
		}
		return batch, nil
	})
	if s.metrics != nil {
		s.metrics.observed(err)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, observeReply{Session: agg.ID, First: ap.First, Last: ap.Last, Duplicate: ap.Last == 0 || ap.Duplicate, Phase: st.Phase, Activity: st.Activity})
}

// agentSessionShape says why id has the shape of a session id Logbook
// gives the agents it reads itself ("" when it has not): a Claude Code
// subagent's "agent-<agent_id>" (Claude Code 2.x hooks and transcripts),
// and a Claude Code or Codex CLI session's UUID (8-4-4-4-12 hexadecimal
// digits), alone or with a suffix (an import's "-r1" copy).
func agentSessionShape(id string) string {
	if events.IsSubagentID(id) {
		return "a Claude Code subagent's session is \"agent-\" and its agent_id"
	}
	if len(id) >= 36 && events.IsUUID(id[:36]) {
		return "a Claude Code or Codex CLI session's id begins with a UUID"
	}
	return ""
}

// ownAgents are the agents Logbook reads itself, by the letters a person
// reads in their names (ownAgentName).
var ownAgents = map[string]string{"claudecode": "claude-code", "codex": "codex"}

// lookalikes maps letters (lower case) that look like the Latin ones of
// ownAgents' names onto those: Cyrillic and Greek letters, Latin small
// capitals (which NFKD leaves as they are), a dotless i, and the digits
// read as o and l.
var lookalikes = map[rune]rune{
	'а': 'a', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'і': 'i', 'ӏ': 'l', 'о': 'o', 'х': 'x', 'ҽ': 'e', 'ꮯ': 'c',
	'α': 'a', 'ε': 'e', 'ι': 'i', 'ο': 'o', 'χ': 'x', 'ϲ': 'c', 'ı': 'i', 'ɑ': 'a', 'ɩ': 'l',
	'ᴀ': 'a', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ʟ': 'l', 'ᴏ': 'o', 'ᴜ': 'u', 'ɪ': 'i',
	'0': 'o', '1': 'l',
}

// ownAgentName returns the agent Logbook reads itself ("claude-code" or
// "codex") that name, a harness's name of its agent, reads as to a
// person, or "" when it reads as neither: compared in lower case, after
// Unicode compatibility decomposition (NFKD: fullwidth and styled
// letters, ligatures) with the accents it splits off dropped, with
// format and control characters (zero-width spaces and joiners, soft
// hyphens, NUL), white space, dashes, dots and underscores ignored, and the letters of
// lookalikes read as the Latin ones they look like. "Claude-Code",
// " codex ", "claude_code", "ＣＯＤＥＸ" and "сodex" (a Cyrillic с) all
// read as one of them.
func ownAgentName(name string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(name) {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Cc, unicode.Pd, unicode.Zs) || unicode.IsSpace(r):
			continue
		case r == '_' || r == '.' || r == '\u2212': // U+2212 MINUS SIGN is no dash (Pd)
			continue
		}
		r = unicode.ToLower(r)
		if l, ok := lookalikes[r]; ok {
			r = l
		}
		b.WriteRune(r)
		if b.Len() > len("claudecode") {
			return ""
		}
	}
	return ownAgents[b.String()]
}
