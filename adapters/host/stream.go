package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// InitStream creates the LOGBOOK stream with replicas copies on the
// cluster reach names, or checks the one there (natslog.InitStream,
// waiting up to wait for nodes that have just started), and reports
// whether it existed. Credentials (reach.CredsPath) of a role other than
// admin are refused, naming the file. A cluster that did not answer
// within wait is an error naming the stream, the URL (redacted) and
// --wait; other errors are the credentials' and natslog.InitStream's.
func InitStream(ctx context.Context, reach datadir.Reach, replicas int, wait time.Duration) (*jetstream.StreamInfo, bool, error) {
	opts, _, err := reach.CredsOptions()
	if err != nil {
		return nil, false, err
	}
	if c, err := datadir.ReadCreds(reach.CredsPath); err == nil && c.Role != string(natslog.RoleAdmin) {
		return nil, false, fmt.Errorf("--creds %s: role %s; creating the stream takes admin credentials", reach.CredsPath, c.Role)
	}
	info, existed, err := natslog.InitStream(ctx, reach.URL, opts, replicas, wait)
	if we, ok := errors.AsType[*natslog.InitWaitError](err); ok && we.Leader {
		return nil, false, fmt.Errorf("stream %s on %s: the cluster did not answer within --wait %s (no JetStream meta leader elected?): %w", natslog.StreamName, natslog.RedactURL(reach.URL), wait, we.Err)
	} else if ok {
		return nil, false, fmt.Errorf("stream %s on %s: no node answered within --wait %s: %w", natslog.StreamName, natslog.RedactURL(reach.URL), wait, we.Err)
	}
	return info, existed, err
}
