package natslog

import (
	"errors"
	"fmt"
)

// heldWhy is what ErrAppendsHeld says of the disk.
const heldWhy = "the disk under the log's store is short of its reserve of free space"

// ErrAppendsHeld reports an append refused whole, before anything of it
// was sent, because the disk under the log's store is short of its
// reserve of free space (Config.Room: under it, or not yet far enough
// above it again). Appending again once space is freed is safe. The
// error of such an append is a *HeldError.
//
// It exists because a single server commits an atomic batch message by
// message (nats-server v2.15, non-clustered): a write the disk refuses
// part way through leaves the batch's first messages stored and the
// rest not, though the publisher is told it failed. A commit must never
// start that the disk could cut. (Setting the stream's max_bytes from a
// watcher does not do: a stream update that lands during a commit cuts
// it the same way.)
var ErrAppendsHeld = errors.New("natslog: appends held: " + heldWhy + "; appends go on once space is freed")

// HeldError is an append refused with ErrAppendsHeld (errors.Is), with
// what Config.Room said of the disk.
type HeldError struct {
	// Room is Config.Room's error message: the free space and the
	// reserve, e.g. "3 bytes free under /d/jetstream, under the log's
	// reserve of 16 MiB".
	Room string
}

// Error is ErrAppendsHeld's message, then Room in parentheses.
func (e *HeldError) Error() string { return fmt.Sprintf("%v (%s)", ErrAppendsHeld, e.Room) }

// Unwrap returns ErrAppendsHeld.
func (e *HeldError) Unwrap() error { return ErrAppendsHeld }

// Reason is why the appends are held, for a person, without the
// package's prefix: "the disk under the log's store is short of its
// reserve of free space (<Room>)".
func (e *HeldError) Reason() string { return heldWhy + " (" + e.Room + ")" }

// roomRefusal returns why the commit about to be sent must not be, a
// *HeldError (Config.Room), or nil.
func (l *Log) roomRefusal() error {
	if l.cfg.Room == nil {
		return nil
	}
	if err := l.cfg.Room(); err != nil {
		return &HeldError{Room: err.Error()}
	}
	return nil
}
