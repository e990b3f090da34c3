package host

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// Conn is where serve's log is: the data dir's own embedded server, or
// a cluster of one's own at a NATS URL.
type Conn struct {
	Dir datadir.Dir
	// URL is --nats-url; "" starts the data dir's own server.
	URL string
	// Opts returns the --creds options for URL, or why they cannot be
	// read; unused without URL.
	Opts func() ([]nats.Option, error)
	// Fsync is when the embedded server's log reaches the disk.
	Fsync natslog.Fsync
	// Listen is the embedded server's loopback host:port.
	Listen string
	// Admin are the admin credentials the embedded server starts with.
	Admin datadir.Creds
	// Registry decodes the log's events.
	Registry *events.Registry
	// Say receives what is said (format, args), such as a store healed
	// by a JetStream restart.
	Say func(format string, args ...any)
}

// Connected is a Conn made: the connection, the embedded server (nil on
// a cluster), the config the log is opened with, whether it judges
// reads (a cluster without the data dir's pin of its admin key does
// not), and the durability serve reports.
type Connected struct {
	NC         *nats.Conn
	Server     *natslog.Server // the caller shuts it down; nil on a cluster
	Config     natslog.Config
	Pinned     bool
	Durability string
}

// Connect judges reads against the data dir's admin key (its own
// server's pin, AttestConfig; on a cluster, the cluster's admin key
// when the data dir pins it, ClusterAttestConfig) and connects: to c.URL
// with c.Opts' options, waiting 5 s, or by starting the data dir's own server
// (StartRoles). With FsyncInterval on its own server, one-event appends
// are not merged into batches (no fsync per publish to save). Errors
// are the key files', c.Opts', the connection's and StartRoles'. The
// caller closes NC, or shuts Server down.
func Connect(ctx context.Context, c Conn) (Connected, error) {
	out := Connected{Config: natslog.Config{Registry: c.Registry}, Pinned: true,
		Durability: "external NATS at " + natslog.RedactURL(c.URL)}
	var err error
	if c.URL == "" {
		if c.Fsync == natslog.FsyncInterval {
			out.Config.MergeMin = events.MaxBatch + 1 // no fsync per publish: batches would only add cost
		}
		if out.Config, err = c.Dir.AttestConfig(out.Config); err != nil {
			return out, err
		}
		out.Config.Room = diskfull.Room(c.Dir.Path("jetstream"))
		srv, err := StartRoles(ctx, c.Dir, c.Fsync, c.Listen, c.Admin, out.Config, SayHealed(c.Say))
		if err != nil {
			return out, err
		}
		out.Server, out.NC, out.Durability = srv, srv.Conn(), srv.Durability()
		return out, nil
	}
	if out.Config, out.Pinned, err = c.Dir.ClusterAttestConfig(out.Config); err != nil {
		return out, err
	}
	opts, err := c.Opts()
	if err != nil {
		return out, err
	}
	out.NC, err = natslog.Connect(c.URL, append(opts, nats.Timeout(5*time.Second))...)
	return out, err
}
