package natslog

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// durableRetry is how long EnsureDurable waits between two failed
// attempts.
const durableRetry = 2 * time.Second

// EnsureDurable creates, or updates to cfg, the durable consumer cfg
// names on the log's stream (StreamName) and returns it. While the
// server refuses (a cluster with no leader yet, a stream being made) it
// tries again every 2 s, handing each failure to failed first; it
// returns ctx's error once ctx is done. A reactor that several hosts run
// on one log (notifications, the OTLP exporter) starts with it.
func EnsureDurable(ctx context.Context, js jetstream.JetStream, cfg jetstream.ConsumerConfig, failed func(error)) (jetstream.Consumer, error) {
	for {
		cons, err := js.CreateOrUpdateConsumer(ctx, StreamName, cfg)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		failed(err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(durableRetry):
		}
	}
}
