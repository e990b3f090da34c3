package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// transient reports whether err, from a JetStream API request made under
// ctx, is what a cluster answers while it cannot serve the request yet: a
// stream or meta leader being elected, a stream just created whose
// replicas are not placed. No answer within the request's own timeout
// (ctx still live), no responders, "temporarily unavailable" (503), or
// no peers yet (10005).
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.ErrorCode == 10005)
}

// retryWaits are the pauses between attempts of untilServed: growing to
// 2 s, then 2 s for good.
var retryWaits = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// untilServed runs req until it succeeds, fails with an error that is not
// transient, or ctx ends (then ctx's error joined with the last one). A
// worker that starts while its cluster elects a leader, or is loaded, must
// wait for it rather than exit: each transient failure is logged at WARN
// as what, once per failure.
func untilServed(ctx context.Context, log *slog.Logger, what string, req func(context.Context) error) error {
	for i := 0; ; i++ {
		err := req(ctx)
		if err == nil || !transient(ctx, err) {
			return err
		}
		log.Warn(what+": the cluster did not serve the request; trying again", "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(retryWaits[min(i, len(retryWaits)-1)]):
		}
	}
}
