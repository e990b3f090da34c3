package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
// and folded whole, by worker.SessionAudit. mark is called as
// SessionAudit calls it.
func sessionAudit(ctx context.Context, log *natslog.Log, id string, quarantined func() []replay.Unattested, mark func(stage string)) ([]replay.Item, error) {
	if mark == nil {
		mark = func(string) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg         sync.WaitGroup
		ids        []string
		cerr, nerr error
		told       []replay.Item
	)
	defer wg.Wait()
	wg.Go(func() {
		if ids, cerr = worker.SessionCommands(ctx, log, id); cerr != nil {
			cancel()
		}
	})
	wg.Go(func() {
		if told, nerr = notificationItems(ctx, log, id); nerr != nil {
			cancel()
		}
	})
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	var f timelineFold
	_, rerr := log.LoadEach(ctx, agg, f.size, f.add)
	if rerr == nil {
		f.flush()
	}
	mark(worker.AuditSessionRead)
	if rerr != nil {
		cancel() // the read's error is the answer (SessionTimeline's)
	}
	wg.Wait()
	mark(worker.AuditCommandsFound)
	// A scan's own error is the cause, not the read it cut short.
	var (
		items []replay.Item
		terr  error
	)
	switch {
	case rerr != nil:
		terr = fmt.Errorf("timeline %s: %w", agg, rerr)
	case cerr != nil:
		return nil, cerr
	case nerr != nil:
		return nil, nerr
	case !f.exact():
		return worker.SessionAudit(ctx, log, id, quarantined, mark)
	default:
		items, terr = f.timeline(ctx, log, agg, ids)
	}
	notFound := errors.Is(terr, events.ErrNotFound)
	if terr != nil && !notFound {
		return nil, terr
	}
	items = append(items, told...)
	replay.SortBySeq(items)
	subjects := map[string]bool{agg.Subject(): true}
	for _, c := range ids {
		subjects[events.Aggregate{Kind: events.KindCommand, ID: c}.Subject()] = true
	}
	var us []replay.Unattested
	for _, u := range quarantined() {
		if subjects[u.Subject] {
			us = append(us, u)
		}
	}
	if notFound && len(us) == 0 {
		return nil, terr
	}
	items = replay.WithUnattested(items, us)
	mark(worker.AuditFolded)
	return items, nil
}

// notificationItems is the timeline of every notification sent about
// session, as worker.SessionAudit makes it: each read with Load, in
// stream order. Errors are the log's, naming the session and the
// notification.
func notificationItems(ctx context.Context, log *natslog.Log, session string) ([]replay.Item, error) {
	told, err := worker.SessionNotifications(ctx, log, session)
	if err != nil {
		return nil, err
	}
	var items []replay.Item
	for _, n := range told {
		recs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindNotification, ID: n})
		if err != nil {
			return nil, fmt.Errorf("audit %s: notification %s: %w", session, n, err)
		}
		items = append(items, replay.TimelineOf(recs)...)
	}
	return items, nil
}

// foldBatch is how many of a session's records timelineFold folds at once.
const foldBatch = 256

// timelineFold folds a session's records, handed over in stream order,
// into the items replay.TimelineOf makes of them all: every
// foldBatchth record it folds the batch, with the observations seen
// before it that the batch's events name (replay.TimelineOf takes an
// event's observation from those it is given: its cause's, and a
// verdict's evidence), and keeps the items. It keeps every observation,
// as an item may name it, and notes what tells whether the batches made
// the items the whole session would (exact). The zero timelineFold is
// empty.
type timelineFold struct {
	batch []events.Record
	// named is the scratch slice a batch is folded from: the
	// observations it names, then the batch.
	named []events.Record
	items []replay.Item
	obs   map[string]foldedObs // every observation so far, by id
	// evidence holds the ids a verdict's evidence names that were not
	// among the observations up to its batch's end.
	evidence map[string]bool
	commands []string // from the session's entries "cmd-<id>"
	records  int      // records folded, observations included
	clash    bool     // an observation came after an event of an earlier batch that names it, or two share an id
}

// foldedObs is an observation kept and how many items were made before
// its batch.
type foldedObs struct {
	rec    events.Record
	before int
}

// size sizes the fold's items for n records (natslog.Log.LoadEach).
func (f *timelineFold) size(n uint64) {
	f.items = make([]replay.Item, 0, n)
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
	if len(f.batch) == foldBatch {
		f.flush()
	}
	return nil
}

// flush folds the batch.
func (f *timelineFold) flush() {
	if len(f.batch) == 0 {
		return
	}
	before := len(f.items)
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
	// The observations of earlier batches the batch's events name; the
	// batch's own are in it.
	f.named = f.named[:0]
	for _, r := range f.batch {
		for _, ref := range refsOf(r) {
			o, ok := f.obs[ref]
			switch {
			case !ok:
				if _, verdict := r.Data.(events.ReviewDecided); verdict {
					if f.evidence == nil {
						f.evidence = map[string]bool{}
					}
					f.evidence[ref] = true
				}
			case o.before < before && !slices.ContainsFunc(f.named, func(n events.Record) bool { return n.ID == o.rec.ID }):
				f.named = append(f.named, o.rec)
			}
		}
	}
	f.named = append(f.named, f.batch...)
	f.items = append(f.items, replay.TimelineOf(f.named)...)
	clear(f.named)
	clear(f.batch)
	f.batch = f.batch[:0]
}

// refsOf returns the ids of the observations r's item may be made with
// (replay.TimelineOf): its cause's ref, and a verdict's evidence.
func refsOf(r events.Record) []string {
	var refs []string
	if r.Cause != nil && r.Cause.Ref != "" {
		refs = append(refs, r.Cause.Ref)
	}
	if d, ok := r.Data.(events.ReviewDecided); ok {
		refs = append(refs, d.Evidence...)
	}
	return refs
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
	for i, it := range f.items {
		if it.Cause == nil {
			continue
		}
		if o, ok := f.obs[it.Cause.Ref]; ok && i < o.before {
			return false
		}
	}
	return true
}

// timeline returns what replay.SessionTimeline returns of the session
// agg, its items folded, with the events of commands (those the session
// opened an entry of and those given) read with Load.
func (f *timelineFold) timeline(ctx context.Context, log events.Log, agg events.Aggregate, commands []string) ([]replay.Item, error) {
	ids := append(slices.Clone(commands), f.commands...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	items := f.items
	found := len(items) > 0 // observations alone do not start a session
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
	replay.SortBySeq(items)
	return items, nil
}
