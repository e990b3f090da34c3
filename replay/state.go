package replay

import (
	"context"
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
}

// StateAt folds log up to p into a fresh in-memory projection (At) and
// returns its State: every session, or only session sess when it is not
// "" (an error wrapping events.ErrNotFound when the fold has none by that
// id). The projection is closed before it returns.
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
	if sess != "" {
		s, err := store.Session(sess)
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
