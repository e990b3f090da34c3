package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/internal/words"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Ingester turns one agent's observations into session decisions on the
// log: each observation and the decisions it causes are appended to the
// session's aggregate as one atomic batch, so the log never holds one
// without the other. What the agent wrote is read through a LineSource
// (a transcript's lines) or handed in whole (ObserveEntry: a spooled
// hook). It is safe for concurrent use.
type Ingester struct {
	reg   *events.Registry
	x     *events.Executor[session.State]
	clock events.Clock
	skip  bool
	asNew bool
	// command is the import command DivergedError names (Config.Command).
	command string
	index   *SkipIndex
	// private lists the directories no transcript is read from
	// (Config.Private).
	private []string
	// parsing holds a token per ImportFile call reading and parsing
	// lines now (Config.Parsers); nil: no bound.
	parsing chan struct{}
	// log is Config.Log when it can be told that a decision is on its
	// way (Holder) and Config.Parsers is set; nil otherwise.
	log Holder
	// fresh holds the sessions KnowNew found new, each taken by the
	// first file of it imported; guarded by fmu.
	fmu   sync.Mutex
	fresh map[events.Aggregate]bool
}

// NewFinder is a log that tells which of many aggregates it holds
// nothing of in few requests (natslog.Log.NewAggregates).
type NewFinder interface {
	NewAggregates(ctx context.Context, aggs []events.Aggregate) ([]events.Aggregate, error)
}

// KnowNew asks the log (a NewFinder) which of aggs, the sessions an
// import is about to import into, it holds nothing of, before the
// import's first append: the first file imported into such a session
// then does not read it (nor wait for a read behind the import's own
// batches being stored). A session found new may have been written
// since (by another process): the file's first append, made with
// optimistic concurrency on an empty session, then conflicts and its
// run is decided again on the log's state, as when a session read
// before is written meanwhile. It does nothing when the Ingester's log
// is no NewFinder, and learns nothing when the log cannot answer.
func (in *Ingester) KnowNew(ctx context.Context, aggs []events.Aggregate) {
	f, ok := in.x.Log.(NewFinder)
	if !ok || len(aggs) == 0 {
		return
	}
	news, err := f.NewAggregates(ctx, aggs)
	if err != nil {
		return
	}
	in.fmu.Lock()
	defer in.fmu.Unlock()
	if in.fresh == nil {
		in.fresh = make(map[events.Aggregate]bool, len(news))
	}
	for _, agg := range news {
		in.fresh[agg] = true
	}
}

// existsUnlessNew is the events.Exists a file's import reads its
// session by (events.Executor.StateUnlessNew): false for a session
// KnowNew found new, taken once (another file of it then reads what the
// first one left), true for any other, which is then read from the log.
func (in *Ingester) existsUnlessNew(_ context.Context, agg events.Aggregate) (bool, error) {
	in.fmu.Lock()
	defer in.fmu.Unlock()
	fresh := in.fresh[agg]
	delete(in.fresh, agg)
	return !fresh, nil
}

// Holder is a log whose committer can be told that its caller is
// preparing a decision it will append soon, and waits for it rather than
// send a batch that is not full (natslog.Log.Hold): release ends the
// hold, and must be called before the caller waits for any append.
type Holder interface {
	Hold() (release func())
}

// Config configures an Ingester. Log, Command and Actor are required.
type Config struct {
	Log   events.Log
	Reg   *events.Registry // nil: events.NewRegistry()
	IDs   events.IDSource  // nil: ulid.Make
	Clock events.Clock     // nil: time.Now; the time of lines without a timestamp in a new session, and the bound of every observation's time (events.BoundTime)
	Host  string           // stamped on decided events
	// SkipInvalid records a transcript line that does not parse as an
	// observation with no signals (kind "invalid", the error in its
	// problems, the text redacted and capped) and goes on, instead of
	// stopping the file there.
	SkipInvalid bool
	// AsNew imports a transcript that no longer holds what was imported
	// from it (a *DivergedError otherwise) as a new history: from its
	// first line into the session named in its divergence record,
	// "<session>-r<n>", whose start links to the old session.
	AsNew bool
	// Command is the command that imports this Ingester's files, named
	// in a *DivergedError's advice with its --as-new flag, such as
	// "logbook import claude".
	Command string
	// Actor is stamped on decided events: the agent's name, such as
	// "claude-code".
	Actor string
	// Skip, if set, lets ImportFile skip a file that has not changed since
	// an import of it left nothing behind, without loading its session
	// from the log, and remembers files so imported (see SkipIndex).
	Skip *SkipIndex
	// Parsers, if > 0, bounds the ImportFile calls that read and parse
	// lines at once; a call whose run is being decided and appended
	// does not count, so callers may run many more files at once than
	// there are processors: their runs reach the log together, where
	// group commit merges them into fewer atomic batches, while others
	// parse. When Log is a Holder, each call holds it from its start
	// (while it reads the session and checks the file, then waits for its
	// slot and reads and parses) until it gives its slot back, just before
	// its run is decided and appended, and again for each later run, so
	// the log's committer waits for the runs being prepared and sends the
	// runs of many files as one full atomic batch instead of one batch per
	// file; the hold ends before anything else the call appends (a
	// divergence record). 0: no bound, and no hold.
	Parsers int
	// Private lists directories (the data dir) whose files are never
	// read as transcripts: ImportFile refuses a path that leads into one
	// (CheckPrivate) before it reads or appends anything, then reads the
	// file through one descriptor checked where it leads (CheckOpened:
	// a hard link to a file there, or a path swapped for a link into one
	// since, is refused too); Watch reports such a path once and never
	// imports it.
	Private []string
}

// New returns an Ingester appending to cfg.Log. Errors: a Config without
// a Log, a Command or an Actor.
func New(cfg Config) (*Ingester, error) {
	switch {
	case cfg.Log == nil:
		return nil, errors.New("ingester: no log")
	case cfg.Command == "" || cfg.Actor == "":
		return nil, errors.New("ingester: no import command or actor")
	}
	if cfg.Reg == nil {
		cfg.Reg = events.NewRegistry()
	}
	if cfg.IDs == nil {
		cfg.IDs = ulid.Make
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	var (
		parsing chan struct{}
		holder  Holder
	)
	if cfg.Parsers > 0 {
		parsing = make(chan struct{}, cfg.Parsers)
		holder, _ = cfg.Log.(Holder)
	}
	return &Ingester{
		parsing: parsing,
		log:     holder,
		reg:     cfg.Reg,
		clock:   cfg.Clock,
		skip:    cfg.SkipInvalid,
		asNew:   cfg.AsNew,
		command: cfg.Command,
		index:   cfg.Skip,
		private: cfg.Private,
		x: &events.Executor[session.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: session.Init, Evolve: session.Evolve,
			EvolveOwned: (*session.State).Evolve,
			IDs:         cfg.IDs, Host: cfg.Host, Actor: cfg.Actor,
		},
	}, nil
}

// Private returns the directories no transcript is read from
// (Config.Private); the caller must not change the slice.
func (in *Ingester) Private() []string { return in.private }

// Sessions returns the executor the ingester decides sessions with:
// another decider of the same process (the gate) shares its cache, so
// the two do not conflict with each other's appends.
func (in *Ingester) Sessions() *events.Executor[session.State] { return in.x }

// Observe appends the observation p, with event id id and time at, and
// the decisions it causes, to agg as one batch. An at past the clock's
// bound (events.BoundTime), or past the observation's receipt
// (events.Observation.Received) when it has one, is recorded at the
// bound. An observation the session has already seen appends nothing
// (Appended is zero). Errors: the reducer's refusal (events.ErrRejected),
// validation errors, the log's.
func (in *Ingester) Observe(ctx context.Context, agg events.Aggregate, id ulid.ULID, at time.Time, p events.Payload) (events.Appended, session.State, error) {
	return in.ObserveThen(ctx, agg, id, at, p, nil)
}

// Then decides more on a session in the batch of an observation, after
// the observation's own decisions: st is the session's state with them
// folded in (or as it stands, when the observation was seen before and
// appends nothing). It may run more than once (once per attempt of the
// batch) and must decide from st alone. Its events are appended after
// the observation's; its error leaves them out and is returned once the
// observation's batch is appended.
type Then func(st session.State) (events.Decision, error)

// CheckObserve returns the reducer's refusal (an error wrapping
// events.ErrRejected) of observation p on agg as the session stands in
// the log now: what ObserveThen, with nothing appended to agg in
// between, would meet before appending. It appends nothing; nil when
// the reducer takes p, or has seen it. Other errors are the log's: the
// session could not be read, and nothing is known of the reducer's
// verdict.
func (in *Ingester) CheckObserve(ctx context.Context, agg events.Aggregate, p events.Payload) error {
	st, err := in.x.State(ctx, agg)
	if err != nil {
		return fmt.Errorf("session %s: %w", agg.ID, err)
	}
	obs := in.reg.New(p)
	obs.Agg, obs.At = agg, in.clock().UTC().Truncate(time.Microsecond)
	_, err = session.Decide(st, session.Observe{Obs: obs})
	return err
}

// ObserveThen is Observe with then deciding more in the observation's
// batch (see Then): one append for both. It returns the session's state
// after the batch. Errors: Observe's, then's.
func (in *Ingester) ObserveThen(ctx context.Context, agg events.Aggregate, id ulid.ULID, at time.Time, p events.Payload, then Then) (events.Appended, session.State, error) {
	at, _ = events.BoundTime(at, in.clock())
	o, _ := events.Observed(p)
	if o != nil && !o.Received.IsZero() {
		// Never dated past its own receipt, taken from an earlier
		// reading of the clock than the one above.
		at, _ = events.BoundTime(at, o.Received)
	}
	obs := in.reg.New(p)
	obs.ID, obs.Agg, obs.At = id, agg, at.UTC().Truncate(time.Microsecond)
	var (
		thenErr error
		fresh   bool // the batch holds the observation
	)
	ap, st, err := in.x.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		thenErr, fresh = nil, false
		var out events.Decision
		if !s.Seen(o) {
			obs := s.Account(obs) // its usage's evidence, from s
			decs, err := session.Decide(s, session.Observe{Obs: obs})
			if err != nil {
				return nil, err
			}
			out, fresh = append([]events.Envelope{obs}, decs...), true
		}
		if then == nil {
			return out, nil
		}
		after := s
		for i, e := range out {
			e.Ver = s.Ver + uint64(i) + 1
			after = session.Evolve(after, e)
		}
		more, err := then(after)
		if err != nil {
			thenErr = err
			return out, nil
		}
		return append(out, more...), nil
	})
	if err == nil {
		err = thenErr
	}
	if err != nil || !fresh || ap.Last == 0 {
		return ap, st, err
	}
	if err := in.release(ctx, agg, obs, o); err != nil {
		return ap, st, err
	}
	return ap, st, in.finished(ctx, agg, st, obs, o)
}

// ObserveEntry appends o, the observation spooled entry e holds (a hook
// payload the agent sent as it ran), to agg as ObserveThen does, with
// wrap making it the payload stored on the log: its event id is e's ULID,
// so redelivering an entry appends nothing twice; e's process and sender
// are copied onto o; o is dated by its receipt here (e.Time, bounded like its
// decisions' time, to the microsecond) and marked Live. Errors: what
// names e's id as "<what> <id>: entry id: …" when it is not a ULID, then
// ObserveThen's.
func (in *Ingester) ObserveEntry(ctx context.Context, what string, e Entry, agg events.Aggregate, o events.Observation, wrap func(events.Observation) events.Payload, then Then) (events.Appended, session.State, error) {
	if e.Process != nil {
		p := *e.Process
		o.Process = &p
	}
	if e.Sender != nil {
		s := *e.Sender
		o.Sender = &s
	}
	recv, _ := events.BoundTime(e.Time, in.clock())
	o.Received, o.Live = recv.UTC().Truncate(time.Microsecond), true
	id, err := ulid.ParseStrict(e.ID)
	if err != nil {
		return events.Appended{}, session.State{}, fmt.Errorf("%s %s: entry id: %w", what, e.ID, err)
	}
	return in.ObserveThen(ctx, agg, id, e.Time, wrap(o), then)
}

// finished tells the parent of a subagent whose own report o ended its
// turn (its transcript's last message) that the subagent's work is over:
// the parent's entry for it (agent-<id> or bg-<id>) closes, as a lost
// SubagentStop would have closed it.
func (in *Ingester) finished(ctx context.Context, agg events.Aggregate, st session.State, obs events.Envelope, o *events.Observation) error {
	if st.Parent == "" || st.AgentID == "" || st.TurnOpen || !slices.ContainsFunc(o.Signals, func(s events.Sig) bool { return s.Kind == events.SigTurnEnd }) {
		return nil
	}
	parent, err := hookspool.SessionAggregate(st.Parent, "")
	if err != nil || parent == agg {
		return nil
	}
	kind := "hook"
	if o.Line > 0 {
		kind = "transcript"
	}
	cause := events.Cause{Kind: kind, Event: o.Kind, Ref: obs.ID.String(), Detail: "subagent " + agg.ID}
	for _, id := range []string{"agent-" + st.AgentID, "bg-" + st.AgentID} {
		_, _, err := in.x.Execute(ctx, parent, func(s session.State) (events.Decision, error) {
			return session.Decide(s, session.Detach{EntryID: id, Outcome: events.OutcomeOK, At: obs.At, Cause: cause})
		})
		if err != nil {
			return fmt.Errorf("subagent %s done, parent %s: %w", agg.ID, parent.ID, err)
		}
	}
	return nil
}

// release tells each subagent whose work the observation o of session agg
// reports over (its result reached the parent, its SubagentStop, its task
// notification) that it is done (session.Release), so the subagent's own
// row agrees with its parent's entries. A subagent without a session of
// its own is left alone. It runs after the parent's batch is appended; an
// error here leaves that batch in place.
func (in *Ingester) release(ctx context.Context, agg events.Aggregate, obs events.Envelope, o *events.Observation) error {
	kind := "hook"
	if o.Line > 0 {
		kind = "transcript"
	}
	for _, sig := range o.Signals {
		id := ""
		switch sig.Kind {
		case events.SigToolResult:
			if sig.Status != events.OutcomeBackground {
				id = sig.Task
			}
		case events.SigSubagentStop:
			id = sig.ID
		case events.SigBackgroundDone:
			id = sig.Task
		}
		if id == "" {
			continue
		}
		child, err := hookspool.SessionAggregate(agg.ID, id)
		if err != nil || child == agg {
			continue
		}
		cause := events.Cause{Kind: kind, Event: o.Kind, Ref: obs.ID.String(), Detail: "parent " + agg.ID}
		_, _, err = in.x.Execute(ctx, child, func(s session.State) (events.Decision, error) {
			return session.Decide(s, session.Release{At: obs.At, Cause: cause})
		})
		if err != nil {
			return fmt.Errorf("release subagent %s of %s: %w", id, agg.ID, err)
		}
	}
	return nil
}

// FileResult reports one transcript file's import.
type FileResult struct {
	Path     string
	Session  string // aggregate id
	Appended int    // lines appended now
	Skipped  int    // lines already in the log
	Lines    int    // the session's line cursor after the import
	Torn     bool   // the last line is incomplete and waits for the next import
	Warnings []string
	// Changed is how a file had changed under Logbook, for one that
	// stopped the import (DivergedError) or that this import, AsNew,
	// starts a new history of (Session): "truncated" or "rewritten"
	// (DivergedError.Change); "" otherwise. Kept is how many lines
	// session From, the file's history until then, imported from it
	// before, which the log keeps. None of a file that stopped the
	// import is counted as appended or as already in the log.
	Changed string
	Kept    int
	From    string

	// resent is the lines (first, last) of a run whose append failed and
	// is being appended again line by line: one of them found in the log
	// then was put there by that append (its answer lost, or the disk
	// full part way through), by this import.
	resent [2]int
}

// LineSource is how ImportFile reads one agent's transcript format:
// Parse parses line n (1-based) of the file at path, b (with or without
// its newline), into an observation (with an error, an observation of
// Kind "invalid", which --skip-invalid records, or whose Key, Parser, Raw
// and Meta.Agent an oversized line's record keeps); Wrap makes the
// observation the payload stored on the log (the agent's line event
// type). Parser is the parser name and version stamped on blank lines.
// Parse is called in line order, once per line read, from one goroutine.
type LineSource struct {
	Parse  func(path string, n int, b []byte) (events.Observation, error)
	Wrap   func(events.Observation) events.Payload
	Parser string
	// Same, if set, reports whether a and b, two lines (without their
	// newlines) whose bytes differ and whose identity (session.LineID)
	// is one, say the same: the agent wrote one line twice, placed
	// apart (Claude Code's fork of a session stamps its copies, and
	// may write a line both with and without the stamp). Such a line is
	// a copy; one that says something else is a conflict
	// (ErrUUIDConflict). nil: only lines of equal bytes are copies.
	Same func(a, b []byte) bool
}

// Indexed returns the session aggregate an earlier import of the file at
// path was asked for, as the Ingester's SkipIndex (Config.Skip)
// remembers it; false without an index or an entry.
func (in *Ingester) Indexed(path string) (string, bool) { return in.index.Known(path) }

// ImportFile imports the transcript at path, read by src, into agg from
// the line after the session's cursor. It decides runs of lines in memory
// (each line's observation, then the decisions it causes, in order) and
// appends each run as one atomic batch of at most events.MaxBatch events,
// with optimistic concurrency on agg at the run's start; on a conflict
// the run is decided again on the state the log has then (appendRun). A
// crash between batches loses nothing and doubles nothing: the session's
// line cursor moves with the batch that holds the line. It stops at a
// torn last line (reported, not an error) and at the first line that does
// not parse, returning a *LineError naming path and line: the lines
// before it are imported, nothing of it is appended. progress, if not
// nil, is called for each line after the batch holding it is appended.
//
// Each line's observation keeps its fingerprint (events.Fingerprint), and
// the session keeps the last one per file. Before reading on, ImportFile
// checks that the file still holds that line (CheckFingerprint); when it
// does not (the file was truncated or rewritten) it records
// session.transcript_diverged once and returns a *DivergedError, unless
// the rewritten form was already imported as a new history (it goes on
// there, with a warning) or the Ingester imports AsNew (it starts it).
// The lines already imported are never touched. A file that holds a
// beginning of what was imported of its name, contradicting no line of
// it, and every line imported from its own path (a copy of the
// transcript in another folder, being written or even empty; the
// transcript behind such a copy) changed nothing: nothing is appended,
// no error is returned, and its lines are read on once it holds the
// last line imported.
//
// A path that leads into a private dir (Config.Private) is refused with
// an error wrapping ErrPrivate before anything is read. With a SkipIndex
// (Config.Skip), a file unchanged since an import left nothing behind is
// skipped without loading its session.
func (in *Ingester) ImportFile(ctx context.Context, path string, agg events.Aggregate, src LineSource, progress func(line int)) (FileResult, error) {
	Mark(ctx, MarkFileStarted, path)
	defer Mark(ctx, MarkFileDone, path)
	if err := CheckPrivate(path, in.private); err != nil {
		return FileResult{Path: path, Session: agg.ID}, err
	}
	if in.index == nil {
		res, _, err := in.importFileAt(ctx, path, agg, src, progress)
		return asGiven(path, res, err)
	}
	if e, ok := in.index.unchanged(path, agg, in.private); ok {
		return FileResult{Path: path, Session: e.Session, Skipped: e.Fingerprint.Line, Lines: e.Fingerprint.Line}, nil
	}
	res, fp, err := in.importFileAt(ctx, path, agg, src, progress)
	if _, diverged := errors.AsType[*DivergedError](err); diverged {
		// Changed under Logbook: its entry (the file as imported, and
		// the session it went to) stays, so that every later import
		// finds the same cut, one emptied since included, rather than
		// a file new to the log. The file no longer matches it, so it
		// is never skipped.
	} else if err != nil || res.Torn || len(res.Warnings) > 0 || res.Lines != fp.Line {
		in.index.forget(path)
	} else {
		in.index.record(path, agg, res.Session, fp)
	}
	return asGiven(path, res, err)
}

// asGiven names path as the caller gave it in res's warnings and in
// err, where importFileAt named the file by its real path (a symlinked
// transcript's cursor is kept under its target's path).
func asGiven(path string, res FileResult, err error) (FileResult, error) {
	real := realPath(path)
	if real == path {
		return res, err
	}
	for i, w := range res.Warnings {
		res.Warnings[i] = strings.ReplaceAll(w, real, path)
	}
	if err != nil {
		err = &givenPathError{given: path, real: real, err: err}
	}
	return res, err
}

// givenPathError is err with the file's real path in its text replaced
// by the path as given; it unwraps to err.
type givenPathError struct {
	given, real string
	err         error
}

func (e *givenPathError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.real, e.given)
}

func (e *givenPathError) Unwrap() error { return e.err }

// importFileAt is ImportFile without the index; it also returns the
// fingerprint of the last line of the file now in the log (zero if none).
func (in *Ingester) importFileAt(ctx context.Context, path string, agg events.Aggregate, src LineSource, progress func(line int)) (FileResult, events.Fingerprint, error) {
	res := FileResult{Path: path, Session: agg.ID}
	var lastFP events.Fingerprint
	// The file's first run is on its way from here: with a parse bound
	// (Config.Parsers) the log's committer waits for it (Holder) while
	// the session is read and the file opened and checked, not only
	// while its lines are parsed, so that the runs of files started
	// together go out as one batch rather than the first file's alone.
	// This hold ends before anything below appends (a divergence
	// record) and passes to the parse hold (hold, below).
	var early func()
	if in.parsing != nil && in.log != nil {
		early = in.log.Hold()
	}
	letEarly := func() {
		if early != nil {
			early()
			early = nil
		}
	}
	defer letEarly()
	// A session KnowNew found new (the common import) is not read.
	s, err := in.x.StateUnlessNew(ctx, agg, in.existsUnlessNew)
	if err != nil {
		return res, lastFP, err
	}
	given := path // as ImportFile marks it (Mark)
	Mark(ctx, MarkFileSession, given)
	// The per-file cursor is kept under the file's real path, so that a
	// symbolic link to a transcript imported before finds its lines in
	// the log; a cursor the log already keeps under the path as given
	// (an import before this rule) goes on there.
	if real := realPath(path); real != path && s.Cursor(path) == 0 {
		path = real
	}
	// The file is opened once and every read of this import goes through
	// that one descriptor, checked where it leads (CheckOpened): a path
	// swapped for a link into the data dir after ImportFile checked
	// it, or a hard link to a file there, is never read.
	f, _, err := OpenTranscript(path, in.private)
	if err != nil {
		if errors.Is(err, ErrPrivate) {
			return res, lastFP, err
		}
		return res, lastFP, fmt.Errorf("read transcript: %w", err)
	}
	defer f.Close()
	rewrittenFrom := ""
	for hops := 0; ; hops++ {
		fp, ok := s.Fingerprint(path)
		if !ok || s.Cursor(path) == 0 {
			break
		}
		if hops >= 16 {
			return res, lastFP, fmt.Errorf("%s: changed under Logbook more than %d times (the newest history is session %s); stopped", path, hops, agg.ID)
		}
		found, size, same, err := checkFingerprintOf(f, path, fp)
		if err != nil {
			return res, lastFP, err
		}
		if same {
			break
		}
		d, err := in.firstDifference(ctx, agg, f, path)
		if err != nil {
			return res, lastFP, err
		}
		if d.copied {
			// A file of the transcript's name that holds no line other
			// than what was imported, and every line imported from its
			// own path: a copy of the transcript (being written, even
			// empty, in another folder) or the transcript behind a copy
			// that went on. It changed nothing: its lines are in the
			// log, and the import reads on once it holds the last one.
			res.Lines, res.Skipped = d.lines, d.lines
			return res, events.Fingerprint{}, nil
		}
		if d.found != nil {
			found = *d.found
		}
		letEarly() // diverge appends
		next, err := in.diverge(ctx, agg, path, fp, found, size)
		if err != nil {
			return res, lastFP, err
		}
		// Read from the log, not the cache: another process may have
		// started the new history (import --as-new) since.
		recs, _, err := in.x.Log.Load(ctx, next)
		if err != nil {
			return res, lastFP, err
		}
		ns := session.Fold(session.Init(next), recs)
		if ns.Exists() && ns.RewrittenFrom != agg.ID {
			// The new history's id is agg's with "-r<n>" after it: a
			// session of another transcript can hold it already (an
			// agent whose session ids are names), and is not mixed with.
			return res, lastFP, fmt.Errorf("%s: %w: the transcript changed under Logbook, and its rewritten form would go on in session %s, which holds another history (not a rewrite of session %s); not imported", path, events.ErrRejected, next.ID, agg.ID)
		}
		if !in.asNew && ns.Cursor(path) == 0 {
			// None of the file as it is now is imported, nor counted as
			// in the log: what agg imported before it changed is said
			// as such (Changed, Kept).
			de := &DivergedError{Path: path, Session: agg.ID, NewSession: next.ID, Imported: fp, Found: found, Size: size, Command: in.command}
			res.Changed, res.Kept, res.From = de.Change(), fp.Line, agg.ID
			return res, lastFP, de
		}
		if in.asNew && ns.Cursor(path) == 0 {
			// The new history starts here, with what the file holds now.
			res.Changed, res.Kept, res.From = change(found), fp.Line, agg.ID
		}
		if !in.asNew {
			line, what := divergence(fp, found, size)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: changed under Logbook: %s; session %s keeps the %s it imported, and its rewritten form goes on in session %s", path, line, what, agg.ID, words.Plural(fp.Line, "line"), next.ID))
		}
		if !ns.Exists() {
			rewrittenFrom = agg.ID
		}
		agg, s = next, ns
		res.Session = agg.ID
	}
	res.Lines = s.Cursor(path)
	res.Skipped = s.Cursor(path)
	lastFP, _ = s.Fingerprint(path)
	read := liveReadOf(ctx)
	live := read == readFollowed || read == readAppeared
	// A file a watcher reads for the first time was last written at its
	// modification time, by this host's clock: its lines are dated on
	// that clock, each moved by the agent clock's offset that time tells
	// (fileClock), so history read at serve's start is neither older
	// nor newer than the agent's writing of it.
	var written time.Time
	var shift time.Duration
	if read == readFound {
		written, shift = fileClock(f, in.clock())
	}
	// A line with no time of its own takes the time of the line before
	// it: on a resumed import, when the agent was last heard from
	// (ObservedAt, on the agent's clock when the session learned its
	// offset), never the time of the session's last event, which may be
	// the server's (a stale mark, a person's verdict) and would date
	// history now.
	last := s.ObservedAt
	if !last.IsZero() && !written.IsZero() {
		// On the agent's clock, as the lines' own timestamps, before
		// each is moved by shift.
		last = last.Add(-shift)
	} else if !last.IsZero() && !s.ClockOffsetAt.IsZero() {
		// ObservedAt is on the server's clock, and a history line is
		// dated on the agent's (its own timestamp), to which the session
		// adds the offset it learned from lines read live: the line
		// before is put back on the agent's clock, or a line with no
		// time of its own would be moved by the offset twice.
		last = last.Add(-time.Duration(s.ClockOffsetMS) * time.Millisecond)
	}
	if last.IsZero() {
		last = s.UpdatedAt
	}
	if last.IsZero() {
		// Lines before the first timestamped one take its time, so an
		// import decides the same events on every host.
		last = firstTime(f, path)
	}
	future := false // a line far past its reading was warned of
	uuids := map[string]bool{}
	var unknown []int // oversized lines whose uuid their head does not hold
	startCursor := s.Cursor(path)
	if startCursor == 0 && !s.Exists() {
		// A file of blank lines only starts no session: nothing is
		// appended until a line that is not blank comes (its blank lines
		// then keep their numbers).
		if blank, err := blankOnly(readLinesOf(ctx, f, path, Cursor{}, 0, MaxLineBytes, 0)); err != nil {
			return res, lastFP, err
		} else if blank {
			return res, lastFP, nil
		}
	}
	var run []runLine
	// Where the session took in each line identity it holds, read from
	// the log when a line's identity is found held (appendRun).
	refs := &lineRefs{}
	// A parse slot (Config.Parsers), and with it a hold on the log
	// (Holder), is held while lines are read and parsed (the hold also
	// while waiting for the slot), never while a run is decided and
	// appended: nothing that waits for a slot then holds what an append
	// needs, and the log's committer never waits for a caller that waits
	// for it.
	held := false
	var unhold func()
	hold := func() error {
		if in.parsing == nil || held {
			return nil
		}
		// The hold is taken before the slot: a call waiting for a
		// slot has its run on the way too. The first one is the hold
		// taken when the call began, if it still stands.
		if early != nil {
			unhold, early = early, nil
		} else if in.log != nil {
			unhold = in.log.Hold()
		}
		select {
		case in.parsing <- struct{}{}:
			held = true
			return nil
		case <-ctx.Done():
			if unhold != nil {
				unhold()
				unhold = nil
			}
			return ctx.Err()
		}
	}
	let := func() {
		if held {
			if unhold != nil {
				unhold()
				unhold = nil
			}
			<-in.parsing
			held = false
		}
	}
	defer let()
	// flush appends the lines in run; stop is the error that ended the
	// run (a line that does not parse), returned once the lines before it
	// are in the log, and the session held at that line (stopped).
	parsed := false // the first run was marked parsed (Mark)
	flush := func(stop error) error {
		let()
		if !parsed {
			parsed = true
			Mark(ctx, MarkFileParsed, given)
		}
		if err := in.appendRun(ctx, agg, path, src, run, refs, &res, progress); err != nil {
			return in.stopped(ctx, agg, path, src, err)
		}
		if len(run) > 0 {
			o, _ := events.Observed(run[len(run)-1].obs.Data)
			lastFP = *o.Fingerprint
		}
		run = run[:0]
		return in.stopped(ctx, agg, path, src, stop)
	}
	// Read on from the end of the last line imported when the session
	// remembers where it ends (the fingerprint check above found it
	// there), else from the start, skipping the lines imported.
	lines := readLinesOf(ctx, f, path, Cursor{}, startCursor, MaxLineBytes, 0)
	if fp, ok := s.Fingerprint(path); ok && fp.Line == startCursor && fp.End > 0 {
		lines = readLinesOf(ctx, f, path, Cursor{Line: fp.Line, Offset: fp.End}, fp.Line, MaxLineBytes, 0)
	}
	if err := hold(); err != nil {
		return res, lastFP, err
	}
	for l, err := range lines {
		var long *LineError // a line too long to hold, read through
		if err != nil {
			if le, ok := errors.AsType[*LineError](err); ok && errors.Is(le, ErrLineTooLong) && l.Sum != "" {
				long = le
			} else {
				_, bad := errors.AsType[*LineError](err)
				ended(run, src, bad)
				err = flush(err)
				return res, lastFP, err
			}
		}
		if l.Torn {
			res.Torn = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: incomplete last line (%d bytes, no newline yet); it will be imported once complete", path, l.N, l.Size))
			break
		}
		fp := LineFingerprint(l)
		if l.N == 1 {
			l.Bytes = bytes.TrimPrefix(l.Bytes, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
			l.Head = bytes.TrimPrefix(l.Head, []byte("\xef\xbb\xbf"))
		}
		var o events.Observation
		if long != nil {
			o = oversized(src, path, l, long)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%v (recorded without signals: its first %d bytes, its size and its SHA-256)", long, o.Cut.Kept))
		} else if len(bytes.TrimSpace(l.Bytes)) == 0 {
			// A blank line carries nothing, but it keeps its number.
			o = events.Observation{Key: fmt.Sprintf("line:%d", l.N), Parser: src.Parser, Path: path, Line: l.N, Kind: "blank", Problems: []string{"blank line"}}
		} else if o, err = src.Parse(path, l.N, l.Bytes); err != nil {
			if !in.skip || o.Kind != "invalid" {
				ended(run, src, true)
				err = flush(err)
				return res, lastFP, err
			}
			res.Warnings = append(res.Warnings, fmt.Sprintf("%v (recorded without signals)", err))
		}
		for _, p := range o.Problems {
			switch {
			case strings.HasPrefix(p, UsageRefused):
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: %s (the line is recorded; its usage counts nothing)", path, l.N, p))
			case strings.HasPrefix(p, events.WorkDirRefused):
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: %s (the line is recorded)", path, l.N, p))
			}
		}
		if o.UUID != "" {
			uuids[o.UUID] = true
		}
		if long != nil {
			// The line is kept without its content, but a uuid in its
			// head still names it as a parent; one past the head is
			// unknown, and any line may be its child.
			if u := headUUID(l.Head); u != "" {
				uuids[u] = true
			} else {
				unknown = append(unknown, l.N)
			}
		}
		// The session's lines imported before (from this file or any
		// other) count as earlier lines: the warning does not depend on
		// how the file was cut across imports.
		if o.ParentUUID != "" && !uuids[o.ParentUUID] && !s.LineIDs.Has(o.ParentUUID) {
			p := fmt.Sprintf("parentUuid %s points to no earlier line", o.ParentUUID)
			if len(unknown) > 0 {
				p = fmt.Sprintf("parentUuid %s points to no earlier line whose uuid is known (line %s, over the size limit, was recorded without it and may be the parent)", o.ParentUUID, joinInts(unknown))
			}
			o.Problems = append(o.Problems, p)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: %s", path, l.N, p))
		}
		o.Fingerprint = &fp
		// When this host took the line in, and whether it was read as
		// the agent wrote it (Watch) or is history (an import).
		o.Received = in.clock().UTC().Truncate(time.Microsecond)
		if read == readAppeared {
			// A file that appeared while Watch ran, not read whole
			// yet: a line dated long before its receipt was in the
			// file before it appeared (a copy, a restore), history as
			// an import reads it; a line with no time of its own goes
			// with the line before it.
			if t, ok := usableTime(o.AgentTime); ok {
				live = o.Received.Sub(t) <= HistoryAge
			}
		}
		o.Live = live
		if rewrittenFrom != "" {
			o.RewrittenFrom, rewrittenFrom = rewrittenFrom, ""
		}
		at := last
		if t, ok := usableTime(o.AgentTime); ok {
			at = t
		} else if o.AgentTime != "" {
			p := fmt.Sprintf("timestamp %q is not a time Logbook can date the line by (RFC 3339, year %d or later); it is dated as the line before it", o.AgentTime, minLineYear)
			o.Problems = append(o.Problems, p)
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: %s", path, l.N, p))
		}
		if at.IsZero() {
			at = in.clock()
		}
		if o.Live {
			// Read as the agent wrote it: the line happened now, by this
			// host's clock, whatever the agent's says (AgentTime keeps
			// that, and the offset between them is learned from it), so
			// a session's times agree with its hooks' and with the
			// server's, however far the agent's clock is off.
			at = o.Received
		}
		// A line was written no later than this host read it: one dated
		// past its receipt (an agent clock ahead of this host's) takes
		// its receipt instead, and so does every line after it that has
		// no time of its own; the observation keeps the line's own
		// timestamp (AgentTime). History and live lines of one file, or
		// of one session, are then on one clock whichever way the file
		// was found (at the start, in a folder that appeared later, by an
		// import before): a history line dated ahead never sorts after a
		// live line or hook that came later, which would leave the live
		// report dated before the turn it ends. A line past the receipt
		// by more than events.MaxClockSkew is a clock far off: warned of,
		// once a pass.
		agentAt := at
		_, far := events.BoundTime(at, o.Received)
		if far && !future {
			future = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: timestamp %s lies past this host's clock by more than %v; it and any later line dated past its reading are recorded when read", path, l.N, agentAt.UTC().Format(time.RFC3339Nano), events.MaxClockSkew))
		}
		if !o.Live && !written.IsZero() {
			o.Written = written
			at = at.Add(shift)
		}
		at, _ = events.BoundTime(at, o.Received)
		last = at
		if !o.Live && !written.IsZero() {
			last = at.Add(-shift) // the agent's clock again
		}
		// History: the pass reads on past this line, unless it proves
		// the last (ended); a session whose last line says so is being
		// imported.
		o.More = !o.Live
		obs := in.reg.New(src.Wrap(o))
		obs.ID, obs.Agg, obs.At = in.x.IDs(), agg, at.UTC().Truncate(time.Microsecond)
		// A full run goes out when the next line comes, so the run the
		// pass ends with is never empty and its last line can say so.
		if len(run) >= maxRunLines {
			if err := flush(nil); err != nil {
				return res, lastFP, err
			}
			if err := hold(); err != nil {
				return res, lastFP, err
			}
		}
		run = append(run, runLine{n: l.N, obs: obs})
	}
	ended(run, src, false)
	err = flush(nil)
	return res, lastFP, err
}

// stopped returns err, the error an import pass of the transcript at
// path (src's format) into agg ends with. When err is a *LineError (a
// line that does not read or parse, a uuid taken by other content: the
// pass stops there, and the next pass stops there again), the session is
// held at that line first (holdStop), whatever this pass appended: the
// lines before it may all have been in the log already (serve following
// the file as the agent writes it), so that no line this pass took in
// carries Held. A failure to record the hold is added to err.
func (in *Ingester) stopped(ctx context.Context, agg events.Aggregate, path string, src LineSource, err error) error {
	le, ok := errors.AsType[*LineError](err)
	if !ok || le.Line <= 0 {
		return err
	}
	if herr := in.holdStop(ctx, agg, path, src, le.Line); herr != nil {
		return fmt.Errorf("%w (and the session could not be held at that line: %v)", err, herr)
	}
	return err
}

// holdStop records on agg that an import pass of the transcript at path
// (src's format) stopped at line n: an observation of Kind
// events.KindHeld (events.Observation.HeldStop), stored as src's line
// type, so the session is held at n (session.State.HeldPath). Nothing is
// appended when the session does not exist, does not hold every line of
// the file before n, or is held at n already (the last line a pass took
// in carries Held, or a pass recorded the stop before). Its event id is
// derived from agg, the file's name and n, and its time is the session's
// last (State.UpdatedAt), so a pass that stops there again (serve's next
// poll) appends nothing, and the record moves neither the file's cursor
// nor when the agent was last heard from. Errors are the log's, or the
// reducer's refusal (events.ErrRejected) of a stop it cannot place.
func (in *Ingester) holdStop(ctx context.Context, agg events.Aggregate, path string, src LineSource, n int) error {
	_, _, err := in.x.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		o := events.Observation{Key: fmt.Sprintf("held:%d", n), Parser: src.Parser, Path: path, Kind: events.KindHeld, Held: true, HeldLine: n}
		if !s.Exists() || s.Cursor(path) != n-1 || s.Seen(&o) {
			return nil, nil
		}
		e := in.reg.New(src.Wrap(o))
		e.ID, e.Agg, e.At = heldStopID(agg, path, n, s.UpdatedAt), agg, s.UpdatedAt
		decs, err := session.Decide(s, session.Observe{Obs: e})
		if err != nil {
			return nil, err
		}
		return append(events.Decision{e}, decs...), nil
	})
	if err != nil {
		return fmt.Errorf("%s:%d: record the stop: %w", path, n, err)
	}
	return nil
}

// heldStopID returns the event id of the record of a stop at line n of
// the transcript named like path in session agg (holdStop): its time
// part at's milliseconds, its entropy the SHA-256 of agg's id, the
// file's name and n, so every pass that records that stop names it alike
// and the log takes it once (Nats-Msg-Id).
func heldStopID(agg events.Aggregate, path string, n int, at time.Time) ulid.ULID {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(at)) // out of ULID's range (before 1970): time part 0
	h := sha256.Sum256([]byte(agg.ID + "\x00" + filepath.Base(path) + "\x00" + strconv.Itoa(n)))
	_ = id.SetEntropy(h[:10])
	return id
}

// ended marks the last line of run, the last this pass of an import read
// of its file, as such: its observation's More is cleared. held says the
// pass stopped at the next line, one that does not read or parse: the
// observation's Held is set.
func ended(run []runLine, src LineSource, held bool) {
	if len(run) == 0 {
		return
	}
	r := &run[len(run)-1]
	if o, ok := events.Observed(r.obs.Data); ok && (o.More || held) {
		c := *o
		c.More, c.Held = false, held
		r.obs.Data = src.Wrap(c)
	}
}

// oversized returns the observation of line l of the transcript at path,
// too long to hold (lerr wraps ErrLineTooLong): kind "invalid", no
// signals, the error in Problems, the agent src names (Meta.Agent), Raw
// the start of its head as src parses a line that does not parse
// (redacted, cut to the cap), and Cut the whole
// line's size and SHA-256, so the line keeps its number and the import
// goes on past it.
func oversized(src LineSource, path string, l Line, lerr *LineError) events.Observation {
	p, _ := src.Parse(path, l.N, l.Head)
	o := events.Observation{Key: p.Key, Parser: p.Parser, Path: path, Line: l.N, Kind: "invalid",
		Meta:     events.Meta{Agent: p.Meta.Agent},
		Problems: []string{fmt.Sprintf("line %d: %v; recorded without signals", l.N, lerr.Err)}}
	o.Raw = p.Raw
	o.Cut = &events.Cut{Size: int64(l.Size), SHA256: l.Sum, Kept: len(p.Raw)}
	return o
}

// headUUID returns the top-level "uuid" of a transcript line from head,
// its first bytes (an oversized line's Line.Head, which is cut and so not
// valid JSON), when the member lies wholly within head; "" otherwise. It
// reads head as a stream of JSON tokens and stops at the first that does
// not parse.
func headUUID(head []byte) string {
	d := json.NewDecoder(bytes.NewReader(head))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return "" // a line is an object
	}
	depth, key := 1, true // key: the next token at depth 1 is a member name
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				continue
			}
			depth--
			if depth == 1 {
				key = true // a nested value ended
			}
			if depth == 0 {
				return ""
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if !key {
			key = true
			continue
		}
		name, _ := tok.(string)
		key = false
		if name != "uuid" {
			continue
		}
		val, err := d.Token()
		if s, ok := val.(string); err == nil && ok {
			return s
		}
		return ""
	}
}

// joinInts writes ns as "1, 2, 3".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// copyObservation returns the observation that stands for lines, a run
// of consecutive transcript lines of one file each of which the session
// already holds by its uuid (events.KindCopy): the last line's id, time,
// key, path, line and fingerprint, how many lines it stands for, and no
// text or signals, wrapped as src wraps a line.
func copyObservation(reg *events.Registry, src LineSource, lines []runLine) events.Envelope {
	first, _ := events.Observed(lines[0].obs.Data)
	last := lines[len(lines)-1].obs
	lo, _ := events.Observed(last.Data)
	o := events.Observation{
		Key: lo.Key, Parser: lo.Parser, Path: lo.Path, Line: lo.Line, Kind: events.KindCopy,
		Meta: events.Meta{Agent: lo.Meta.Agent}, Fingerprint: lo.Fingerprint, Copied: len(lines),
		Problems: []string{fmt.Sprintf("lines %d–%d hold lines the session already has (the same uuids, from %s or another file): recorded once, without their text", first.Line, lo.Line, filepath.Base(lo.Path))},
	}
	e := reg.New(src.Wrap(o))
	e.ID, e.Agg, e.At = last.ID, last.Agg, last.At
	return e
}

// lineRef is where a session took in a transcript line of a given
// identity (session.LineID) first: its file and line number, and the
// SHA-256 of its bytes ("" when the log keeps none: a line imported
// before fingerprints were kept).
type lineRef struct {
	path     string
	line     int
	sum      string
	off, end int64 // where the line and its newline lie in path
}

// refOf returns the lineRef of the stored observation o.
func refOf(o *events.Observation) lineRef {
	r := lineRef{path: o.Path, line: o.Line}
	if o.Fingerprint != nil {
		r.sum, r.off, r.end = o.Fingerprint.SHA256, o.Fingerprint.Offset, o.Fingerprint.End
	}
	return r
}

// sameLine reports whether line fp of the transcript at path and the
// earlier line ref of the same identity say the same (src.Same), each
// read again from its file where its fingerprint places it; false when
// src has no Same, or either file no longer holds its line there (or
// leads into a private dir). memo keeps the verdict by fp.Line.
func (in *Ingester) sameLine(src LineSource, ref lineRef, path string, fp events.Fingerprint, memo map[int]bool) bool {
	if src.Same == nil {
		return false
	}
	if v, ok := memo[fp.Line]; ok {
		return v
	}
	a, aok := in.lineAt(ref.path, ref.off, ref.end, ref.sum)
	b, bok := in.lineAt(path, fp.Offset, fp.End, fp.SHA256)
	v := aok && bok && src.Same(a, b)
	memo[fp.Line] = v
	return v
}

// lineAt returns the line of the transcript at path that lies in bytes
// [off, end), its newline included, without the newline, when the file
// holds it there with the SHA-256 sum; false otherwise.
func (in *Ingester) lineAt(path string, off, end int64, sum string) ([]byte, bool) {
	if end <= off || end-off > MaxLineBytes+2 || sum == "" {
		return nil, false
	}
	f, _, err := OpenTranscript(path, in.private)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, end-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, false
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	h := sha256.Sum256(b)
	if hex.EncodeToString(h[:]) != sum {
		return nil, false
	}
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), true // a first line's byte order mark
}

// lineRefs maps the line identities a session holds to where it took
// each in (lineRef), as read from its events up to version ver, and the
// lines appended since by the import that read them.
type lineRefs struct {
	byID map[string]lineRef
	ver  uint64
}

// errStaleRefs is what appendRun's decision returns when it meets a
// line identity the session holds and refs does not know, on a state
// past the version refs was read at: refs is read again and the run
// decided again.
var errStaleRefs = errors.New("line identities not yet read from the log")

// load reads refs from agg's events in log: for each line identity, the
// first transcript line that holds it.
func (r *lineRefs) load(ctx context.Context, log events.Log, agg events.Aggregate) error {
	recs, _, err := log.Load(ctx, agg)
	if err != nil {
		return fmt.Errorf("session %s: read its lines: %w", agg.ID, err)
	}
	r.byID = map[string]lineRef{}
	for _, rec := range recs {
		r.ver = max(r.ver, rec.Ver)
		o, ok := events.Observed(rec.Data)
		if !ok || o.Line <= 0 {
			continue
		}
		if id := session.LineID(o); id != "" {
			if _, ok := r.byID[id]; !ok {
				r.byID[id] = refOf(o)
			}
		}
	}
	return nil
}

// add adds the refs of lines just appended, keeping those known before.
func (r *lineRefs) add(refs map[string]lineRef) {
	if len(refs) == 0 {
		return
	}
	if r.byID == nil {
		r.byID = map[string]lineRef{}
	}
	for id, ref := range refs {
		if _, ok := r.byID[id]; !ok {
			r.byID[id] = ref
		}
	}
}

// conflictError returns the *LineError of line n of the transcript at
// path, observed as o, whose identity is that of the earlier line ref
// with other bytes (ErrUUIDConflict).
func conflictError(path string, n int, o *events.Observation, ref lineRef) *LineError {
	where := fmt.Sprintf("line %d of %s", ref.line, ref.path)
	if ref.path == path {
		where = fmt.Sprintf("line %d above", ref.line)
	}
	id := o.UUID
	if id == "" {
		id = session.LineID(o)
	}
	return &LineError{Path: path, Line: n, Err: fmt.Errorf("%w: uuid %s is that of %s", ErrUUIDConflict, id, where)}
}

// conflicted returns the observation recorded, under SkipInvalid, of the
// transcript line o that err reports in conflict with an earlier line
// (ErrUUIDConflict): kind "invalid", no uuid, link, metadata or signals,
// the error in Problems, and o's text, fingerprint and receipt.
func conflicted(o *events.Observation, err error) events.Observation {
	return events.Observation{
		Key: o.Key, Parser: o.Parser, Path: o.Path, Line: o.Line, Kind: "invalid",
		Meta: events.Meta{Agent: o.Meta.Agent}, Raw: o.Raw, Cut: o.Cut,
		Problems:    []string{fmt.Sprintf("line %d: %v; recorded without signals", o.Line, errors.Unwrap(err))},
		Fingerprint: o.Fingerprint, Received: o.Received, Live: o.Live, More: o.More, RewrittenFrom: o.RewrittenFrom,
	}
}

// appendGrace is how long after an interrupt an import waits for an
// append under way (and what its lines release) before giving it up: the
// log's own timeouts end a stuck append sooner.
const appendGrace = 15 * time.Second

// afterStop returns a context with ctx's values that ends d after ctx
// does (its cause then says so), not with it, and the function that
// releases its resources.
func afterStop(ctx context.Context, d time.Duration) (context.Context, func()) {
	g, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(d, func() {
			cancel(fmt.Errorf("%w: an append under way was given up %s after the interrupt (%v)", context.Canceled, d, context.Cause(ctx)))
		})
		context.AfterFunc(g, func() { t.Stop() })
	})
	return g, func() {
		stop()
		cancel(nil)
	}
}

// maxRunLines bounds the lines ImportFile decides together; each line
// yields at least one event, so more could not go into one atomic batch
// (events.MaxBatch) anyway.
const maxRunLines = events.MaxBatch

// runLine is one parsed transcript line waiting in a run: its line
// number and its observation, with id, aggregate and time set.
type runLine struct {
	n   int
	obs events.Envelope
}

// lineOutcome is what deciding one line of a run gave: whether it
// appended (it was not seen before), and what finished needs of the
// session's state just after it.
type lineOutcome struct {
	appended bool
	seen     bool // not appended: the session holds this line of this path
	parent   string
	agentID  string
	turnOpen bool
}

// appendRun decides the lines of run in order against agg's state, each
// line's observation followed by its decisions, and appends them as one
// atomic batch with optimistic concurrency on agg at the run's start (on a
// conflict the Executor brings the state up to date and the run is
// decided again, lines now seen appending nothing). A run whose events
// would pass events.MaxBatch goes out as several batches, each ending at a
// line's end. A line the reducer refuses ends the run there: the lines
// before it are appended, and the error names path and line. A run the
// log refuses whole is appended again line by line, with the same result. After each
// batch the subagents its lines report done are released, and res and
// progress hear of every line.
func (in *Ingester) appendRun(ctx context.Context, agg events.Aggregate, path string, src LineSource, run []runLine, refs *lineRefs, res *FileResult, progress func(line int)) error {
	same := map[int]bool{} // sameLine's verdicts, by line, kept across attempts
	// An interrupt (ctx ending) stops the run between its appends, never
	// within one: an append under way, and the releases of what its
	// lines report done, are waited for, so that what the import says it
	// appended is what the log holds (up to appendGrace after the
	// interrupt, then they end too).
	actx, release := afterStop(ctx, appendGrace)
	defer release()
	for len(run) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s:%d: %w", path, run[0].n, err)
		}
		var (
			outs      []lineOutcome
			stop      error
			stopAt    int
			taken     int
			mine      map[string]lineRef // the lines this attempt appends, by LineID
			conflicts []string           // the warnings of lines recorded as conflicts
		)
		decide := func(s session.State) (events.Decision, error) {
			// s is this call's copy of the cached state, decided on under
			// the Executor's lock of agg: it evolves in place (its id
			// sets grow in their arrays, past the end of every other
			// state that shares them), not copied at each event.
			outs, stop, stopAt, taken = outs[:0], nil, 0, 0
			mine, conflicts = map[string]lineRef{}, conflicts[:0]
			// Most lines decide one or two events: room for three a
			// line spares the batch its regrowth.
			evs := make([]events.Envelope, 0, min(events.MaxBatch, 3*len(run)))
			// copied is the run of lines, just before the current one,
			// that the session already holds by their uuids: they go in
			// as one observation (events.KindCopy) when it ends.
			var copied []runLine
			addCopied := func() {
				if len(copied) == 0 {
					return
				}
				e := copyObservation(in.reg, src, copied)
				copied = copied[:0]
				if _, err := session.Decide(s, session.Observe{Obs: e}); err != nil {
					return // the line after the copies says what is wrong
				}
				e.Agg, e.Ver = agg, s.Ver+1
				s.Evolve(e)
				evs = append(evs, e)
			}
			for _, rl := range run {
				o, _ := events.Observed(rl.obs.Data)
				if s.Seen(o) {
					outs = append(outs, lineOutcome{seen: true})
					taken++
					continue
				}
				line := rl.obs
				id := session.LineID(o)
				if id != "" && s.LineIDs.Has(id) {
					// The session holds a line of this identity: a copy
					// when its bytes are this line's, a conflict when not
					// (an identity whose line the log keeps no bytes of
					// is taken for a copy).
					ref, ok := mine[id]
					if !ok {
						ref, ok = refs.byID[id]
					}
					if !ok && s.Ver > refs.ver {
						return nil, errStaleRefs // refs.load, and decide again
					}
					if !ok || ref.sum == "" || o.Fingerprint == nil || ref.sum == o.Fingerprint.SHA256 || in.sameLine(src, ref, path, *o.Fingerprint, same) {
						if len(evs)+1 < events.MaxBatch {
							copied = append(copied, rl)
							outs = append(outs, lineOutcome{})
							taken++
							continue
						}
					} else {
						cerr := conflictError(path, rl.n, o, ref)
						if !in.skip {
							stop, stopAt = cerr, rl.n
							break
						}
						line.Data = src.Wrap(conflicted(o, cerr))
						conflicts = append(conflicts, fmt.Sprintf("%v (recorded without signals)", cerr))
					}
				}
				addCopied()
				obs := s.Account(line) // its usage's evidence, from s
				decs, err := session.Decide(s, session.Observe{Obs: obs})
				if err != nil {
					stop, stopAt = err, rl.n
					break
				}
				if len(evs) > 0 && len(evs)+1+len(decs) > events.MaxBatch {
					break // the next batch's
				}
				at := len(evs)
				evs = append(append(evs, obs), decs...)
				for _, e := range evs[at:] {
					e.Agg, e.Ver = agg, s.Ver+1
					s.Evolve(e)
				}
				if lo, _ := events.Observed(obs.Data); lo != nil {
					if id := session.LineID(lo); id != "" {
						if _, ok := mine[id]; !ok {
							mine[id] = refOf(lo)
						}
					}
				}
				outs = append(outs, lineOutcome{appended: true, parent: s.Parent, agentID: s.AgentID, turnOpen: s.TurnOpen})
				taken++
			}
			addCopied()
			return evs, nil
		}
		_, st, err := in.x.Execute(actx, agg, decide)
		for tries := 0; errors.Is(err, errStaleRefs) && tries < 8; tries++ {
			if err = refs.load(actx, in.x.Log, agg); err != nil {
				return fmt.Errorf("%s:%d: %w", path, run[0].n, err)
			}
			_, st, err = in.x.Execute(actx, agg, decide)
		}
		if err == nil {
			refs.add(mine)
			res.Warnings = append(res.Warnings, conflicts...)
		}
		if err != nil {
			if len(run) == 1 || ctx.Err() != nil {
				return fmt.Errorf("%s:%d: %w", path, run[0].n, err)
			}
			// The log refused the run whole (an event it will not take,
			// say): append it line by line, so the lines before the one
			// at fault are imported and the error names that line. (An
			// answer lost may hide that the run, or a part of it, went
			// in: those lines are found in the log, this import's.)
			res.resent = [2]int{run[0].n, run[len(run)-1].n}
			defer func() { res.resent = [2]int{} }()
			for i := range run {
				if err := in.appendRun(ctx, agg, path, src, run[i:i+1], refs, res, progress); err != nil {
					return err
				}
			}
			return nil
		}
		for i, out := range outs {
			rl := run[i]
			if !out.appended {
				// In the log already, or held by the session by its
				// uuid (a copy): but a line of a run appended again line
				// by line was put there by this import.
				if out.seen && res.resent[0] <= rl.n && rl.n <= res.resent[1] {
					res.Appended++
				} else {
					res.Skipped++
				}
			} else {
				res.Appended++
				o, _ := events.Observed(rl.obs.Data)
				if err := in.release(actx, agg, rl.obs, o); err != nil {
					return fmt.Errorf("%s:%d: %w", path, rl.n, err)
				}
				after := session.State{Parent: out.parent, AgentID: out.agentID, TurnOpen: out.turnOpen}
				if err := in.finished(actx, agg, after, rl.obs, o); err != nil {
					return fmt.Errorf("%s:%d: %w", path, rl.n, err)
				}
			}
			if progress != nil {
				progress(rl.n)
			}
		}
		res.Lines = st.Cursor(path)
		if _, ok := errors.AsType[*LineError](stop); ok {
			return stop // it names path and line
		}
		if stop != nil {
			return fmt.Errorf("%s:%d: %w", path, stopAt, stop)
		}
		run = run[taken:]
	}
	return nil
}

// diverge records on agg that the transcript at path no longer holds its
// imported line fp (session.transcript_diverged, once per file) and
// returns the session its rewritten form goes to.
func (in *Ingester) diverge(ctx context.Context, agg events.Aggregate, path string, fp, found events.Fingerprint, size int64) (events.Aggregate, error) {
	cmd := session.Diverge{
		Path: path, Imported: fp, Found: found, Size: size, At: in.clock().UTC().Truncate(time.Microsecond),
		Cause: events.Cause{Kind: "transcript", Event: "diverged", Detail: filepath.Base(path), Ref: fmt.Sprintf("%s:%d", path, fp.Line)},
	}
	_, st, err := in.x.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		return session.Decide(s, cmd)
	})
	if err != nil {
		return agg, fmt.Errorf("%s: record divergence: %w", path, err)
	}
	next := events.Aggregate{Kind: events.KindSession, ID: st.DivergedTo(path)}
	if err := next.Validate(); err != nil {
		return agg, fmt.Errorf("%s: new session: %w", path, err)
	}
	return next, nil
}

// difference is what firstDifference finds of a transcript file
// against what was imported of its name.
type difference struct {
	// found is the fingerprint of the first line that differs, or, for
	// a file that is a shorter prefix of what was imported, its end
	// (Line: its complete lines, no SHA256); nil when no stored line
	// has a fingerprint to compare with, or every one matches.
	found *events.Fingerprint
	// copied is set when the file contradicts no line imported and
	// holds every line imported from its own path (none, for a file
	// never imported): what it lacks was imported from another file of
	// its name (a copy), so it was neither truncated nor rewritten.
	copied bool
	lines  int // the file's complete lines, when copied
}

// firstDifference compares f, the transcript opened from path, line by
// line, with the fingerprints agg's stored observations of its file name
// hold (difference). A line imported from path itself is one whose
// observation names a path that leads to path's file (samePath).
func (in *Ingester) firstDifference(ctx context.Context, agg events.Aggregate, f *os.File, path string) (difference, error) {
	recs, _, err := in.x.Log.Load(ctx, agg)
	if err != nil {
		return difference{}, err
	}
	imported := map[int]string{}
	last, own := 0, 0 // the last line imported of the name, and from path
	here := canonicalPath(path)
	seen := map[string]bool{} // observed paths: whether each is path's file
	for _, r := range recs {
		o, ok := events.Observed(r.Data)
		if !ok || o.Line <= 0 || filepath.Base(o.Path) != filepath.Base(path) {
			continue
		}
		same, ok := seen[o.Path]
		if !ok {
			same = samePath(o.Path, here)
			seen[o.Path] = same
		}
		if same {
			own = max(own, o.Line)
		}
		if o.Fingerprint != nil {
			imported[o.Line] = o.Fingerprint.SHA256
			last = max(last, o.Line)
		}
	}
	if len(imported) == 0 {
		return difference{}, nil
	}
	n := 0
	var end int64
	for l, err := range readLinesOf(ctx, f, path, Cursor{}, 0, MaxLineBytes, 0) {
		if err != nil {
			if _, ok := errors.AsType[*LineError](err); !ok || l.Sum == "" {
				if ok {
					continue
				}
				return difference{}, err
			}
		}
		if l.Torn || l.N > last {
			break
		}
		fp := LineFingerprint(l)
		if sum, ok := imported[l.N]; ok && sum != fp.SHA256 {
			return difference{found: &fp}, nil
		}
		n, end = l.N, l.End
	}
	if n < last {
		return difference{found: &events.Fingerprint{Line: n, Offset: end, End: end}, copied: n >= own, lines: n}, nil
	}
	return difference{}, nil
}

// samePath reports whether observed, the path an observation names,
// leads to here, a canonical path (canonicalPath). An import resumed
// under a relative path names it as given: it leads to here when it
// does from the working directory, or when here ends with it.
func samePath(observed, here string) bool {
	if canonicalPath(observed) == here {
		return true
	}
	rel := filepath.Clean(observed)
	return !filepath.IsAbs(rel) && !strings.HasPrefix(rel, "..") && strings.HasSuffix(here, string(filepath.Separator)+rel)
}

// canonicalPath is path absolute with every symbolic link resolved
// (realPath), or only made absolute when it cannot be resolved (the file
// is gone); a relative path is taken from the working directory.
func canonicalPath(path string) string {
	r := realPath(path)
	if !filepath.IsAbs(r) {
		if a, err := filepath.Abs(r); err == nil {
			return a
		}
	}
	return r
}

// headLines is how many leading lines FirstOf looks at.
const headLines = 64

// FirstOf decodes (encoding/json) each of the first 64 complete lines of
// f, the transcript opened from path, into a fresh V and returns the
// first for which ok reports true, and whether one did: how an agent
// finds what its file's first lines say of it (its session id). It reads
// f from its start.
func FirstOf[V any](f *os.File, path string, ok func(V) bool) (V, bool) {
	n := 0
	for l, err := range readLinesOf(context.Background(), f, path, Cursor{}, 0, MaxLineBytes, 0) {
		if err != nil || l.Torn || n >= headLines {
			break
		}
		n++
		var v V
		if json.Unmarshal(l.Bytes, &v) == nil && ok(v) {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// minLineYear is the earliest year a line's timestamp may date it by: an
// earlier one (0001-01-01T00:00:00Z, a zero value written out) is no time
// an agent wrote a line at.
const minLineYear = 2000

// usableTime returns the time of a line's timestamp ts (RFC 3339, as
// agents write it) and whether it is one a line can
// be dated by: it parses, and its year is minLineYear or later.
func usableTime(ts string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	return t, err == nil && t.Year() >= minLineYear
}

// firstTime returns the first usable timestamp among the first lines of
// f, the transcript opened from path, or the zero time.
func firstTime(f *os.File, path string) time.Time {
	type line struct {
		Timestamp string `json:"timestamp"`
	}
	v, _ := FirstOf(f, path, func(v line) bool {
		_, ok := usableTime(v.Timestamp)
		return ok
	})
	t, _ := usableTime(v.Timestamp)
	return t
}

// realPath is path made absolute with every symbolic link resolved, or
// path itself when that fails (the file is gone: its read reports it).
func realPath(path string) string {
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path
	}
	if r, err = filepath.Abs(r); err != nil {
		return path
	}
	return r
}

// liveKey is the context key of a live read (withLiveRead).
type liveKey struct{}

// liveRead is how the transcript reads made under a context are live.
type liveRead int

const (
	// readHistory: an import, or the first read of a file present when
	// Watch started: every line is history.
	readHistory liveRead = iota
	// readFollowed: lines appended to a file Watch follows: every line is
	// live.
	readFollowed
	// readFound: the first read by Watch of a file that held lines when
	// it started, or when the awaited directory it is in appeared: every
	// line is history, dated on this host's clock by the file's
	// modification time (fileClock).
	readFound
	// readAppeared: a read of a file that appeared while Watch ran, before
	// it was read whole once: a line dated more than HistoryAge before its
	// receipt was in the file before it appeared (a copy, a restore) and
	// is history; any other is live.
	readAppeared
)

// HistoryAge is how far before its receipt a line of a transcript that
// appeared in a watched folder is dated for it to be history, not a line
// the agent writes now (a copy or a restore of an old transcript): more
// than any time zone's offset, so an agent whose clock is off by a zone
// or by hours is still followed live from its first line.
const HistoryAge = 24 * time.Hour

// withLiveRead returns ctx marking the transcript reads made under it as
// live: the lines were appended while Watch followed the file, so each
// observation is dated by its receipt (events.Observation.Live). With
// appeared set, the read is the first of a file that appeared while Watch
// ran, not yet read whole: its lines dated more than HistoryAge before
// their receipt are history.
func withLiveRead(ctx context.Context, appeared bool) context.Context {
	if appeared {
		return context.WithValue(ctx, liveKey{}, readAppeared)
	}
	return context.WithValue(ctx, liveKey{}, readFollowed)
}

// withFoundRead returns ctx marking the transcript reads made under it as
// Watch's first read of a file it found holding lines (readFound):
// history, dated by the file's modification time (fileClock).
func withFoundRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, liveKey{}, readFound)
}

// ClockTolerance is how far apart a transcript's modification time and
// its last line's timestamp may be for the agent's clock to be taken as
// agreeing with this host's (the agent stamps a line a moment before it
// writes it): history a watcher reads first is moved by the difference
// only past it (fileClock).
const ClockTolerance = 2 * time.Second

// fileClock returns what the modification time of f, a transcript a
// watcher reads for the first time, says of its lines' times, read at
// now by this host's clock: written, the modification time (UTC, to the
// microsecond), when the file's last complete line is when it was
// written; and shift, the agent clock's offset to add to each line's own
// timestamp (that modification time minus the last line's timestamp;
// zero within ClockTolerance). written is zero, and nothing is moved,
// when the last line has no usable timestamp, is longer than
// MaxLineBytes, or is dated more than HistoryAge from the modification
// time (a copy or a restore of an old transcript, whose modification
// time is the copy's, not its agent's), or when the modification time
// is past now (a file touched with a date ahead).
func fileClock(f *os.File, now time.Time) (written time.Time, shift time.Duration) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.ModTime().After(now) {
		return time.Time{}, 0
	}
	type line struct {
		Timestamp string `json:"timestamp"`
	}
	var v line
	b, ok := lastLine(f, st.Size())
	if !ok || json.Unmarshal(b, &v) != nil {
		return time.Time{}, 0
	}
	t, ok := usableTime(v.Timestamp)
	if !ok {
		return time.Time{}, 0
	}
	mod := st.ModTime().UTC().Truncate(time.Microsecond)
	gap := mod.Sub(t)
	if gap > HistoryAge || gap < -HistoryAge {
		return time.Time{}, 0
	}
	if gap <= ClockTolerance && gap >= -ClockTolerance {
		gap = 0
	}
	return mod, gap
}

// lastLine returns the last complete line (ended by a newline) of f,
// size bytes long, without its newline, and whether it found one no
// longer than MaxLineBytes. It reads with ReadAt: f's offset is left
// where it was.
func lastLine(f *os.File, size int64) ([]byte, bool) {
	const chunk = 64 << 10
	var tail []byte
	end := size // tail is f[end-len(tail) : end]
	for end > 0 && len(tail) <= MaxLineBytes {
		n := min(int64(chunk), end)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, end-n); err != nil {
			return nil, false
		}
		end -= n
		tail = append(buf, tail...)
		nl := bytes.LastIndexByte(tail, '\n')
		if nl < 0 {
			continue
		}
		if before := bytes.LastIndexByte(tail[:nl], '\n'); before >= 0 {
			return tail[before+1 : nl], nl-before-1 <= MaxLineBytes
		}
		if end == 0 {
			return tail[:nl], nl <= MaxLineBytes
		}
	}
	return nil, false
}

// liveReadOf reports how ctx marks the reads made under it (withLiveRead).
func liveReadOf(ctx context.Context) liveRead {
	live, _ := ctx.Value(liveKey{}).(liveRead)
	return live
}
