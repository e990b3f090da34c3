package natslog

import "context"

// Changes follows the messages on filter from sequence from on
// (FollowRaw) and signals each on changed, coalesced: changed holds at
// most one signal, so a burst of messages wakes a reader once. ended
// receives the error that ended the feed (nil when ctx ended it), once.
// The feed runs on a goroutine of its own until ctx ends or the read
// fails.
func (l *Log) Changes(ctx context.Context, filter string, from uint64) (changed <-chan struct{}, ended <-chan error) {
	ch := make(chan struct{}, 1)
	end := make(chan error, 1)
	go func() {
		for _, err := range l.FollowRaw(ctx, filter, from) {
			if err != nil {
				end <- err
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		end <- nil
	}()
	return ch, end
}
