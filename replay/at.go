package replay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// Point selects a prefix of history, optionally narrowed to one
// aggregate. The zero Point is the whole log, to its end at the time of
// reading. Set conditions combine with "and".
type Point struct {
	// Seq, if > 0, keeps the records with Seq ≤ Seq.
	Seq uint64
	// Time, if not zero (or TimeSet), keeps the longest prefix (in stream order, of
	// the records the other conditions keep) whose envelope At are all
	// ≤ Time: the records before the first one dated after Time. The log
	// is ordered by Seq, not by At (clocks of different hosts disagree,
	// an agent's clock goes back), so filtering on At alone could fold a
	// record without one it follows: a state that never existed. A
	// prefix is one that did: the state Seq set to its last record gives.
	// Quarantined records are never folded and do not end it.
	Time time.Time
	// TimeSet says Time is given even when it is zero (0001-01-01T00:00:00Z,
	// before every event: the empty prefix).
	TimeSet bool
	// Agg, if its Kind is set, keeps only that aggregate's records, read
	// with Log.Load instead of the whole log.
	Agg events.Aggregate
}

// timed reports whether p keeps a prefix by time (Time or TimeSet).
func (p Point) timed() bool { return p.TimeSet || !p.Time.IsZero() }

// ends reports whether r, read in stream order (of p.Agg's records when
// set), ends the prefix p selects: it is past Seq, or dated after Time
// and not quarantined.
func (p Point) ends(r events.Record) bool {
	return (p.Seq > 0 && r.Seq > p.Seq) ||
		(p.timed() && !r.Quarantined && r.At.After(p.Time))
}

// String returns e.g. "seq ≤ 42, up to the first event dated after
// 2026-04-24T19:19:00.000000Z, session/s1", or "whole log".
func (p Point) String() string {
	s := ""
	add := func(part string) {
		if s != "" {
			s += ", "
		}
		s += part
	}
	if p.Seq > 0 {
		add(fmt.Sprintf("seq ≤ %d", p.Seq))
	}
	if p.timed() {
		add("up to the first event dated after " + p.Time.UTC().Format(events.TimeFormat))
	}
	if p.Agg.Kind != "" {
		add(p.Agg.String())
	}
	if s == "" {
		return "whole log"
	}
	return s
}

// Records yields the records of log that p selects, in stream order: a
// prefix of the log, or of p.Agg's records, that ends before the first
// record p.ends at. A
// record the log cannot decode is yielded as its error and ends the
// sequence: a replay never skips silently.
func Records(ctx context.Context, log events.Log, p Point) iter.Seq2[events.Record, error] {
	return func(yield func(events.Record, error) bool) {
		if p.Agg.Kind != "" {
			recs, _, err := log.Load(ctx, p.Agg)
			if err != nil {
				yield(events.Record{}, fmt.Errorf("replay %s: %w", p, err))
				return
			}
			for _, r := range recs {
				if p.ends(r) {
					return
				}
				if !yield(r, nil) {
					return
				}
			}
			return
		}
		for r, err := range log.Read(ctx, 1) {
			if err != nil {
				yield(r, fmt.Errorf("replay %s: %w", p, err))
				return
			}
			if p.ends(r) {
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// At rebuilds the default projections (projections.DefaultViews) as of p
// into a fresh store: in memory when dir is "", else in dir, which must
// not exist or be empty. The store's checkpoint is the Seq of the last
// record selected. The caller owns and closes the store; its Hash is the
// state hash as of p. Errors name what failed; a record that does not
// decode fails At.
func At(ctx context.Context, log events.Log, p Point, dir string) (*projections.Store, error) {
	return at(ctx, log, p, dir, projections.Options{})
}

// at is At with store options.
func at(ctx context.Context, log events.Log, p Point, dir string, opts projections.Options) (*projections.Store, error) {
	var (
		s   *projections.Store
		err error
	)
	if dir == "" {
		s, err = projections.OpenMem(opts)
	} else {
		if err := mustBeFresh(dir); err != nil {
			return nil, fmt.Errorf("replay at %s: %w", p, err)
		}
		opts.NoSync = true // a replay can always be rebuilt: its batches skip the fsync
		s, err = projections.Open(dir, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("replay at %s: %w", p, err)
	}
	if _, err := s.Apply(ctx, Records(ctx, log, p), replayBatch); err != nil {
		return nil, errors.Join(fmt.Errorf("replay at %s: %w", p, err), s.Close())
	}
	return s, nil
}

// replayBatch is how many records a replay commits at once. A replay's
// store is rebuilt from the log whenever it is lost, so it commits
// seldom: each session row is written once per batch it changed in.
const replayBatch = 1 << 16

// mustBeFresh refuses a directory that holds anything.
func mustBeFresh(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("directory %s is not empty", dir)
	}
	return nil
}
