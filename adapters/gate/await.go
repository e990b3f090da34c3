package gate

import (
	"context"
	"time"
)

// AwaitOpen watches the open reviews, as list reads them, until review
// rid of session sess is among them, and returns it. It looks after 25
// ms, then ever less often, up to once a second. It returns false when
// done is closed (the review was answered), ctx ends, or a listing fails
// (the watch ends quietly: what waits on the review is unchanged).
func AwaitOpen(ctx context.Context, list func(context.Context) (ReviewsReply, error), sess, rid string, done <-chan struct{}) (PendingRow, bool) {
	wait := 25 * time.Millisecond
	for {
		select {
		case <-done:
			return PendingRow{}, false
		case <-ctx.Done():
			return PendingRow{}, false
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
		open, err := list(ctx)
		if err != nil {
			return PendingRow{}, false
		}
		for _, r := range open.Reviews {
			if r.Session == sess && r.ID == rid {
				return r, true
			}
		}
	}
}
