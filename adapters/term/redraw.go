package term

import (
	"context"
	"fmt"
	"time"
)

// Redraw calls draw, then again each time changed signals (after
// waiting settle for the changes that follow it, so a burst draws once)
// and every every for what ages with the clock, until ctx ends (nil) or
// ended, the feed of changed, ends: its error as "<what> feed ended: …".
// An error of draw ends it, unless ctx ended first (nil).
func Redraw(ctx context.Context, what string, changed <-chan struct{}, ended <-chan error, every, settle time.Duration, draw func() error) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := draw(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-ended:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s feed ended: %v", what, err)
		case <-tick.C:
		case <-changed:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(settle):
			}
		}
	}
}
