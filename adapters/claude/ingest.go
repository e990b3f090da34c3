package claude

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/oklog/ulid/v2"
)

// Ingester turns Claude Code transcripts and hook payloads into session
// decisions on the log through the agent-neutral engine it embeds
// (ingest.Ingester: Observe, ObserveThen, Sessions and the cursor,
// fingerprint, batching and skip-index rules of every import). This
// package gives it the format: how a transcript line and a hook become
// observations, where the files live. It is safe for concurrent use.
type Ingester struct {
	*ingest.Ingester
	parser *Parser
}

// IngestConfig configures an Ingester; the fields mean what they mean in
// ingest.Config.
type IngestConfig struct {
	Log         events.Log
	Parser      *Parser // nil: NewParser(Config{})
	Reg         *events.Registry
	IDs         events.IDSource
	Clock       events.Clock
	Host        string
	SkipInvalid bool
	AsNew       bool
	// Command is the import command a *DivergedError names; "" is
	// "logbook import claude".
	Command string
	// Actor is stamped on decided events; "" is "claude-code".
	Actor   string
	Skip    *ingest.SkipIndex
	Parsers int
	Private []string
}

// NewIngester returns an Ingester appending to cfg.Log. Errors: no Log,
// NewParser's.
func NewIngester(cfg IngestConfig) (*Ingester, error) {
	if cfg.Log == nil {
		return nil, errors.New("claude ingester: no log")
	}
	if cfg.Parser == nil {
		p, err := NewParser(Config{})
		if err != nil {
			return nil, err
		}
		cfg.Parser = p
	}
	base, err := ingest.New(ingest.Config{
		Log: cfg.Log, Reg: cfg.Reg, IDs: cfg.IDs, Clock: cfg.Clock, Host: cfg.Host,
		SkipInvalid: cfg.SkipInvalid, AsNew: cfg.AsNew, Skip: cfg.Skip, Parsers: cfg.Parsers, Private: cfg.Private,
		Command: cmp.Or(cfg.Command, "logbook import claude"), Actor: cmp.Or(cfg.Actor, "claude-code"),
	})
	if err != nil {
		return nil, fmt.Errorf("claude ingester: %w", err)
	}
	return &Ingester{Ingester: base, parser: cfg.Parser}, nil
}

// Lines is the Claude Code transcript format as the engine reads it:
// Parser.Line, stored as events.ClaudeLineObserved.
func (in *Ingester) Lines() ingest.LineSource {
	return ingest.LineSource{
		Parse:  in.parser.Line,
		Wrap:   func(o events.Observation) events.Payload { return events.ClaudeLineObserved{Observation: o} },
		Parser: ParserLine,
		Same:   sameLine,
	}
}

// placement lists the members of a Claude Code transcript line that
// place it (its links, its session) rather than say what it says: a
// fork of a session copies its lines with the fork's sessionId and a
// forkedFrom stamp, and may write a line a second time without the stamp
// or with its parentUuid cleared.
var placement = []string{"parentUuid", "logicalParentUuid", "sessionId", "forkedFrom"}

// sameLine reports whether a and b, two transcript lines, say the same:
// JSON objects equal once the members that place them (placement) are
// left out, numbers compared as written. false when either is not an
// object.
func sameLine(a, b []byte) bool {
	x, y := map[string]any{}, map[string]any{}
	for _, l := range []struct {
		b []byte
		m *map[string]any
	}{{a, &x}, {b, &y}} {
		d := json.NewDecoder(bytes.NewReader(l.b))
		d.UseNumber()
		if err := d.Decode(l.m); err != nil || *l.m == nil {
			return false
		}
		if _, err := d.Token(); err != io.EOF {
			return false // more after the object
		}
	}
	for _, k := range placement {
		delete(x, k)
		delete(y, k)
	}
	return reflect.DeepEqual(x, y)
}

// ImportFile imports the Claude Code transcript at path into agg from the
// line after the session's cursor, as ingest.Ingester.ImportFile does
// with the Claude Code format (Lines); its results and errors are that
// method's.
func (in *Ingester) ImportFile(ctx context.Context, path string, agg events.Aggregate, progress func(line int)) (ingest.FileResult, error) {
	return in.Ingester.ImportFile(ctx, path, agg, in.Lines(), progress)
}

// Hook ingests one spooled hook payload. The observation's event id is the
// spool entry's ULID, so redelivering an entry appends nothing twice.
func (in *Ingester) Hook(ctx context.Context, e Entry) (events.Appended, error) {
	ap, _, err := in.HookThen(ctx, e, nil)
	return ap, err
}

// HookThen is Hook with then deciding more in the observation's batch
// (see Then): one append for both. It returns the session's state after
// the batch.
func (in *Ingester) HookThen(ctx context.Context, e Entry, then ingest.Then) (events.Appended, session.State, error) {
	o, err := in.parser.SpooledHook(e)
	if err != nil {
		return events.Appended{}, session.State{}, err
	}
	agg, err := hookAggregate(o)
	if err != nil {
		return events.Appended{}, session.State{}, fmt.Errorf("hook %s: %w", e.ID, err)
	}
	// A hook arrives as the agent runs: it is dated by its receipt here
	// (ObserveEntry).
	wrap := func(o events.Observation) events.Payload { return events.ClaudeHookObserved{Observation: o} }
	return in.ObserveEntry(ctx, "hook", e, agg, o, wrap, then)
}

// CheckHook parses spooled hook entry e as HookThen does and returns the
// aggregate HookThen decides it on (a subagent's own hooks go to the
// subagent's session; its SubagentStart and SubagentStop, to its
// parent's), or the error HookThen would return for it before deciding:
// a *HookError for bad input, an error naming e.ID for a bad session id
// or entry id. It appends nothing. What the reducer refuses
// (ErrRejected) shows only when HookThen decides.
func (in *Ingester) CheckHook(e Entry) (events.Aggregate, error) {
	_, agg, err := in.checkHook(e)
	return agg, err
}

// checkHook is CheckHook, returning the hook's observation too.
func (in *Ingester) checkHook(e Entry) (events.Observation, events.Aggregate, error) {
	o, err := in.parser.SpooledHook(e)
	if err != nil {
		return o, events.Aggregate{}, err
	}
	agg, err := hookAggregate(o)
	if err != nil {
		return o, events.Aggregate{}, fmt.Errorf("hook %s: %w", e.ID, err)
	}
	if _, err := ulid.ParseStrict(e.ID); err != nil {
		return o, events.Aggregate{}, fmt.Errorf("hook %s: entry id: %w", e.ID, err)
	}
	return o, agg, nil
}

// CheckHookNow is CheckHook, then the reducer's verdict on the hook's
// observation as its session stands in the log now
// (ingest.Ingester.CheckObserve): an error wrapping events.ErrRejected
// when the reducer refuses it (a session of another agent's, say), as
// HookThen would, with nothing appended to the session in between. A
// session that cannot be read is no refusal: CheckHookNow returns the
// aggregate and nil, and HookThen decides. It appends nothing.
func (in *Ingester) CheckHookNow(ctx context.Context, e Entry) (events.Aggregate, error) {
	o, agg, err := in.checkHook(e)
	if err != nil {
		return agg, err
	}
	err = in.CheckObserve(ctx, agg, events.ClaudeHookObserved{Observation: o})
	if err != nil && !errors.Is(err, events.ErrRejected) {
		return agg, nil
	}
	if err != nil {
		return agg, fmt.Errorf("hook %s: %w", e.ID, err)
	}
	return agg, nil
}

// hookAggregate is the session aggregate a hook observation o is decided
// on: its subagent's for a subagent's own hook, else its session's.
func hookAggregate(o events.Observation) (events.Aggregate, error) {
	agentID := o.Meta.AgentID
	if o.Kind == "SubagentStart" || o.Kind == "SubagentStop" {
		agentID = "" // about the subagent, told to its parent
	}
	return SessionAggregate(o.Meta.SessionID, agentID)
}

// sessionIDOf returns the sessionId the lines of the transcript at path
// carry (the first one among its first lines that can name a session of
// its own, events.ValidOwnSessionID), or "" if none does or the file
// cannot be read (its import says why). Claude Code names a
// transcript after its session, but a copied or renamed file keeps its
// identity this way. The file is opened as an import opens it, checked
// against the Ingester's private dirs.
func (in *Ingester) sessionIDOf(path string) string {
	type line struct {
		SessionID string `json:"sessionId"`
	}
	return firstLineOf(in, path, func(v line) bool { return v.SessionID != "" && events.ValidOwnSessionID(v.SessionID) == nil }).SessionID
}

// firstLineOf returns the first line of the transcript at path, opened
// as an import opens it (ingest.OpenTranscript), that keep takes,
// decoded as T (ingest.FirstOf); the zero T for none, or for a file
// that does not open.
func firstLineOf[T any](in *Ingester, path string, keep func(T) bool) T {
	var v T
	f, _, err := ingest.OpenTranscript(path, in.Private())
	if err != nil {
		return v
	}
	defer f.Close()
	v, _ = ingest.FirstOf(f, path, keep)
	return v
}

// agentIDOf returns the first agentId the lines of the transcript at
// path name, "" for none (or a file that does not open).
func (in *Ingester) agentIDOf(path string) string {
	type line struct {
		AgentID string `json:"agentId"`
	}
	return firstLineOf(in, path, func(v line) bool { return v.AgentID != "" }).AgentID
}

// knowNew tells the ingester which sessions of ts are new
// (ingest.Ingester.KnowNew), before an import of ts begins: those of
// the transcripts named after their session, as Claude Code names them,
// and their subagents'; the session of a file named otherwise is known
// only once its lines are read, and read with the file.
func (in *Ingester) knowNew(ctx context.Context, ts []Transcript) {
	var aggs []events.Aggregate
	for _, t := range ts {
		if t.Path != "" && !events.IsUUID(t.SessionID) && !t.Pinned {
			continue
		}
		if agg, err := SessionAggregate(t.SessionID, ""); err == nil && t.Path != "" {
			aggs = append(aggs, agg)
		}
		for _, sa := range t.Subagents {
			agentID, err := subagentID(sa)
			if err != nil {
				continue
			}
			if agg, err := SessionAggregate(t.SessionID, agentID); err == nil {
				aggs = append(aggs, agg)
			}
		}
	}
	in.Ingester.KnowNew(ctx, aggs)
}

// ImportTranscript imports t and its subagents' transcripts (the
// subagents' first) and returns t's result first, then its subagents'.
// The session is the one the transcript's lines name (sessionId), else
// the one an earlier import of the file went to (the import index), else
// t.SessionID; each subagent is its own session, agent-<id>, whose parent
// is the session its lines name, else t's (planSubagent): a subagent's
// transcript with no parent that can name a session, or with no agent
// id, is refused naming its file, before anything of t is appended.
func (in *Ingester) ImportTranscript(ctx context.Context, t Transcript, progress func(path string, line int)) ([]ingest.FileResult, error) {
	var out []ingest.FileResult
	step := func(path string) func(int) {
		if progress == nil {
			return nil
		}
		return func(n int) { progress(path, n) }
	}
	sid := t.SessionID
	if t.Path != "" {
		// Claude Code names a transcript after its session (a UUID); a
		// file named otherwise (a copy, a recording) is identified by
		// the sessionId its lines carry.
		if !events.IsUUID(t.SessionID) && !t.Pinned {
			id := in.sessionIDOf(t.Path)
			if id == "" {
				// No line names it (emptied since it was imported, say):
				// the session an earlier import of this file went to, so
				// that its cut is seen as one.
				id, _ = in.Indexed(t.Path)
			}
			if id != "" {
				sid = id
			}
		}
		// A session of a subagent's name ("agent-<id>", from a file so
		// named whose lines name no other session) would take in that
		// subagent's reports, whoever its parent is: refused, before
		// anything of the transcript or its subagents is appended.
		if err := events.ValidOwnSessionID(sid); errors.Is(err, events.ErrSubagentID) {
			return nil, fmt.Errorf("%s: session id: %w; the file is named so, and no line of it names the session it belongs to (a subagent's lines name their parent's): a subagent's transcript is imported from its parent's subagents directory (<session>/subagents/agent-<id>.jsonl)", t.Path, err)
		}
	}
	// Every subagent's session and parent are settled before anything
	// is appended: one with no parent it can name is refused, and
	// nothing of the transcript or its subagents is appended.
	subs := make([]subagentPlan, 0, len(t.Subagents))
	for _, sa := range t.Subagents {
		p, err := in.planSubagent(ctx, sa, sid)
		if err != nil {
			return nil, err
		}
		subs = append(subs, p)
	}
	// Subagents first: a subagent's lines were written before its parent
	// read its result, and the parent's result releases the subagent.
	for _, p := range subs {
		sa := p.sa
		r, err := in.Ingester.ImportFile(ctx, sa.Path, p.agg, in.subagentLines(p), step(sa.Path))
		out = append(out, r)
		if err != nil {
			return out, err
		}
	}
	if t.Path != "" {
		agg, err := SessionAggregate(sid, "")
		if err != nil {
			return out, fmt.Errorf("%s: %w", t.Path, err)
		}
		r, err := in.ImportFile(ctx, t.Path, agg, step(t.Path))
		out = append([]ingest.FileResult{r}, out...) // the main transcript's result first
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// subagentPlan is where a subagent's transcript goes: its session
// (agent-<agentID>) and the parent session it is filed under.
type subagentPlan struct {
	sa      Subagent
	agentID string
	parent  string
	agg     events.Aggregate
}

// subagentID returns the agent id of the subagent transcript sa: the
// one its file name (agent-<id>.jsonl) or its lines gave (Discover),
// else, for a file named otherwise, its name. A file named
// "agent-.jsonl" whose lines name no agentId has none: an error naming
// the file.
func subagentID(sa Subagent) (string, error) {
	if sa.AgentID != "" {
		return sa.AgentID, nil
	}
	base := strings.TrimSuffix(filepath.Base(sa.Path), ".jsonl")
	if strings.HasPrefix(base, events.SubagentPrefix) {
		return "", fmt.Errorf("%s: subagent transcript: no agent id: the file is named %s.jsonl, with nothing after %q, and no line of it names an agentId", sa.Path, base, events.SubagentPrefix)
	}
	// No agent id in its name or lines: the file itself names it.
	return ingest.SanitizeID(base), nil
}

// planSubagent settles the session and the parent of the subagent
// transcript sa, found under the session dirSession (its directory's,
// or the one its parent transcript's lines name). The parent is the
// session its own lines name (sessionIDOf: the first sessionId that can
// name a session of its own), else dirSession; the agent id is
// subagentID's. Refused, with an error naming the file: no agent id, no
// parent that can name a session (events.ValidOwnSessionID: a directory
// named "agent-<id>" or holding a space, lines naming none), a subagent
// session id too long, or a parent session of another agent's
// (session.CheckParent).
func (in *Ingester) planSubagent(ctx context.Context, sa Subagent, dirSession string) (subagentPlan, error) {
	agentID, err := subagentID(sa)
	if err != nil {
		return subagentPlan{}, err
	}
	if named := in.agentIDOf(sa.Path); named != "" && named != agentID {
		// Claude Code names a subagent's transcript after its agentId:
		// a file named after another agent than its lines name is not
		// one of its, and either choice would split one agent in two
		// sessions (the hooks name the lines' agent).
		return subagentPlan{}, fmt.Errorf("%s: subagent transcript: its name gives agent id %q, its lines agentId %q: Claude Code names a subagent's transcript agent-<agentId>.jsonl; not imported", sa.Path, agentID, named)
	}
	parent := in.sessionIDOf(sa.Path)
	if parent == "" {
		parent = dirSession
		if err := events.ValidOwnSessionID(parent); err != nil {
			return subagentPlan{}, fmt.Errorf("%s: subagent transcript: no parent session: no line of it names a sessionId that can name one, and the session of the directory it lies under cannot: %w; a subagent's transcript lies in its parent's subagents directory (<session>/subagents/agent-<id>.jsonl)", sa.Path, err)
		}
	}
	agg, err := SessionAggregate(parent, agentID)
	if err != nil {
		return subagentPlan{}, fmt.Errorf("%s: subagent transcript: agent id: %w", sa.Path, err)
	}
	pagg, err := SessionAggregate(parent, "")
	if err != nil {
		return subagentPlan{}, fmt.Errorf("%s: subagent transcript: parent: %w", sa.Path, err)
	}
	st, err := in.Sessions().State(ctx, pagg)
	if err != nil {
		return subagentPlan{}, fmt.Errorf("%s: subagent transcript: read its parent session %s: %w", sa.Path, parent, err)
	}
	if err := session.CheckParent(st, Agent, agg.ID); err != nil {
		return subagentPlan{}, fmt.Errorf("%s: subagent transcript: %w", sa.Path, err)
	}
	return subagentPlan{sa: sa, agentID: agentID, parent: parent, agg: agg}, nil
}

// subagentLines is Lines for the subagent transcript p: a line that
// names no agentId or no sessionId (or one that can name no session)
// is read as naming p's, so that the subagent's session starts with its
// parent, as its own hooks name it, whatever line comes first.
func (in *Ingester) subagentLines(p subagentPlan) ingest.LineSource {
	src := in.Lines()
	parse := src.Parse
	src.Parse = func(path string, n int, b []byte) (events.Observation, error) {
		o, err := parse(path, n, b)
		if o.Meta.AgentID == "" {
			o.Meta.AgentID = p.agentID
		}
		if o.Meta.SessionID == "" {
			o.Meta.SessionID = p.parent
		}
		return o, err
	}
	return src
}

// WatchConfig configures Watch: ingest.WatchConfig, whose Accept and
// Import may be left nil here.
type WatchConfig = ingest.WatchConfig

// Watch follows the Claude Code transcripts under cfg.Roots (such as
// ~/.claude/projects) as they are written, with the engine's watcher
// (ingest.Ingester.Watch; its errors). cfg.Accept and cfg.Import, when
// nil, are Claude Code's: LooksLikeTranscript, and ImportTranscript of
// the file's transcript (a subagent's file with its parent's session, a
// file imported before into the session it went to).
func (in *Ingester) Watch(ctx context.Context, cfg WatchConfig) error {
	if cfg.Accept == nil {
		cfg.Accept = func(path string) (bool, string) {
			ok, why := LooksLikeTranscript(path)
			if ok {
				return true, ""
			}
			if _, err := ingest.FirstLine(path); err != nil {
				if _, open := errors.AsType[*fs.PathError](err); open {
					// Unread, it may be one all the same.
					return false, "cannot be read: " + why
				}
			}
			return false, "not a Claude Code transcript: " + why
		}
	}
	if cfg.Import == nil {
		cfg.Import = in.importWatched
	}
	if cfg.Group == nil {
		cfg.Group = watchGroup
	}
	return in.Ingester.Watch(ctx, cfg)
}

// watchGroup is Watch's ingest.WatchConfig.Group: a transcript and its
// subagents' files (<dir>/<session>.jsonl and
// <dir>/<session>/subagents/*.jsonl) have one key, <dir>/<session>, so
// Watch imports them one after another.
func watchGroup(path string) string {
	if isSubagentFile(path) {
		return filepath.Dir(filepath.Dir(path))
	}
	return strings.TrimSuffix(path, ".jsonl")
}

// importWatched imports the transcript at path that Watch saw change;
// session is where its first import went ("" before one appended).
func (in *Ingester) importWatched(ctx context.Context, path, session string) ([]ingest.FileResult, error) {
	var t Transcript
	switch {
	case isSubagentFile(path):
		ts, err := Discover(path)
		if err != nil || len(ts) != 1 {
			return nil, fmt.Errorf("%s: no session for this subagent transcript: %v", path, err)
		}
		t = ts[0]
	case session != "":
		t = Transcript{Path: path, SessionID: session, Pinned: true}
	default:
		t = Transcript{Path: path, SessionID: sessionID(path)}
	}
	return in.ImportTranscript(ctx, t, nil)
}

// LooksLikeTranscript reports whether the file at path reads as a Claude
// Code transcript: its first line that is not blank is a JSON object with
// a "type" (one torn, still being written, or damaged, may show it later:
// the import reports a damaged line with its position), and not a Codex
// CLI rollout's envelope (a "payload" beside a type of Codex's:
// session_meta, response_item, event_msg, turn_context, compacted; Codex
// CLI 0.40 and later). A file whose first line is not a JSON object at
// all (text, binary data) is not one. An empty file, or one of blank
// lines only, qualifies (a session just created); a complete first line
// that does not parse and shows no "type" before it stops (the "{" of a
// pretty-printed JSON file, say) does not. When it does not, the reason
// says why, for a message that names the file.
func LooksLikeTranscript(path string) (bool, string) {
	if _, err := ingest.FirstLine(path); err != nil {
		return false, err.Error()
	}
	r, err := ingest.ReadFirstRecord(path)
	if err != nil {
		return false, err.Error()
	}
	if why := r.NotObject(); why != "" {
		return false, why
	}
	if r.Line == 0 {
		return true, ""
	}
	if !r.Has("type") {
		switch {
		case r.Whole:
			return false, "its first line has no \"type\" field"
		case !r.Torn:
			return false, "its first line is not a JSON object (it does not parse, and shows no \"type\" before it stops; " + r.Begins() + ")"
		}
		return true, ""
	}
	if !r.Whole {
		return true, ""
	}
	var v struct {
		Type    *string         `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(r.Bytes, &v); err != nil || v.Type == nil {
		return true, ""
	}
	if v.Payload != nil && codexEnvelopeTypes[*v.Type] {
		return false, "it is a Codex CLI rollout (its first line is a " + *v.Type + " envelope): import it with `logbook import codex`"
	}
	return true, ""
}

// codexEnvelopeTypes are the "type" values of a Codex CLI rollout line's
// envelope ({"timestamp", "type", "payload"}), none of which a Claude
// Code transcript line has.
var codexEnvelopeTypes = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true}
