package host

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// ServeStatus asks the serve that dd's serve.json names (or the one on
// reach's NATS URL) for its status over the API, within ctx, on a
// connection of its own that it closes. Unlike opening the log it needs
// no stream leader: a serve whose cluster lost its quorum answers it from
// its projection. With no server named it fails with "no server named";
// other errors are the connection's and the call's.
func ServeStatus(ctx context.Context, dd datadir.Dir, reach datadir.Reach) (api.StatusReply, error) {
	var st api.StatusReply
	url, opts, ok := dd.ServerURL(reach)
	if !ok {
		return st, errors.New("no server named")
	}
	nc, err := natslog.Connect(url, append(opts, nats.Timeout(time.Second))...)
	if err != nil {
		return st, err
	}
	defer nc.Close()
	prefix := api.AnyPrefix
	if si, ok := dd.ReadServeInfo(); ok && si.API != "" {
		prefix = si.API
	}
	err = api.Call(ctx, nc, prefix, api.VerbStatus, struct{}{}, &st)
	return st, err
}
