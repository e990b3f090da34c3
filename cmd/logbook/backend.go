package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// backend is how a command reaches the log: through a running server
// (remote: its loopback listener, or an external NATS URL) or, when none
// runs, directly on the data dir with an embedded server of its own
// (local), holding the data dir's lock while it works.
type backend struct {
	dd     dataDir
	reg    *events.Registry
	nc     *nats.Conn
	log    *natslog.Log
	remote bool
	api    string          // the API prefix of the server, remote only
	srv    *natslog.Server // local only
	lock   *os.File        // local only
	// rules, in serve and in a worker process, is the data dir's
	// redact.txt followed as it changes; elsewhere nil, and a command
	// reads redact.txt once.
	rules *liveRules
	// views, local only, is the projection checkLog opened and checked
	// at the start, until openViews takes it; Close closes it otherwise.
	views *projections.Store
	// viewsFS, when not nil, is the file system openViews opens the
	// views in (serve's: writes held while the disk is full).
	viewsFS vfs.FS
	// pause, in serve, is what it knows of a full disk (adapters/diskfull).
	pause *diskfull.Pause
	// down, remote only, is the status of a server that said its log
	// does not answer, asked by a command that needs only the
	// projection (globals.staleOK): such a backend has no log (nil), and
	// the command answers through the server's API alone.
	down *api.StatusReply
	// asked is set once the server's status was asked (it settles as
	// settle would).
	asked bool
	// staleOK is globals.staleOK of the command b is opened for.
	staleOK bool
	// socket, set, is the system socket b asks through (withSocket): no
	// log, and ids are the server's to resolve.
	socket string
}

// parser returns the Claude Code parser with the data dir's redaction
// rules: in serve, the rules of redact.txt at each use (see liveRules).
func (b *backend) parser() (*claude.Parser, error) {
	if b.rules != nil {
		return b.rules.Parser()
	}
	return b.dd.parser()
}

// redactor returns the data dir's redaction rules (redact.txt over the
// built-in ones): in serve, and in a worker process, the rules of
// redact.txt at each use (see liveRules); elsewhere as the file is now.
// Errors are the data dir's (a rule that does not compile).
func (b *backend) redactor() (*redact.Redactor, error) {
	if b.rules != nil {
		return redact.Live(b.rules.Current), nil
	}
	p, err := b.dd.parser()
	if err != nil {
		return nil, err
	}
	return p.Redactor(), nil
}

// openBackend connects to the server named by serve.json (or natsURL),
// and falls back to opening the data dir directly when no server answers.
func openBackend(ctx context.Context, g *globals) (*backend, error) {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return nil, err
	}
	if g.reads && g.natsURL == "" && g.credsPath == "" && !dd.dir().HasData() {
		return nil, dd.dir().NoDataError()
	}
	b := &backend{dd: dd, reg: events.NewRegistry(), staleOK: g.staleOK}
	b.api = api.AnyPrefix
	if si, ok := dd.readServeInfo(); ok && si.API != "" {
		b.api = si.API
	}
	if _, _, err := g.reach().CredsOptions(); err != nil {
		return nil, err
	}
	if url, opts, ok := dd.dir().ServerURL(g.reach()); ok {
		d, handle := api.Watch(dd.dir().ConnRole(g.reach()))
		nc, err := natslog.Connect(url, append(opts, nats.Timeout(time.Second), nats.MaxReconnects(3), nats.ReconnectWait(200*time.Millisecond), nats.ErrorHandler(handle))...)
		if err == nil {
			b.nc, b.remote = nc, true
			d.Register(nc)
		} else if g.natsURL != "" || g.credsPath != "" {
			return nil, g.reach().ConnectError(url, err)
		}
	}
	if !b.remote && g.requireServer {
		return nil, fmt.Errorf("%s needs a running server: start `logbook serve`", strings.TrimPrefix(g.cmdName, "logbook "))
	}
	if !b.remote {
		role := g.cmdName
		if g.reads {
			role += datadir.ReaderMark
		}
		var lock *os.File
		if g.follows {
			// A follower never asks another reader to give the lock
			// up: two would take it from each other in turn.
			lock, err = dd.lock(role)
		} else {
			lock, err = dd.lockOver(ctx, role, func(holder string) {
				fmt.Fprintf(g.stderr, "%s: waiting for %s, which only reads the data dir, to give it up\n", g.cmdName, holder)
			})
		}
		if errors.Is(err, datadir.ErrBusy) {
			if strings.Contains(err.Error(), "logbook serve") {
				return nil, fmt.Errorf("%w; `logbook serve` holds it but does not answer (%s)", err, dd.path("serve.json"))
			}
			return nil, fmt.Errorf("%w; another command works on it directly: try again when it ends, or run `logbook serve` so commands can share it", err)
		}
		if err != nil {
			return nil, err
		}
		if err := b.startLocal(ctx, lock); err != nil {
			return nil, err
		}
	}
	if b.remote && g.staleOK && b.logDown(ctx) {
		// Opening the log would wait natslog.ElectionWait for a leader
		// and fail; the server answers from its projection meanwhile.
		return b, nil
	}
	cl := datadir.Client{Own: g.natsURL == "" && g.credsPath == "", Remote: b.remote, CredsPath: g.credsPath,
		Role: g.role, ConnRole: natslog.Role(dd.dir().ConnRole(g.reach()))}
	at, err := dd.dir().Attest(cl, natslog.Config{Registry: b.reg})
	if err != nil {
		b.Close()
		return nil, err
	}
	cfg := at.Config
	var l *natslog.Log
	if b.remote && g.staleOK {
		// The cluster may lose its quorum while the stream is opened:
		// the read goes on from serve's projection once serve says so.
		down, err := b.untilDown(ctx, func(ctx context.Context) error {
			var err error
			l, err = natslog.Open(ctx, b.nc, cfg)
			return err
		})
		if down {
			if l != nil {
				l.Close()
			}
			return b, nil
		}
		if err != nil {
			b.Close()
			return nil, err
		}
	} else if l, err = openLogWithin(ctx, b.nc, cfg, g.logWait); err != nil {
		b.Close()
		return nil, err
	}
	b.log = l
	if !b.remote {
		// Nothing is read or appended on a log that lost events its
		// projection saw until the user says what to do (see checkLog).
		if err := b.checkLog(ctx, g); err != nil {
			b.Close()
			return nil, err
		}
	}
	if err := dd.dir().Sign(ctx, cl, at, l, !g.reads && !g.adminAppends); err != nil {
		b.Close()
		return nil, err
	}
	if g.natsURL == "" {
		b.settle(ctx)
	}
	return b, nil
}

// startLocal starts the data dir's embedded server for b, which holds
// lock (the data dir's), and connects b to it in process; it closes
// lock when the server does not start.
func (b *backend) startLocal(ctx context.Context, lock *os.File) error {
	b.lock = lock
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: b.dd.path("jetstream")})
	if err != nil {
		lock.Close()
		b.lock = nil
		return fmt.Errorf("open log in %s: %w", b.dd, err)
	}
	b.srv, b.nc = srv, srv.Conn()
	return nil
}

// settle waits, when b reaches the data dir's own serve, for the hooks
// that serve took on its socket to be in the log: it appends them just
// after it answered them, and its status verb answers once those are in,
// so what the caller reads next holds them. A serve that cannot say
// within api.IntakeWait is not waited for longer.
func (b *backend) settle(ctx context.Context) {
	if !b.remote || b.api == api.AnyPrefix || b.asked {
		return
	}
	_, _ = api.AskStatus(ctx, b.nc, b.api)
}

// logDown asks the server b reaches for its status, as settle does, and
// reports whether it says its log does not answer (a cluster that lost
// its quorum); it then keeps the status in b.down. A server that does not
// answer within api.IntakeWait (or an older one that does not say) is
// taken as one whose log answers.
func (b *backend) logDown(ctx context.Context) bool {
	st, err := api.AskStatus(ctx, b.nc, b.api)
	if err != nil {
		return false
	}
	b.asked = true
	if st.LogUnavailableSince == nil {
		return false
	}
	b.down = &st
	return true
}

// Close releases everything the backend holds, in reverse order.
func (b *backend) Close() error {
	if b.views != nil {
		b.views.Close()
	}
	if b.log != nil {
		b.log.Close()
	}
	if b.srv != nil {
		b.srv.Shutdown()
	} else if b.nc != nil {
		b.nc.Drain()
		api.Forget(b.nc)
	}
	if b.lock != nil {
		b.lock.Close()
	}
	return nil
}

// reach is how g tells a command to reach a server (datadir.Reach).
func (g *globals) reach() datadir.Reach {
	return datadir.Reach{URL: g.natsURL, CredsPath: g.credsPath, Role: g.role}
}
