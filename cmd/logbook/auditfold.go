package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// sessionAudit returns what worker.SessionAudit returns, the same items
// in the same order, with the session's events folded into their
// timeline items as the read hands them over (natslog.Log.LoadEach), a
// batch at a time, rather than read whole first: the process holds the
// items, not the records, nor the read's buffers. Each batch is folded by
// replay.TimelineOf with the observations before it that its events
// name; when an observation turns out to come after an event that
// names it (or two observations share an id), whose item the whole
// session's observations would have changed, the session is read again
// and folded whole, by worker.SessionAudit. The items are returned in
// the runs they were folded in when nothing is merged into them (no
// command, notification or unattested event of the session), else in
// one run. mark is called as SessionAudit calls it. The session's read
// goes on from start (natslog.Log.StartLoad of the session id) when it
// is not nil.
func sessionAudit(ctx context.Context, log *natslog.Log, id string, start *natslog.LoadStart, quarantined func() []replay.Unattested, mark func(stage string)) (auditRuns, error) {
	if mark == nil {
		mark = func(string) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lk := worker.StartAuditLookups(ctx, cancel, log, id)
	defer lk.Wait()
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	var f timelineFold
	var rerr error
	if start != nil {
		_, rerr = start.LoadEach(ctx, f.size, f.add)
	} else {
		_, rerr = log.LoadEach(ctx, agg, f.size, f.add)
	}
	if rerr == nil {
		f.flush()
	}
	mark(worker.AuditSessionRead)
	if rerr != nil {
		cancel() // the read's error is the answer (SessionTimeline's)
	}
	lk.Wait()
	ids, told := lk.Commands, lk.Told
	mark(worker.AuditCommandsFound)
	// A scan's own error is the cause, not the read it cut short.
	var (
		cmds []replay.Item
		terr error
	)
	switch {
	case rerr != nil:
		terr = fmt.Errorf("timeline %s: %w", agg, rerr)
	case lk.CommandsErr != nil:
		return nil, lk.CommandsErr
	case lk.ToldErr != nil:
		return nil, lk.ToldErr
	case !f.exact():
		items, err := worker.SessionAudit(ctx, log, id, quarantined, mark)
		return auditRuns{items}, err
	default:
		cmds, terr = f.commandItems(ctx, log, agg, ids)
	}
	notFound := errors.Is(terr, events.ErrNotFound)
	if terr != nil && !notFound {
		return nil, terr
	}
	us := worker.SessionUnattested(quarantined(), id, ids)
	if notFound && len(us) == 0 {
		return nil, terr
	}
	if terr == nil && len(cmds) == 0 && len(told) == 0 && len(us) == 0 {
		// The session's own items, in stream order as folded.
		mark(worker.AuditFolded)
		return f.runs, nil
	}
	var items []replay.Item
	if terr == nil {
		// As replay.SessionTimeline orders them.
		items = append(f.runs.flat(), cmds...)
		replay.SortBySeq(items)
	}
	items = append(items, told...)
	replay.SortBySeq(items)
	items = replay.WithUnattested(items, us)
	mark(worker.AuditFolded)
	return auditRuns{items}, nil
}

// auditRuns is an audit timeline held in the runs of items it was made
// in: the timeline is the runs one after the other.
type auditRuns [][]replay.Item

// flat returns the timeline in one slice: the run itself when there is
// one, else a copy of them all.
func (r auditRuns) flat() []replay.Item {
	if len(r) == 1 {
		return r[0]
	}
	return slices.Concat(r...)
}

// foldBatch is how many of a session's records timelineFold folds at once.
const foldBatch = 2048

// foldTail is how many of a session's last records timelineFold leaves
// to its last batch when the read said how many the session holds: that
// batch is folded once the read has ended, before the timeline is
// written, and a whole foldBatch of it (an audit of 20,000 events left
// 1,568) took longer than folding it as the records came.
const foldTail = 256

// timelineFold folds a session's records, handed over in stream order,
// into the items replay.TimelineOf makes of them all: every
// foldBatchth record it folds the batch, with the observations seen
// before it that the batch's events name (replay.TimelineOf takes an
// event's observation from those it is given: its cause's, and a
// verdict's evidence), and keeps the items, one run a batch. It keeps
// every observation, as an item may name it, and notes what tells
// whether the batches made the items the whole session would (exact).
// The zero timelineFold is empty.
type timelineFold struct {
	batch []events.Record
	runs  auditRuns
	items int                  // items in runs
	obs   map[string]foldedObs // every observation so far, by id
	// evidence holds the ids a verdict's evidence names that were not
	// among the observations up to its batch's end.
	evidence map[string]bool
	commands []string // from the session's entries "cmd-<id>"
	records  int      // records folded, observations included
	clash    bool     // an observation came after an event of an earlier batch that names it, or two share an id
	held     uint64   // the messages the read said the session holds (size); 0: not said
}

// foldedObs is an observation kept and how many items were made before
// its batch.
type foldedObs struct {
	rec    events.Record
	before int
}

// add folds r, the session's next record. It never fails.
func (f *timelineFold) add(r events.Record) error {
	f.records++
	if d, ok := r.Data.(events.SessionEntryOpened); ok {
		if c, ok := strings.CutPrefix(d.EntryID, replay.CommandEntryPrefix); ok && events.ValidID(c) == nil {
			f.commands = append(f.commands, c)
		}
	}
	if f.batch == nil {
		f.batch = make([]events.Record, 0, foldBatch)
	}
	f.batch = append(f.batch, r)
	if len(f.batch) == foldBatch || f.held > foldTail && uint64(f.records) == f.held-foldTail {
		f.flush()
	}
	return nil
}

// size notes n, the messages the read says the session holds
// (natslog.Log.LoadEach's size): the batch before the last foldTail
// of them is folded as it ends, however short.
func (f *timelineFold) size(n uint64) { f.held = n }

// flush folds the batch.
func (f *timelineFold) flush() {
	if len(f.batch) == 0 {
		return
	}
	before := f.items
	for _, r := range f.batch {
		if _, ok := events.Observed(r.Data); !ok {
			continue
		}
		id := r.ID.String()
		if f.obs == nil {
			f.obs = map[string]foldedObs{}
		}
		if _, dup := f.obs[id]; dup || f.evidence[id] {
			f.clash = true
		}
		f.obs[id] = foldedObs{rec: r, before: before}
	}
	// The observations of earlier batches the batch's events name go
	// after it, where they make no item (the batch's own are in it).
	n := len(f.batch)
	for _, r := range f.batch[:n] {
		for ref := range refsOf(r) {
			o, ok := f.obs[ref]
			switch {
			case !ok:
				if _, verdict := r.Data.(events.ReviewDecided); verdict {
					if f.evidence == nil {
						f.evidence = map[string]bool{}
					}
					f.evidence[ref] = true
				}
			case o.before < before && !slices.ContainsFunc(f.batch[n:], func(n events.Record) bool { return n.ID == o.rec.ID }):
				f.batch = append(f.batch, o.rec)
			}
		}
	}
	if run := replay.TimelineOf(f.batch); len(run) > 0 {
		f.runs = append(f.runs, run)
		f.items += len(run)
	}
	clear(f.batch)
	f.batch = f.batch[:0]
}

// refsOf yields the ids of the observations r's item may be made with
// (replay.TimelineOf): its cause's ref, and a verdict's evidence.
func refsOf(r events.Record) iter.Seq[string] {
	return func(yield func(string) bool) {
		if r.Cause != nil && r.Cause.Ref != "" && !yield(r.Cause.Ref) {
			return
		}
		if d, ok := r.Data.(events.ReviewDecided); ok {
			for _, ref := range d.Evidence {
				if !yield(ref) {
					return
				}
			}
		}
	}
}

// exact reports whether the items folded batch by batch are those
// replay.TimelineOf makes of the whole session: no two observations
// share an id, and none names an observation that came in a later batch
// than its own.
func (f *timelineFold) exact() bool {
	if f.clash {
		return false
	}
	if len(f.obs) == 0 {
		return true
	}
	i := 0
	for _, run := range f.runs {
		for _, it := range run {
			if it.Cause != nil {
				if o, ok := f.obs[it.Cause.Ref]; ok && i < o.before {
					return false
				}
			}
			i++
		}
	}
	return true
}

// commandItems returns the items of the commands replay.SessionTimeline
// merges into the session agg's (those the session opened an entry of
// and those given), each read with Load, in the order it reads them, or
// the error SessionTimeline returns when neither the session nor its
// commands have an item.
func (f *timelineFold) commandItems(ctx context.Context, log events.Log, agg events.Aggregate, commands []string) ([]replay.Item, error) {
	ids := append(slices.Clone(commands), f.commands...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var items []replay.Item
	found := f.items > 0 // observations alone do not start a session
	for _, c := range ids {
		crecs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindCommand, ID: c})
		if err != nil {
			return nil, fmt.Errorf("timeline %s: command %s: %w", agg, c, err)
		}
		if len(crecs) > 0 {
			found = true
			items = append(items, replay.CommandTimelineOf(crecs)...)
		}
	}
	if !found && f.records > 0 {
		return nil, fmt.Errorf("timeline %s: %w: it has not started (%d observation(s) recorded)", agg, events.ErrNotFound, f.records)
	}
	if !found {
		return nil, fmt.Errorf("timeline %s: %w", agg, events.ErrNotFound)
	}
	return items, nil
}
