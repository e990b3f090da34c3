package natslog

import (
	"context"
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/events"
)

// Decider returns the batch to append for an aggregate, given its records
// and the stream sequence of the last one (0: none yet), which belongs in
// the batch's Expect. A batch with no events means there is nothing to
// append.
type Decider func(records []events.Record, last uint64) (events.Batch, error)

// AppendWithRetry runs the reload-and-decide loop on log for agg: Load,
// decide, Append. On a conflict (events.ErrConflict) it reloads and
// decides again; when an append's outcome is unknown (ErrUnknownOutcome)
// and ctx is still live it re-sends the same batch, which the event ids
// make safe. attempts bounds the number of Append calls; below 1 means 1.
//
// It returns the last Append's result, or the zero Appended and nil when
// decide returns no events. A Load or decide error is returned wrapped
// with agg, and so is the last conflict once attempts are used up; other
// Append errors are returned as they are. decide runs on the caller's
// goroutine, once per reload, and must not keep records.
func AppendWithRetry(ctx context.Context, log events.Log, agg events.Aggregate, decide Decider, attempts int) (events.Appended, error) {
	attempts = max(attempts, 1)
	var b events.Batch
	reload := true
	var err error
	for range attempts {
		if reload {
			recs, last, lerr := log.Load(ctx, agg)
			if lerr != nil {
				return events.Appended{}, fmt.Errorf("decide %s: %w", agg, lerr)
			}
			if b, err = decide(recs, last); err != nil {
				return events.Appended{}, fmt.Errorf("decide %s: %w", agg, err)
			}
			if len(b.Events) == 0 {
				return events.Appended{}, nil
			}
			if b.Agg != agg {
				return events.Appended{}, fmt.Errorf("decide %s: %w: batch is for %s", agg, events.ErrMalformed, b.Agg)
			}
		}
		var app events.Appended
		app, err = log.Append(ctx, b)
		switch {
		case err == nil:
			return app, nil
		case errors.Is(err, events.ErrConflict):
			reload = true
		case errors.Is(err, ErrUnknownOutcome) && ctx.Err() == nil:
			reload = false
		default:
			return events.Appended{}, err
		}
	}
	return events.Appended{}, fmt.Errorf("decide %s: %d attempts: %w", agg, attempts, err)
}
