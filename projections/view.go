package projections

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logbook-dev/logbook/events"
)

// A View folds records into rows. Apply must be deterministic and read
// nothing but its arguments and the rows it reaches through tx: replay and
// other hosts rely on equal records giving equal rows.
//
// Views are values shared by every batch and every store that uses them;
// they must keep no state of their own between calls. Decoded rows belong
// in Tx.Memo.
type View interface {
	// Name is the view's stable name, [a-z][a-z0-9_]*, not "meta". It
	// prefixes every key the view writes.
	Name() string
	// Version is the schema version of the view's rows, ≥ 1. Changing it
	// makes existing stores stale and rebuilds them from sequence 1.
	Version() int
	// Apply folds r into the view's rows through tx. Records of aggregates
	// the view does not follow must be ignored, not refused. An error
	// aborts the whole batch: nothing of it is committed.
	Apply(tx *Tx, r events.Record) error
}

// A Flusher is a View that keeps decoded rows in tx.Memo during a batch
// and writes them once, before the batch commits. Flush is called once per
// batch, after the batch's last Apply; it writes only the rows the batch
// changed (the memo may hold rows of earlier batches, see Tx.Memo). The
// rows after Flush must be exactly those that writing through on every
// Apply would leave, whatever the batch boundaries: the metamorphic tests
// (batch sizes 1, 7, all) check it.
type Flusher interface {
	View
	Flush(tx *Tx) error
}

// Tx is one view's access to the batch being built: reads see the batch's
// own earlier writes (an indexed Pebble batch), and writes become visible
// to queries only when the batch commits, together with the checkpoint.
//
// A Tx is valid only during the Apply or Flush call it is passed to and is
// not safe for concurrent use.
type Tx struct {
	b    *pebble.Batch
	dir  string // the store's directory
	name string
	memo map[string]any
}

// errKeyOutsideView reports a write outside the view's key space.
var errKeyOutsideView = errors.New("projections: key outside the view's key space")

// check reports whether key is in the view's key space: "<name>/…" or
// "<name>-<index>/…".
func (tx *Tx) check(key string) error {
	rest, ok := strings.CutPrefix(key, tx.name)
	if ok && len(rest) > 1 && (rest[0] == '/' || rest[0] == '-') {
		return nil
	}
	return fmt.Errorf("view %s key %q: %w", tx.name, key, errKeyOutsideView)
}

// Get returns a copy of key's value as of this batch (committed rows plus
// the batch's own writes) and whether it exists. key must be in the view's
// key space.
func (tx *Tx) Get(key string) ([]byte, bool, error) {
	if err := tx.check(key); err != nil {
		return nil, false, err
	}
	return dbGet(tx.dir, tx.b, key)
}

// Set stores value under key in the batch. The batch copies both; the
// caller may reuse them. key must be in the view's key space.
func (tx *Tx) Set(key string, value []byte) error {
	if err := tx.check(key); err != nil {
		return err
	}
	if err := tx.b.Set([]byte(key), value, nil); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	return nil
}

// Delete removes key in the batch; deleting a missing key is not an error.
// key must be in the view's key space.
func (tx *Tx) Delete(key string) error {
	if err := tx.check(key); err != nil {
		return err
	}
	if err := tx.b.Delete([]byte(key), nil); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Memo returns the view's map of decoded rows for this batch. A Flusher
// keeps its decoded rows here. At the start of a batch it is either empty
// or exactly what the view left in it at the end of the store's previous
// batch, when that batch committed and nothing has written to the store
// since (so a long replay does not decode the same rows again every
// batch); everything it then holds must match the committed rows. It is
// dropped when a batch aborts or fails to commit, and when it holds more
// than MemoCarry entries at a commit.
func (tx *Tx) Memo() map[string]any {
	if tx.memo == nil {
		tx.memo = make(map[string]any)
	}
	return tx.memo
}

// cloneClose copies v and closes closer, which guards v.
func cloneClose(v []byte, closer io.Closer) []byte {
	out := make([]byte, len(v))
	copy(out, v)
	_ = closer.Close() // closing a Get result only releases a reference
	return out
}

// validName reports whether name can prefix a view's keys.
func validName(name string) error {
	if name == "" || name == "meta" {
		return fmt.Errorf("view name %q is reserved or empty", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return fmt.Errorf("view name %q: want [a-z][a-z0-9_]*", name)
		}
	}
	return nil
}
