package datadir

import (
	"context"
	"time"
)

// WatchHandover looks every HandoverPoll whether a writer asks for the
// data dir (HandoverWanted) until ctx ends; when one does, it calls
// wanted once and stops. done is closed when the watch has stopped,
// either way. The watch runs on a goroutine of its own.
func (d Dir) WatchHandover(ctx context.Context, wanted func()) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(HandoverPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if d.HandoverWanted() {
					wanted()
					return
				}
			}
		}
	}()
	return ch
}
