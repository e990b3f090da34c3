package events

import (
	"context"
	"iter"
	"time"

	"github.com/oklog/ulid/v2"
)

// Batch is one decision: the events it caused for one aggregate, appended
// all or none as one atomic batch.
type Batch struct {
	Agg Aggregate
	// Expect is the stream sequence of Agg's last event when the decision
	// was made; 0 means Agg must have no events yet. It is the optimistic
	// concurrency check.
	Expect uint64
	// Events holds 1..MaxBatch envelopes, all of Agg, with Ver dense and
	// continuing Agg's last Ver.
	Events []Envelope
}

// MaxBatch is the most events one decision may append (the server's
// atomic batch limit).
const MaxBatch = 1000

// Appended says where a batch landed.
type Appended struct {
	First, Last uint64 // stream sequences of the batch's first and last event
	Duplicate   bool   // the batch had been committed before (same event ids)
}

// Log is the append-only, totally ordered event log. Implementations are
// safe for concurrent use.
type Log interface {
	// Append stores b all or none. It returns an error wrapping
	// ErrConflict if Agg's last stream sequence is no longer b.Expect, and
	// ErrMalformed (or another events sentinel) if an envelope is invalid;
	// nothing is stored then. Re-appending a batch that was committed
	// (same event ids) succeeds with Duplicate set and stores nothing.
	Append(ctx context.Context, b Batch) (Appended, error)
	// Load returns every event of agg in order and the stream sequence of
	// the last one (0 and no records if agg has none).
	Load(ctx context.Context, agg Aggregate) ([]Record, uint64, error)
	// Read yields the events with from ≤ Seq ≤ the log's end at the time
	// of the call, in order, then stops. A record that does not decode is
	// yielded as an error naming its sequence; the caller decides whether
	// to stop. Non-event messages (command output) are skipped.
	Read(ctx context.Context, from uint64) iter.Seq2[Record, error]
	// Follow is Read that does not stop at the end: it waits for new
	// events until ctx is done.
	Follow(ctx context.Context, from uint64) iter.Seq2[Record, error]
	// LastSeq returns the stream sequence of the last message in the log
	// (0 when empty).
	LastSeq(ctx context.Context) (uint64, error)
}

// quarantinedKey is the context key of WithQuarantined.
type quarantinedKey struct{}

// WithQuarantined returns ctx marked so that a Log's Read and Follow
// under it yield the events they leave out of every fold (a quarantine)
// too, each marked Record.Quarantined, in their place in the order: for a
// reader that keeps a position in the log and must move past them (a
// projection's checkpoint) without folding them. A Log that quarantines
// nothing yields no such record.
func WithQuarantined(ctx context.Context) context.Context {
	return context.WithValue(ctx, quarantinedKey{}, true)
}

// WantsQuarantined reports whether ctx is from WithQuarantined.
func WantsQuarantined(ctx context.Context) bool {
	v, _ := ctx.Value(quarantinedKey{}).(bool)
	return v
}

// LoaderAfter is implemented by a Log that can load an aggregate's events
// past a stream sequence. An Executor uses it to bring a cached state up
// to date cheaply before it trusts a decision to append nothing.
type LoaderAfter interface {
	// LoadAfter returns agg's events with stream sequence > after, in
	// order, and the stream sequence of the last one (after itself when
	// there are none). Errors are Load's.
	LoadAfter(ctx context.Context, agg Aggregate, after uint64) ([]Record, uint64, error)
}

// Clock returns the current time. Production uses time.Now; tests inject
// a fixed or stepping clock. Only callers outside reducers read it.
type Clock func() time.Time

// MaxClockSkew is how far past the appending process's clock an event
// time taken from its source (a transcript line's timestamp, a hook
// entry's id, a posted observation's at) may lie before its adapter
// warns of a clock far off: 5 minutes, room for the clocks of two hosts
// to disagree.
const MaxClockSkew = 5 * time.Minute

// BoundTime returns at, or now when at lies past now: nothing reported
// to this process happened after it received the report, so a source
// whose clock runs ahead (an agent's, a harness's) is dated by its
// receipt, on the clock its later reports without a time of their own
// get too; a report dated ahead can never sort after one that came
// later, and a line dated in the far future cannot keep a session ahead
// of every other or out of reach of staleness. far reports whether at
// lay past now by more than MaxClockSkew, a clock to warn of. An adapter
// calls it when it decides an event's time from its source; the event
// carries the bounded time, and a replay reads that time back, never the
// clock.
func BoundTime(at, now time.Time) (bounded time.Time, far bool) {
	if at.After(now) {
		return now, at.After(now.Add(MaxClockSkew))
	}
	return at, false
}

// IDSource returns a fresh, unique event id. Production uses ulid.Make
// (safe for concurrent use); tests use a seeded monotonic source.
type IDSource func() ulid.ULID
