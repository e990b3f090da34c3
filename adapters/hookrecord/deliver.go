package hookrecord

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Deliver sends one hook payload to the server running on dd (or the
// one r names) and returns once the server has appended it (or found it
// already in the log): Recorder.Deliver for `logbook hook`. It connects
// within 500 ms without reconnecting; a refusal of the credentials (a
// reader's) ends the call at once, naming the role. No server running,
// credentials that cannot be read, or a server that does not answer
// within ctx, is an error the caller answers by spooling the payload.
func Deliver(ctx context.Context, dd datadir.Dir, r datadir.Reach, req api.HookRequest) error {
	if _, _, err := r.CredsOptions(); err != nil {
		return err
	}
	url, opts, ok := dd.ServerURL(r)
	if !ok {
		return fmt.Errorf("no server running (no %s)", dd.Path("serve.json"))
	}
	d, handle := api.Watch(dd.ConnRole(r))
	nc, err := natslog.Connect(url, append(opts, nats.Timeout(500*time.Millisecond), nats.MaxReconnects(0), nats.NoReconnect(), nats.ErrorHandler(handle))...)
	if err != nil {
		return r.ConnectError(url, err)
	}
	d.Register(nc)
	defer api.Forget(nc)
	defer nc.Close()
	prefix := api.AnyPrefix
	if si, ok := dd.ReadServeInfo(); ok && si.API != "" {
		prefix = si.API
	}
	return api.Call(ctx, nc, prefix, api.VerbHook, req, &api.HookReply{})
}
