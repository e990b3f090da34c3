package natslog

import (
	"errors"
	"fmt"
)

// ErrAppendsHeld reports an append refused whole, before anything of it
// was sent, because the disk under the log's store is short of its
// reserve of free space (Config.Room: under it, or not yet far enough
// above it again). Appending again once space is freed is safe.
//
// It exists because a single server commits an atomic batch message by
// message (nats-server v2.15, non-clustered): a write the disk refuses
// part way through leaves the batch's first messages stored and the
// rest not, though the publisher is told it failed. A commit must never
// start that the disk could cut. (Setting the stream's max_bytes from a
// watcher does not do: a stream update that lands during a commit cuts
// it the same way.)
var ErrAppendsHeld = errors.New("natslog: appends held: the disk under the log's store is short of its reserve of free space; appends go on once space is freed")

// roomRefusal returns why the commit about to be sent must not be, with
// ErrAppendsHeld (Config.Room), or nil.
func (l *Log) roomRefusal() error {
	if l.cfg.Room == nil {
		return nil
	}
	if err := l.cfg.Room(); err != nil {
		return fmt.Errorf("%w (%v)", ErrAppendsHeld, err)
	}
	return nil
}
