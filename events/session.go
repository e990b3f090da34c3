package events

// Session phases: what a fleet board shows.
const (
	PhaseReady   = "ready"   // idle, waiting for the next prompt
	PhaseWorking = "working" // a turn or a background process is running
	PhaseWaiting = "waiting" // blocked on a person: a permission prompt or a question
	PhaseEnded   = "ended"   // terminal
)

// Lanes of an open entry.
const (
	LaneMain       = "main"       // the agent's own tool calls and steps
	LaneSubagent   = "subagent"   // a spawned subagent
	LaneBackground = "background" // a process that outlives its tool call
)

// Permission modes of a session, agent-neutral. An agent's own mode name is
// kept beside it (SessionModeChanged.AgentMode).
const (
	ModeReadOnly       = "read_only"
	ModeWorkspaceWrite = "workspace_write"
	ModeAuto           = "auto"
	ModeFullAccess     = "full_access"
)

// ModeRank orders a session's permission mode m by the widest mode its
// commands may run in without a person's say: 0 for read_only, 2 for
// full_access, 1 for workspace_write, auto and a mode not known. The
// worker's admission and the gate's lever check both hold an agent's
// command to it.
func ModeRank(m string) int {
	switch m {
	case ModeReadOnly:
		return 0
	case ModeFullAccess:
		return 2
	}
	return 1
}

// SessionStarted opens a session aggregate in phase ready. It is a
// transition from nothing, so it needs a complete cause.
type SessionStarted struct {
	Agent          string `json:"agent"`                      // "claude-code", "codex", "cli"
	AgentSessionID string `json:"agent_session_id,omitempty"` // the agent's own session id
	Parent         string `json:"parent,omitempty"`           // parent session aggregate id (subagents)
	AgentID        string `json:"agent_id,omitempty"`         // subagent id within the parent
	AgentType      string `json:"agent_type,omitempty"`       // subagent type, e.g. "Explore"
	Cwd            string `json:"cwd,omitempty"`
	Model          string `json:"model,omitempty"`
	Mode           string `json:"mode,omitempty"`       // Mode constant, "" if unknown
	AgentMode      string `json:"agent_mode,omitempty"` // the agent's own mode name
	Transcript     string `json:"transcript,omitempty"` // transcript path as the agent reported it
	// RewrittenFrom is the session whose transcript file was rewritten
	// under it: this session holds the rewritten file as a new history
	// (import claude --as-new); see SessionTranscriptDiverged.
	RewrittenFrom string `json:"rewritten_from,omitempty"`
	// ForkedFrom is the agent's session id of the conversation this one
	// was forked from (Codex /fork).
	ForkedFrom string `json:"forked_from,omitempty"`
	// Depth is how deep a subagent the session is, as its agent counted
	// it (Meta.Depth); 0 when the agent gave none.
	Depth int `json:"depth,omitempty"`
}

// EventType implements Payload.
func (SessionStarted) EventType() string { return "session.started" }

// SessionTransitioned moves a session from one phase to another.
type SessionTransitioned struct {
	From     string `json:"from"`               // Phase constant
	To       string `json:"to"`                 // Phase constant, ≠ From
	Activity string `json:"activity,omitempty"` // activity after the move
	EntryID  string `json:"entry_id,omitempty"` // the entry that caused it, if any
}

// EventType implements Payload.
func (SessionTransitioned) EventType() string { return "session.transitioned" }

// SessionActivityChanged records what the session is doing within its
// phase: "thinking", "responding", "tool:Bash", "review", "question",
// "compacting", "subagent:Explore", "background", or "" when idle.
type SessionActivityChanged struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// EventType implements Payload.
func (SessionActivityChanged) EventType() string { return "session.activity_changed" }

// SessionEntryOpened opens an entry: a tool call, a subagent, a background
// process. Its opening time is the envelope's At.
type SessionEntryOpened struct {
	EntryID  string `json:"entry_id"` // the agent's id, e.g. a tool_use id
	Activity string `json:"activity"` // e.g. "tool:Bash"
	Lane     string `json:"lane"`     // Lane constant
	// Moves is the phase move the entry caused, folded after the entry
	// as a session.transitioned of its own would be: set when an entry
	// attached to a ready session (session.Attach) moves it to working,
	// nil otherwise and in events stored before the field existed, whose
	// moves are separate session.transitioned events. Read a move with
	// TransitionOf. An event that carries one needs a complete cause.
	Moves *SessionTransitioned `json:"moves,omitempty"`
	// FromResult is set when the entry is opened by its call's result,
	// which came before the call's use (two hooks that raced, sources
	// read out of order): the call ran, and the session.entry_closed
	// that follows closes it. Its use, when it comes, is recorded as an
	// observation and opens nothing. false otherwise and in events
	// stored before the field existed.
	FromResult bool `json:"from_result,omitempty"`
}

// EventType implements Payload.
func (SessionEntryOpened) EventType() string { return "session.entry_opened" }

// Entry outcomes.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"
	OutcomeRejected    = "rejected"
	OutcomeInterrupted = "interrupted"
	OutcomeBackground  = "backgrounded" // the call returned; its process lives on in lane background
)

// SessionEntryClosed closes an open entry.
type SessionEntryClosed struct {
	EntryID string `json:"entry_id"`
	Outcome string `json:"outcome"` // Outcome constant
	// By names who refused a call closed rejected when it was not the
	// person (Sig.By: "claude-code:auto_mode_classifier", …), and Reason
	// what they said; both "" otherwise and in events stored before.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Moves is the phase move the close caused, folded after the close
	// as a session.transitioned of its own would be: set when detaching
	// the last work of a session with no open turn (session.Detach)
	// settles it to ready, nil otherwise and in events stored before the
	// field existed. Read a move with TransitionOf. An event that
	// carries one needs a complete cause.
	Moves *SessionTransitioned `json:"moves,omitempty"`
}

// EventType implements Payload.
func (SessionEntryClosed) EventType() string { return "session.entry_closed" }

// TransitionOf returns the phase move p makes and true: p itself when it
// is a SessionTransitioned, the Moves of a SessionEntryOpened or
// SessionEntryClosed that carries one. It returns false for every other
// payload, including an entry event without a move. A consumer of phase
// moves reads them through it, so that both shapes of the log count.
func TransitionOf(p Payload) (SessionTransitioned, bool) {
	switch d := p.(type) {
	case SessionTransitioned:
		return d, true
	case SessionEntryOpened:
		if d.Moves != nil {
			return *d.Moves, true
		}
	case SessionEntryClosed:
		if d.Moves != nil {
			return *d.Moves, true
		}
	}
	return SessionTransitioned{}, false
}

// SessionEntryAbandoned marks an open entry that will never close: its
// turn was interrupted or superseded, or the session ended. It is a new
// event, never an edit; it needs a complete cause.
type SessionEntryAbandoned struct {
	EntryID string `json:"entry_id"`
	Reason  string `json:"reason"` // "interrupted", "superseded", "session_ended", "stale", "agent_gone", …
	// Evidence says what the mark rests on, for a person: e.g. the
	// agent process found gone, or how long nothing was observed.
	Evidence string `json:"evidence,omitempty"`
}

// EventType implements Payload.
func (SessionEntryAbandoned) EventType() string { return "session.entry_abandoned" }

// SessionModeChanged records a permission-mode change. Revision counts
// changes from 1.
type SessionModeChanged struct {
	From      string `json:"from"`
	To        string `json:"to"`
	AgentMode string `json:"agent_mode,omitempty"`
	Revision  int    `json:"revision"`
}

// EventType implements Payload.
func (SessionModeChanged) EventType() string { return "session.mode_changed" }

// SessionDescribed records changed session metadata; empty fields are
// unchanged.
type SessionDescribed struct {
	Cwd       string `json:"cwd,omitempty"`
	Model     string `json:"model,omitempty"`
	GitBranch string `json:"git_branch,omitempty"`
	Version   string `json:"version,omitempty"` // the agent's version
	Title     string `json:"title,omitempty"`
	// AgentSessionID is the agent's session id when a transcript's lines
	// changed to a new one (a resumed session continued in the file).
	AgentSessionID string `json:"agent_session_id,omitempty"`
}

// EventType implements Payload.
func (SessionDescribed) EventType() string { return "session.described" }

// SessionTurnStarted opens turn number Turn (1-based) on a user prompt.
type SessionTurnStarted struct {
	Turn     int    `json:"turn"`
	PromptID string `json:"prompt_id,omitempty"`
	// PromptSum identifies the prompt's text as its signal carried it
	// (redacted, at most 200 bytes): 16 lower-case hex digits of its
	// SHA-256 (session.PromptSum), "" for a prompt without text and in events
	// stored before the field existed. A report of a prompt without a
	// prompt id is told from a new prompt by it.
	PromptSum string `json:"prompt_sum,omitempty"`
}

// EventType implements Payload.
func (SessionTurnStarted) EventType() string { return "session.turn_started" }

// SessionTurnEnded closes turn Turn.
type SessionTurnEnded struct {
	Turn    int    `json:"turn"`
	Outcome string `json:"outcome"` // "completed", "interrupted", "failed" (an API error), "superseded", "abandoned", "ended"
}

// EventType implements Payload.
func (SessionTurnEnded) EventType() string { return "session.turn_ended" }

// SessionEnded moves a session to ended for good. It needs a complete cause.
type SessionEnded struct {
	From   string `json:"from"`   // phase before the end
	Reason string `json:"reason"` // e.g. "prompt_input_exit", "cli", "agent_gone"
	// Evidence says what the end rests on, e.g. the agent process found
	// gone; "" when the agent said so itself.
	Evidence string `json:"evidence,omitempty"`
}

// EventType implements Payload.
func (SessionEnded) EventType() string { return "session.ended" }

// Review verdicts, outcomes, risks and user-authorization levels.
const (
	VerdictAllow = "allow"
	VerdictDeny  = "deny"

	ReviewApproved    = "approved"
	ReviewRejected    = "rejected"
	ReviewTimedOut    = "timed_out"
	ReviewUnavailable = "unavailable"
)

// ReviewRequested records that an action waits for a verdict. A review
// the agent's own permission dialog asks its user for has only ReviewID,
// Tool and Action; a review the gate decides (Gate set) also carries what
// it reviews exactly and the session's permission mode at the time.
type ReviewRequested struct {
	ReviewID string `json:"review_id"` // e.g. the tool_use id
	Tool     string `json:"tool"`
	Action   string `json:"action,omitempty"` // the exact boundary reviewed, human-readable and redacted, e.g. the command
	// Gate marks a review the gate decides (rules, a reviewer program, a
	// person answering with `review allow|deny`).
	Gate bool `json:"gate,omitempty"`
	// Notice marks a review opened by a notice of the dialog that names
	// only its tool (Claude Code's Notification permission_prompt):
	// Action then holds the notice's message, not the action. False in
	// events stored before the field existed.
	Notice bool `json:"notice,omitempty"`
	// Event is the hook that asked: "PreToolUse", "PermissionRequest",
	// "exec" (an elevation), "stdin" (input to a running command).
	Event string `json:"event,omitempty"`
	// ArgsDigest is "sha256:" and the hex SHA-256 of the tool's input as
	// the agent sent it (its exact bytes): the whole input the gate
	// judged, also when the hook's payload was recorded cut.
	ArgsDigest string `json:"args_digest,omitempty"`
	Mode       string `json:"mode,omitempty"`     // the session's permission mode when asked
	Revision   int    `json:"revision,omitempty"` // its mode revision when asked
	// Grant is the mode an allow verdict grants for this one action
	// ("full_access" for an elevation), "" for none.
	Grant string `json:"grant,omitempty"`
	// Justification is why the requester says it needs the action (an
	// elevation's --justification).
	Justification string `json:"justification,omitempty"`
	// Risk is the risk class the policy gives the action, "" if none.
	Risk string `json:"risk,omitempty"`
	// BudgetMS is how long the gate waits for a verdict, in ms; past it
	// the review is decided timed_out.
	BudgetMS int64 `json:"budget_ms,omitempty"`
	// Rule is why the gate asks: the policy rule or built-in guard that
	// sent the action to review and the file it came from ("Bash(git
	// push:*) in /data/policy.toml"), or what else did (a risk class no
	// rule alone allows, no rule matching); "" in events stored before
	// the field existed and in reviews the gate did not open.
	Rule string `json:"rule,omitempty"`
}

// EventType implements Payload.
func (ReviewRequested) EventType() string { return "review.requested" }

// Who decides a review (DecidedBy.Kind).
const (
	DecidedByRule     = "rule"     // a policy rule; Name: the pattern
	DecidedByReviewer = "reviewer" // a reviewer program; Name: its command
	DecidedByUser     = "user"     // a person or the agent's user; Name: the actor
	DecidedByTimeout  = "timeout"  // nobody within the budget; Name: what waited
	DecidedByBreaker  = "breaker"  // the refusal breaker is tripped
	// DecidedByHook is the gate hook on its own, with no server to ask
	// (it fails closed); Name: the rule it applied.
	DecidedByHook = "hook"
	// DecidedByAgent is the agent's own permission check, not the
	// person: Claude Code's permission rules, auto-mode classifier or a
	// hook of its own (PermissionDenied); Name: which, as Sig.By.
	DecidedByAgent = "agent"
)

// DecidedBy names who or what decided a review.
type DecidedBy struct {
	Kind string `json:"kind"`           // DecidedBy* constant
	Name string `json:"name,omitempty"` // the rule's pattern, the reviewer's command, the person
}

// ReviewDecided records a verdict on a review. It needs a complete cause.
// For a review the gate decides, Verdict is the one re-derived from the
// answer (reducers/review.Derive), never the answer as given.
type ReviewDecided struct {
	ReviewID          string `json:"review_id"`
	Verdict           string `json:"verdict"`                      // allow | deny
	Outcome           string `json:"outcome"`                      // approved | rejected | timed_out | unavailable
	Risk              string `json:"risk,omitempty"`               // low | medium | high | critical
	UserAuthorization string `json:"user_authorization,omitempty"` // none | low | medium | high
	// Evidence holds the event ids of the user messages (observations
	// with a prompt signal) the verdict relied on.
	Evidence        []string   `json:"evidence,omitempty"`
	EvidenceDropped bool       `json:"evidence_dropped,omitempty"`
	DecidedBy       *DecidedBy `json:"decided_by,omitempty"`
	Reason          string     `json:"reason,omitempty"`
}

// EventType implements Payload.
func (ReviewDecided) EventType() string { return "review.decided" }

// ReviewBreakerTripped records that too many refusals stopped automatic
// review: Refusals of the last Window decisions were denials.
type ReviewBreakerTripped struct {
	Refusals int `json:"refusals"`
	Window   int `json:"window"`
}

// EventType implements Payload.
func (ReviewBreakerTripped) EventType() string { return "review.breaker_tripped" }

// ReviewBreakerReset records that the refusal breaker closed again: a
// person's new prompt, or a person's word (`session mode`). The
// consecutive count starts over; the window keeps its verdicts.
type ReviewBreakerReset struct {
	Reason string `json:"reason"`
}

// EventType implements Payload.
func (ReviewBreakerReset) EventType() string { return "review.breaker_reset" }

// SessionEntryLateResult records the result of an entry that had already
// been abandoned (its turn ended, or the session's, before the result
// came): the call did run, and this is how it ended. The entry stays
// closed; it needs a complete cause.
type SessionEntryLateResult struct {
	EntryID string `json:"entry_id"`
	Outcome string `json:"outcome"` // Outcome constant
}

// EventType implements Payload.
func (SessionEntryLateResult) EventType() string { return "session.entry_late_result" }

// SessionForked records that a prompt began turn Turn while turn Turn-1
// still had open calls Open (oldest first): two writers on one session
// (two terminals resuming one session id), or calls whose results never
// came. The open calls stay open: their results close them, or the next
// turn's end abandons them. It needs a complete cause.
type SessionForked struct {
	Turn     int      `json:"turn"`                // the turn the prompt began
	PromptID string   `json:"prompt_id,omitempty"` // its prompt id, if the agent gave one
	Open     []string `json:"open"`                // entry ids of the earlier turn still open
}

// EventType implements Payload.
func (SessionForked) EventType() string { return "session.forked" }

// Fingerprint identifies what an import read of a transcript file: the
// last line imported, where it lay, and the SHA-256 of its bytes.
type Fingerprint struct {
	Line   int    `json:"line"`             // 1-based number of the last line imported
	Offset int64  `json:"offset"`           // byte offset of that line's first byte
	End    int64  `json:"end"`              // byte offset just after its newline
	SHA256 string `json:"sha256,omitempty"` // hex SHA-256 of the line's bytes without the newline; "" when the file has no such line
}

// SessionTranscriptDiverged records that a transcript file no longer
// holds what was imported from it: it was truncated or rewritten. What
// was imported stays in the log; the file's import stops there. Imported
// is the fingerprint of the last line imported, Found what the file holds
// at that place now (Found.Line 0 and SHA256 "": the file ends before).
// NewSession is the aggregate a rewritten file is imported into as a new
// linked history (import --as-new).
type SessionTranscriptDiverged struct {
	Path       string      `json:"path"`
	Imported   Fingerprint `json:"imported"`
	Found      Fingerprint `json:"found"`
	Size       int64       `json:"size"` // the file's size in bytes when found
	NewSession string      `json:"new_session"`
}

// EventType implements Payload.
func (SessionTranscriptDiverged) EventType() string { return "session.transcript_diverged" }
