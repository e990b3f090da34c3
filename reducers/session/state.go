// Package session decides and folds the lifecycle of one agent session: its
// phase (ready, working, waiting, ended), activity, open entries and their
// lanes, permission mode, turns and reviews.
//
// Decide and Evolve are pure: time, ids and every input arrive inside
// commands and envelopes; nothing here reads a clock, draws randomness or
// does I/O. Folding the same events always yields the same State, on every
// host, which is what makes replay and rederive trustworthy.
package session

import (
	"math"
	pathpkg "path"
	"strconv"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Bounds on what a State remembers. They keep a long session's state small.
const (
	// RecentKeys is how many hook observation keys a State remembers to
	// drop redelivered hooks.
	RecentKeys = 256
	// RecentClosed is how many closed entry ids a State remembers, so a
	// hook and a transcript line reporting the same tool call count once.
	RecentClosed = 256
	// ReviewWindow is how many recent review verdicts the breaker counts.
	ReviewWindow = 50
)

// Entry is one open entry: a tool call, a subagent or a background process.
type Entry struct {
	EntryID  string       `json:"entry_id"`
	Activity string       `json:"activity"`
	Lane     string       `json:"lane"`
	OpenedAt time.Time    `json:"opened_at"`
	Cause    events.Cause `json:"cause"`
}

// State is everything the session reducer knows of one session. Its JSON
// form is the session projection's row, so field names are a stored format:
// change them with the projection's schema version.
type State struct {
	ID             string         `json:"id"`
	Ver            uint64         `json:"ver"` // Ver of the last event folded; 0: no session
	Phase          string         `json:"phase"`
	Activity       string         `json:"activity"`
	WaitingOn      string         `json:"waiting_on,omitempty"` // the entry a waiting phase waits on, if one
	Entries        []Entry        `json:"entries,omitempty"`    // open entries, oldest first
	Agent          string         `json:"agent,omitempty"`
	AgentSessionID string         `json:"agent_session_id,omitempty"`
	Parent         string         `json:"parent,omitempty"`
	AgentID        string         `json:"agent_id,omitempty"`
	AgentType      string         `json:"agent_type,omitempty"`
	Cwd            string         `json:"cwd,omitempty"`
	Model          string         `json:"model,omitempty"`
	GitBranch      string         `json:"git_branch,omitempty"`
	Version        string         `json:"version,omitempty"`
	Title          string         `json:"title,omitempty"`
	Mode           string         `json:"mode,omitempty"`
	AgentMode      string         `json:"agent_mode,omitempty"`
	ModeRevision   int            `json:"mode_revision"`
	Turns          int            `json:"turns"`
	TurnOpen       bool           `json:"turn_open"`
	TurnStartedAt  time.Time      `json:"turn_started_at,omitzero"` // when the last turn started
	TurnEndedAt    time.Time      `json:"turn_ended_at,omitzero"`   // when the last turn ended
	TurnEndedBy    string         `json:"turn_ended_by,omitempty"`  // the kind of source that ended it: "hook", "transcript", …
	Released       bool           `json:"released,omitempty"`       // a subagent whose parent took its result; cleared by its next turn
	ToolCalls      int            `json:"tool_calls"`
	Abandoned      int            `json:"abandoned"`
	Observations   int            `json:"observations"`
	Lines          int            `json:"lines"`               // transcript lines observed, all sources
	Cursors        PerSource[int] `json:"cursors,omitzero"`    // last line observed per transcript file name: the import cursors
	PromptID       string         `json:"prompt_id,omitempty"` // the open turn's prompt id, if the agent gave one
	// PromptSum is the last turn's events.SessionTurnStarted.PromptSum,
	// and TurnCalls how many main-lane calls that turn opened: a prompt
	// without an id of the same text while the turn has opened none is
	// that prompt reported again.
	PromptSum string    `json:"prompt_sum,omitempty"`
	TurnCalls int       `json:"turn_calls,omitempty"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Since is when the session entered its current phase and activity.
	Since time.Time `json:"since"`
	// ObservedAt is when Logbook last heard from the agent (a transcript
	// line or a hook; reconciler ticks do not count), on the server's
	// clock: what staleness is measured from. A live observation
	// (events.Observation.Live) counts at its receipt; a history line at
	// its event time when its host dated it by the file's modification
	// time (events.Observation.Written), else its agent time plus
	// ClockOffsetMS when an offset is known, else its own time; each
	// never past the observation's receipt when it
	// has one; the latest of these, so history read after a live report
	// never moves it back.
	ObservedAt time.Time `json:"observed_at"`
	// ObservedRef is the event id of the observation ObservedAt was
	// taken from.
	ObservedRef string `json:"observed_ref,omitempty"`
	// ReceivedAt is the latest receipt (events.Observation.Received) of
	// any observation of the agent, live or history, by the appending
	// host's clock: a stale mark waits for a quiet period after it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// Importing is set while the last observation of the agent taken in
	// is a history line whose import pass read on past it
	// (events.Observation.More): an import is under way, and may pause
	// between its runs. Any other observation of the agent clears it.
	Importing bool `json:"importing,omitempty"`
	// HeldPath is the transcript an import stopped in at a line that does
	// not parse (events.Observation.Held), and HeldLine that line's
	// number: the agent wrote on past what Logbook could read, so the
	// session's silence is not the agent's, and no stale mark comes
	// while it is set. A record of the stop itself
	// (events.Observation.HeldStop: a pass that took in no line before
	// it) sets them as well. A later line of that file (by name, as
	// Cursor counts lines) at or past HeldLine (an
	// import with --skip-invalid, the line repaired) clears them; "" and
	// 0: nothing held.
	HeldPath string `json:"held_path,omitempty"`
	HeldLine int    `json:"held_line,omitempty"`
	// ClockOffsetMS is the agent clock's offset learned from the last
	// live transcript line: its receipt minus its agent time, ms;
	// positive when the agent's clock is behind the server's, negative
	// when ahead. Meaningful only when ClockOffsetAt is set.
	ClockOffsetMS int64 `json:"clock_offset_ms,omitempty"`
	// ClockOffsetAt is the receipt of the line ClockOffsetMS was learned
	// from; zero: no offset known.
	ClockOffsetAt time.Time `json:"clock_offset_at,omitzero"`
	// AgentProcess is the session's agent process, the one the
	// reconciler checks: for hooks that record their chain of ancestors
	// (events.Process.Chain), the deepest process the chains of the two
	// newest such hooks share, so that a process standing between the
	// agent and one hook (a dispatcher that runs the hook and exits) is
	// never taken for the agent; nil after the first such hook, or when
	// the two share none (another agent process, another host). For a
	// hook recorded before chains were kept, the process it found. nil
	// when none is known (transcripts only). Never holds a Chain.
	AgentProcess *events.Process `json:"agent_process,omitempty"`
	// HookProcess is the process the newest hook that recorded a chain
	// ran under, with its chain (at most events.MaxChain entries): the
	// next hook's chain is compared with it. nil when the newest hook
	// that found a process recorded none (and in every log written before
	// chains were kept).
	HookProcess *events.Process `json:"hook_process,omitempty"`
	// Owner is the sender of the session's first observation
	// (events.Observation.Sender): the user of the host whose hook
	// opened the session on serve's system socket. nil when the first
	// observation came any other way (and in every log written before
	// senders were kept).
	Owner *events.Sender `json:"owner,omitempty"`
	// Harness is the harness whose observation (events.HarnessObserved)
	// started the session: only that harness's observations move it.
	// "" for a session another reader started.
	Harness      string `json:"harness,omitempty"`
	EndReason    string `json:"end_reason,omitempty"`
	RecentKeys   Recent `json:"recent_keys,omitzero"`   // hook keys, newest last
	RecentClosed Recent `json:"recent_closed,omitzero"` // closed entry ids, newest last
	// Calls holds every entry that closed with its result, and the
	// prompt id of every turn begun ("prompt:<id>"), for the session's
	// life (bounded by MaxIDs): a late duplicate of such a call or prompt
	// decides nothing.
	Calls IDSet `json:"calls,omitzero"`
	// LineIDs holds the identity (LineID) of every transcript line
	// observed, from any file (bounded by MaxIDs): the agent's uuids are
	// what a line's parentUuid may name, and a line of another file with
	// an identity held here is a copy (events.KindCopy).
	LineIDs IDSet `json:"line_ids,omitzero"`
	// Unfinished holds every abandoned entry: its result, if it comes
	// later, is recorded as a late result (session.entry_late_result).
	Unfinished IDSet `json:"unfinished,omitzero"`
	// Inferred holds the id of every call opened from its result
	// (session.entry_opened with FromResult: the result came before the
	// call's use), and "<kind>:<id>" (kind tool_use, permission or
	// question) once an observation reported that signal of the call
	// after it, for the session's life (bounded by MaxIDs): the first
	// such report is the call's own, recorded, and a later one a copy
	// (LateDuplicate). Empty in a session whose results never came
	// first (and in every log written before such calls were told
	// apart).
	Inferred    IDSet `json:"inferred,omitzero"`
	LateResults int   `json:"late_results,omitempty"` // results that came for abandoned entries
	Forks       int   `json:"forks,omitempty"`        // turns that began while another turn's calls were open (session.forked)
	// Fingerprints holds, per transcript file name, the fingerprint of
	// the last line imported (absent for lines imported without one).
	Fingerprints PerSource[events.Fingerprint] `json:"fingerprints,omitzero"`
	// Diverged maps a transcript file name that no longer holds what was
	// imported to the session its rewritten form is imported into.
	Diverged      map[string]string `json:"diverged,omitempty"`
	RewrittenFrom string            `json:"rewritten_from,omitempty"` // the session whose rewritten transcript this one holds
	ForkedFrom    string            `json:"forked_from,omitempty"`    // the agent's session id this conversation was forked from (Codex /fork)
	// Depth is how deep a subagent the session is: the depth its agent
	// counted (events.SessionStarted.Depth), else 1 for a session with a
	// Parent, else 0 (a root session).
	Depth int `json:"depth,omitempty"`
	// LastSaid is the last thing the model wrote (the newest text
	// signal of an observation), on one line, cut to MaxLastSaid bytes:
	// what a subagent's card shows. Signal text is redacted by the
	// adapter before it reaches the log.
	LastSaid string `json:"last_said,omitempty"`
	// Backgrounded holds the task ids (events.Sig.Task) of the last
	// RecentBackgrounded calls whose result said their work went on in
	// the background (a background shell, a subagent launched to run in
	// the background), oldest first.
	Backgrounded Recent `json:"backgrounded,omitzero"`
	// SubagentTypes links the subagents this session started to the
	// agent type it asked for, as "tool:<tool_use id>=<type>" (a call
	// to Claude Code's Agent or Task tool with a subagent_type) and
	// "agent:<agent id>=<type>" (its result named the agent id), the
	// last RecentSubagentTypes of them, oldest first.
	SubagentTypes Recent `json:"subagent_types,omitzero"`
	// Usage is what the session spent, per model, UTC minute, tier and
	// long-context band, in (minute, model, tier, band) order; its own
	// spend only (a subagent's is in the subagent's session).
	Usage []UsageBucket `json:"usage,omitempty"`
	// Copied is the spend of the calls the session holds copies of from
	// another session (events.Usage.CopiedFrom: a fork's copy of its
	// origin's history), by that session and model, in order of first
	// reading: counted there, never in Usage, so a total over sessions
	// counts each call once. Empty in a session that copied none (and in
	// every log written before copies were told apart).
	Copied []CopiedSpend `json:"copied,omitempty"`
	// UsageTotal is the last cumulative usage reading (Codex
	// token_count), which the next one is counted against.
	UsageTotal *events.Usage `json:"usage_total,omitempty"`
	// Context is the context window the session's last model call used
	// (its input and output tokens); nil before the first reading.
	Context *ContextUse `json:"context,omitempty"`
	// AgentTotal is the largest running total of its own spend the agent
	// reported (events.Usage.RunningTotal); nil when it reports none.
	AgentTotal *events.Usage `json:"agent_total,omitempty"`
	// RecentMessages holds the last RecentMessages message ids whose
	// usage was counted, with what was counted.
	RecentMessages []MessageUsage `json:"recent_messages,omitempty"`
	// Counted is the session's index of counted usage: the message and
	// API request ids of every reading an observation counted
	// (cumulative readings aside), from any source, for the session's
	// life (bounded by MaxCounted), as 64-bit hashes: what a decider
	// stamps the usage signals of an observation with before it is
	// appended (Account). It is folded from the events and kept in
	// memory only, never in the session's row (json "-": a long
	// session's ids would make every write of its row hundreds of KB),
	// so a state decoded from a row has it empty; deciders fold their
	// states from the log (events.Executor, replay), never from rows.
	Counted IDSet `json:"-"`
	// Keys holds the key (events.Observation.Key) of every observation
	// that is not a transcript line (hooks, telemetry records, a
	// harness's posts), for the session's life (bounded by MaxIDs), in
	// memory only as Counted is: an observation sent again long after
	// it left RecentKeys is still seen.
	Keys IDSet `json:"-"`
	// Limits holds the latest reading of each plan-limit window the agent
	// reported, per account and window.
	Limits      []LimitReading `json:"limits,omitempty"`
	OpenReviews []string       `json:"open_reviews,omitempty"`
	// Dialogs holds, per open review, the permission dialog it stands
	// for (oldest first): a second report of the same dialog opens no
	// second review.
	Dialogs []Dialog `json:"dialogs,omitempty"`
	// Verdicts holds the last ReviewWindow verdicts since the last
	// breaker reset, oldest first, true = deny.
	Verdicts       []bool `json:"verdicts,omitempty"`
	BreakerTripped bool   `json:"breaker_tripped,omitempty"`
	// Refusals counts review denials in a row since the last allow, the
	// user's last new prompt (session.turn_started) or breaker reset.
	Refusals int `json:"refusals,omitempty"`
	// Pending holds the gate's open reviews (review.requested with Gate
	// set), oldest first.
	Pending []PendingReview `json:"pending_reviews,omitempty"`
	// Decided holds the last RecentDecided verdicts on gate reviews,
	// newest last: a late answer is refused naming the first.
	Decided []DecidedReview `json:"decided_reviews,omitempty"`
}

// Dialog is the permission dialog an open review stands for: its tool,
// and its action unless only a notice (events.ReviewRequested.Notice)
// reported it.
type Dialog struct {
	Review string `json:"review"`
	Tool   string `json:"tool,omitempty"`
	Action string `json:"action,omitempty"`
	Notice bool   `json:"notice,omitempty"`
}

// RecentDecided is how many decided gate reviews a State remembers.
const RecentDecided = 64

// PendingReview is one open gate review.
type PendingReview struct {
	ID            string    `json:"id"`
	Tool          string    `json:"tool"`
	Action        string    `json:"action,omitempty"`
	Event         string    `json:"event,omitempty"`
	ArgsDigest    string    `json:"args_digest,omitempty"` // of the tool's input (events.ReviewRequested)
	Risk          string    `json:"risk,omitempty"`
	Grant         string    `json:"grant,omitempty"`
	Revision      int       `json:"revision"`
	Justification string    `json:"justification,omitempty"`
	RequestedAt   time.Time `json:"requested_at"`
	BudgetMS      int64     `json:"budget_ms,omitempty"`
}

// DecidedReview is one gate review's verdict.
type DecidedReview struct {
	ID string `json:"id"`
	// Tool and ArgsDigest name the call the verdict is on: a request
	// with the same id for another call is not answered by it.
	Tool       string           `json:"tool,omitempty"`
	ArgsDigest string           `json:"args_digest,omitempty"`
	Verdict    string           `json:"verdict"`
	Outcome    string           `json:"outcome"`
	Grant      string           `json:"grant,omitempty"`
	Revision   int              `json:"revision"` // the mode revision the review was asked at
	Reason     string           `json:"reason,omitempty"`
	DecidedBy  events.DecidedBy `json:"decided_by"`
	Seq        uint64           `json:"ver"` // the session Ver of the verdict
}

// PendingReview returns the open gate review id, and false if none.
func (s State) PendingReview(id string) (PendingReview, bool) {
	for _, p := range s.Pending {
		if p.ID == id {
			return p, true
		}
	}
	return PendingReview{}, false
}

// DecidedReview returns the remembered verdict on gate review id, and
// false if none is remembered.
func (s State) DecidedReview(id string) (DecidedReview, bool) {
	for i := len(s.Decided) - 1; i >= 0; i-- {
		if s.Decided[i].ID == id {
			return s.Decided[i], true
		}
	}
	return DecidedReview{}, false
}

// Exists reports whether the session has started.
func (s State) Exists() bool { return s.Phase != "" }

// entry returns the index of the open entry id, or -1.
func (s State) entry(id string) int {
	for i, e := range s.Entries {
		if e.EntryID == id {
			return i
		}
	}
	return -1
}

// lane reports whether an entry of lane is open.
func (s State) lane(lane string) bool {
	for _, e := range s.Entries {
		if e.Lane == lane {
			return true
		}
	}
	return false
}

// Seen reports whether an observation with o's line or key was already
// folded into s: a transcript line at or before the cursor, a key among
// the recent ones (or, in a state folded from the log, any key the
// session took in: Keys), or a hook that only repeats calls s knows
// closed (LateDuplicate). A record of an import's stop
// (events.Observation.HeldStop) is seen once s is held at its line, or
// has taken that line in since.
func (s State) Seen(o *events.Observation) bool {
	if o.HeldStop() {
		return o.HeldLine <= s.Cursor(o.Path) || s.HeldPath != "" && source(s.HeldPath) == source(o.Path) && s.HeldLine == o.HeldLine
	}
	if o.Line > 0 {
		return o.Line <= s.Cursor(o.Path)
	}
	if s.RecentKeys.Has(o.Key) || s.Keys.Has(o.Key) {
		return true
	}
	return s.LateDuplicate(o)
}

// LateDuplicate reports whether every signal of o is about a tool call s
// knows closed and adds nothing: the call or its permission for a call
// closed or abandoned, its result (and the answers it reports) for a call that had its result, a prompt
// whose turn already began. Such a
// hook is a re-sent or redelivered copy, however many hooks came between
// (the recent-key window alone forgets after RecentKeys). A result for an
// abandoned call is not a duplicate: it is that call's late result. Nor
// is the first use, permission or question of a call whose result came
// before its use (Inferred): the call was recorded from its result, and
// that report is its own, not a copy.
func (s State) LateDuplicate(o *events.Observation) bool {
	if len(o.Signals) == 0 {
		return false
	}
	for _, sig := range o.Signals {
		switch sig.Kind {
		case events.SigToolUse, events.SigPermission, events.SigQuestion:
			if !s.closedCall(sig.ID) || s.firstReport(sig) {
				return false
			}
		case events.SigToolResult, events.SigAnswer:
			if sig.ID == "" || !s.Calls.Has(sig.ID) {
				return false
			}
		case events.SigPrompt:
			if !s.promptSeen(sig.ID) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// firstReport reports whether sig, a call's use, permission or question,
// is the first of its kind for a call whose result came before its use
// (Inferred): the call's own report, not a copy, though the call is
// closed.
func (s State) firstReport(sig events.Sig) bool {
	return sig.ID != "" && s.Inferred.Has(sig.ID) && !s.Inferred.Has(reportKey(sig))
}

// reportKey is what Inferred holds once signal sig of an inferred call
// was observed: "<kind>:<id>".
func reportKey(sig events.Sig) string { return sig.Kind + ":" + sig.ID }

// closedCall reports whether entry id was closed or abandoned.
func (s State) closedCall(id string) bool {
	return id != "" && (s.Calls.Has(id) || s.Unfinished.Has(id) || s.RecentClosed.Has(id))
}

// promptSeen reports whether a turn began on prompt id.
func (s State) promptSeen(id string) bool { return id != "" && s.Calls.Has(promptKey(id)) }

func promptKey(id string) string { return "prompt:" + id }

// awaitsResult reports whether entry id was abandoned before its result.
func (s State) awaitsResult(id string) bool {
	return id != "" && s.Unfinished.Has(id) && !s.Calls.Has(id)
}

// Cursor returns the last line observed of the transcript at path: lines
// are counted per file name, so a session fed by several files (a resumed
// session, a copy) keeps one cursor for each.
func (s State) Cursor(path string) int {
	c, _ := s.Cursors.Get(source(path))
	return c
}

// Fingerprint returns the fingerprint of the last line imported from the
// transcript at path, and false if none was kept.
func (s State) Fingerprint(path string) (events.Fingerprint, bool) {
	f, ok := s.Fingerprints.Get(source(path))
	return f, ok && f.Line == s.Cursor(path)
}

// DivergedTo returns the session the rewritten form of the transcript at
// path goes to, or "" if the file never diverged.
func (s State) DivergedTo(path string) string { return s.Diverged[source(path)] }

// source names the transcript a line came from: its file name.
func source(p string) string { return pathpkg.Base(p) }

// pushBounded appends v to xs, keeping at most n newest elements. It never
// modifies xs's backing array, so states stay independent values.
func pushBounded[T any](xs []T, v T, n int) []T {
	out := make([]T, 0, min(len(xs)+1, n))
	if len(xs)+1 > n {
		xs = xs[len(xs)+1-n:]
	}
	out = append(out, xs...)
	return append(out, v)
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// Init returns the state of agg before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// PersonWait reports whether the session waits on a person, on what and
// since when: a question, a permission prompt or a plan approval (the
// waiting phase, what being its activity, since when it began), or an
// open review (what "review", since the session's phase began). Such a
// session is never marked stale: it waits until the person answers, the
// session ends or its agent process is known gone.
func (s State) PersonWait() (what string, since time.Time, ok bool) {
	switch {
	case s.Phase == events.PhaseEnded || !s.Exists():
		return "", time.Time{}, false
	case s.Phase == events.PhaseWaiting:
		return s.Activity, s.Since, true
	case len(s.OpenReviews) > 0 || len(s.Pending) > 0:
		return "review", s.Since, true
	}
	return "", time.Time{}, false
}

// ClockOffset describes the agent clock's learned offset against the
// server's, e.g. "agent clock 40m0s behind the server's" or "agent clock
// 2h0m0s ahead of the server's", rounded to the second; "" when no
// offset is known, it is under a second, or it is a saturated
// time.Duration (a state folded before such offsets were refused: no
// clock's reading).
func (s State) ClockOffset() string {
	const saturated = math.MaxInt64 / int64(time.Millisecond)
	if s.ClockOffsetAt.IsZero() || s.ClockOffsetMS >= saturated || s.ClockOffsetMS <= -saturated {
		return ""
	}
	d := (time.Duration(s.ClockOffsetMS) * time.Millisecond).Round(time.Second)
	switch {
	case d > 0:
		return "agent clock " + d.String() + " behind the server's"
	case d < 0:
		return "agent clock " + (-d).String() + " ahead of the server's"
	}
	return ""
}

// LineID returns the identity of transcript line o within its session,
// wherever its file lies: the agent's uuid of the line; for a line
// without one, "line:<n>:<SHA-256 of its bytes>" (so the same line of a
// copy of the file is known, and the same bytes at another place of a
// file are another line); "" for a line without either.
func LineID(o *events.Observation) string {
	switch {
	case o.UUID != "":
		return o.UUID
	case o.Fingerprint != nil && o.Fingerprint.SHA256 != "":
		return "line:" + strconv.Itoa(o.Line) + ":" + o.Fingerprint.SHA256
	}
	return ""
}
