package session

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
)

// Command is an input to Decide: an observation, or a request made
// directly to Logbook (end a session, change its mode, abandon an entry).
type Command interface{ command() }

// Observe asks Decide what an observation means. Obs is the observation's
// envelope with ID, Type, Agg and At set (Ver is assigned on append); the
// decisions' causes refer to Obs.ID, and their At is Obs.At.
type Observe struct {
	Obs events.Envelope
}

// Diverge records that the transcript file at Path no longer holds what
// was imported from it (events.SessionTranscriptDiverged). The new
// session its rewritten form goes to is "<session>-r<n>", n counting the
// session's diverged files from 1, so every host names it alike. A file
// already recorded as diverged decides nothing.
type Diverge struct {
	Path     string
	Imported events.Fingerprint // what the session's cursor holds
	Found    events.Fingerprint // what the file holds there now
	Size     int64              // the file's size when found
	At       time.Time
	Cause    events.Cause
}

// End ends the session on request.
type End struct {
	Reason string
	At     time.Time
	Cause  events.Cause // complete: kind, event, ref
}

// ChangeMode sets the permission mode on request.
type ChangeMode struct {
	Mode  string // a Mode constant
	At    time.Time
	Cause events.Cause
}

// Abandon marks one open entry as never to close.
type Abandon struct {
	EntryID string
	Reason  string
	At      time.Time
	Cause   events.Cause
}

// Attach opens a background-lane entry for work the session started
// outside the agent's own turn, such as a sandboxed command: while it
// lives the session stays working.
type Attach struct {
	EntryID  string // e.g. "cmd-<command id>"
	Activity string // e.g. "command:go"
	At       time.Time
	Cause    events.Cause
}

// Detach closes an entry opened by Attach with outcome (an Outcome
// constant or an exit description).
type Detach struct {
	EntryID string
	Outcome string
	At      time.Time
	Cause   events.Cause
}

// Release tells a subagent's session that its parent has its result:
// the work it was started for is over, whatever its own transcript last
// said. Its open calls are abandoned ("released"), its turn ends with
// outcome "released" and it settles. Observations of the same turn that
// arrive later are recorded without moving it; a new prompt starts a new
// turn. Cause refers to the parent's observation.
type Release struct {
	At    time.Time
	Cause events.Cause
}

func (Release) command()    {}
func (Attach) command()     {}
func (Detach) command()     {}
func (Observe) command()    {}
func (End) command()        {}
func (ChangeMode) command() {}
func (Abandon) command()    {}
func (Diverge) command()    {}

// Decide returns the events cmd causes in state s, in order, or an error
// wrapping events.ErrRejected (events.ErrNotFound for Attach to a session
// that does not exist) that says why cmd is refused. The returned
// envelopes have Type, V, Data, At, Cause and Agg set; the caller assigns
// ID and Ver. An observation that s has already seen (State.Seen) yields no
// events and no error. s is not modified.
func Decide(s State, cmd Command) ([]events.Envelope, error) {
	switch c := cmd.(type) {
	case Observe:
		return decideObserve(s, c)
	case End:
		d := newDecider(s, c.At, c.Cause)
		if !s.Exists() {
			return nil, fmt.Errorf("end session: %w: no such session", events.ErrRejected)
		}
		if s.Phase == events.PhaseEnded {
			return nil, fmt.Errorf("end session %s: %w: already ended", s.ID, events.ErrRejected)
		}
		d.end(or(c.Reason, "requested"))
		return d.out, nil
	case ChangeMode:
		switch c.Mode {
		case events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeAuto, events.ModeFullAccess:
		default:
			return nil, fmt.Errorf("change mode: %w: unknown mode %q", events.ErrRejected, c.Mode)
		}
		if !s.Exists() {
			return nil, fmt.Errorf("change mode: %w: no such session", events.ErrRejected)
		}
		d := newDecider(s, c.At, c.Cause)
		// The agent's own mode name stays: its next report of the same
		// name does not undo a person's change; a change it reports does.
		d.mode(c.Mode, s.AgentMode)
		return d.out, nil
	case Abandon:
		if s.entry(c.EntryID) < 0 {
			return nil, fmt.Errorf("abandon %s: %w: no open entry %q", s.ID, events.ErrRejected, c.EntryID)
		}
		d := newDecider(s, c.At, c.Cause)
		waited := s.Phase == events.PhaseWaiting && s.WaitingOn == c.EntryID
		d.abandon(c.EntryID, or(c.Reason, "requested"))
		if waited {
			// What the session waited on is given up: it waits no more.
			d.phase(events.PhaseWorking, "thinking", "")
		}
		d.settle()
		return d.out, nil
	case Diverge:
		if !s.Exists() {
			return nil, fmt.Errorf("diverge %s: %w: no such session", c.Path, events.ErrNotFound)
		}
		if s.DivergedTo(c.Path) != "" {
			return nil, nil
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.SessionTranscriptDiverged{
			Path: c.Path, Imported: c.Imported, Found: c.Found, Size: c.Size,
			NewSession: rewrittenID(s.ID, len(s.Diverged)+1),
		})
		return d.out, nil
	case Release:
		if !s.Exists() || s.Phase == events.PhaseEnded || s.Released {
			return nil, nil // nothing to release, or released already
		}
		d := newDecider(s, c.At, c.Cause)
		d.abandonLane(events.LaneMain, "released")
		d.closeReviews(events.ReviewUnavailable, "released by the parent")
		if d.s.TurnOpen {
			d.emit(events.SessionTurnEnded{Turn: d.s.Turns, Outcome: TurnReleased})
		}
		if d.s.Phase == events.PhaseWaiting {
			d.phase(events.PhaseWorking, "", "")
		}
		d.settle()
		return d.out, nil
	case Attach:
		if !s.Exists() {
			return nil, fmt.Errorf("attach %s: %w: no such session", c.EntryID, events.ErrNotFound)
		}
		if s.Phase == events.PhaseEnded {
			return nil, fmt.Errorf("attach %s to session %s: %w: session ended", c.EntryID, s.ID, events.ErrRejected)
		}
		if s.entry(c.EntryID) >= 0 || s.RecentClosed.Has(c.EntryID) {
			return nil, nil // attached already: retries are harmless
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.SessionEntryOpened{EntryID: c.EntryID, Activity: c.Activity, Lane: events.LaneBackground})
		if d.s.Phase == events.PhaseReady {
			d.phase(events.PhaseWorking, "background", c.EntryID)
		}
		return d.carryMove(), nil
	case Detach:
		if s.entry(c.EntryID) < 0 {
			return nil, nil // never attached, or detached already
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.SessionEntryClosed{EntryID: c.EntryID, Outcome: or(c.Outcome, events.OutcomeOK)})
		if !d.s.TurnOpen && d.s.Phase == events.PhaseWorking {
			d.settle()
		}
		return d.carryMove(), nil
	case RequestReview, DecideReview, ResetBreaker:
		return decideGate(s, cmd)
	default:
		return nil, fmt.Errorf("%w: unknown command %T", events.ErrRejected, cmd)
	}
}

func decideObserve(s State, c Observe) ([]events.Envelope, error) {
	o, ok := events.Observed(c.Obs.Data)
	if !ok {
		return nil, fmt.Errorf("observe: %w: %s is not an observation", events.ErrRejected, c.Obs.Type)
	}
	if s.Seen(o) {
		return nil, nil
	}
	if o.HeldStop() {
		// Where an import stopped, at a line that does not parse: it
		// decides nothing, and holds only a session that has taken in
		// every line of the file before that one.
		if !s.Exists() {
			return nil, fmt.Errorf("observe the stop at line %d of %s in session %s: %w: no such session", o.HeldLine, o.Path, c.Obs.Agg.ID, events.ErrRejected)
		}
		if next := s.Cursor(o.Path) + 1; o.HeldLine != next {
			return nil, fmt.Errorf("observe the stop at line %d of %s in session %s: %w: next line is %d", o.HeldLine, o.Path, c.Obs.Agg.ID, events.ErrRejected, next)
		}
		return nil, nil
	}
	if next := s.Cursor(o.Path) + 1; o.Line > 0 && o.Line-max(o.Copied, 1)+1 != next {
		return nil, fmt.Errorf("observe line %d of %s in session %s: %w: next line is %d", o.Line-max(o.Copied, 1)+1, o.Path, c.Obs.Agg.ID, events.ErrRejected, next)
	}
	if o.Copied > 0 {
		// Lines the session holds already, from another file: a line's
		// identity is its uuid, wherever the file lies.
		return nil, nil
	}
	if s.Released && !startsAgain(o.Signals) {
		// A late report of work the parent already took the result of.
		return nil, nil
	}
	kind := "hook"
	if o.Line > 0 {
		kind = "transcript"
	}
	if o.Tick != nil {
		d := newDecider(s, c.Obs.At, events.Cause{Kind: "reconciler", Event: o.Kind, Ref: c.Obs.ID.String()})
		d.corr = c.Obs.Corr
		d.tick(*o.Tick)
		return d.out, nil
	}
	if agent := or(o.Meta.Agent, "claude-code"); s.Exists() && agent != s.Agent && (ownReader(agent) || ownReader(s.Agent)) {
		// A report never moves a session of another agent Logbook reads
		// itself, nor such an agent's report another's session: ids
		// can meet (a harness named like the first part of a UUID or
		// "agent", a telemetry id equal to another agent's). A
		// harness's own sessions may name their agent as they like.
		return nil, fmt.Errorf("observe %s in session %s: %w: the session is %s's, the observation %s's", c.Obs.Type, s.ID, events.ErrRejected, s.Agent, agent)
	}
	if h, ok := events.HarnessOf(c.Obs.Data); ok && s.Exists() && h != s.Harness {
		// A harness's session is that harness's alone: a harness never
		// moves another's session (nor one another reader started),
		// whatever id the two share.
		owner := "not a harness's"
		if s.Harness != "" {
			owner = "harness " + s.Harness + "'s"
		}
		return nil, fmt.Errorf("observe %s in session %s: %w: the session is %s, the observation harness %s's", c.Obs.Type, s.ID, events.ErrRejected, owner, h)
	}
	if m := o.Meta; s.Parent != "" && m.AgentID != "" && m.SessionID != "" && m.SessionID != s.Parent && m.SessionID != s.ID {
		// A subagent's session is one parent's: another session whose
		// subagent has the same agent id (ids two parents share, by
		// chance or by a hostile payload) never moves it.
		return nil, fmt.Errorf("observe %s in session %s: %w: the subagent is session %s's, the observation names parent %s", c.Obs.Type, s.ID, events.ErrRejected, s.Parent, m.SessionID)
	}
	if m := o.Meta; s.Exists() && s.Parent == "" && events.IsSubagentID(s.ID) && m.AgentID != "" && m.SessionID != "" && m.SessionID != s.ID && m.SessionID != s.AgentSessionID {
		// A session of a subagent's name that started with no parent
		// (one a log made before every intake refused such ids, a
		// subagent's transcript whose lines named none) is no parent's
		// subagent: a subagent of a parent it never named is not filed
		// in it.
		return nil, fmt.Errorf("observe %s in session %s: %w: the session started with no parent, the observation is of a subagent of %s", c.Obs.Type, s.ID, events.ErrRejected, m.SessionID)
	}
	if o.Line == 0 && len(o.Signals) == 0 {
		// A hook that says nothing the reducer knows (an event newer
		// than this parser, a notification of another kind) is kept as
		// an observation for rederive; it neither starts a session nor
		// moves one.
		return nil, nil
	}
	d := newDecider(s, c.Obs.At, events.Cause{Kind: kind, Event: o.Kind, Ref: c.Obs.ID.String()})
	d.s.ID = c.Obs.Agg.ID
	d.agg = c.Obs.Agg
	d.corr = c.Obs.Corr
	// Hooks arrive in the order they ran, transcript lines in file order,
	// but the two sources reach Logbook in any order: a report from one
	// source made before the other source ended the turn is late.
	// Only the agent's own sources count: a turn ended by Logbook (a
	// stale mark, a request) is not a report the agent made. An agent's
	// OpenTelemetry export keeps no order even within itself (its events
	// and its spans go in batches of their own), so an OpenTelemetry
	// observation dated within a turn already ended is late whatever
	// ended it.
	_, unordered := c.Obs.Data.(events.OTelObserved)
	d.late = (s.TurnEndedBy == "hook" || s.TurnEndedBy == "transcript") && (s.TurnEndedBy != kind || unordered) &&
		!s.TurnOpen && !c.Obs.At.After(s.TurnEndedAt)
	for _, sig := range o.Signals {
		if sig.Kind == events.SigQuestion && sig.ID != "" {
			d.blocking = append(d.blocking, sig.ID)
		}
		if sig.Kind == events.SigAPIError && sig.Status == apiErrorFailed {
			d.failed = true
		}
	}
	if !s.Exists() {
		d.start(o)
	} else {
		if o.Line > 0 && o.Meta.SessionID != "" && s.AgentSessionID != "" && o.Meta.SessionID != s.AgentSessionID && s.AgentID == "" {
			// A transcript whose lines change sessionId was continued by
			// another agent process (a resume that copied the history):
			// what the earlier process left open is gone with it.
			d.cause.Detail = "session_id_changed"
			d.restart()
			d.emit(events.SessionDescribed{AgentSessionID: o.Meta.SessionID})
		}
		d.describe(o.Meta)
	}
	if o.Meta.AgentMode != "" && o.Meta.AgentMode != d.s.AgentMode {
		d.mode(agentMode(o.Meta.AgentMode), o.Meta.AgentMode)
	}
	for _, sig := range o.Signals {
		d.cause.Detail = sig.Name
		d.signal(sig)
	}
	return d.out, nil
}

// ownReader reports whether agent is one whose sessions Logbook's own
// readers make (Claude Code's and Codex CLI's transcripts, hooks and
// telemetry), which no harness may report for.
func ownReader(agent string) bool { return agent == "claude-code" || agent == "codex" }

// startsAgain reports whether sigs hold a signal that starts new work in
// a released subagent: a prompt, a new process, an end.
func startsAgain(sigs []events.Sig) bool {
	for _, g := range sigs {
		switch g.Kind {
		case events.SigPrompt, events.SigSessionStart, events.SigSessionEnd:
			return true
		}
	}
	return false
}

// apiErrorFailed is the Status of an api_error signal whose request
// failed for good (see events.SigAPIError).
const apiErrorFailed = "failed"

// TurnReleased is the outcome of a subagent's turn ended by Release.
const TurnReleased = "released"

// Turn outcomes (events.SessionTurnEnded.Outcome) decided here.
const (
	turnCompleted = "completed"
	turnFailed    = "failed" // ended by a request that failed for good
)

// decider accumulates the events of one decision, folding each into its
// working copy of the state so later signals see earlier ones.
type decider struct {
	s     State
	agg   events.Aggregate
	at    time.Time
	cause events.Cause
	corr  string
	out   []events.Envelope
	// lastText is the model's latest text in this decision, for the
	// question cue at the end of a turn.
	lastText string
	// blocking holds the ids of tool calls this observation says wait on
	// the user (a question signal with the call's id): opening them goes
	// straight to waiting.
	blocking []string
	// failed is set when this observation reports a request that failed
	// for good: a turn it ends ends with outcome failed.
	failed bool
	// late is set for a transcript line written before the turn it
	// belongs to was ended by another source (a Stop hook delivered
	// before the line was read): it closes what it reports closed, and
	// keeps the question cue, but reopens nothing.
	late bool
	// prompted is set while the user's new prompt is being decided: the
	// reviews it supersedes are denials in the window, but the prompt
	// starts the run of denials again, so they trip nothing.
	prompted bool
}

func newDecider(s State, at time.Time, cause events.Cause) *decider {
	return &decider{s: s, agg: events.Aggregate{Kind: events.KindSession, ID: s.ID}, at: at, cause: cause}
}

// emit appends p's event and folds it. Every session payload is at schema
// version 1; a payload whose version goes up must be emitted at its new
// version here, or the log refuses it (events.ErrUnknownVersion).
func (d *decider) emit(p events.Payload) {
	c := d.cause
	e := events.Envelope{Type: p.EventType(), V: 1, Agg: d.agg, At: d.at, Cause: &c, Corr: d.corr, Data: p}
	d.out = append(d.out, e)
	e.Ver = d.s.Ver + 1
	d.s = Evolve(d.s, e)
}

func (d *decider) start(o *events.Observation) {
	m := o.Meta
	st := events.SessionStarted{
		Agent: or(m.Agent, "claude-code"), ForkedFrom: m.ForkedFrom, AgentSessionID: m.SessionID, AgentID: m.AgentID, AgentType: m.AgentType,
		Cwd: events.WorkDir(m.Cwd), Model: m.Model, Mode: agentMode(m.AgentMode), AgentMode: m.AgentMode, Transcript: o.Path,
		RewrittenFrom: o.RewrittenFrom,
	}
	if m.AgentID != "" && m.SessionID != "" && m.SessionID != d.agg.ID {
		st.Parent, st.Depth = m.SessionID, m.Depth
	}
	d.emit(st)
	d.describe(m)
}

func (d *decider) describe(m events.Meta) {
	var p events.SessionDescribed
	if c := events.WorkDir(m.Cwd); c != d.s.Cwd {
		p.Cwd = c
	}
	if m.Model != d.s.Model && !strings.HasPrefix(m.Model, "<") {
		p.Model = m.Model
	}
	if m.GitBranch != d.s.GitBranch {
		p.GitBranch = m.GitBranch
	}
	if m.Version != d.s.Version {
		p.Version = m.Version
	}
	if m.Title != d.s.Title {
		p.Title = m.Title
	}
	if p != (events.SessionDescribed{}) {
		d.emit(p)
	}
}

func (d *decider) mode(mode, agent string) {
	if mode == d.s.Mode && agent == d.s.AgentMode {
		return
	}
	d.emit(events.SessionModeChanged{From: d.s.Mode, To: mode, AgentMode: agent, Revision: d.s.ModeRevision + 1})
}

// agentMode maps a Claude Code permission mode onto Logbook's modes.
func agentMode(m string) string {
	switch m {
	case "plan":
		return events.ModeReadOnly
	case "default", "acceptEdits":
		return events.ModeWorkspaceWrite
	case "auto", "dontAsk":
		return events.ModeAuto
	case "bypassPermissions":
		return events.ModeFullAccess
	// Codex CLI's sandbox_policy types (0.40 to 0.144).
	case "read-only":
		return events.ModeReadOnly
	case "workspace-write":
		return events.ModeWorkspaceWrite
	case "danger-full-access":
		return events.ModeFullAccess
	}
	return ""
}

// phase moves to phase with activity, emitting a transition or, within
// the same phase, an activity change.
func (d *decider) phase(phase, activity, entry string) {
	switch {
	case d.s.Phase != phase:
		d.emit(events.SessionTransitioned{From: d.s.Phase, To: phase, Activity: activity, EntryID: entry})
	case d.s.Activity != activity:
		d.emit(events.SessionActivityChanged{From: d.s.Activity, To: activity})
	}
}

// carryMove returns d.out with a phase move that follows the entry event
// it was decided with folded into that event's Moves: one event to append
// (a single publish) where there were two. Evolve folds the pair and the
// one event alike, but for Ver. Any other output is returned as it is.
func (d *decider) carryMove() []events.Envelope {
	if len(d.out) != 2 {
		return d.out
	}
	mv, ok := d.out[1].Data.(events.SessionTransitioned)
	if !ok {
		return d.out
	}
	e := d.out[0]
	switch p := e.Data.(type) {
	case events.SessionEntryOpened:
		p.Moves = &mv
		e.Data = p
	case events.SessionEntryClosed:
		p.Moves = &mv
		e.Data = p
	default:
		return d.out
	}
	return []events.Envelope{e}
}

// working moves to working unless the session waits on a person, in which
// case only progress on the awaited entry releases it (see toolResult).
func (d *decider) working(activity, entry string) {
	if d.s.Phase == events.PhaseWaiting || d.late {
		return
	}
	d.phase(events.PhaseWorking, activity, entry)
}

// settle picks the phase when the agent stops: working while a background
// process or subagent lives, else ready.
func (d *decider) settle() {
	if d.s.Phase == events.PhaseEnded {
		return
	}
	switch {
	case d.s.lane(events.LaneBackground):
		d.phase(events.PhaseWorking, "background", "")
	case d.s.lane(events.LaneSubagent):
		d.phase(events.PhaseWorking, d.s.Entries[d.firstLane(events.LaneSubagent)].Activity, "")
	case d.s.lane(events.LaneMain) || d.s.TurnOpen:
		// Still busy.
	default:
		d.phase(events.PhaseReady, "", "")
	}
}

// newestEntry returns the id of the newest open entry of lane with
// activity (any activity if it is "tool:"), or "".
func (d *decider) newestEntry(lane, activity string) string {
	for i := len(d.s.Entries) - 1; i >= 0; i-- {
		e := d.s.Entries[i]
		if e.Lane == lane && (e.Activity == activity || activity == "tool:") {
			return e.EntryID
		}
	}
	return ""
}

// openCalls returns the ids of the open main-lane entries, oldest first.
func (s State) openCalls() []string {
	var ids []string
	for _, e := range s.Entries {
		if e.Lane == events.LaneMain {
			ids = append(ids, e.EntryID)
		}
	}
	return ids
}

func (d *decider) firstLane(lane string) int {
	for i, e := range d.s.Entries {
		if e.Lane == lane {
			return i
		}
	}
	return -1
}

func (d *decider) abandon(id, reason string) {
	d.emit(events.SessionEntryAbandoned{EntryID: id, Reason: reason})
}

// Reasons the reconciler gives.
const (
	ReasonAgentGone = "agent_gone" // the agent's process is gone
	ReasonStale     = "stale"      // nothing observed for the abandon-after time
)

// tick decides what a reconciler tick means, from the evidence it carries
// and s alone. When the session's known agent process was found gone,
// every open entry is abandoned and the session ends (agent_gone). When
// no process is known (or, before its hooks agree on one, the process
// its newest hook found was found gone), the session is working, waits on no person
// (State.PersonWait), nothing was heard from the agent for at least the
// tick's abandon-after time (ObservedAt, on the server's clock) and
// nothing was taken in for the tick's quiet period (ReceivedAt), every
// entry only the agent could close (one an observation opened) gets a
// stale mark, the turn ends, and the phase follows. Anything else
// decides nothing: a question, a permission prompt, a plan approval or
// an open review waits on a person, and a person's silence is not the
// agent's; a transcript whose import stopped at a line that does not
// parse (State.HeldPath) holds what the agent wrote after it.
func (d *decider) tick(t events.Tick) {
	s := d.s
	if !s.Exists() || s.Phase == events.PhaseEnded {
		return
	}
	if s.AgentProcess != nil {
		c := t.Check
		if c == nil || !c.Process.Same(*s.AgentProcess) || c.Result != events.ProcessGone {
			return // alive, unknown here, or about another process
		}
		ev := c.Process.String() + " is gone"
		if c.Detail != "" {
			ev += ": " + c.Detail
		}
		d.cause.Detail = ReasonAgentGone
		for _, e := range s.Entries {
			d.emit(events.SessionEntryAbandoned{EntryID: e.EntryID, Reason: ReasonAgentGone, Evidence: ev})
		}
		d.closeReviews(events.ReviewUnavailable, "agent gone")
		d.endTurn(ReasonAgentGone)
		d.emit(events.SessionEnded{From: d.s.Phase, Reason: ReasonAgentGone, Evidence: ev})
		return
	}
	if s.Phase != events.PhaseWorking && s.Phase != events.PhaseWaiting {
		return
	}
	if c := t.Check; s.HookProcess != nil && c != nil && c.Result != events.ProcessGone && c.Process.Same(*s.HookProcess) {
		return // no agent agreed on yet, and the process the hook found was not found gone: the agent may live
	}
	if _, _, waits := s.PersonWait(); waits {
		return
	}
	if s.HeldPath != "" {
		return // an import stopped at a line that does not parse: the silence is Logbook's, not the agent's
	}
	after := time.Duration(t.AbandonAfter) * time.Millisecond
	idle := t.Now.Sub(s.ObservedAt)
	if after <= 0 || idle < after {
		return
	}
	if quiet := time.Duration(t.QuietMS) * time.Millisecond; quiet > 0 && !s.ReceivedAt.IsZero() && t.Now.Sub(s.ReceivedAt) < quiet {
		return // still taking observations in: an import is not silence
	}
	ev := fmt.Sprintf("nothing observed for %s (since %s; abandon after %s)",
		idle.Round(time.Second), s.ObservedAt.UTC().Format(time.RFC3339), after)
	if off := s.ClockOffset(); off != "" {
		ev = strings.TrimSuffix(ev, ")") + "; " + off + ")"
	}
	d.cause.Detail = ReasonStale
	for _, e := range s.Entries {
		if k := e.Cause.Kind; k == "hook" || k == "transcript" {
			d.emit(events.SessionEntryAbandoned{EntryID: e.EntryID, Reason: ReasonStale, Evidence: ev})
		}
	}
	d.closeReviews(events.ReviewUnavailable, "stale")
	d.endTurn(ReasonStale)
	d.settle()
}

// abandonLane abandons every open entry of lane (all lanes if lane is "").
func (d *decider) abandonLane(lane, reason string) {
	for _, e := range d.s.Entries {
		if lane == "" || e.Lane == lane {
			d.abandon(e.EntryID, reason)
		}
	}
}

func (d *decider) closeReviews(outcome, reason string) {
	for _, id := range d.s.OpenReviews {
		d.decideReview(id, outcome, reason)
	}
}

func (d *decider) decideReview(id, outcome, reason string) {
	verdict := events.VerdictAllow
	if outcome != events.ReviewApproved {
		verdict = events.VerdictDeny
	}
	rd := events.ReviewDecided{ReviewID: id, Verdict: verdict, Outcome: outcome, UserAuthorization: "high", Reason: reason}
	if _, gate := d.s.PendingReview(id); gate {
		// The agent's own events closed a gate review: the user or the
		// agent's life decided it, not the gate.
		rd.UserAuthorization = ""
		rd.DecidedBy = &events.DecidedBy{Kind: events.DecidedByUser, Name: d.cause.Kind + ":" + d.cause.Event}
		if outcome != events.ReviewApproved && outcome != events.ReviewRejected {
			rd.DecidedBy.Kind = events.DecidedByTimeout
		}
	}
	d.emit(rd)
	d.breaker()
}

// breaker trips after 3 refusals in a row or 10 in the review window
// (review.Trips), on a refusal. The run counts from the last allow, the
// user's last new prompt or reset; the window from the last reset (see
// Evolve). The reviews a new prompt supersedes trip nothing.
func (d *decider) breaker() {
	if d.s.BreakerTripped || d.s.Refusals == 0 || d.prompted {
		return
	}
	v := d.s.Verdicts
	if review.Trips(v, d.s.Refusals) {
		denied := 0
		for _, deny := range v {
			if deny {
				denied++
			}
		}
		d.emit(events.ReviewBreakerTripped{Refusals: denied, Window: len(v)})
	}
}

func (d *decider) end(reason string) {
	d.abandonLane("", "session_ended")
	d.closeReviews(events.ReviewUnavailable, "session ended")
	if d.s.TurnOpen {
		d.emit(events.SessionTurnEnded{Turn: d.s.Turns, Outcome: "ended"})
	}
	d.emit(events.SessionEnded{From: d.s.Phase, Reason: reason})
}

func (d *decider) endTurn(outcome string) {
	if d.s.TurnOpen {
		if d.failed {
			outcome = turnFailed
		}
		d.emit(events.SessionTurnEnded{Turn: d.s.Turns, Outcome: outcome})
	}
}

// restart closes what an earlier agent process left open when a new
// process takes the session over (a resume after a crash, a transcript
// continued under a new session id): every entry is abandoned, open
// reviews are closed unanswered, the turn ends, and the session is ready.
func (d *decider) restart() {
	d.abandonLane("", "agent_restarted")
	d.closeReviews(events.ReviewUnavailable, "agent restarted")
	d.endTurn("abandoned")
	if d.s.Phase != events.PhaseReady {
		d.phase(events.PhaseReady, "", "")
	}
}

func (d *decider) signal(sig events.Sig) {
	if sig.Kind == events.SigPrompt && d.s.promptSeen(sig.ID) && !(sig.ID == d.s.PromptID && d.s.TurnOpen) {
		return // a late copy of a prompt whose turn is over: it decides nothing
	}
	if d.s.Phase == events.PhaseEnded {
		switch sig.Kind {
		case events.SigSessionStart, events.SigPrompt:
			d.phase(events.PhaseReady, "", "") // resumed
			if sig.Kind == events.SigSessionStart {
				return
			}
		default:
			return
		}
	}
	if d.late {
		switch sig.Kind {
		case events.SigText:
			d.lastText = sig.Text
		case events.SigTurnEnd:
			if what := d.leftToPerson(sig); what != "" && d.s.Phase == events.PhaseReady {
				d.phase(events.PhaseWaiting, what, "")
			}
		case events.SigToolResult, events.SigBackgroundDone, events.SigSubagentStop, events.SigMode,
			events.SigSessionStart, events.SigSessionEnd:
			d.signalNow(sig)
		}
		return // a late prompt is the prompt of the turn already ended
	}
	d.signalNow(sig)
}

// leftToPerson returns what turn_end sig leaves the person to answer:
// "plan" (a plan to approve), "question" (the turn's last text, or the
// adapter's reading of it, asks one), or "".
func (d *decider) leftToPerson(sig events.Sig) string {
	switch {
	case sig.Status == events.TurnEndPlan:
		return "plan"
	case sig.Status == events.TurnEndQuestion, strings.HasSuffix(strings.TrimSpace(d.lastText), "?"):
		return "question"
	}
	return ""
}

// signalNow decides sig for a session that is not ended.
func (d *decider) signalNow(sig events.Sig) {
	switch sig.Kind {
	case events.SigSessionStart:
		// A new agent process for a session that exists: whatever the
		// last one left open ended with it (a session just started has
		// nothing open, so this is a no-op there). A start reported after
		// a turn that began later is that turn's own process.
		if d.s.TurnOpen && !d.at.After(d.s.TurnStartedAt) {
			return
		}
		if sig.Name == "otel" && d.s.TurnOpen {
			// Telemetry's report of a process start (Codex CLI's
			// conversation_starts) comes in batches of its own, in no
			// order with the rollout's lines: it ends nothing open. A
			// new process is the rollout's own report (its session_meta).
			return
		}
		d.restart()
	case events.SigPrompt:
		if sig.Status == events.PromptInTurn && d.s.TurnOpen && d.at.Before(d.s.TurnStartedAt) {
			return // an earlier turn's prompt, reported late: nothing of this turn
		}
		if sig.Status == events.PromptInTurn && d.s.TurnOpen {
			// The prompt of the turn the agent already said started.
			d.working("thinking", "")
			return
		}
		if sig.ID != "" && sig.ID == d.s.PromptID {
			// The same prompt seen twice (a hook, then its transcript line).
			if d.s.TurnOpen {
				d.working("thinking", "")
			}
			return
		}
		if d.repeatedPrompt(sig) {
			// The open turn's own prompt reported again: Claude Code
			// 2.0.17 to 2.0.22 run each hook 2 to 4 times, and a
			// version without prompt ids gives nothing else to tell
			// the copies by.
			d.working("thinking", "")
			return
		}
		if d.s.BreakerTripped {
			// The user spoke again: the refusals so far are answered.
			d.emit(events.ReviewBreakerReset{Reason: "the user's new prompt"})
		}
		d.prompted = true // for this signal's decisions only
		defer func() { d.prompted = false }()
		if open := d.s.openCalls(); d.s.TurnOpen && len(open) > 0 {
			// A prompt while the turn's calls are still open: a second
			// writer on this session (two terminals on one session id),
			// or results that never came. Nothing is closed on a guess:
			// the calls keep waiting for their results, and the overlap
			// is recorded.
			d.endTurn("forked")
			d.emit(events.SessionForked{Turn: d.s.Turns + 1, PromptID: sig.ID, Open: open})
			d.emit(events.SessionTurnStarted{Turn: d.s.Turns + 1, PromptID: sig.ID, PromptSum: PromptSum(sig.Text)})
			d.phase(events.PhaseWorking, "thinking", "")
			return
		}
		d.abandonLane(events.LaneMain, "superseded")
		d.closeReviews(events.ReviewRejected, "superseded by a new prompt")
		d.endTurn("superseded")
		d.emit(events.SessionTurnStarted{Turn: d.s.Turns + 1, PromptID: sig.ID, PromptSum: PromptSum(sig.Text)})
		d.phase(events.PhaseWorking, "thinking", "")
	case events.SigThinking:
		d.working("thinking", "")
	case events.SigText:
		d.lastText = sig.Text
		d.working("responding", "")
	case events.SigToolUse:
		d.toolUse(sig)
	case events.SigToolResult:
		d.toolResult(sig)
	case events.SigQuestion:
		if sig.ID != "" && d.s.entry(sig.ID) < 0 && (d.s.RecentClosed.Has(sig.ID) || d.s.Inferred.Has(sig.ID)) {
			return // the question was answered already
		}
		d.phase(events.PhaseWaiting, "question", sig.ID)
	case events.SigPermission:
		if sig.ID != "" && d.s.entry(sig.ID) < 0 && d.s.Inferred.Has(sig.ID) {
			return // asked before its call's result, which came first: answered already
		}
		id := sig.ID
		if id == "" {
			// Permission dialogs carry no tool_use_id: they are about the
			// newest open call of that tool, else about the turn itself.
			id = d.newestEntry(events.LaneMain, "tool:"+sig.Name)
		}
		if id == "" {
			id = fmt.Sprintf("permission-turn-%d", d.s.Turns)
		}
		if !contains(d.s.OpenReviews, id) && !d.s.RecentClosed.Has(id) && d.sameDialog(sig) == "" {
			d.emit(events.ReviewRequested{ReviewID: id, Tool: sig.Name, Action: sig.Text, Notice: sig.ID == ""})
		}
		d.phase(events.PhaseWaiting, "review", sig.ID)
	case events.SigTurnEnd:
		if d.s.TurnOpen && d.at.Before(d.s.TurnStartedAt) {
			// An end dated before the open turn began is an earlier
			// turn's, reported late (a source that sends in batches of
			// its own, such as Claude Code's spans, after the next
			// prompt's event): it ends nothing of this turn.
			return
		}
		wasOpen := d.s.TurnOpen
		d.endTurn(turnCompleted)
		// The agent stopped: nothing of this turn can still be answered.
		d.closeReviews(events.ReviewUnavailable, "turn ended")
		d.abandonLane(events.LaneMain, "turn_ended")
		if what := d.leftToPerson(sig); what != "" {
			d.phase(events.PhaseWaiting, what, "")
			return
		}
		if !wasOpen && d.s.Phase == events.PhaseWaiting && (d.s.Activity == "question" || d.s.Activity == "plan") {
			return // the turn already ended on a question or a plan; a second end repeats it
		}
		d.settle()
	case events.SigInterrupt:
		d.abandonLane(events.LaneMain, "interrupted")
		d.closeReviews(events.ReviewRejected, "interrupted by the user")
		d.endTurn("interrupted")
		d.settle()
	case events.SigIdle:
		// The agent sits at its prompt. A question asked is still open;
		// anything else of the turn is over: a dialog dismissed (Esc on a
		// permission prompt fires no hook), or a turn whose end was not
		// reported.
		if d.s.Phase == events.PhaseWaiting && (d.s.Activity == "question" || d.s.Activity == "plan") {
			return
		}
		d.atPrompt()
		d.settle()
	case events.SigCompactStart:
		if d.manualCompaction(sig) {
			d.atPrompt()
		}
		d.phase(events.PhaseWorking, "compacting", "")
	case events.SigCompactEnd:
		switch {
		case d.s.Activity == "compacting":
			if d.s.TurnOpen {
				d.phase(events.PhaseWorking, "thinking", "")
			} else {
				d.settle()
			}
		case d.manualCompaction(sig):
			// The compaction's start was not seen (a transcript has no
			// line for it): its end says as much about the turn.
			d.atPrompt()
			d.settle()
		}
	case events.SigBackgroundDone:
		d.closeWork(sig.Task, or(sig.Status, events.OutcomeOK))
	case events.SigSubagentStart:
		id := subagentID(sig.ID)
		if d.s.entry(id) < 0 && d.s.entry(backgroundID(sig.ID)) < 0 && !d.s.RecentClosed.Has(id) {
			d.emit(events.SessionEntryOpened{EntryID: id, Activity: "subagent:" + or(sig.Name, "agent"), Lane: events.LaneSubagent})
		}
		d.working("subagent:"+or(sig.Name, "agent"), id)
	case events.SigSubagentStop:
		d.closeWork(sig.ID, events.OutcomeOK)
	case events.SigMode:
		if sig.Name != d.s.AgentMode {
			d.mode(agentMode(sig.Name), sig.Name)
		}
	case events.SigSessionEnd:
		d.end(or(sig.Text, "session_end"))
	case events.SigAPIError:
		// A request failed. A final failure comes with a turn end (whose
		// outcome it makes failed); a retry keeps the turn going.
		if sig.Status != apiErrorFailed && d.s.TurnOpen && d.s.Phase == events.PhaseWorking {
			d.phase(events.PhaseWorking, "api_retry", "")
		}
	}
}

// sameDialog returns the open review that permission signal sig reports
// again, or "": one prompt on the person's screen is one review. A
// review of the same tool is the same dialog when either report names
// only the tool (a notice: sig without a call id, or a review a notice
// opened), or both name the same action (a PermissionRequest run twice).
// Two dialogs of one tool with different actions (parallel calls) are
// two reviews.
func (d *decider) sameDialog(sig events.Sig) string {
	for _, g := range d.s.Dialogs {
		if sig.Name != "" && g.Tool != "" && g.Tool != sig.Name {
			continue
		}
		if sig.ID == "" || g.Notice || g.Action == sig.Text {
			return g.Review
		}
	}
	return ""
}

// rewrittenID returns the id of the n-th session a transcript of session
// id goes on in once rewritten: id-rN, or, where that would pass
// events.MaxIDLen, id cut short and followed by 8 hex digits of its
// SHA-256, so that two long ids that share their start still part.
func rewrittenID(id string, n int) string {
	suffix := fmt.Sprintf("-r%d", n)
	if len(id)+len(suffix) <= events.MaxIDLen {
		return id + suffix
	}
	sum := sha256.Sum256([]byte(id))
	tag := "-" + hex.EncodeToString(sum[:4])
	return id[:events.MaxIDLen-len(tag)-len(suffix)] + tag + suffix
}

// PromptSum returns the identity of a prompt's text that
// events.SessionTurnStarted.PromptSum holds: 16 lower-case hex digits of
// the SHA-256 of text, or "" when text is empty.
func PromptSum(text string) string {
	if text == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

// repeatedPrompt reports whether sig, a prompt, is the open turn's own
// prompt reported again though no prompt id says so: one of the two has
// no id, its text is the turn's prompt's (PromptSum, non-empty),
// and the turn has opened no call yet. A prompt of the same text after
// the turn's first call, or after its end, is a new prompt.
func (d *decider) repeatedPrompt(sig events.Sig) bool {
	return d.s.TurnOpen && d.s.TurnCalls == 0 && (sig.ID == "" || d.s.PromptID == "") &&
		d.s.PromptSum != "" && PromptSum(sig.Text) == d.s.PromptSum
}

// atPrompt ends what the agent's return to its prompt ends when no turn
// end was reported: open main-lane calls are abandoned ("dismissed"),
// open reviews rejected, and the turn ends completed, or interrupted if
// a call or review was still open. The caller settles.
func (d *decider) atPrompt() {
	outcome := turnCompleted
	if d.s.lane(events.LaneMain) || len(d.s.OpenReviews) > 0 {
		outcome = "interrupted"
	}
	d.abandonLane(events.LaneMain, "dismissed")
	d.closeReviews(events.ReviewRejected, "dismissed: the agent went back to its prompt")
	d.endTurn(outcome)
}

// manualCompaction reports whether sig, a compaction's start or end,
// tells of one the person asked for at the prompt (events.CompactManual)
// while a turn is open that began no later than the report: the agent
// was back at its prompt, so that turn is over though its end was never
// reported. A report older than the open turn's start (a transcript line
// read after the next prompt's hook) is of an earlier turn.
func (d *decider) manualCompaction(sig events.Sig) bool {
	return sig.Name == events.CompactManual && d.s.TurnOpen && !d.at.Before(d.s.TurnStartedAt)
}

// closeWork closes the background work named id, a background task or a
// subagent, whichever entry holds it, and lets the session settle when
// its turn is over.
func (d *decider) closeWork(id, outcome string) {
	closed := false
	for _, e := range []string{backgroundID(id), subagentID(id)} {
		if d.s.entry(e) >= 0 {
			d.emit(events.SessionEntryClosed{EntryID: e, Outcome: outcome})
			closed = true
		}
	}
	if closed && !d.s.TurnOpen && d.s.Phase == events.PhaseWorking {
		d.settle()
	}
}

func (d *decider) toolUse(sig events.Sig) {
	activity, lane := "tool:"+sig.Name, events.LaneMain
	id := sig.ID
	if id == "" {
		// Old hook payloads carry no tool_use_id: the call still gets an
		// entry, so its result (matched by tool) closes it.
		id = fmt.Sprintf("call-%d", d.s.ToolCalls+1)
	}
	if d.s.entry(id) < 0 && (d.s.closedCall(sig.ID) || d.s.RecentClosed.Has(id)) {
		return // a late copy of a call that is over: it decides nothing
	}
	if d.s.entry(id) < 0 {
		d.emit(events.SessionEntryOpened{EntryID: id, Activity: activity, Lane: lane})
	}
	if sig.ID != "" && contains(d.blocking, sig.ID) {
		return // the question signal that follows moves to waiting
	}
	d.working(activity, sig.ID)
}

// answerReview decides the open review id from the user's answer that
// sig (a tool result) carries: refused by the person sig.By names,
// rejected by the user, or else approved, for the reason approved.
func (d *decider) answerReview(id string, sig events.Sig, approved string) {
	switch {
	case sig.Status == events.OutcomeRejected && sig.By != "":
		d.refuseReview(id, sig)
	case sig.Status == events.OutcomeRejected:
		d.decideReview(id, events.ReviewRejected, "rejected by the user")
	default:
		d.decideReview(id, events.ReviewApproved, approved)
	}
}

func (d *decider) toolResult(sig events.Sig) {
	id := sig.ID
	if id == "" && sig.Name != "" {
		id = d.newestEntry(events.LaneMain, "tool:"+sig.Name)
	}
	if _, gate := d.s.PendingReview(id); gate {
		// The agent went on before the gate's verdict: the hook had
		// already answered (a fail-closed deny), so no verdict was made.
		d.decideReview(id, events.ReviewUnavailable, "the agent reported the call's result ("+or(sig.Status, events.OutcomeOK)+") before a verdict: the hook had answered without one")
	} else if contains(d.s.OpenReviews, id) {
		d.answerReview(id, sig, "approved by the user")
	}
	closed := d.s.entry(id) >= 0 // an entry its use opened
	if !closed && !d.late && sig.ID != "" && !d.s.closedCall(sig.ID) {
		// The result came before its call's use (two hooks that raced,
		// sources read out of order): the call ran, so it is recorded
		// opened here and closed below as any call is by its result.
		// Its use, when it comes, is recorded and opens nothing
		// (State.Inferred); the turn's end finds nothing of it open.
		d.emit(events.SessionEntryOpened{EntryID: sig.ID, Activity: "tool:" + sig.Name, Lane: events.LaneMain, FromResult: true})
	}
	if i := d.s.entry(id); i >= 0 && d.s.Entries[i].Lane == events.LaneMain {
		// A permission dialog that named no call (review "gate-" and its
		// hook's spool id) held the agent: a result of a main-lane call
		// after it says the dialog was answered. A gate review waits for
		// its verdict instead.
		for _, r := range slices.Clone(d.s.OpenReviews) {
			if _, gate := d.s.PendingReview(r); r == id || gate || !strings.HasPrefix(r, "gate-") {
				continue
			}
			d.answerReview(r, sig, "approved by the user: the agent went on")
		}
	}
	if i := d.s.entry(id); i >= 0 {
		tool := d.s.Entries[i].Activity
		switch sig.Status {
		case events.OutcomeBackground:
			d.emit(events.SessionEntryClosed{EntryID: id, Outcome: events.OutcomeBackground})
			// A backgrounded subagent already has its entry when its
			// start was seen; one piece of work is one entry.
			if sig.Task != "" && d.s.entry(backgroundID(sig.Task)) < 0 && d.s.entry(subagentID(sig.Task)) < 0 {
				d.emit(events.SessionEntryOpened{EntryID: backgroundID(sig.Task), Activity: strings.Replace(tool, "tool:", "background:", 1), Lane: events.LaneBackground})
			}
		case "":
			d.emit(events.SessionEntryClosed{EntryID: id, Outcome: events.OutcomeOK})
		case events.OutcomeRejected:
			d.emit(events.SessionEntryClosed{EntryID: id, Outcome: sig.Status, By: sig.By, Reason: refusalReason(sig)})
		default:
			d.emit(events.SessionEntryClosed{EntryID: id, Outcome: sig.Status})
		}
	} else if d.s.awaitsResult(sig.ID) {
		// The call was abandoned (its turn or the session ended first),
		// yet it ran: record how it ended, and decide nothing else.
		d.emit(events.SessionEntryLateResult{EntryID: sig.ID, Outcome: or(sig.Status, events.OutcomeOK)})
		if sig.Status != events.OutcomeBackground && sig.Task != "" {
			d.closeWork(sig.Task, events.OutcomeOK)
		}
		return
	} else if d.s.Calls.Has(sig.ID) {
		return // a late copy of a result already recorded
	}
	if sig.Status != events.OutcomeBackground && sig.Task != "" {
		// The result of a subagent the session ran: its work is over.
		d.closeWork(sig.Task, events.OutcomeOK)
	}
	if d.late || !closed && !d.s.TurnOpen {
		return // a result of a call already settled
	}
	if d.s.Phase == events.PhaseWaiting {
		if len(d.s.OpenReviews) > 0 || d.waitsOnQuestion() {
			return // another call still waits for the person
		}
		d.phase(events.PhaseWorking, "thinking", sig.ID)
		return
	}
	if d.s.Phase == events.PhaseWorking {
		// The model reads the result next; outside a known turn too, the
		// activity no longer names a call that has ended.
		d.phase(events.PhaseWorking, "thinking", "")
	}
}

// refuseReview decides review id rejected by the agent's own permission
// check that sig (a rejected tool_result with By) reports: DecidedBy
// names it (events.DecidedByAgent), and the reason is the one it gave.
func (d *decider) refuseReview(id string, sig events.Sig) {
	rd := events.ReviewDecided{ReviewID: id, Verdict: events.VerdictDeny, Outcome: events.ReviewRejected,
		DecidedBy: &events.DecidedBy{Kind: events.DecidedByAgent, Name: sig.By},
		Reason:    "refused by " + sig.By}
	if r := refusalReason(sig); r != "" {
		rd.Reason += ": " + r
	}
	d.emit(rd)
	d.breaker()
}

// refusalReason is the reason a rejected tool_result gives when the
// agent's own check refused (sig.By set): its text; "" otherwise.
func refusalReason(sig events.Sig) string {
	if sig.By == "" {
		return ""
	}
	return sig.Text
}

// waitsOnQuestion reports whether a call that blocks on the user is still
// open: the waiting entry's id is the phase's cause.
func (d *decider) waitsOnQuestion() bool {
	if d.s.Activity != "question" {
		return false
	}
	for _, e := range d.s.Entries {
		if e.Lane == events.LaneMain && e.EntryID == d.s.WaitingOn {
			return true
		}
	}
	return false
}

func backgroundID(task string) string { return "bg-" + task }
func subagentID(id string) string     { return "agent-" + id }

// CheckParent decides whether parent, the state of the session a new
// subagent session names as its parent, may take in a subagent of agent
// (a Codex thread's spawned thread, a Claude Code subagent): nil when no
// such session exists yet or it is agent's own, else an error wrapping
// events.ErrRejected naming both. A session of another agent Logbook
// reads itself (Claude Code's, Codex CLI's) is never filed as another's
// parent, nor one of another agent as theirs, as decideObserve refuses a
// report of another agent: ids can meet, by chance or by a hostile file.
// It decides on states only, before anything is appended: a stored log
// folds as it did.
func CheckParent(parent State, agent, child string) error {
	if !parent.Exists() {
		return nil
	}
	own := or(parent.Agent, "claude-code")
	if agent = or(agent, "claude-code"); own == agent || !ownReader(agent) && !ownReader(own) {
		return nil
	}
	return fmt.Errorf("parent of %s: %w: session %s is %s's, the subagent %s's, and no session is the parent of another agent's subagent", child, events.ErrRejected, parent.ID, own, agent)
}
