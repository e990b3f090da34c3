package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// State is what `logbook replay` prints of a fresh fold: the point
// folded to, the last sequence folded, the projection's state hash and
// the sessions it holds.
type State struct {
	Point    string          `json:"point"` // Point.String
	Seq      uint64          `json:"seq"`
	Hash     string          `json:"hash"`
	Sessions []session.State `json:"sessions"`
	// Cut is where a Time point's prefix ended; nil for a point with no
	// Time, or one whose prefix reached the end of its selection.
	Cut *Cut `json:"cut,omitempty"`
}

// Cut says where a Time point's prefix ended and what that left out:
// the record dated after the point that ended it, and the records after
// that one, still within the point's other conditions, dated at or
// before the point (a clock set back) — events of that time the state
// does not hold, because folding them without the one before them would
// give a state that never existed.
type Cut struct {
	Seq  uint64 `json:"seq"`  // the stream sequence of the record that ended the prefix
	Left int    `json:"left"` // later records dated at or before the point, left out
	Last uint64 `json:"last"` // the sequence of the last of them (0 when Left is 0)
}

// StateAt folds log up to p into a fresh in-memory projection (At) and
// returns its State, with the Cut of a Time point (read from the records
// after the fold's last, to the end of p's selection): every session, or only session sess when it is not
// "" (an error wrapping events.ErrNotFound when the fold has none by that
// id: saying, for a point that is not the log's end, that the prefix
// holds no event of it). The projection is closed before it returns.
func StateAt(ctx context.Context, log events.Log, p Point, sess string) (State, error) {
	store, err := At(ctx, log, p, "")
	if err != nil {
		return State{}, err
	}
	defer store.Close()
	st := State{Point: p.String()}
	if st.Hash, st.Seq, err = store.Hash(); err != nil {
		return State{}, err
	}
	if p.timed() {
		if st.Cut, err = cutAfter(ctx, log, p, st.Seq); err != nil {
			return State{}, err
		}
	}
	if sess != "" {
		s, err := store.Session(sess)
		if errors.Is(err, events.ErrNotFound) && (p.Seq > 0 || p.timed()) {
			// The session may well be in the log, after the prefix.
			return State{}, fmt.Errorf("session %s: %w: it has no event in the replayed prefix (%s)", sess, events.ErrNotFound, p)
		}
		if err != nil {
			return State{}, err
		}
		st.Sessions = []session.State{s}
	} else if st.Sessions, err = store.Sessions(""); err != nil {
		return State{}, err
	}
	return st, nil
}

// CheckSeq refuses a seq past log's last event sequence: replaying "up
// to" it would silently replay everything. Errors are the log's, or one
// beginning "--seq <seq>: " that says so.
func CheckSeq(ctx context.Context, log events.Log, seq uint64) error {
	last, err := log.LastSeq(ctx)
	if err != nil {
		return err
	}
	if seq > last {
		if last == 0 {
			return &SeqError{fmt.Sprintf("--seq %d: the log is empty", seq)}
		}
		return &SeqError{fmt.Sprintf("--seq %d: past the log's last event sequence %d", seq, last)}
	}
	return nil
}

// SeqError is CheckSeq's refusal of a sequence past the log's end: a
// mistake of the caller's, not of the log.
type SeqError struct{ msg string }

func (e *SeqError) Error() string { return e.msg }

// cutAfter reads the records p selects after seq, the last one folded,
// and returns where p's Time ended the prefix and how many records after
// that point are dated at or before it: nil when none ends it.
func cutAfter(ctx context.Context, log events.Log, p Point, seq uint64) (*Cut, error) {
	var c *Cut
	visit := func(r events.Record) bool {
		if p.Seq > 0 && r.Seq > p.Seq {
			return false
		}
		switch {
		case r.Seq <= seq || r.Quarantined:
		case c == nil:
			c = &Cut{Seq: r.Seq}
		case !r.At.After(p.Time):
			c.Left++
			c.Last = r.Seq
		}
		return true
	}
	if p.Agg.Kind != "" {
		recs, _, err := log.Load(ctx, p.Agg)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", p, err)
		}
		for _, r := range recs {
			if !visit(r) {
				break
			}
		}
		return c, nil
	}
	for r, err := range log.Read(ctx, seq+1) {
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", p, err)
		}
		if !visit(r) {
			break
		}
	}
	return c, nil
}
