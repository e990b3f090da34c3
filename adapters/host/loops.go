package host

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/run"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
)

// Actor adds run to grp with a context of its own, derived from ctx and
// cancelled when grp stops it.
func Actor(ctx context.Context, grp *run.Group, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	grp.Add(func() error { return run(ctx) }, func(error) { cancel() })
}

// Loops are the loops every serve runs beside its API, over its log and
// projection.
type Loops struct {
	Dir datadir.Dir
	// Own is the data dir's own server: its store (jetstream/) is
	// watched for a full disk too.
	Own bool
	// Reader is serve --role reader: it watches no disk and delivers no
	// spooled hooks (they wait in its spool for a writer).
	Reader bool
	// Pause is what serve knows of a full disk; the watch closes it.
	Pause   *diskfull.Pause
	Log     *natslog.Log
	Health  *LogHealth
	Service *api.Service // its Runner, Spool and DrainSpool
	NC      *nats.Conn   // the connection the spool's kicks come on
	// Delivered is told how many spooled hook payloads each delivery
	// appended; nil: not told.
	Delivered func(n int)
	// Say receives what is said (format, args), from the loops'
	// goroutines.
	Say func(format string, args ...any)
}

// Add adds the loops to grp, each an Actor of ctx: the full-disk watch
// on the data dir, views, spool (and the embedded store), the log's
// health probe, the watch on the stream's identity (which ends grp with
// natslog.ErrStreamLost when the stream is replaced), one walk of the
// whole log for messages its stream lost (LogHealth.CheckWhole), the projector
// (RunProjector) and the spool's delivery (DrainSpool, kicked by
// SpoolKicks; a reader's only waits). It returns the stream's identity, for
// natslog.Log.StreamLost on grp's result. Errors are the log's and
// SpoolKicks'.
func (l Loops) Add(ctx context.Context, grp *run.Group) (natslog.Identity, error) {
	if !l.Reader {
		dirs := []string{string(l.Dir), l.Dir.Path("views"), l.Dir.Path("spool")}
		if l.Own {
			dirs = append(dirs, l.Dir.Path("jetstream"))
		}
		var g *diskfull.Guard
		if l.Own {
			// Its writers start no commit under the reserve
			// (diskfull.Room); the guard says so, as a pause.
			g = &diskfull.Guard{Dir: l.Dir.Path("jetstream")}
			g.First(ctx, l.Pause)
		}
		ctx, cancel := context.WithCancel(ctx)
		grp.Add(func() error {
			l.Pause.Watch(ctx, dirs, g)
			return nil
		}, func(error) { cancel(); l.Pause.Close() })
	}
	sid, err := l.Log.Identity(ctx)
	if err != nil {
		return sid, err
	}
	Actor(ctx, grp, func(ctx context.Context) error {
		l.Health.Probe(ctx, l.Log, l.Say)
		return nil
	})
	Actor(ctx, grp, func(ctx context.Context) error { return l.Log.WatchStream(ctx, sid, time.Second) })
	Actor(ctx, grp, func(ctx context.Context) error {
		var accepted uint64
		if rec, have, err := l.Dir.ReadStreamRecord(); err == nil && have {
			accepted = rec.Gone
		}
		l.Health.CheckWhole(ctx, l.Log, accepted, l.Say)
		<-ctx.Done()
		return nil
	})
	Actor(ctx, grp, func(ctx context.Context) error { return RunProjector(ctx, l.Service.Runner, l.Health, l.Say) })
	kick, stopKick, err := SpoolKicks(l.Service.Spool.Dir(), l.NC)
	if err != nil {
		return sid, err
	}
	Actor(ctx, grp, func(ctx context.Context) error {
		defer stopKick()
		if l.Reader {
			<-ctx.Done() // a reader's hooks wait in its spool for a writer
			return nil
		}
		DrainSpool(ctx, l.Service.DrainSpool, kick, SpoolReport(l.Say, l.Delivered))
		return nil
	})
	return sid, nil
}

// SpoolReport returns DrainSpool's report for a serve: a round that
// failed is a fault, said at WARN through say ("WARN: spool: <err>");
// while appends stay held (natslog.ErrAppendsHeld, a full disk's pause,
// itself said at WARN when it begins) only the first failed round is
// said, not one a second, until a round delivers or fails otherwise; a
// round that delivered n payloads is said at INFO and told to delivered
// (nil: not told). The report keeps state: one per DrainSpool.
func SpoolReport(say func(format string, args ...any), delivered func(n int)) func(n int, err error) {
	heldSaid := false
	return func(n int, err error) {
		if err != nil {
			held := errors.Is(err, natslog.ErrAppendsHeld)
			if held && heldSaid {
				return
			}
			heldSaid = held
			say("WARN: spool: %v", err)
			return
		}
		heldSaid = false
		say("delivered %s", term.Plural(n, "spooled hook payload"))
		if delivered != nil {
			delivered(n)
		}
	}
}
