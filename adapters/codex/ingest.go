package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Ingester turns Codex CLI rollouts and notify payloads into session
// decisions on the log through the agent-neutral engine (ingest.Ingester:
// one atomic batch per run of lines, the observation and the decisions
// it causes; the same per-file cursor, fingerprints, torn-line wait and
// line errors as every agent's). It is safe for concurrent use.
type Ingester struct {
	base   *ingest.Ingester
	parser *Parser
	mu     sync.Mutex
	states map[string]FileState // rollout path → its state after its last imported line
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
	// AsNew imports a rollout that no longer holds what was imported
	// from it as a new history (ingest.Config.AsNew).
	AsNew bool
	// Private lists directories (the data dir) whose files are never
	// read as rollouts (ingest.Config.Private).
	Private []string
}

// NewIngester returns an Ingester appending to cfg.Log.
func NewIngester(cfg IngestConfig) (*Ingester, error) {
	if cfg.Parser == nil {
		p, err := NewParser(Config{})
		if err != nil {
			return nil, err
		}
		cfg.Parser = p
	}
	if cfg.Log == nil {
		return nil, errors.New("codex ingester: no log")
	}
	base, err := ingest.New(ingest.Config{
		Log: cfg.Log, Reg: cfg.Reg, IDs: cfg.IDs, Clock: cfg.Clock, Host: cfg.Host,
		SkipInvalid: cfg.SkipInvalid, AsNew: cfg.AsNew, Command: "logbook import codex", Actor: Agent, Private: cfg.Private,
	})
	if err != nil {
		return nil, fmt.Errorf("codex ingester: %w", err)
	}
	return &Ingester{base: base, parser: cfg.Parser, states: map[string]FileState{}}, nil
}

// uuidTail matches the thread id Codex CLI ends a rollout's file name
// with: rollout-2026-05-23T18-54-05-<uuid>.jsonl.
var uuidTail = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)
})

// SessionOf returns the session aggregate of the rollout at path: the
// id of its first line when that is a session_meta (or a legacy header)
// with a valid id (events.ValidOwnSessionID: never a subagent's
// "agent-<id>"), else the thread id in its file name, else the file's
// name mapped onto the characters an aggregate id may hold.
func SessionOf(path string) events.Aggregate {
	l, err := ingest.FirstLine(path)
	return sessionOf(path, l, err)
}

// sessionOf is SessionOf for the rollout at path whose first line is l
// (err: FirstLine's error).
func sessionOf(path string, l ingest.Line, err error) events.Aggregate {
	id := ""
	if err == nil && !l.Torn {
		var v struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Payload struct {
				ID string `json:"id"`
			} `json:"payload"`
		}
		if json.Unmarshal(l.Bytes, &v) == nil {
			switch {
			case v.Type == "session_meta":
				id = v.Payload.ID
			case v.Type == "" && v.ID != "":
				id = v.ID
			}
		}
	}
	if id == "" || events.ValidOwnSessionID(id) != nil {
		if m := uuidTail().FindStringSubmatch(filepath.Base(path)); m != nil {
			id = m[1]
		} else {
			id = ingest.SanitizeID(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
		}
	}
	return events.Aggregate{Kind: events.KindSession, ID: id}
}

// KnowNew tells the ingester which sessions of paths, the rollouts an
// import is about to read, the log holds nothing of
// (ingest.Ingester.KnowNew), before the import's first append: each
// rollout's session (SessionOf: its first line, else its file name),
// found new in few requests, is then imported without being read from
// the log. A rollout that cannot be opened, or that leads into a
// private dir, is left out: its import reports why.
func (in *Ingester) KnowNew(ctx context.Context, paths []string) {
	aggs := make([]events.Aggregate, 0, len(paths))
	seen := make(map[events.Aggregate]bool, len(paths))
	for _, path := range paths {
		if ingest.CheckPrivate(path, in.base.Private()) != nil {
			continue
		}
		f, _, err := ingest.OpenTranscript(path, in.base.Private())
		if err != nil {
			continue
		}
		l, err := ingest.FirstLineOf(f, path)
		f.Close()
		agg := sessionOf(path, l, err)
		if agg.Validate() == nil && !seen[agg] {
			seen[agg] = true
			aggs = append(aggs, agg)
		}
	}
	in.base.KnowNew(ctx, aggs)
}

// ImportFile imports the rollout at path into its session (SessionOf)
// from the line after the session's cursor, as ingest.Ingester.ImportFile
// does: it stops at a torn last line (reported, not an error) and at the
// first line that does not parse, returning a *ingest.LineError naming
// path and line (with SkipInvalid the line is recorded without signals
// and the import goes on). A rollout imported twice, or by two processes
// at once, appends each line once.
//
// The rollout is read through descriptors checked where they lead
// (ingest.OpenTranscript): one for its session id and the parser's state,
// and the one ingest.Ingester.ImportFile reads its lines through. One
// that leads into a private dir (IngestConfig.Private) is refused with an
// error wrapping ingest.ErrPrivate, and nothing is read or appended.
func (in *Ingester) ImportFile(ctx context.Context, path string, progress func(line int)) (ingest.FileResult, error) {
	if err := ingest.CheckPrivate(path, in.base.Private()); err != nil {
		return ingest.FileResult{Path: path}, err
	}
	f, _, err := ingest.OpenTranscript(path, in.base.Private())
	if errors.Is(err, ingest.ErrPrivate) {
		return ingest.FileResult{Path: path}, err
	}
	var (
		agg   events.Aggregate
		first ingest.Line
	)
	if err != nil {
		// Named by its file name; the import reports why it cannot be read.
		agg = sessionOf(path, ingest.Line{}, err)
	} else {
		defer f.Close()
		l, err := ingest.FirstLineOf(f, path)
		agg = sessionOf(path, l, err)
		if err == nil {
			first = l
		}
	}
	if err := agg.Validate(); err != nil {
		return ingest.FileResult{Path: path}, fmt.Errorf("%s: session id: %w", path, err)
	}
	if err := events.ValidOwnSessionID(agg.ID); err != nil {
		// Named after its file, "agent-<id>.jsonl": a session of a
		// subagent's name would take in that subagent's reports.
		return ingest.FileResult{Path: path}, fmt.Errorf("%s: session id: %w, and its first line names no other session", path, err)
	}
	if err := in.checkParent(ctx, path, agg, first); err != nil {
		return ingest.FileResult{Path: path}, err
	}
	in.mu.Lock()
	st := in.states[path].Clone()
	in.mu.Unlock()
	src := ingest.LineSource{
		Parser: ParserLine,
		Wrap:   func(o events.Observation) events.Payload { return events.CodexLineObserved{Observation: o} },
		Parse: func(path string, n int, b []byte) (events.Observation, error) {
			if st.Line != n-1 {
				st = in.rebuild(f, path, n-1)
			}
			return in.parser.Line(&st, path, n, b)
		},
	}
	res, err := in.base.ImportFile(ctx, path, agg, src, progress)
	if res.Lines > 0 {
		if st.Line != res.Lines {
			st = in.rebuild(f, path, res.Lines)
		}
		in.mu.Lock()
		in.states[path] = st
		in.mu.Unlock()
	}
	return res, err
}

// checkParent refuses the rollout at path, whose session is agg and
// whose first line is first, when that line is a subagent's session_meta
// naming a parent thread whose session in the log is another agent's
// (session.CheckParent: a Claude Code session, a harness's): a Codex
// thread is never filed as another agent's subagent. A parent thread id
// that can name no session is refused by Parser.Line, at its line.
func (in *Ingester) checkParent(ctx context.Context, path string, agg events.Aggregate, first ingest.Line) error {
	if first.Bytes == nil {
		return nil
	}
	var st FileState
	if _, err := in.parser.Line(&st, path, first.N, first.Bytes); err != nil || st.Parent == "" {
		return nil
	}
	parent := events.Aggregate{Kind: events.KindSession, ID: st.Parent}
	ps, err := in.base.Sessions().State(ctx, parent)
	if err != nil {
		return fmt.Errorf("%s:%d: session_meta: read the parent thread's session %s: %w", path, first.N, st.Parent, err)
	}
	if err := session.CheckParent(ps, Agent, agg.ID); err != nil {
		return fmt.Errorf("%s:%d: session_meta: source.subagent.thread_spawn.parent_thread_id: %w", path, first.N, err)
	}
	// A parent that descends from this thread (c1's parent c2, c2's
	// c1) would make a loop of parents, in which neither is anyone's
	// top: refused, as POST /v1/observations refuses a parent that is the
	// session itself or one of its subagents. The walk up stops at a
	// session with no parent, one not in the log yet, or maxAncestors.
	up := ps
	for range maxAncestors {
		if up.Parent == "" {
			return nil
		}
		if up.Parent == agg.ID {
			return fmt.Errorf("%s:%d: session_meta: source.subagent.thread_spawn.parent_thread_id %s: %w: that thread descends from this one (%s), which would make a loop of parents", path, first.N, st.Parent, events.ErrRejected, agg.ID)
		}
		id := up.Parent
		if up, err = in.base.Sessions().State(ctx, events.Aggregate{Kind: events.KindSession, ID: id}); err != nil {
			return fmt.Errorf("%s:%d: session_meta: read an ancestor's session %s: %w", path, first.N, id, err)
		}
	}
	return nil
}

// maxAncestors is how many parents checkParent walks up from a thread's
// parent: more than any spawn tree nests.
const maxAncestors = 64

// rebuild parses lines 1..upto of f, the rollout opened from path, into
// a fresh state; with no f (it could not be opened), the state is empty
// but for its line.
func (in *Ingester) rebuild(f *os.File, path string, upto int) FileState {
	var st FileState
	if upto <= 0 {
		return st
	}
	if f == nil {
		st.Line = upto
		return st
	}
	for l, err := range ingest.ReadLinesOf(f, path, 0) {
		if errors.Is(err, ingest.ErrLineTooLong) && l.N <= upto {
			st.Line = l.N // recorded without signals: it changes nothing
			continue
		}
		if err != nil || l.Torn || l.N > upto {
			break
		}
		_, _ = in.parser.Line(&st, path, l.N, l.Bytes)
	}
	st.Line = upto
	return st
}

// Notify ingests one spooled notify payload. The observation's event id
// is the spool entry's ULID, so redelivering an entry appends nothing
// twice.
func (in *Ingester) Notify(ctx context.Context, e ingest.Entry) (events.Appended, error) {
	o, err := in.parser.Notify(e.Payload)
	if err != nil {
		return events.Appended{}, fmt.Errorf("spool entry %s: %w", e.ID, err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: o.Meta.SessionID}
	if err := agg.Validate(); err != nil {
		return events.Appended{}, fmt.Errorf("spool entry %s: %w: %v", e.ID, ingest.ErrFieldType, err)
	}
	// A notify payload arrives as the agent runs: it is dated by its
	// receipt here (ObserveEntry).
	wrap := func(o events.Observation) events.Payload { return events.CodexNotifyObserved{Observation: o} }
	ap, _, err := in.base.ObserveEntry(ctx, "spool entry", e, agg, o, wrap, nil)
	return ap, err
}

// ByThread groups paths, rollout files, by the session each is imported
// into (SessionOf: a thread's id), for an importer to import each group
// in order on one worker: a `codex resume` writes a new rollout for the
// same thread, and the session's log then holds its files' lines in the
// same order however the files were named or scheduled. Groups come in
// the order of their first file in paths; a group's files in the order
// of their names (rollout-<time>-<id>.jsonl sorts in time), then paths.
func ByThread(paths []string) [][]string {
	var out [][]string
	at := map[string]int{}
	for _, p := range paths {
		id := SessionOf(p).ID
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	for _, g := range out {
		sort.SliceStable(g, func(i, j int) bool {
			bi, bj := filepath.Base(g[i]), filepath.Base(g[j])
			if bi != bj {
				return bi < bj
			}
			return g[i] < g[j]
		})
	}
	return out
}

// Discover returns the candidate rollout files named by paths, in path
// order (a sessions tree's YYYY/MM/DD folders sort in time, so a fork
// comes after its origin): a file is taken as named; a directory is
// walked for .jsonl files (rollout-*.jsonl in Codex CLI's own tree, but a
// copied rollout may be named anything), links to files among them, so
// the caller sniffs each (LooksLikeRollout) and says which it skipped
// rather than a folder seeming empty. A path that does not exist is an
// error; directories below a path that cannot be read are walked past
// and named in an *ingest.UnreadableDirs returned beside what was found.
func Discover(paths ...string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var unreadable []string // directories below a path that cannot be read
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err := ingest.SkipUnreadable(p, f, f, d, err, &unreadable); err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(f, ".jsonl") || seen[f] {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(f); err == nil && st.IsDir() {
					return nil // a link to a directory is not walked: no loop traps the walk
				}
				// One that loops or dangles is kept: its read names it,
				// rather than it being skipped unsaid.
			}
			seen[f] = true
			found = append(found, f)
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	if len(unreadable) > 0 {
		return out, &ingest.UnreadableDirs{Notes: unreadable}
	}
	return out, nil
}

// ImportFormat is Codex CLI's format for ingest.PlanImport: a unit is
// one rollout file, and a thread's files (a resumed thread has several)
// go to one worker, in order (ByThread), so its session's log is the same
// whatever the scheduling.
func ImportFormat() ingest.Format[string] {
	return ingest.Format[string]{
		Noun: "rollout", What: "a Codex CLI rollout", Hint: " (as under ~/.codex/sessions)", Looks: LooksLikeRollout,
		Discover: func(paths []string) ([]string, error) { return Discover(paths...) },
		NoneFound: func(paths []string) string {
			return fmt.Sprintf("no .jsonl files under %s (Codex CLI keeps its rollouts under ~/.codex/sessions)", strings.Join(paths, ", "))
		},
		File:  func(path string) (string, bool) { return path, true },
		Group: ByThread,
	}
}

// IsRolloutName reports whether path is named like a Codex CLI rollout:
// rollout-*.jsonl.
func IsRolloutName(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "rollout-") && strings.HasSuffix(b, ".jsonl")
}

// LooksLikeRollout reports whether the file at path reads as a Codex CLI
// rollout: its first line that is not blank is a JSON object with an
// envelope "payload" or the legacy header's "id" or "record_type" (one
// torn, still being written, or damaged, may show them later: the import
// reports a damaged line with its position). A file whose first line is
// not a JSON object at all (text, binary data), or a complete one that
// does not parse and shows none of those keys before it stops, is not
// one. An empty file, or one of blank lines only, qualifies. When it does not, the reason
// says why, and names `logbook import claude` for a file whose first line
// has Claude Code's keys (a "type" beside "sessionId", "uuid" or
// "leafUuid", as Claude Code 2.x writes transcripts).
func LooksLikeRollout(path string) (bool, string) {
	if _, err := ingest.FirstLine(path); err != nil {
		return false, err.Error()
	}
	r, err := ingest.ReadFirstRecord(path)
	if err != nil {
		return false, err.Error()
	}
	if why := r.NotObject(); why != "" {
		return false, "not a Codex CLI rollout: " + why
	}
	if r.Line == 0 || r.Has("payload") || r.Has("id") || r.Has("record_type") || r.Torn {
		return true, ""
	}
	if !r.Whole {
		return false, "not a Codex CLI rollout: its first line is not a JSON object (it does not parse, and shows no \"payload\" or \"id\" before it stops; " + r.Begins() + ")"
	}
	if r.Has("type") && (r.Has("sessionId") || r.Has("uuid") || r.Has("leafUuid")) {
		return false, "not a Codex CLI rollout: it is a Claude Code transcript (its first line has a \"type\" beside Claude Code's \"sessionId\", \"uuid\" or \"leafUuid\"): import it with `logbook import claude`"
	}
	return false, "not a Codex CLI rollout: its first line has neither an envelope \"payload\" nor a session header \"id\""
}

// IsSessionsDir reports whether dir holds Codex CLI rollouts rather than
// Claude Code transcripts: it is named .codex/sessions, or a rollout-*.jsonl
// file lies under it.
func IsSessionsDir(dir string) bool {
	clean := filepath.Clean(dir)
	if filepath.Base(clean) == "sessions" && filepath.Base(filepath.Dir(clean)) == ".codex" {
		return true
	}
	errFound := errors.New("found")
	err := filepath.WalkDir(clean, func(f string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && IsRolloutName(f) {
			return errFound
		}
		return nil
	})
	return errors.Is(err, errFound)
}

// WatchConfig configures Watch; its fields mean what they mean in
// ingest.WatchConfig.
type WatchConfig struct {
	Roots    []string
	Await    []string
	Rescan   time.Duration
	Report   func(msg string)
	Imported func(ingest.FileResult)
}

// Watch follows the rollouts under cfg.Roots (such as ~/.codex/sessions)
// as Codex CLI writes them, until ctx is done, with the engine's watcher
// (ingest.Ingester.Watch): new files and appended lines are imported with ImportFile's
// cursor, a torn last line once it is complete, a file that changed under
// Logbook is reported and followed no more. Errors are ingest.Ingester.Watch's.
func (in *Ingester) Watch(ctx context.Context, cfg WatchConfig) error {
	return in.base.Watch(ctx, ingest.WatchConfig{
		Roots: cfg.Roots, Await: cfg.Await, Rescan: cfg.Rescan, Report: cfg.Report, Imported: cfg.Imported,
		Accept: LooksLikeRollout,
		Import: func(ctx context.Context, path, _ string) ([]ingest.FileResult, error) {
			r, err := in.ImportFile(ctx, path, nil)
			return []ingest.FileResult{r}, err
		},
	})
}
