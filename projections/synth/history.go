// Package synth builds synthetic session histories for benchmarks
// (`logbook bench`) and tests of projections and replay: valid logs made
// the way the engine makes them, by driving reducers/session.Decide with
// observations and requests and appending each decision, observation
// first, as one batch.
//
// Randomness comes from a Rand: a seeded math/rand/v2 generator for fixed
// histories, or a property-test generator (projectionstest.Rapid) so
// failures shrink. Nothing here touches a log or a store, and nothing here
// imports a test library: the production binary links it.
package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Rand is the randomness a History draws from. *rand.Rand of
// math/rand/v2 implements it.
type Rand interface {
	// IntN returns a number in [0, n); n > 0.
	IntN(n int) int
}

// Epoch returns the time of a generated history's first event:
// 2026-04-24T19:00:00Z.
func Epoch() time.Time { return time.Date(2026, 4, 24, 19, 0, 0, 0, time.UTC) }

// History is a log being built in memory. Its records are exactly what a
// log would return: every envelope went through the wire form and the
// strict registry, so times are UTC with microsecond precision.
// Not safe for concurrent use.
type History struct {
	// Records are the appended records, Seq 1, 2, … in order.
	Records []events.Record
	// States folds each session's records with session.Evolve.
	States map[string]session.State
	// Sessions lists session ids in order of creation.
	Sessions []string
	// Batches are the appended decisions, in order, as a log takes them:
	// Expect is the Seq of the aggregate's last record before the batch,
	// so appending them in order to an empty log reproduces Records.
	Batches []events.Batch
	// Rejected counts inputs Decide refused (nothing appended).
	Rejected int

	reg  *events.Registry
	last map[events.Aggregate]uint64 // Seq of each aggregate's last record
	now  time.Time
	ids  uint64
	keys []string // recent hook keys, for redeliveries
}

// NewHistory returns an empty history whose clock starts at start.
func NewHistory(start time.Time) *History {
	return &History{
		States: map[string]session.State{},
		reg:    events.NewRegistry(),
		last:   map[events.Aggregate]uint64{},
		now:    start,
	}
}

// Generate returns a history of steps random inputs (see Step) over at
// most sessions sessions, starting at Epoch().
func Generate(r Rand, steps, sessions int) (*History, error) {
	h := NewHistory(Epoch())
	for range steps {
		if err := h.Step(r, sessions); err != nil {
			return h, err
		}
	}
	return h, nil
}

// AppendTo appends h's batches to log in order, one Append each, and
// returns the log's last sequence. Each batch's Expect is taken from the
// log (Load for an aggregate's first batch, then the previous Append), so
// log need not be empty; on an empty log the stored records equal
// h.Records.
func (h *History) AppendTo(ctx context.Context, log events.Log) (uint64, error) {
	var last uint64
	expect := map[events.Aggregate]uint64{}
	for i, b := range h.Batches {
		e, ok := expect[b.Agg]
		if !ok {
			var err error
			if _, e, err = log.Load(ctx, b.Agg); err != nil {
				return last, fmt.Errorf("append batch %d of %d: %w", i+1, len(h.Batches), err)
			}
		}
		b.Expect = e
		a, err := log.Append(ctx, b)
		if err != nil {
			return last, fmt.Errorf("append batch %d of %d: %w", i+1, len(h.Batches), err)
		}
		expect[b.Agg] = a.Last
		last = a.Last
	}
	return last, nil
}

// AppendParallel appends h's batches to a log that holds none of h's
// aggregates from workers goroutines, each
// aggregate's batches in order by one of them, so the log's group commit
// merges decisions of different aggregates. The stream order across
// aggregates is then the log's, not h.Records', but every aggregate's
// events, and so every projection row, come out the same. It returns the
// first error; the goroutines have stopped when it returns.
func (h *History) AppendParallel(ctx context.Context, log events.Log, workers int) error {
	byAgg := map[events.Aggregate][]events.Batch{}
	var aggs []events.Aggregate
	for _, b := range h.Batches {
		if _, ok := byAgg[b.Agg]; !ok {
			aggs = append(aggs, b.Agg)
		}
		byAgg[b.Agg] = append(byAgg[b.Agg], b)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan events.Aggregate, len(aggs))
	for _, a := range aggs {
		todo <- a
	}
	close(todo)
	errs := make(chan error, max(workers, 1))
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for agg := range todo {
				var expect uint64
				for _, b := range byAgg[agg] {
					b.Expect = expect
					a, err := log.Append(ctx, b)
					if err != nil {
						errs <- fmt.Errorf("append %s: %w", agg, err)
						cancel()
						return
					}
					expect = a.Last
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Seq yields recs in order with no error: a log read held in memory.
func Seq(recs []events.Record) iter.Seq2[events.Record, error] {
	return func(yield func(events.Record, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// SeqFailing is Seq, except that the record with sequence bad is yielded
// with err instead, as a log yields a record it cannot decode.
func SeqFailing(recs []events.Record, bad uint64, err error) iter.Seq2[events.Record, error] {
	return func(yield func(events.Record, error) bool) {
		for _, r := range recs {
			if r.Seq == bad {
				if !yield(events.Record{Seq: r.Seq, Subject: r.Subject}, err) {
					return
				}
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// ID returns the history's next event id: deterministic, with the clock's
// time in its time part.
func (h *History) ID() ulid.ULID {
	h.ids++
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(h.now))
	binary.BigEndian.PutUint64(id[8:], h.ids)
	return id
}

// Now returns the history's clock.
func (h *History) Now() time.Time { return h.now }

// Tick advances the clock by d, truncated to microseconds.
func (h *History) Tick(d time.Duration) { h.now = h.now.Add(d).Truncate(time.Microsecond) }

// Step draws one input and appends what Decide makes of it: usually an
// observation (a transcript line or a hook) of a new or existing session,
// sometimes a request (end, change mode, attach or detach background
// work, abandon an entry). A refused or
// already seen input appends nothing. The error reports an envelope the
// registry refuses: a reducer bug.
func (h *History) Step(r Rand, sessions int) error {
	h.Tick(time.Duration(r.IntN(1500)) * time.Millisecond)
	id := h.pickSession(r, sessions)
	s := h.States[id]
	if s.Exists() && r.IntN(12) == 0 {
		return h.request(r, id, s)
	}
	obs, typ := h.observation(r, id, s)
	if s.Seen(&obs) {
		return nil
	}
	var p events.Payload = events.ClaudeHookObserved{Observation: obs}
	if typ == "line" {
		p = events.ClaudeLineObserved{Observation: obs}
	}
	_, err := h.Observe(id, p, "turn-"+strconv.Itoa(s.Turns))
	return err
}

// Observe decides the observation payload p for session id at the
// history's clock and appends the observation and its decisions. It
// returns the appended records; nil if Decide refused (counted in
// Rejected).
func (h *History) Observe(id string, p events.Payload, corr string) ([]events.Record, error) {
	obs := h.reg.New(p)
	obs.ID = h.ID()
	obs.Agg = events.Aggregate{Kind: events.KindSession, ID: id}
	obs.At = h.now
	obs.Corr = corr
	obs.Host = "host-a"
	obs.Actor = "claude-code"
	obs = h.States[id].Account(obs)
	decided, err := session.Decide(h.States[id], session.Observe{Obs: obs})
	if err != nil {
		h.Rejected++
		return nil, nil
	}
	return h.Append(append([]events.Envelope{obs}, decided...))
}

// Request decides cmd for session id and appends its decisions; nil if
// Decide refused.
func (h *History) Request(id string, cmd session.Command) ([]events.Record, error) {
	decided, err := session.Decide(h.States[id], cmd)
	if err != nil || len(decided) == 0 {
		h.Rejected++
		return nil, nil
	}
	return h.Append(decided)
}

// Append appends envs, one decision of one aggregate (at least one
// envelope), as the log would:
// it assigns ids (where zero) and dense Vers, round-trips each envelope
// through the wire form and the registry, and gives each the next stream
// sequence. The error reports an envelope the registry refuses.
func (h *History) Append(envs []events.Envelope) ([]events.Record, error) {
	if len(envs) == 0 {
		return nil, nil
	}
	out := make([]events.Record, 0, len(envs))
	batch := events.Batch{Agg: envs[0].Agg, Expect: h.last[envs[0].Agg]}
	for _, e := range envs {
		s := h.States[e.Agg.ID]
		if e.ID.IsZero() {
			e.ID = h.ID()
		}
		e.Ver = s.Ver + 1
		if e.Host == "" {
			e.Host = "host-a"
		}
		b, err := e.MarshalJSON()
		if err != nil {
			return out, fmt.Errorf("append %s: %w", e.Type, err)
		}
		dec, err := h.reg.Decode(b)
		if err != nil {
			return out, fmt.Errorf("append %s: %w", b, err)
		}
		rec := events.Record{Seq: uint64(len(h.Records) + 1), Subject: dec.Agg.Subject(), Envelope: dec}
		h.Records = append(h.Records, rec)
		if !s.Exists() && s.Ver == 0 {
			h.Sessions = append(h.Sessions, e.Agg.ID)
		}
		h.States[e.Agg.ID] = session.Evolve(s, dec)
		h.last[dec.Agg] = rec.Seq
		batch.Events = append(batch.Events, dec)
		out = append(out, rec)
	}
	h.Batches = append(h.Batches, batch)
	return out, nil
}

// pickSession returns an existing session id or a new one.
func (h *History) pickSession(r Rand, max int) string {
	if len(h.Sessions) == 0 || len(h.Sessions) < max && r.IntN(6) == 0 {
		return "s" + strconv.Itoa(len(h.Sessions)+1)
	}
	return h.Sessions[r.IntN(len(h.Sessions))]
}

// request appends a random request for an existing session.
func (h *History) request(r Rand, id string, s session.State) error {
	cause := events.Cause{Kind: "cli", Event: "request", Ref: "req-" + strconv.FormatUint(h.ids+1, 10)}
	var cmd session.Command
	switch r.IntN(5) {
	case 0:
		cmd = session.End{Reason: pick(r, "cli", ""), At: h.now, Cause: cause}
	case 1:
		cmd = session.ChangeMode{Mode: pick(r, events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeAuto, events.ModeFullAccess), At: h.now, Cause: cause}
	case 2:
		cmd = session.Attach{EntryID: "cmd-" + strconv.FormatUint(h.ids+1, 10), Activity: "command:go", At: h.now, Cause: cause}
	case 3:
		entry := "none"
		for _, e := range s.Entries {
			if strings.HasPrefix(e.EntryID, "cmd-") {
				entry = e.EntryID
			}
		}
		cmd = session.Detach{EntryID: entry, Outcome: pick(r, "", "exit 1"), At: h.now, Cause: cause}
	default:
		entry := "none"
		if len(s.Entries) > 0 {
			entry = s.Entries[r.IntN(len(s.Entries))].EntryID
		}
		cmd = session.Abandon{EntryID: entry, Reason: "requested", At: h.now, Cause: cause}
	}
	_, err := h.Request(id, cmd)
	return err
}

// observation draws a transcript line ("line") or a hook ("hook") for
// session id in state s.
func (h *History) observation(r Rand, id string, s session.State) (events.Observation, string) {
	o := events.Observation{Parser: "claude-test/1"}
	typ := "hook"
	if r.IntN(2) == 0 {
		typ = "line"
		o.Line = s.Lines + 1
		o.Path = "/home/u/.claude/projects/p/" + id + ".jsonl"
		o.Key = "line-" + strconv.Itoa(o.Line)
		o.Kind = pick(r, "user", "assistant", "system")
		o.UUID = "u-" + strconv.FormatUint(h.ids, 10)
	} else {
		o.Kind = pick(r, "PreToolUse", "PostToolUse", "Stop", "Notification", "UserPromptSubmit",
			"SessionStart", "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact")
		if len(h.keys) > 0 && r.IntN(10) == 0 {
			o.Key = h.keys[r.IntN(len(h.keys))] // a redelivered hook
		} else {
			o.Key = "hook-" + strconv.FormatUint(h.ids+1, 10)
			h.keys = append(h.keys, o.Key)
		}
	}
	o.Meta = events.Meta{SessionID: "agent-" + id}
	if s.Exists() && r.IntN(5) != 0 {
		// Usually the metadata stays as it was.
		o.Meta.Cwd, o.Meta.Model, o.Meta.AgentMode, o.Meta.GitBranch = s.Cwd, s.Model, s.AgentMode, s.GitBranch
	} else {
		o.Meta.Cwd = pick(r, "/w/a", "/w/a", "/w/b")
		o.Meta.Model = pick(r, "", "claude-opus", "claude-sonnet", "<synthetic>")
		o.Meta.AgentMode = pick(r, "", "", "default", "plan", "acceptEdits", "bypassPermissions", "auto")
		o.Meta.GitBranch = pick(r, "", "main", "dev")
	}
	if !s.Exists() && len(h.Sessions) > 0 && r.IntN(3) == 0 {
		// A subagent: its agent session id names a parent aggregate.
		o.Meta.SessionID = h.Sessions[r.IntN(len(h.Sessions))]
		o.Meta.AgentID = "a" + strconv.Itoa(r.IntN(3))
		o.Meta.AgentType = pick(r, "Explore", "general")
	}
	if r.IntN(8) == 0 {
		o.Meta.Title = pick(r, "fix the build", "refactor")
	}
	for range r.IntN(4) {
		o.Signals = append(o.Signals, h.signal(r))
	}
	return o, typ
}

// signal draws one signal. Tool ids come from a small window that moves
// with the history, so uses meet their results and ids are rarely reused.
func (h *History) signal(r Rand) events.Sig {
	tool := "t" + strconv.FormatUint(h.ids/16+uint64(r.IntN(3)), 10)
	switch r.IntN(21) {
	case 0:
		return events.Sig{Kind: events.SigSessionStart, Name: pick(r, "startup", "resume")}
	case 1, 2:
		return events.Sig{Kind: events.SigPrompt, ID: "p" + strconv.Itoa(r.IntN(100))}
	case 3:
		return events.Sig{Kind: events.SigThinking}
	case 4:
		return events.Sig{Kind: events.SigText, Text: pick(r, "done.", "shall I go on?", "")}
	case 5, 6, 19:
		return events.Sig{Kind: events.SigToolUse, ID: tool, Name: pick(r, "Bash", "Read", "Edit", "AskUserQuestion", "Task"), Background: r.IntN(4) == 0}
	case 7, 8, 20:
		return events.Sig{Kind: events.SigToolResult, ID: tool, Status: pick(r, "", events.OutcomeOK, events.OutcomeError,
			events.OutcomeRejected, events.OutcomeInterrupted, events.OutcomeBackground), Task: pick(r, "", "b1", "b2")}
	case 9:
		return events.Sig{Kind: events.SigTurnEnd}
	case 10:
		return events.Sig{Kind: events.SigInterrupt}
	case 11:
		return events.Sig{Kind: events.SigPermission, ID: pick(r, tool, ""), Name: "Bash", Text: "rm -rf build"}
	case 12:
		return events.Sig{Kind: events.SigQuestion, ID: tool}
	case 13:
		return events.Sig{Kind: events.SigIdle}
	case 14:
		return events.Sig{Kind: pick(r, events.SigCompactStart, events.SigCompactEnd)}
	case 15:
		return events.Sig{Kind: events.SigBackgroundDone, Task: pick(r, "b1", "b2"), Status: pick(r, "completed", "failed")}
	case 16:
		return events.Sig{Kind: pick(r, events.SigSubagentStart, events.SigSubagentStop), ID: pick(r, "x1", "x2"), Name: "Explore"}
	case 17:
		return events.Sig{Kind: events.SigMode, Name: pick(r, "default", "plan", "bypassPermissions")}
	default:
		if r.IntN(3) == 0 {
			return events.Sig{Kind: events.SigSessionEnd, Text: "prompt_input_exit"}
		}
		return events.Sig{Kind: events.SigAPIError, Text: "overloaded"}
	}
}

func pick[T any](r Rand, xs ...T) T { return xs[r.IntN(len(xs))] }
