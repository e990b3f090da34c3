package session

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Evolve returns s after e. It only applies facts and never fails: events
// of other aggregates leave s unchanged, and so does an event whose Ver is
// not past s.Ver (folding an event twice is harmless); kinds it does not
// know change only Ver. s is not modified; slices in the result are fresh.
func Evolve(s State, e events.Envelope) State {
	s.evolve(e, false)
	return s
}

// Evolve makes *s what Evolve(*s, e) returns, in place: a fold that owns
// its states (one per session, in a map or a local variable) saves the
// state's copies in and out, and its sets and lists of ids grow in place.
// Like Evolve it never writes memory a copy of *s taken before the call
// reads, so that copy keeps its value: a slice or map that changes is
// replaced by a fresh one, or appended to past the end of every state
// that holds it. Two states that share memory (one a copy of the other)
// must not be evolved in place at the same time on different goroutines.
func (s *State) Evolve(e events.Envelope) { s.evolve(e, true) }

// evolve is Evolve; inPlace lets it append to s's id sets and lists in
// their backing arrays (IDSet.add1, Recent.push).
func (s *State) evolve(e events.Envelope, inPlace bool) {
	if e.Agg.Kind != events.KindSession || e.Ver != 0 && e.Ver <= s.Ver {
		return // another aggregate's, or folded already
	}
	// Times as the log stores them, so an in-process fold and a replay
	// of the log give byte-identical rows.
	e.At = e.At.UTC().Truncate(time.Microsecond)
	s.ID = e.Agg.ID
	s.Ver = e.Ver
	// Sources disagree on time (a hook's arrival, a transcript line's own
	// timestamp): updated is the latest time seen, started the earliest,
	// so updated is never before started.
	if e.At.After(s.UpdatedAt) {
		s.UpdatedAt = e.At
	}
	if !s.StartedAt.IsZero() && e.At.Before(s.StartedAt) {
		s.StartedAt = e.At
	}
	if o, ok := events.Observed(e.Data); ok {
		s.Observations++
		if s.Observations == 1 && o.Sender != nil {
			owner := *o.Sender
			s.Owner = &owner
		}
		if h, ok := events.HarnessOf(e.Data); ok && s.Harness == "" && !s.Exists() {
			s.Harness = h
		}
		if o.Line > 0 && o.Line > s.Cursor(o.Path) {
			s.Lines += max(o.Copied, 1)
			s.LineIDs = s.LineIDs.add1(LineID(o), inPlace)
			name := source(o.Path)
			s.Cursors = s.Cursors.Set(name, o.Line)
			if f, _ := s.Fingerprints.Get(name); o.Fingerprint != nil || f != (events.Fingerprint{}) {
				if o.Fingerprint != nil {
					s.Fingerprints = s.Fingerprints.Set(name, *o.Fingerprint)
				} else {
					s.Fingerprints = s.Fingerprints.Delete(name)
				}
			}
		}
		if o.Tick != nil {
			return // the reconciler's, not the agent's
		}
		if o.HeldStop() {
			// Logbook's stop at a line that does not parse, not a line
			// of the agent's: it says nothing of when the agent was
			// heard from, and the pass it ends reads no more.
			s.HeldPath, s.HeldLine = o.Path, o.HeldLine
			s.Importing = false
			return
		}
		foldUsage(s, o, e.At)
		s.foldSaid(o)
		s.foldReports(o, inPlace)
		s.heard(o, e)
		if o.Process != nil {
			s.foldAgent(*o.Process)
		}
		if o.Line == 0 && o.Key != "" {
			s.RecentKeys = s.RecentKeys.push(o.Key, RecentKeys, inPlace)
			s.Keys = s.Keys.add1(o.Key, inPlace)
		}
		return
	}
	switch d := e.Data.(type) {
	case events.SessionStarted:
		s.Phase = events.PhaseReady
		s.Agent, s.AgentSessionID, s.Parent = d.Agent, d.AgentSessionID, d.Parent
		s.AgentID, s.AgentType = d.AgentID, d.AgentType
		s.Cwd, s.Model = d.Cwd, d.Model
		s.Mode, s.AgentMode = d.Mode, d.AgentMode
		if s.StartedAt.IsZero() || e.At.Before(s.StartedAt) {
			s.StartedAt = e.At
		}
		if s.UpdatedAt.Before(s.StartedAt) {
			s.UpdatedAt = s.StartedAt
		}
		s.RewrittenFrom = d.RewrittenFrom
		s.ForkedFrom = d.ForkedFrom
		s.Depth = d.Depth
		if s.Depth == 0 && d.Parent != "" {
			s.Depth = 1 // a subagent whose agent does not count (Claude Code's Agent tool)
		}
		s.Since = e.At
	case events.SessionTransitioned:
		s.move(d, e.At)
	case events.SessionActivityChanged:
		s.Activity = d.To
		s.Since = e.At
	case events.SessionEntryOpened:
		s.Entries = append(slices.Clip(s.Entries), Entry{
			EntryID: d.EntryID, Activity: d.Activity, Lane: d.Lane, OpenedAt: e.At, Cause: causeOf(e),
		})
		if d.Lane == events.LaneMain {
			s.ToolCalls++
			s.TurnCalls++
		}
		if d.FromResult {
			s.Inferred = s.Inferred.add1(d.EntryID, inPlace)
		}
		if d.Moves != nil {
			s.move(*d.Moves, e.At)
		}
	case events.SessionEntryClosed:
		s.Entries = without(s.Entries, d.EntryID)
		s.RecentClosed = s.RecentClosed.push(d.EntryID, RecentClosed, inPlace)
		s.Calls = s.Calls.add1(d.EntryID, inPlace)
		if d.Moves != nil {
			s.move(*d.Moves, e.At)
		}
	case events.SessionEntryAbandoned:
		s.Entries = without(s.Entries, d.EntryID)
		s.RecentClosed = s.RecentClosed.push(d.EntryID, RecentClosed, inPlace)
		s.Unfinished = s.Unfinished.add1(d.EntryID, inPlace)
		s.Abandoned++
	case events.SessionEntryLateResult:
		s.Calls = s.Calls.add1(d.EntryID, inPlace)
		s.LateResults++
	case events.SessionForked:
		s.Forks++
	case events.SessionTranscriptDiverged:
		s.Diverged = maps.Clone(s.Diverged)
		if s.Diverged == nil {
			s.Diverged = map[string]string{}
		}
		s.Diverged[source(d.Path)] = d.NewSession
	case events.SessionModeChanged:
		s.Mode, s.AgentMode, s.ModeRevision = d.To, d.AgentMode, d.Revision
	case events.SessionDescribed:
		s.Cwd = or(d.Cwd, s.Cwd)
		s.Model = or(d.Model, s.Model)
		s.GitBranch = or(d.GitBranch, s.GitBranch)
		s.Version = or(d.Version, s.Version)
		s.Title = or(d.Title, s.Title)
		s.AgentSessionID = or(d.AgentSessionID, s.AgentSessionID)
	case events.SessionTurnStarted:
		s.Turns = d.Turn
		s.TurnOpen = true
		s.TurnStartedAt = e.At
		s.PromptID = d.PromptID
		s.PromptSum, s.TurnCalls = d.PromptSum, 0
		s.Released = false
		s.Refusals = 0 // the user spoke: denials in a row count again from here
		if d.PromptID != "" {
			s.Calls = s.Calls.add1(promptKey(d.PromptID), inPlace)
		}
	case events.SessionTurnEnded:
		s.TurnOpen = false
		s.TurnEndedAt, s.TurnEndedBy = e.At, causeOf(e).Kind
		if d.Outcome == TurnReleased {
			s.Released = true
		}
	case events.SessionEnded:
		s.Phase = events.PhaseEnded
		s.Activity = ""
		s.Since = e.At
		s.WaitingOn = ""
		s.EndReason = d.Reason
		if s.TurnOpen {
			s.TurnEndedAt, s.TurnEndedBy = e.At, causeOf(e).Kind
		}
		s.TurnOpen = false
	case events.ReviewRequested:
		if !contains(s.OpenReviews, d.ReviewID) {
			s.OpenReviews = append(slices.Clip(s.OpenReviews), d.ReviewID)
			s.Dialogs = append(slices.Clip(s.Dialogs), Dialog{Review: d.ReviewID, Tool: d.Tool, Action: d.Action, Notice: d.Notice})
		}
		if d.Gate {
			s.Pending = append(slices.Clip(s.Pending), PendingReview{
				ID: d.ReviewID, Tool: d.Tool, Action: d.Action, Event: d.Event, ArgsDigest: d.ArgsDigest, Risk: d.Risk, Grant: d.Grant,
				Revision: d.Revision, Justification: d.Justification, RequestedAt: e.At, BudgetMS: d.BudgetMS,
			})
		}
	case events.ReviewDecided:
		s.OpenReviews = slices.DeleteFunc(slices.Clone(s.OpenReviews), func(id string) bool { return id == d.ReviewID })
		s.Dialogs = slices.DeleteFunc(slices.Clone(s.Dialogs), func(g Dialog) bool { return g.Review == d.ReviewID })
		s.Verdicts = pushBounded(s.Verdicts, d.Verdict == events.VerdictDeny, ReviewWindow)
		if d.Verdict == events.VerdictDeny {
			s.Refusals++
		} else {
			s.Refusals = 0
		}
		if p, ok := s.PendingReview(d.ReviewID); ok {
			s.Pending = slices.DeleteFunc(slices.Clone(s.Pending), func(p PendingReview) bool { return p.ID == d.ReviewID })
			dr := DecidedReview{ID: d.ReviewID, Tool: p.Tool, ArgsDigest: p.ArgsDigest, Verdict: d.Verdict, Outcome: d.Outcome, Grant: p.Grant, Revision: p.Revision, Reason: d.Reason, Seq: e.Ver}
			if d.DecidedBy != nil {
				dr.DecidedBy = *d.DecidedBy
			}
			s.Decided = pushBounded(s.Decided, dr, RecentDecided)
		}
	case events.ReviewBreakerTripped:
		s.BreakerTripped = true
	case events.ReviewBreakerReset:
		// The breaker starts afresh: what it counted is answered, so
		// neither the run nor the window may trip it again.
		s.BreakerTripped = false
		s.Refusals = 0
		s.Verdicts = nil
	}
	return
}

// foldReports records in Inferred the uses, permissions and questions o
// reports of calls opened from their result, each the first time it is
// reported: a later report of the same is a copy (LateDuplicate).
func (s *State) foldReports(o *events.Observation, inPlace bool) {
	if s.Inferred.Len() == 0 {
		return
	}
	for _, sig := range o.Signals {
		switch sig.Kind {
		case events.SigToolUse, events.SigPermission, events.SigQuestion:
			if s.firstReport(sig) {
				s.Inferred = s.Inferred.add1(reportKey(sig), inPlace)
			}
		}
	}
}

// move folds phase move d made at time at: a session.transitioned, or the
// Moves of an entry event.
func (s *State) move(d events.SessionTransitioned, at time.Time) {
	s.Phase = d.To
	s.Activity = d.Activity
	s.Since = at
	s.WaitingOn = ""
	if d.To == events.PhaseWaiting {
		s.WaitingOn = d.EntryID
	}
}

// EvolveIn folds e into its session's state in states, in place
// (State.Evolve), starting the state with Init(e.Agg) when states has
// none: a fold of many sessions that owns their states. states must not
// be nil.
func EvolveIn(states map[string]*State, e events.Envelope) {
	s := states[e.Agg.ID]
	if s == nil {
		init := Init(e.Agg)
		s = &init
		states[e.Agg.ID] = s
	}
	s.Evolve(e)
}

// Fold folds records into init, in order.
func Fold(init State, recs []events.Record) State {
	for _, r := range recs {
		init.Evolve(r.Envelope)
	}
	return init
}

func causeOf(e events.Envelope) events.Cause {
	if e.Cause == nil {
		return events.Cause{}
	}
	return *e.Cause
}

func without(es []Entry, id string) []Entry {
	return slices.DeleteFunc(slices.Clone(es), func(e Entry) bool { return e.EntryID == id })
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// heard folds what observation o (of envelope e) says of when the agent
// was last heard from (ObservedAt, ReceivedAt) and of its clock
// (ClockOffsetMS), as State documents them.
func (s *State) heard(o *events.Observation, e events.Envelope) {
	recv := o.Received.UTC().Truncate(time.Microsecond)
	if !o.Received.IsZero() && recv.After(s.ReceivedAt) {
		s.ReceivedAt = recv
	}
	s.Importing = o.More && !o.Live && o.Line > 0
	switch {
	case o.Held && o.Line > 0 && o.Path != "":
		s.HeldPath, s.HeldLine = o.Path, o.Line+1
	case s.HeldPath != "" && source(o.Path) == source(s.HeldPath) && o.Line >= s.HeldLine:
		s.HeldPath, s.HeldLine = "", 0
	}
	agent, hasAgent := agentTime(o)
	if hasAgent && !clockReading(agent, e.At, recv) {
		// A time further from the server's than a time.Duration reaches
		// (about 292 years, such as 9999-12-31) is no clock's reading: an
		// offset taken from it would saturate, and history dated by it
		// would land centuries away. It is neither learned from nor
		// dated by; the line counts as one without an agent time.
		hasAgent = false
	}
	if o.Live && !o.Received.IsZero() && o.Line > 0 && hasAgent {
		s.ClockOffsetMS = recv.Sub(agent).Milliseconds()
		s.ClockOffsetAt = recv
	}
	at := e.At
	switch {
	case o.Live && !o.Received.IsZero():
		at = recv
	case o.Line > 0 && !o.Written.IsZero():
		// History its host dated on its own clock by the offset it
		// measured against the file's modification time: a learned
		// offset added to it would move it twice.
	case o.Line > 0 && !s.ClockOffsetAt.IsZero():
		if hasAgent {
			at = agent
		}
		at = at.Add(time.Duration(s.ClockOffsetMS) * time.Millisecond)
	}
	// Nothing was heard of the agent after the report of it came in: a
	// time derived past the observation's receipt is its receipt. An
	// offset learned from a clock that has moved since, or added to the
	// time of a line that had none of its own and was dated on the
	// server's clock already (an import going on after lines read live),
	// would otherwise date the agent ahead of the server and keep the
	// session the newest of all for months. An observation stored
	// without a receipt (logs written before receipts were kept) keeps
	// the time derived.
	if !o.Received.IsZero() && at.After(recv) {
		at = recv
	}
	if s.ObservedAt.IsZero() || at.After(s.ObservedAt) {
		s.ObservedAt = at
		s.ObservedRef = ""
		if !e.ID.IsZero() {
			s.ObservedRef = e.ID.String()
		}
	}
}

// clockReading reports whether agent, an agent's timestamp, can be a
// reading of a clock against the server's time: its distance from recv
// (the receipt), or from at (the event's time) when recv is zero, fits in
// a time.Duration without saturating (under about 292 years either way).
func clockReading(agent, at, recv time.Time) bool {
	ref := recv
	if recv.IsZero() {
		ref = at
	}
	d := ref.Sub(agent)
	return d > math.MinInt64 && d < math.MaxInt64
}

// agentTime returns the agent's own timestamp of o (AgentTime, RFC 3339)
// and whether it has one that parses.
func agentTime(o *events.Observation) (time.Time, bool) {
	if o.AgentTime == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, o.AgentTime)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC().Truncate(time.Microsecond), true
}

// foldAgent takes in p, the agent process a hook found. A process
// without a chain (recorded before chains were kept) is the agent, as it
// was then. One with its chain becomes HookProcess, and the agent is the
// deepest process of its chain that the previous HookProcess's chain
// holds too (same pid and start time, same host, boot and PID
// namespace): nil when there was none or they share none. An
// intermediate process differs from hook to hook; the agent that runs
// them all is common to all.
func (s *State) foldAgent(p events.Process) {
	if len(p.Chain) == 0 {
		p.Chain = nil
		s.AgentProcess, s.HookProcess = &p, nil
		return
	}
	p.Chain = slices.Clone(p.Chain[:min(len(p.Chain), events.MaxChain)])
	s.AgentProcess = commonProcess(s.HookProcess, &p)
	s.HookProcess = &p
}

// commonProcess returns the first process of cur's chain that prev's
// chain holds too, as a Process on their host, boot and PID namespace
// without a chain; nil when prev is nil, on another host, boot or PID
// namespace (its pids number other processes), or shares none.
func commonProcess(prev, cur *events.Process) *events.Process {
	if prev == nil || prev.Host != cur.Host || prev.Boot != cur.Boot || prev.PidNS != cur.PidNS {
		return nil
	}
	for _, r := range cur.Chain {
		for _, q := range prev.Chain {
			if r.PID == q.PID && r.Start == q.Start {
				return &events.Process{PID: r.PID, Start: r.Start, Host: cur.Host, Boot: cur.Boot, PidNS: cur.PidNS, Comm: r.Comm}
			}
		}
	}
	return nil
}
