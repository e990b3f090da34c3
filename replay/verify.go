package replay

import (
	"bytes"
	"context"
	"fmt"
	"iter"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// Report is the outcome of Verify. Its JSON field names are stable.
type Report struct {
	// Seq is the live store's checkpoint: the replay folded exactly the
	// records with Seq ≤ Seq.
	Seq uint64 `json:"seq"`
	// LiveHash and ReplayHash are the state hashes (hex SHA-256) of the
	// live store and of the fresh replay.
	LiveHash   string `json:"live_hash"`
	ReplayHash string `json:"replay_hash"`
	// Equal reports LiveHash == ReplayHash.
	Equal bool `json:"equal"`
	// Diff is the first key, in key order, where the two differ; nil
	// when Equal.
	Diff *Diff `json:"diff,omitempty"`
	// Unattested lists the events the log left out of both folds as
	// unattested (filled in by a caller whose log judges signatures);
	// any makes the check fail.
	Unattested []Unattested `json:"unattested,omitempty"`
	// SignedUnjudged is the stream sequence of the log's signing.began
	// when the log is signed and the host that folded it pins no admin
	// key (filled in by a caller whose log reads unjudged), 0 otherwise.
	// Any makes the check fail: such a host folds what every host that
	// pins the key leaves out, so equal hashes here vouch for nothing
	// they agree on.
	SignedUnjudged uint64 `json:"signed_unjudged,omitempty"`
	// Missing is how many sequences, up to the log's last, its stream no
	// longer holds (lost under the server), and MissingSeqs the first of
	// them (filled in by a caller whose log can walk its stream). Any
	// makes the check fail: a fold passes over a lost message without a
	// word, so equal hashes do not show one.
	Missing     uint64   `json:"missing,omitempty"`
	MissingSeqs []uint64 `json:"missing_seqs,omitempty"`
	// MissingText says the same for a person (natslog.Missing's text).
	MissingText string `json:"missing_text,omitempty"`
}

// Diff is one key whose value differs between two projections.
type Diff struct {
	Key string `json:"key"` // e.g. "sessions/s1"
	// Live and Replay are the values; nil when the key is absent there.
	Live   *string `json:"live"`
	Replay *string `json:"replay"`
}

// String returns a one-line summary, e.g. "seq 42: equal 3f2a…" or
// "seq 42: differ at sessions/x (live 0f…, replay 9c…)".
func (r Report) String() string {
	if r.Equal {
		return fmt.Sprintf("seq %d: equal %s", r.Seq, r.LiveHash)
	}
	key := "?"
	if r.Diff != nil {
		key = r.Diff.Key
	}
	return fmt.Sprintf("seq %d: differ at %s (live %s, replay %s)", r.Seq, key, r.LiveHash, r.ReplayHash)
}

// Verify checks that live is the projection its log makes: it reads
// live's checkpoint and hash from one snapshot, replays the log up to
// exactly that sequence into a fresh in-memory store with live's views,
// and compares the hashes. When they differ, Report.Diff names the first
// differing key. An error means the check could not be made (the log or
// a store failed, or the log ends before the checkpoint); a mismatch is
// not an error. Verify holds a snapshot of live while it replays: live's
// Runner keeps applying, but a rebuild swap or Close of live waits.
func Verify(ctx context.Context, log events.Log, live *projections.Store) (Report, error) {
	snap, err := live.Snapshot()
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	defer snap.Close()
	rep := Report{Seq: snap.Checkpoint()}
	if rep.LiveHash, err = snap.Hash(); err != nil {
		return rep, fmt.Errorf("verify: live: %w", err)
	}
	replayed, err := projections.OpenMem(projections.Options{Views: live.Views()})
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	defer replayed.Close()
	if rep.Seq > 0 { // Point{Seq: 0} would be the whole log
		// Quarantined records come too: never folded, they move the
		// fresh replay's checkpoint as they moved the live one's, so a
		// log that ends with one ends where the live checkpoint is.
		qctx := events.WithQuarantined(ctx)
		if _, err := replayed.Apply(qctx, Records(qctx, log, Point{Seq: rep.Seq}), 0); err != nil {
			return rep, fmt.Errorf("verify: replay to seq %d: %w", rep.Seq, err)
		}
	}
	if got := replayed.Checkpoint(); got != rep.Seq {
		return rep, fmt.Errorf("verify: the log ends at seq %d, before the live checkpoint %d", got, rep.Seq)
	}
	rsnap, err := replayed.Snapshot()
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	defer rsnap.Close()
	if rep.ReplayHash, err = rsnap.Hash(); err != nil {
		return rep, fmt.Errorf("verify: replay: %w", err)
	}
	rep.Equal = rep.LiveHash == rep.ReplayHash
	if !rep.Equal {
		if rep.Diff, err = FirstDiff(snap.Rows(), rsnap.Rows()); err != nil {
			return rep, fmt.Errorf("verify: %w", err)
		}
	}
	return rep, nil
}

// FirstDiff walks two projections' rows in key order and returns the
// first key whose value differs or that only one of them has, with Live
// from a and Replay from b; nil if they are equal.
func FirstDiff(a, b iter.Seq2[projections.Row, error]) (*Diff, error) {
	nextA, stopA := iter.Pull2(a)
	defer stopA()
	nextB, stopB := iter.Pull2(b)
	defer stopB()
	next := func(next func() (projections.Row, error, bool)) (projections.Row, bool, error) {
		r, err, ok := next()
		return r, ok, err
	}
	ra, okA, err := next(nextA)
	if err != nil {
		return nil, err
	}
	rb, okB, err := next(nextB)
	if err != nil {
		return nil, err
	}
	for okA || okB {
		c := 0
		switch {
		case !okA:
			c = 1
		case !okB:
			c = -1
		default:
			c = bytes.Compare(ra.Key, rb.Key)
		}
		switch {
		case c < 0:
			return &Diff{Key: string(ra.Key), Live: ptr(ra.Value)}, nil
		case c > 0:
			return &Diff{Key: string(rb.Key), Replay: ptr(rb.Value)}, nil
		case !bytes.Equal(ra.Value, rb.Value):
			return &Diff{Key: string(ra.Key), Live: ptr(ra.Value), Replay: ptr(rb.Value)}, nil
		}
		if ra, okA, err = next(nextA); err != nil {
			return nil, err
		}
		if rb, okB, err = next(nextB); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func ptr(b []byte) *string {
	s := string(b)
	return &s
}
