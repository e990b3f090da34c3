package natslog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// AggregateExists reports whether the log holds an event of agg: one
// read of the last message on agg's subject (a direct get, or the
// leader's on a replicated stream), whatever the number of aggregates of
// its kind, where AggregateIDs lists them all. Errors: agg invalid
// (Aggregate.Validate: an id that is no single subject token, such as a
// wildcard, is never looked up), or the read's.
func (l *Log) AggregateExists(ctx context.Context, agg events.Aggregate) (bool, error) {
	if err := agg.Validate(); err != nil {
		return false, err
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	var err error
	if l.leaderReads {
		_, err = l.leaderGet(ctx, msgGetRequest{LastBySubj: agg.Subject()})
	} else {
		_, err = l.stream.GetLastMsgForSubject(ctx, agg.Subject())
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoMsg) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", agg, err)
	}
	return true, nil
}
