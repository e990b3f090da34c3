package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/projections"
)

// RunProjector runs runner until ctx is done, and returns nil then. A
// transient error of the log (TransientLogError: a cluster electing a
// stream leader, a node going away) is said through say — unless health
// already says the log is unavailable — recorded in health when the log
// is unavailable, and the runner starts again from its checkpoint 1 s
// later. Any other error ends it, wrapped as "projector: …".
func RunProjector(ctx context.Context, runner *projections.Runner, health *LogHealth, say func(format string, args ...any)) error {
	for {
		err := runner.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !TransientLogError(err) {
			return fmt.Errorf("projector: %w", err)
		}
		// While the log is unavailable the probe has said so once.
		if since, _ := health.State(); since.IsZero() {
			say("projector: %v; again in 1s", err)
		}
		if natslog.Unavailable(err) {
			health.Failed(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// TransientLogError reports an error of the log that a later try may
// not meet: a timeout, no responders or "temporarily unavailable" (a
// stream without a leader for a while: an election, a lost quorum; see
// natslog.Unavailable), a connection being re-established. A record that
// does not decode (*natslog.DecodeError), or a view that fails, is not
// one.
func TransientLogError(err error) bool {
	var de *natslog.DecodeError
	if errors.As(err, &de) {
		return false
	}
	return natslog.Unavailable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}
