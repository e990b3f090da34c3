package otel

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/logbook-dev/logbook/events"
)

// Scope is the instrumentation scope name of the spans Logbook exports.
const Scope = "github.com/logbook-dev/logbook/adapters/otel"

// TraceID returns the trace id of session aggregate id: the first 16
// bytes of SHA-256("logbook/trace/" + id). A session is one trace, and
// the same log exports the same ids on every host and every replay.
func TraceID(session string) pcommon.TraceID {
	sum := sha256.Sum256([]byte("logbook/trace/" + session))
	var t pcommon.TraceID
	copy(t[:], sum[:16])
	return t
}

// RootSpanID returns the span id of session aggregate id's root span:
// the first 8 bytes of SHA-256("logbook/session/" + id).
func RootSpanID(session string) pcommon.SpanID {
	return spanID("logbook/session/" + session)
}

// SpanID returns the span id derived from event id (the event that opens
// the span: a turn's start, an entry's opening, a review's request, a
// command's request): the first 8 bytes of SHA-256("logbook/span/" + id).
func SpanID(event string) pcommon.SpanID { return spanID("logbook/span/" + event) }

func spanID(s string) pcommon.SpanID {
	sum := sha256.Sum256([]byte(s))
	var id pcommon.SpanID
	copy(id[:], sum[:8])
	if id.IsEmpty() {
		id[7] = 1 // an all-zero span id is invalid
	}
	return id
}

// SpanTypes are the event types the exporter may make spans of (Spans);
// the others make none.
var SpanTypes = map[string]bool{
	"session.started": true, "session.described": true, "session.turn_ended": true, "session.entry_closed": true,
	"session.entry_abandoned": true, "review.decided": true, "session.ended": true,
	"command.exited": true, "command.abandoned": true,
}

// closesSpan are the session's event types that close a span of their
// own (not the root's).
var closesSpan = map[string]bool{
	"session.turn_ended": true, "session.entry_closed": true, "session.entry_abandoned": true,
	"review.decided": true, "session.ended": true,
}

// Spans appends to ss the spans rec closes, reading what came before it
// in its aggregate from history (the aggregate's records in order; those
// after rec are not read). A span is sent once, when the event that
// closes it is read, with its start from the event that opened it:
//
//	session.started,       the session's root span "invoke_agent <agent>"
//	session.described,     (zero length: the session's start), trace
//	or the first span the  TraceID, span RootSpanID, sent once: with the
//	session closes         session.started or session.described by which
//	                       the session's cwd and model are both named (an
//	                       agent often names them after the session
//	                       started: the model with its first reply), or
//	                       else with the first other span the session
//	                       closes; its attributes from the session.started
//	                       and every session.described up to then
//	session.turn_ended     "turn <n>" from its session.turn_started, child
//	                       of the root
//	session.entry_closed,  "execute_tool <tool>" (or the entry's activity)
//	session.entry_abandoned from its session.entry_opened, child of the
//	                       turn open then (else the root); an abandonment
//	                       is the span event "logbook.entry_abandoned"
//	                       (reason, evidence) and status error
//	review.decided         "review <tool>" from its review.requested, child
//	                       of the call it reviews (else the turn, else the
//	                       root), with its verdict, outcome, risk and who
//	                       decided
//	session.ended          "session.end", zero length, child of the root
//	command.exited,        "command <argv[0]>" from its command.requested,
//	command.abandoned      child of its session's root
//
// Attributes follow OpenTelemetry's generative-AI semantic conventions
// where one applies (gen_ai.operation.name invoke_agent or execute_tool,
// gen_ai.agent.name, gen_ai.conversation.id, gen_ai.request.model,
// gen_ai.tool.name, gen_ai.tool.call.id), and logbook.* otherwise. Every
// id comes from the log (TraceID, RootSpanID, SpanID), so exporting a
// replayed log gives the same spans.
func Spans(ss ptrace.SpanSlice, rec events.Record, history []events.Record) {
	before := history
	for i, r := range history {
		if r.Seq >= rec.Seq {
			before = history[:i]
			break
		}
	}
	agg := rec.Agg.ID
	if recs := append(before[:len(before):len(before)], rec); rec.Agg.Kind == events.KindSession && rootAt(recs) == len(recs)-1 {
		rootSpan(ss, recs)
	}
	switch d := rec.Data.(type) {
	case events.SessionTurnEnded:
		start, id := rec.At, SpanID(rec.ID.String())
		for i := len(before) - 1; i >= 0; i-- {
			if t, ok := before[i].Data.(events.SessionTurnStarted); ok && t.Turn == d.Turn {
				start, id = before[i].At, SpanID(before[i].ID.String())
				break
			}
		}
		s := newSpan(ss, TraceID(agg), id, RootSpanID(agg), fmt.Sprintf("turn %d", d.Turn), start, rec.At)
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "invoke_agent")
		a.PutStr("logbook.session", agg)
		a.PutInt("logbook.turn", int64(d.Turn))
		a.PutStr("logbook.turn.outcome", d.Outcome)
		if d.Outcome == "failed" {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("turn failed")
		}
	case events.SessionEntryClosed:
		s := entrySpan(ss, agg, d.EntryID, rec, before)
		s.Attributes().PutStr("logbook.outcome", d.Outcome)
		putNonEmpty(s.Attributes(), "logbook.closed_by", d.By)
		if d.Outcome != events.OutcomeOK && d.Outcome != events.OutcomeBackground {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(cmpOr(d.Reason, d.Outcome))
		}
	case events.SessionEntryAbandoned:
		s := entrySpan(ss, agg, d.EntryID, rec, before)
		s.Attributes().PutStr("logbook.outcome", "abandoned")
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("abandoned: " + d.Reason)
		ev := s.Events().AppendEmpty()
		ev.SetName("logbook.entry_abandoned")
		ev.SetTimestamp(pcommon.NewTimestampFromTime(rec.At))
		ev.Attributes().PutStr("logbook.reason", d.Reason)
		putNonEmpty(ev.Attributes(), "logbook.evidence", d.Evidence)
		putNonEmpty(ev.Attributes(), "logbook.by", rec.Actor)
	case events.ReviewDecided:
		start, id, tool, action := rec.At, SpanID(rec.ID.String()), "", ""
		var reqAt time.Time
		for i := len(before) - 1; i >= 0; i-- {
			if q, ok := before[i].Data.(events.ReviewRequested); ok && q.ReviewID == d.ReviewID {
				start, reqAt, id, tool, action = before[i].At, before[i].At, SpanID(before[i].ID.String()), q.Tool, q.Action
				break
			}
		}
		parent := RootSpanID(agg)
		if o, ok := opened(before, d.ReviewID); ok {
			parent = SpanID(o.ID.String())
		} else if t, ok := turnAt(before, reqAt); ok {
			parent = t
		}
		s := newSpan(ss, TraceID(agg), id, parent, "review "+cmpOr(tool, d.ReviewID), start, rec.At)
		a := s.Attributes()
		a.PutStr("logbook.session", agg)
		putNonEmpty(a, "gen_ai.tool.name", tool)
		a.PutStr("gen_ai.tool.call.id", d.ReviewID)
		putNonEmpty(a, "logbook.review.action", action)
		a.PutStr("logbook.review.verdict", d.Verdict)
		a.PutStr("logbook.review.outcome", d.Outcome)
		putNonEmpty(a, "logbook.review.risk", d.Risk)
		putNonEmpty(a, "logbook.review.user_authorization", d.UserAuthorization)
		putNonEmpty(a, "logbook.review.reason", d.Reason)
		decider := rec.Actor
		if d.DecidedBy != nil {
			decider = d.DecidedBy.Kind
			putNonEmpty(a, "logbook.review.decider_name", d.DecidedBy.Name)
		}
		putNonEmpty(a, "logbook.review.decider", decider)
		if d.Verdict == events.VerdictDeny {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage("denied")
		}
	case events.SessionEnded:
		s := newSpan(ss, TraceID(agg), SpanID(rec.ID.String()), RootSpanID(agg), "session.end", rec.At, rec.At)
		a := s.Attributes()
		a.PutStr("logbook.session", agg)
		a.PutStr("logbook.end.reason", d.Reason)
		putNonEmpty(a, "logbook.end.from", d.From)
		putNonEmpty(a, "logbook.end.evidence", d.Evidence)
	case events.CommandExited, events.CommandAbandoned:
		commandSpan(ss, rec, before)
	}
}

// rootAt returns the index of the event of recs (a session's, in order)
// that sends the session's root span, or -1 when none of them does: the
// first, after the session.started, by which the session.started and the
// session.described events name both the cwd and the model, or the first
// that closes a span of its own, whichever comes first.
func rootAt(recs []events.Record) int {
	started := false
	var cwd, model string
	for i, r := range recs {
		switch d := r.Data.(type) {
		case events.SessionStarted:
			started, cwd, model = true, d.Cwd, d.Model
		case events.SessionDescribed:
			cwd, model = cmpOr(d.Cwd, cwd), cmpOr(d.Model, model)
		}
		if started && (cwd != "" && model != "" || closesSpan[r.Type]) {
			return i
		}
	}
	return -1
}

// rootSpan adds the root span of the session whose events, in order, are
// recs: from its session.started (none without one), with the cwd and
// model the last session.described among recs that names them gives.
func rootSpan(ss ptrace.SpanSlice, recs []events.Record) {
	i := slices.IndexFunc(recs, func(r events.Record) bool { _, ok := r.Data.(events.SessionStarted); return ok })
	if i < 0 {
		return
	}
	rec, d := recs[i], recs[i].Data.(events.SessionStarted)
	for _, r := range recs[i+1:] {
		if p, ok := r.Data.(events.SessionDescribed); ok {
			d.Cwd, d.Model = cmpOr(p.Cwd, d.Cwd), cmpOr(p.Model, d.Model)
		}
	}
	agg := rec.Agg.ID
	s := newSpan(ss, TraceID(agg), RootSpanID(agg), pcommon.SpanID{}, "invoke_agent "+d.Agent, rec.At, rec.At)
	a := s.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutStr("gen_ai.agent.name", d.Agent)
	a.PutStr("gen_ai.conversation.id", cmpOr(d.AgentSessionID, agg))
	putNonEmpty(a, "gen_ai.request.model", d.Model)
	a.PutStr("logbook.session", agg)
	putNonEmpty(a, "logbook.session.parent", d.Parent)
	putNonEmpty(a, "logbook.agent_type", d.AgentType)
	putNonEmpty(a, "logbook.cwd", d.Cwd)
	putNonEmpty(a, "logbook.mode", d.Mode)
}

// entrySpan adds the span of entry id, closed by rec.
func entrySpan(ss ptrace.SpanSlice, agg, id string, rec events.Record, before []events.Record) ptrace.Span {
	start, sid, activity, lane := rec.At, SpanID(rec.ID.String()), "", ""
	parent := RootSpanID(agg)
	if o, ok := opened(before, id); ok {
		d := o.Data.(events.SessionEntryOpened)
		start, sid, activity, lane = o.At, SpanID(o.ID.String()), d.Activity, d.Lane
		if t, ok := turnAt(before, o.At); ok && lane == events.LaneMain {
			parent = t
		}
	}
	name := cmpOr(activity, "entry "+id)
	tool, isTool := strings.CutPrefix(activity, "tool:")
	if isTool {
		name = "execute_tool " + tool
	}
	s := newSpan(ss, TraceID(agg), sid, parent, name, start, rec.At)
	a := s.Attributes()
	a.PutStr("logbook.session", agg)
	if isTool {
		a.PutStr("gen_ai.operation.name", "execute_tool")
		a.PutStr("gen_ai.tool.name", tool)
		a.PutStr("gen_ai.tool.call.id", id)
	}
	a.PutStr("logbook.entry", id)
	putNonEmpty(a, "logbook.activity", activity)
	putNonEmpty(a, "logbook.lane", lane)
	return s
}

// opened returns the last session.entry_opened of entry id in before.
func opened(before []events.Record, id string) (events.Record, bool) {
	for i := len(before) - 1; i >= 0; i-- {
		if o, ok := before[i].Data.(events.SessionEntryOpened); ok && o.EntryID == id {
			return before[i], true
		}
	}
	return events.Record{}, false
}

// turnAt returns the span id of the turn open at time at (the last turn
// started at or before it and not ended before it), if any.
func turnAt(before []events.Record, at time.Time) (pcommon.SpanID, bool) {
	if at.IsZero() {
		return pcommon.SpanID{}, false
	}
	ended := map[int]bool{}
	for i := len(before) - 1; i >= 0; i-- {
		r := before[i]
		switch d := r.Data.(type) {
		case events.SessionTurnEnded:
			if !r.At.After(at) {
				ended[d.Turn] = true
			}
		case events.SessionTurnStarted:
			if r.At.After(at) {
				continue
			}
			if ended[d.Turn] {
				return pcommon.SpanID{}, false
			}
			return SpanID(r.ID.String()), true
		}
	}
	return pcommon.SpanID{}, false
}

// commandSpan adds the span of the command rec ends, in its session's
// trace (the command's own when it names none).
func commandSpan(ss ptrace.SpanSlice, rec events.Record, before []events.Record) {
	var req events.CommandRequested
	start, sid := rec.At, SpanID(rec.ID.String())
	for _, r := range before {
		if q, ok := r.Data.(events.CommandRequested); ok {
			req, start, sid = q, r.At, SpanID(r.ID.String())
			break
		}
	}
	session := cmpOr(req.Session, rec.Agg.ID)
	name := "command"
	if len(req.Argv) > 0 {
		name += " " + req.Argv[0]
	}
	s := newSpan(ss, TraceID(session), sid, RootSpanID(session), name, start, rec.At)
	a := s.Attributes()
	a.PutStr("logbook.command", rec.Agg.ID)
	putNonEmpty(a, "logbook.session", req.Session)
	if len(req.Argv) > 0 {
		args := a.PutEmptySlice("process.command_args")
		for _, v := range req.Argv {
			args.AppendEmpty().SetStr(v)
		}
	}
	putNonEmpty(a, "logbook.mode", req.Mode)
	putNonEmpty(a, "process.working_directory", cmpOr(req.Cwd, req.Workspace))
	switch d := rec.Data.(type) {
	case events.CommandExited:
		a.PutInt("process.exit.code", int64(d.Code))
		putNonEmpty(a, "logbook.signal", d.Signal)
		if d.Code != 0 {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(fmt.Sprintf("exit %d", d.Code))
		}
	case events.CommandAbandoned:
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("abandoned: " + d.Reason)
		ev := s.Events().AppendEmpty()
		ev.SetName("logbook.command_abandoned")
		ev.SetTimestamp(pcommon.NewTimestampFromTime(rec.At))
		ev.Attributes().PutStr("logbook.reason", d.Reason)
	}
}

func newSpan(ss ptrace.SpanSlice, trace pcommon.TraceID, id, parent pcommon.SpanID, name string, start, end time.Time) ptrace.Span {
	s := ss.AppendEmpty()
	s.SetTraceID(trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetName(name)
	s.SetKind(ptrace.SpanKindInternal)
	if end.Before(start) {
		end = start
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	return s
}

func putNonEmpty(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
