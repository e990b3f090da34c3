package events

import (
	"time"
	"unsafe"
)

// Observation is what an adapter saw, normalized and agent-neutral: the
// input of a session decision. The adapter that parsed it fills Signals;
// the reducer decides only from Signals and Meta, so re-running today's
// reducer over stored observations (rederive) needs no adapter.
//
// Raw keeps the redacted original text; when it was longer than the
// adapter's size cap, Raw holds its first Cut.Kept bytes and Cut says how
// long the original was and what its SHA-256 was.
type Observation struct {
	Key        string   `json:"key"`                   // idempotency key, unique per aggregate
	Parser     string   `json:"parser"`                // parser and version, e.g. "claude-transcript/1"
	Path       string   `json:"path,omitempty"`        // transcript path, for lines
	Line       int      `json:"line,omitempty"`        // 1-based line number in Path, for lines
	Kind       string   `json:"kind"`                  // transcript line type or hook event name
	UUID       string   `json:"uuid,omitempty"`        // the agent's id of the line
	ParentUUID string   `json:"parent_uuid,omitempty"` // the agent's parent link
	AgentTime  string   `json:"agent_time,omitempty"`  // the agent's own timestamp, verbatim
	Meta       Meta     `json:"meta,omitzero"`
	Signals    []Sig    `json:"signals,omitempty"`
	Raw        string   `json:"raw,omitempty"`      // redacted text as seen, cut to the cap
	Cut        *Cut     `json:"cut,omitempty"`      // set when Raw was cut
	Problems   []string `json:"problems,omitempty"` // what the parser could not use, e.g. "parentUuid x points nowhere"
	// Fingerprint is where a transcript line lay in its file and the
	// SHA-256 of its bytes, so a later import can tell that the file
	// still holds what was imported; nil for hooks (and lines imported
	// before it was kept).
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	Process     *Process     `json:"process,omitempty"` // the agent process a hook ran under, when found
	// Sender is the user who sent a hook over serve's system socket, by
	// its peer credentials; nil for every other observation (and those
	// stored before it was kept). The session reducer reads it only to
	// fold the session's owner (the first observation's sender).
	Sender *Sender `json:"sender,omitempty"`
	// Received is when the appending host took the observation in, by
	// its own clock: a hook's receipt (its spool entry's time), the
	// moment a transcript line was read. Zero in observations stored
	// before it was kept. Staleness is judged on this clock, never on
	// the agent's (see Live).
	Received time.Time `json:"received,omitzero"`
	// Live is set when the observation arrived as the agent wrote it: a
	// hook, or a transcript line serve --watch saw appended to a file it
	// was following. Such an observation is dated by Received, and a
	// line's AgentTime beside it gives the agent's clock offset. A line
	// read from a file not written live (an import, the first read of a
	// file present when the watcher started) is history: it is dated by
	// its AgentTime corrected by the offset learned, if any.
	Live bool `json:"live,omitempty"`
	// More is set on a history line (not Live) when the import pass
	// that read it read on past it in the same file: an import is under
	// way while the last line a session took in says so. The last line a
	// pass read (at the file's end, at a line that stops it) has it
	// clear, and so has every line imported before it was recorded.
	More bool `json:"more,omitempty"`
	// Held is set on the last line an import pass took in when the pass
	// stopped at the line after it, which does not parse (and was not
	// skipped): the file goes on past a line Logbook could not read, so
	// what the agent wrote after it is not known yet, and its silence is
	// not the agent's (session.State.HeldPath). It is set too on the
	// observation of Kind KindHeld that records such a stop when the
	// pass took in no line before it (HeldLine).
	Held bool `json:"held,omitempty"`
	// HeldLine is set on an observation of Kind KindHeld only: the
	// 1-based line of Path an import pass stopped at, one that does not
	// parse, when every line before it was in the session already. Such
	// an observation is no transcript line (Line 0): it moves no import
	// cursor, and decides nothing. 0 on every other observation.
	HeldLine int   `json:"held_line,omitempty"`
	Tick     *Tick `json:"tick,omitempty"` // set in a TickObserved only
	// RewrittenFrom is set on the first line imported into a session that
	// holds a rewritten transcript as a new history (import --as-new): the
	// session the file diverged from. The session's start links to it.
	RewrittenFrom string `json:"rewritten_from,omitempty"`
	// Copied is set on an observation of Kind KindCopy: it stands for
	// the Copied lines of Path ending at Line (≥ 1), each one a line the
	// session already holds by its UUID from another file or an earlier
	// line (a backup, a synced copy of the transcript). They are recorded
	// once, without their text, and decide nothing; 0 on every other
	// observation.
	Copied int `json:"copied,omitempty"`
	// Written is set on each history line (not Live) a watcher read from
	// a file it had not read before, one that held lines when it started
	// or when the awaited directory it is in appeared, when the file's
	// last complete line then had a timestamp no more than a day from
	// the file's modification time: that modification time, by the
	// appending host's clock, which is when that last line was written.
	// The line's event time is then on that clock already: its own
	// timestamp moved by the agent clock's offset the host measured (the
	// modification time minus the last line's timestamp; none when they
	// are within a few seconds), never past its receipt; the session
	// reducer adds no offset of its own to it. Zero on every other
	// observation (and those stored before it was kept).
	Written time.Time `json:"written,omitzero"`
}

// KindCopy is the Kind of an observation that stands for a run of
// transcript lines the session already holds (Observation.Copied).
const KindCopy = "copy"

// KindHeld is the Kind of an observation that records an import pass's
// stop at a line that does not parse (Observation.HeldLine), when the
// pass took in no line before it to carry Held: the agent wrote on in
// a live transcript past what the session holds. It is stored as the
// transcript's own line type, with Held and Path set and Line 0.
const KindHeld = "held"

// HeldStop reports whether o is the record of an import pass's stop
// (KindHeld): Kind KindHeld, Held, Path and HeldLine set, Line 0.
func (o *Observation) HeldStop() bool {
	return o.Kind == KindHeld && o.Held && o.HeldLine > 0 && o.Line == 0 && o.Path != ""
}

// Meta is session metadata carried by an observation; empty fields are
// unknown, not cleared.
type Meta struct {
	SessionID string `json:"session_id,omitempty"` // the agent's session id
	AgentID   string `json:"agent_id,omitempty"`   // subagent id
	AgentType string `json:"agent_type,omitempty"` // subagent type
	Cwd       string `json:"cwd,omitempty"`
	Model     string `json:"model,omitempty"`
	Version   string `json:"version,omitempty"`
	GitBranch string `json:"git_branch,omitempty"`
	AgentMode string `json:"agent_mode,omitempty"` // the agent's permission mode name
	Title     string `json:"title,omitempty"`
	// Agent names the agent that wrote the input: "codex", or the agent
	// of an obs.agent.line ("pilot"); "" is Claude Code (observations
	// stored before the field existed).
	Agent string `json:"agent,omitempty"`
	// ForkedFrom is the agent's session id this session was forked from
	// (a Codex /fork): the new session is its own, linked to its origin.
	ForkedFrom string `json:"forked_from,omitempty"`
	// Depth is how deep a subagent the session is, as its agent counts
	// it (Codex session_meta source.subagent.thread_spawn.depth: 1 for a
	// thread the user's thread spawned); 0 when the agent gives none.
	Depth int `json:"depth,omitempty"`
}

// Cut records input that was longer than the cap.
type Cut struct {
	Size   int64  `json:"size"`   // original length in bytes
	SHA256 string `json:"sha256"` // hex SHA-256 of the original (before redaction)
	Kept   int    `json:"kept"`   // bytes kept in Raw (0: none)
}

// Signal kinds: the agent-neutral facts a reducer decides from.
const (
	SigSessionStart   = "session_start"   // Name: source (startup, resume, …)
	SigPrompt         = "prompt"          // a user prompt: a turn starts; ID: prompt id; Status PromptInTurn: see there
	SigThinking       = "thinking"        // the model is thinking
	SigText           = "text"            // the model wrote text
	SigToolUse        = "tool_use"        // ID: tool use id, Name: tool; Background: run_in_background
	SigToolResult     = "tool_result"     // ID: tool use id, Status: ok|error|rejected|interrupted|backgrounded; Task: background task id
	SigTurnEnd        = "turn_end"        // the model finished its turn; Status TurnEndQuestion or TurnEndPlan: see there
	SigInterrupt      = "interrupt"       // the user interrupted the turn
	SigPermission     = "permission"      // a permission prompt waits; ID: tool use id if known, Name: tool
	SigQuestion       = "question"        // the agent asked the user and waits; ID: tool use id, Name: tool; Status QuestionPrefilled: see there
	SigAnswer         = "answer"          // the user's answer to the agent's question; ID: the question's tool use id; Text: the answer only
	SigIdle           = "idle"            // the agent waits for input (idle prompt)
	SigCompactStart   = "compact_start"   // context compaction began; Name: trigger (CompactManual: see there)
	SigCompactEnd     = "compact_end"     // context compaction finished; Name: trigger or source
	SigBackgroundDone = "background_done" // Task: background task id, Status: completed|failed|killed
	SigSubagentStart  = "subagent_start"  // ID: agent id, Name: agent type
	SigSubagentStop   = "subagent_stop"   // ID: agent id
	SigMode           = "mode"            // Name: the agent's permission mode
	SigSessionEnd     = "session_end"     // Text: reason
	SigAPIError       = "api_error"       // Text: short error
	SigUsage          = "usage"           // Usage: tokens one model call spent; ID: the agent's message id
	SigRateLimit      = "rate_limit"      // Limit: a plan-limit window's reading; Name: window
)

// PromptInTurn is the Status of a prompt signal that an agent writes after
// it reported the start of the prompt's turn (Codex writes task_started,
// then user_message): it opens a turn only when none is open.
const PromptInTurn = "in_turn"

// CompactManual is the Name of a compact_start or compact_end signal of a
// compaction the person asked for at the agent's prompt (Claude Code's
// /compact: PreCompact, PostCompact or compact_boundary with trigger
// "manual"): the agent was at its prompt, so a turn still open then was
// over. Any other Name ("auto", "compact", "summary", …) says nothing of
// the turn.
const CompactManual = "manual"

// TurnEndQuestion and TurnEndPlan are Statuses of a turn_end signal
// whose turn's last message leaves the person something to answer, as
// the adapter read it from the turn's end itself (Codex's task_complete
// carries last_agent_message): a question (the message ends with "?"),
// or a plan to approve (Codex 0.1xx plan mode: the message holds a
// <proposed_plan> block, and Codex asks "Implement this plan?"). The
// session then waits on the person, and is never marked stale for it.
const (
	TurnEndQuestion = "question"
	TurnEndPlan     = "plan"
)

// QuestionPrefilled is the Status of a question signal whose call the
// model sent with answers already filled in: whatever answer its result
// reports is the model's own words, never the user's.
const QuestionPrefilled = "prefilled"

// Sig is one signal. Text is short (≤ 200 bytes) and redacted.
type Sig struct {
	Kind       string `json:"kind"`
	ID         string `json:"id,omitempty"`
	Name       string `json:"name,omitempty"`
	Task       string `json:"task,omitempty"`
	Status     string `json:"status,omitempty"`
	Text       string `json:"text,omitempty"`
	Background bool   `json:"background,omitempty"`
	// AgentType is, on a tool_use of a call that starts a subagent
	// (Claude Code's Agent or Task tool), the agent type its input asks
	// for (subagent_type, e.g. "Explore"), and on that call's
	// tool_result, the type the result names (agentType) when it names
	// one. "" on every other signal.
	AgentType string `json:"agent_type,omitempty"`
	// By names who refused a call, on a tool_result rejected by the
	// agent's own permission check rather than the person
	// ("claude-code:auto_mode_classifier", "claude-code:permission_check");
	// Text then holds the reason given. "" for every other signal.
	By    string `json:"by,omitempty"`
	Usage *Usage `json:"usage,omitempty"` // set on a usage signal only
	// Request is, on a usage signal, the id of the API request the
	// reading belongs to where the agent names it (Claude Code's
	// transcript requestId, its OpenTelemetry api_request request_id):
	// two sources of one call's usage (a transcript line and a telemetry
	// event) name the same request, and the reducer counts it once. ""
	// on every other signal, and where the agent names no request.
	Request string `json:"request,omitempty"`
	// Counted is, on a usage signal that names a message or a request
	// (ID or Request) and is not Cumulative, what the host that decided
	// the observation found the session had counted before it, by the
	// ids of every reading any earlier observation counted (the
	// session's index, reducers/session.State.Counted): CountedNew when
	// it had counted no reading of that message or request, CountedSeen
	// when it had. The reducer folds the recorded word, so a replay and
	// `replay --rederive` count what was counted. It is the decider's,
	// never an adapter's: set when the observation is decided (any value
	// an adapter left is replaced), "" on every other signal and in
	// observations stored before it was kept, which count as the
	// session's last RecentMessages readings alone say.
	Counted string `json:"counted,omitempty"`
	Limit   *Limit `json:"limit,omitempty"` // set on a rate_limit signal only
}

// Values of Sig.Counted.
const (
	// CountedNew: the session had counted no reading of the signal's
	// message or request; the reading counts whole (or, when the
	// session's recent readings hold it, its growth).
	CountedNew = "new"
	// CountedSeen: the session had counted a reading of the signal's
	// message or request (from this source or another, however long
	// ago); the reading adds only its growth over a reading the
	// session's recent readings still hold, and nothing otherwise.
	CountedSeen = "seen"
)

// Usage is what one model call (or, with Cumulative, a session so far)
// spent, in tokens. Fields are ≥ 0 but for Input of a Codex call, which
// may be below 0 where the call's cached and written counts overlap (the
// thread's sum is exact); an adapter refuses a reading with a negative,
// non-numeric or absurd count (over MaxUsageTokens) instead of emitting
// it.
type Usage struct {
	Model      string `json:"model,omitempty"`
	Input      int64  `json:"input,omitempty"`       // input tokens not read from or written to the cache
	Output     int64  `json:"output,omitempty"`      // output tokens (reasoning included)
	CacheWrite int64  `json:"cache_write,omitempty"` // input tokens written to the prompt cache
	CacheRead  int64  `json:"cache_read,omitempty"`  // input tokens read from the prompt cache
	Reasoning  int64  `json:"reasoning,omitempty"`   // of Output, reasoning tokens (informational)
	// CacheWrite1h is the part of CacheWrite written with a one-hour
	// lifetime (Claude Code message.usage.cache_creation.
	// ephemeral_1h_input_tokens), which Anthropic bills at twice the
	// input price; the rest of CacheWrite is the five-minute kind (1.25x).
	CacheWrite1h int64 `json:"cache_write_1h,omitempty"`
	// ServiceTier is the tier the call was served in as the agent
	// reported it (Claude Code message.usage.service_tier: standard,
	// priority, batch; Codex: the turn's service_tier, flex or priority);
	// "" is the standard tier.
	ServiceTier string `json:"service_tier,omitempty"`
	// RunningTotal is the agent's own count of the session's spend so far
	// after this call, where it keeps one (Codex token_count
	// total_token_usage, less the history a fork or a subagent copied),
	// in the classes above; `usage --check` compares it with the sum of
	// the calls. nil: the agent keeps none.
	RunningTotal *Usage `json:"running_total,omitempty"`
	// Cumulative marks a running total for the session (Codex
	// token_count total_token_usage): the reducer counts its growth over
	// the previous total, not the reading itself.
	Cumulative bool `json:"cumulative,omitempty"`
	// CopiedFrom is the agent's session id of the session this reading's
	// call was made in, when the line that reports it is a copy of that
	// session's (Claude Code's fork of a session stamps each line it
	// copies with forkedFrom): the call is spent there, and the reducer
	// keeps the reading apart from the session's own spend
	// (session.State.Copied), so a total over sessions counts it once.
	// "" for a reading of the session's own call.
	CopiedFrom string `json:"copied_from,omitempty"`
}

// MaxUsageTokens is the largest token count one usage reading may carry;
// a larger one is refused as absurd.
const MaxUsageTokens = 1 << 40

// Total returns the reading's input, output and cache tokens summed.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheWrite + u.CacheRead }

// Limit is one plan-limit window as the agent reported it: how much of it
// is used, how long it is, when it resets. Account names whose plan it is
// (e.g. "codex/plus").
type Limit struct {
	Account     string  `json:"account,omitempty"`
	Window      string  `json:"window"`       // "primary", "secondary", …
	UsedPercent float64 `json:"used_percent"` // 0..100
	Minutes     int64   `json:"window_minutes,omitempty"`
	ResetsAt    int64   `json:"resets_at,omitempty"` // Unix seconds; 0 if unknown
}

// ClaudeLineObserved is one line of a Claude Code transcript (.jsonl),
// parsed by adapters/claude.
type ClaudeLineObserved struct{ Observation }

// EventType implements Payload.
func (ClaudeLineObserved) EventType() string { return "obs.claude.line" }

// ClaudeHookObserved is one Claude Code hook payload, parsed by
// adapters/claude.
type ClaudeHookObserved struct{ Observation }

// EventType implements Payload.
func (ClaudeHookObserved) EventType() string { return "obs.claude.hook" }

// CodexLineObserved is one line of a Codex CLI rollout file (.jsonl),
// parsed by adapters/codex.
type CodexLineObserved struct{ Observation }

// EventType implements Payload.
func (CodexLineObserved) EventType() string { return "obs.codex.line" }

// CodexNotifyObserved is one payload Codex CLI passed to its notify
// program, parsed by adapters/codex.
type CodexNotifyObserved struct{ Observation }

// EventType implements Payload.
func (CodexNotifyObserved) EventType() string { return "obs.codex.notify" }

// AgentLineObserved is one line of the transcript of an agent Logbook
// has no event type of its own for: any agent adapter but Claude Code's
// (obs.claude.line) and Codex CLI's (obs.codex.line), which keep theirs.
// The observation's Meta.Agent names the agent ("pilot") and its Parser
// the parser and its version ("pilot-transcript/1"); both are set by the
// agent's package, never empty.
type AgentLineObserved struct{ Observation }

// EventType implements Payload.
func (AgentLineObserved) EventType() string { return "obs.agent.line" }

// Observed returns the observation inside p and true when p is an
// observation payload. The observation is p's own, not a copy (for a
// payload held by value too: a copy of it, made anew on every call, was
// the fold's largest allocation): read it, never change it.
func Observed(p Payload) (*Observation, bool) {
	switch o := p.(type) {
	case ClaudeLineObserved:
		return &boxed[ClaudeLineObserved](&p).Observation, true
	case *ClaudeLineObserved:
		return &o.Observation, true
	case ClaudeHookObserved:
		return &boxed[ClaudeHookObserved](&p).Observation, true
	case *ClaudeHookObserved:
		return &o.Observation, true
	case CodexLineObserved:
		return &boxed[CodexLineObserved](&p).Observation, true
	case *CodexLineObserved:
		return &o.Observation, true
	case CodexNotifyObserved:
		return &boxed[CodexNotifyObserved](&p).Observation, true
	case *CodexNotifyObserved:
		return &o.Observation, true
	case AgentLineObserved:
		return &boxed[AgentLineObserved](&p).Observation, true
	case *AgentLineObserved:
		return &o.Observation, true
	case TickObserved:
		return &boxed[TickObserved](&p).Observation, true
	case *TickObserved:
		return &o.Observation, true
	case HarnessObserved:
		return &boxed[HarnessObserved](&p).Observation, true
	case *HarnessObserved:
		return &o.Observation, true
	case OTelObserved:
		return &boxed[OTelObserved](&p).Observation, true
	case *OTelObserved:
		return &o.Observation, true
	}
	return nil, false
}

// WithObservation returns a payload of p's type holding o instead of
// p's observation (a pointer payload becomes a pointer to a new value;
// p is not modified), and true; p and false when p is not an
// observation payload.
func WithObservation(p Payload, o Observation) (Payload, bool) {
	switch p.(type) {
	case ClaudeLineObserved:
		return ClaudeLineObserved{o}, true
	case *ClaudeLineObserved:
		return &ClaudeLineObserved{o}, true
	case ClaudeHookObserved:
		return ClaudeHookObserved{o}, true
	case *ClaudeHookObserved:
		return &ClaudeHookObserved{o}, true
	case CodexLineObserved:
		return CodexLineObserved{o}, true
	case *CodexLineObserved:
		return &CodexLineObserved{o}, true
	case CodexNotifyObserved:
		return CodexNotifyObserved{o}, true
	case *CodexNotifyObserved:
		return &CodexNotifyObserved{o}, true
	case AgentLineObserved:
		return AgentLineObserved{o}, true
	case *AgentLineObserved:
		return &AgentLineObserved{o}, true
	case TickObserved:
		return TickObserved{o}, true
	case *TickObserved:
		return &TickObserved{o}, true
	case HarnessObserved:
		return HarnessObserved{o}, true
	case *HarnessObserved:
		return &HarnessObserved{o}, true
	case OTelObserved:
		return OTelObserved{o}, true
	case *OTelObserved:
		return &OTelObserved{o}, true
	}
	return p, false
}

// boxed returns a pointer to the value *p holds, of type T, a struct
// larger than a pointer (which an interface holds through a pointer to
// a copy of its own; see iface), without copying it. The caller has
// checked that *p holds a T; the value is the interface's, and nothing
// may change it.
func boxed[T any](p *Payload) *T {
	return (*T)((*iface)(unsafe.Pointer(p)).data)
}
