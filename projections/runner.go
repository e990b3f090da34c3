package projections

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logbook-dev/logbook/events"
)

// DefaultInterval is how long Run lets an applied record wait for its
// commit when Runner.Interval is 0.
const DefaultInterval = 50 * time.Millisecond

// Runner keeps Store in step with Log: it reads the records after the
// store's checkpoint and applies them (Store.Apply). A store must have at
// most one Runner at a time; a Runner's methods must not run concurrently
// with each other. Queries on the store may run at any time.
type Runner struct {
	Log   events.Log // the log read; not closed by the Runner
	Store *Store     // the projection kept; not closed by the Runner
	// Batch is the most records committed in one batch; 0 means
	// DefaultBatch.
	Batch int
	// Interval bounds, in Run, how long an applied record waits before
	// its batch commits; 0 means DefaultInterval (50 ms).
	Interval time.Duration
}

func (r *Runner) batch() int {
	if r.Batch > 0 {
		return r.Batch
	}
	return DefaultBatch
}

func (r *Runner) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

// RunOnce applies up to Batch records after the store's checkpoint, read
// with Log.Read(ctx, checkpoint+1), and commits them with the new
// checkpoint in one atomic batch. It returns how many it applied; 0 means
// caught up. It never waits for new records.
//
// On a stale store (Store.Stale) RunOnce works on the rebuild instead: it
// applies the batch to a fresh projection in the directory dir+".rebuild"
// (resuming one left by an earlier run if its view versions are the
// code's), and when that projection has caught up (a RunOnce that applied
// nothing) it swaps it in: close both, rename dir → dir+".old", rename
// dir+".rebuild" → dir, fsync the parent, remove dir+".old", reopen.
// Queries answer from the old rows until the swap and block during it.
// Each directory is always a complete projection at its own checkpoint,
// and Open repairs a swap cut short by a crash (it finishes the renames
// or undoes them), so a crash at any point costs at most rebuild progress.
//
// A record the log cannot decode stops RunOnce with an error naming its
// sequence; the records before it are committed, and the next call fails
// on the same record again.
func (r *Runner) RunOnce(ctx context.Context) (int, error) {
	return r.step(ctx, r.batch())
}

// step applies up to most records (most ≤ 0: all up to the log's current
// end) after the checkpoint of the store or of its rebuild, committing
// every Batch records, and swaps a caught-up rebuild in.
func (r *Runner) step(ctx context.Context, most int) (int, error) {
	target := r.Store
	stale := target.Stale()
	if stale {
		var err error
		if target, err = r.Store.rebuildTarget(); err != nil {
			return 0, err
		}
	}
	recs := r.Log.Read(events.WithQuarantined(ctx), target.Checkpoint()+1)
	if most > 0 {
		recs = limit(recs, most)
	}
	n, err := target.Apply(ctx, recs, r.batch())
	if err != nil || n > 0 || !stale {
		return n, err
	}
	return 0, r.Store.swap()
}

// RunToEnd applies every record after the checkpoint up to the log's end,
// committing every Batch records, until a read finds nothing new (so
// records appended meanwhile are applied too), finishing a pending
// rebuild on the way. It returns the total applied. Unlike a loop of
// RunOnce, each pass reads the log with a single Read.
func (r *Runner) RunToEnd(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := r.step(ctx, 0)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// Run catches up (RunToEnd) and then follows the log live with
// Log.Follow, committing when Batch records are applied or Interval after
// the first uncommitted one, whichever comes first, or as soon as the
// records a Store.WaitFor waits for are applied. Such a commit, made for
// a reader waiting, does not wait for the fsync of the store's
// write-ahead log: a process crash loses nothing of it, and the log is
// synced Interval after it at the latest (or by the next commit), as a
// record applied is durable Interval after it at the latest either way;
// an OS crash before then loses the batch with its checkpoint, which
// re-applying from the log repairs. It returns ctx's error
// once ctx is done, after committing what it applied, or the first
// error of the log or a view (a record that does not decode stops it,
// naming the sequence). Run owns one goroutine, which reads the log and
// has stopped when Run returns.
func (r *Runner) Run(ctx context.Context) error {
	if _, err := r.RunToEnd(ctx); err != nil {
		return err
	}
	s := r.Store
	from := s.Checkpoint() + 1

	type item struct {
		rec events.Record
		err error
	}
	fctx, cancel := context.WithCancel(ctx)
	items := make(chan item, r.batch())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(items)
		for rec, err := range r.Log.Follow(events.WithQuarantined(fctx), from) {
			select {
			case items <- item{rec, err}:
			case <-fctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-done
	}()

	var (
		w     *batch
		last  = s.Checkpoint()
		timer = time.NewTimer(time.Hour)
		// unsynced: a commit for a waiter (commitNow) left the
		// write-ahead log unsynced; syncTimer syncs it Interval after.
		unsynced  bool
		syncTimer = time.NewTimer(time.Hour)
	)
	timer.Stop()
	syncTimer.Stop()
	defer syncTimer.Stop()
	defer func() {
		if w != nil {
			w.abort()
		}
	}()
	syncWAL := func() error {
		if !unsynced {
			return nil
		}
		unsynced = false
		return s.syncWAL()
	}
	// commit commits the batch as the store's options say (synced by
	// default), which syncs the commits before it too.
	commit := func() error {
		timer.Stop()
		if w == nil {
			return syncWAL()
		}
		n, err := w.commit()
		w = nil
		if err == nil && n > 0 && s.wo.Sync {
			unsynced = false
		}
		return err
	}
	// commitNow commits the batch for a waiter, without the fsync.
	commitNow := func() error {
		if !s.wo.Sync {
			return commit()
		}
		timer.Stop()
		if w == nil {
			return nil
		}
		_, err := w.commitWith(pebble.NoSync)
		w = nil
		if err == nil && !unsynced {
			unsynced = true
			syncTimer.Reset(r.interval())
		}
		return err
	}
	for {
		select {
		case it, ok := <-items:
			if !ok {
				cerr := commit()
				if err := ctx.Err(); err != nil {
					return errors.Join(err, cerr)
				}
				return errors.Join(fmt.Errorf("follow from %d: the log stopped", from), cerr)
			}
			if it.err != nil {
				err := recordError(it.rec.Seq, last, it.err)
				cerr := commit()
				return errors.Join(err, cerr)
			}
			if w == nil {
				var err error
				if w, err = s.begin(); err != nil {
					return err
				}
				timer.Reset(r.interval())
			}
			if err := w.add(it.rec); err != nil {
				w.abort()
				w = nil
				return err
			}
			last = w.last
			switch {
			case w.n >= r.batch():
				if err := commit(); err != nil {
					return err
				}
			case s.owed(w.last, len(items) == 0):
				if err := commitNow(); err != nil {
					return err
				}
			}
		case <-timer.C:
			if err := commit(); err != nil {
				return err
			}
		case <-syncTimer.C:
			if err := syncWAL(); err != nil {
				return err
			}
		case <-s.demand:
			if w != nil && s.owed(w.last, len(items) == 0) {
				if err := commitNow(); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			cerr := commit()
			return errors.Join(ctx.Err(), cerr)
		}
	}
}

// limit yields the first n items of seq.
func limit(seq iter.Seq2[events.Record, error], n int) iter.Seq2[events.Record, error] {
	return func(yield func(events.Record, error) bool) {
		if n <= 0 {
			return
		}
		i := 0
		for r, err := range seq {
			i++
			if !yield(r, err) || i >= n {
				return
			}
		}
	}
}
