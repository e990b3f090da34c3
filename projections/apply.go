package projections

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logbook-dev/logbook/events"
)

// DefaultBatch is the number of records per committed batch when a batch
// size is 0.
const DefaultBatch = 4096

// MemoCarry is the most entries a view's Tx.Memo may hold at a commit and
// still be carried to the store's next batch; a larger one is dropped, so
// what a store keeps decoded between batches stays bounded.
const MemoCarry = 1024

// carried is what the views left in their memos at the store's last
// commit, kept for its next batch (see Tx.Memo); guarded by Store.wmu.
type carried struct {
	db    *pebble.DB // the database it was committed to
	cp    uint64     // the checkpoint it was committed with
	memos []map[string]any
}

// Apply folds recs into the store and returns how many records it
// committed. It commits the rows and the checkpoint (the last applied Seq)
// in one atomic Pebble batch every size records (size ≤ 0: DefaultBatch)
// and once more at the end, so the checkpoint never runs ahead of or
// behind the rows.
//
// Records with Seq ≤ the checkpoint, or not above the previous record's,
// are skipped: re-delivering records already applied has no effect. A
// record with Seq 0 is refused.
//
// An error yielded by recs (a record that does not decode) stops Apply:
// the records before it are committed and the error, naming the record's
// sequence, is returned; nothing is skipped silently. An error from a view
// aborts the batch being built (none of its records are committed). When
// ctx is done Apply commits what it applied and returns ctx's error.
// Apply on a stale store returns ErrStale; on a closed one, ErrClosed.
// Batches are serialized with other writers of the store.
func (s *Store) Apply(ctx context.Context, recs iter.Seq2[events.Record, error], size int) (int, error) {
	if size <= 0 {
		size = DefaultBatch
	}
	var (
		w     *batch
		total int
	)
	defer func() {
		if w != nil {
			w.abort()
		}
	}()
	commit := func() error {
		if w == nil {
			return nil
		}
		n, err := w.commit()
		w = nil
		total += n
		return err
	}
	last := s.Checkpoint()
	for r, err := range recs {
		if err != nil {
			err = recordError(r.Seq, last, err)
			cerr := commit()
			return total, errors.Join(err, cerr)
		}
		if err := ctx.Err(); err != nil {
			cerr := commit()
			return total, errors.Join(fmt.Errorf("project after %d: %w", last, err), cerr)
		}
		if w == nil {
			if w, err = s.begin(); err != nil {
				return total, err
			}
		}
		if err := w.add(r); err != nil {
			w.abort()
			w = nil
			return total, err
		}
		last = w.last
		if w.n >= size {
			if err := commit(); err != nil {
				return total, err
			}
		}
	}
	return total, commit()
}

// recordError names the sequence of a record the log could not decode.
func recordError(seq, last uint64, err error) error {
	if seq != 0 {
		return fmt.Errorf("project record %d: %w", seq, err)
	}
	return fmt.Errorf("project record after %d: %w", last, err)
}

// batch is one Pebble batch being built: the records applied to it, for
// every view. It holds the store's writer lock and read lock from begin to
// commit or abort.
type batch struct {
	s       *Store
	b       *pebble.Batch
	txs     []Tx
	n       int    // records applied
	skipped int    // quarantined records passed over (Record.Quarantined)
	last    uint64 // Seq of the last record applied or passed over, or the checkpoint
}

// begin starts a batch on the committed state.
func (s *Store) begin() (*batch, error) {
	s.wmu.Lock()
	s.mu.RLock()
	switch {
	case s.db == nil:
		s.mu.RUnlock()
		s.wmu.Unlock()
		return nil, ErrClosed
	case s.stale:
		s.mu.RUnlock()
		s.wmu.Unlock()
		return nil, fmt.Errorf("project into %s: %w", s.dir, ErrStale)
	}
	w := &batch{s: s, b: s.db.NewIndexedBatch(), txs: make([]Tx, len(s.views)), last: s.cp.Load()}
	c := s.carry
	for i, v := range s.views {
		w.txs[i] = Tx{b: w.b, dir: s.dir, name: v.Name()}
		if c.db == s.db && c.cp == w.last && i < len(c.memos) {
			w.txs[i].memo = c.memos[i]
		}
	}
	return w, nil
}

// add applies r to every view, unless r was applied before.
func (w *batch) add(r events.Record) error {
	if r.Seq == 0 {
		return fmt.Errorf("project record %s (%s): no stream sequence", r.ID, r.Type)
	}
	if r.Seq <= w.last {
		return nil
	}
	if r.Quarantined {
		// Never folded; the checkpoint moves past it, so a wait for
		// the log's last event is not held up by one.
		w.skipped++
		w.last = r.Seq
		return nil
	}
	for i, v := range w.s.views {
		if err := v.Apply(&w.txs[i], r); err != nil {
			return fmt.Errorf("project record %d (%s %s) in view %s: %w", r.Seq, r.Type, r.Agg, v.Name(), err)
		}
	}
	w.n++
	w.last = r.Seq
	return nil
}

// commit flushes the views, adds the checkpoint and commits, then
// releases the batch and the locks. It returns how many records it
// committed.
func (w *batch) commit() (_ int, err error) { return w.commitWith(w.s.wo) }

// commitWith is commit with write options wo: pebble.NoSync skips the
// fsync of the write-ahead log, which a later synced commit, or
// Store.syncWAL, makes up for.
func (w *batch) commitWith(wo *pebble.WriteOptions) (_ int, err error) {
	defer w.release()
	defer guard(w.s.dir, &err)
	if w.n == 0 && w.skipped == 0 { // no view was called: the memos still match
		return 0, nil
	}
	w.s.carry = carried{} // until the commit succeeds
	for i, v := range w.s.views {
		if f, ok := v.(Flusher); ok {
			if err := f.Flush(&w.txs[i]); err != nil {
				return 0, fmt.Errorf("project up to %d: flush view %s: %w", w.last, v.Name(), err)
			}
		}
	}
	var cp [8]byte
	binary.BigEndian.PutUint64(cp[:], w.last)
	if err := w.b.Set([]byte(KeyCheckpoint), cp[:], nil); err != nil {
		return 0, fmt.Errorf("project up to %d: %w", w.last, err)
	}
	if err := w.b.Commit(wo); err != nil {
		return 0, fmt.Errorf("project up to %d: commit: %w", w.last, err)
	}
	w.s.setCheckpoint(w.last)
	memos := make([]map[string]any, len(w.txs))
	for i := range w.txs {
		if m := w.txs[i].memo; len(m) <= MemoCarry {
			memos[i] = m
		}
	}
	w.s.carry = carried{db: w.s.db, cp: w.last, memos: memos}
	return w.n, nil
}

// abort drops the batch, and the memos its views may have changed, and
// releases the locks.
func (w *batch) abort() {
	if w.b != nil {
		w.s.carry = carried{}
	}
	w.release()
}

func (w *batch) release() {
	if w.b == nil {
		return
	}
	_ = w.b.Close() // an uncommitted batch's Close only frees memory
	w.b = nil
	w.s.mu.RUnlock()
	w.s.wmu.Unlock()
}
