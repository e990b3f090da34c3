package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// retryWaits are the pauses between attempts of untilServed: growing to
// 2 s, then 2 s for good.
var retryWaits = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// untilServed runs req until it succeeds, fails with an error that is
// neither one natslog.Unserved names nor a store refusal
// (natslog.StoreRefused), or ctx ends (then ctx's error joined with the
// last one). A worker that starts while its cluster elects a leader, or
// is loaded, or while the server's disk is full, must wait for it rather
// than exit (serve ends when one of its workers does): each such failure
// is logged at WARN as what, once per failure.
func untilServed(ctx context.Context, log *slog.Logger, what string, req func(context.Context) error) error {
	for i := 0; ; i++ {
		err := req(ctx)
		if err != nil && ctx.Err() != nil {
			// Ended during the attempt: Unserved says no to any error then.
			return errors.Join(ctx.Err(), err)
		}
		switch {
		case err == nil:
			return nil
		case natslog.StoreRefused(err):
			log.Warn(what+": the server could not write its store (a full disk?); trying again", "err", err)
		case natslog.Unserved(ctx, err):
			log.Warn(what+": the cluster did not serve the request; trying again", "err", err)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(retryWaits[min(i, len(retryWaits)-1)]):
		}
	}
}
