package main

import (
	"cmp"
	"context"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/worker"
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
	// pinned, set in an exec serve runs for its exec socket, is the
	// Redactor of rules as they were when the exec began: its checks
	// (a dozen uses) look at redact.txt once, and a change applies to
	// the next exec. Nil elsewhere.
	pinned *redact.Redactor
	// handoff, in serve, passes the requests its exec socket appends to
	// its own workers (worker.Handoff); nil elsewhere.
	handoff *worker.Handoff
	// views, local only, is the projection host.Open opened and checked
	// at the start, until openViews takes it; Close closes it otherwise.
	views *projections.Store
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
	// local, set in an exec serve runs for its exec socket, answers the
	// API in serve's own process (api.InProcess) in place of a request
	// over nc (backend.call).
	local api.Caller
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
// In an exec serve runs, the rules as they were when it began
// (backend.pinned). Errors are the data dir's (a rule that does not
// compile).
func (b *backend) redactor() (*redact.Redactor, error) {
	if b.pinned != nil {
		return b.pinned, nil
	}
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
// and falls back to opening the data dir directly when no server answers
// (host.Open). A system socket to ask instead (g.socketPath) is a usage
// error naming where it came from: the commands that open a backend need
// the log itself, which a system serve's socket does not give, and
// opening some other data dir in its place would answer from another log.
func openBackend(ctx context.Context, g *globals) (*backend, error) {
	if err := refuseSocket(g); err != nil {
		return nil, err
	}
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return nil, err
	}
	o, err := host.Open(ctx, host.Client{Dir: dd.dir(), Reach: g.reach(), Cmd: g.cmdName, Reads: g.reads, Follows: g.follows,
		RequireServer: g.requireServer, StaleOK: g.staleOK, AdminAppends: g.adminAppends, LogWait: g.logWait,
		ViewsCache: g.viewsCache, AcceptLoss: g.acceptLoss, BusyWait: host.DefaultBusyWait, Stderr: g.stderr})
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		g.logs = append(g.logs, o.Log)
	}
	return &backend{dd: dd, reg: o.Registry, nc: o.NC, log: o.Log, remote: o.Remote, api: o.API, srv: o.Server,
		lock: o.Lock, views: o.Views, down: o.Down, asked: o.Asked, staleOK: g.staleOK}, nil
}

// startLocal starts the data dir's embedded server for b, which holds
// lock (the data dir's), and connects b to it in process
// (host.StartLocal); it closes lock when the server does not start.
func (b *backend) startLocal(ctx context.Context, lock *os.File) error {
	srv, err := host.StartLocal(ctx, b.dd.dir(), lock)
	if err != nil {
		return err
	}
	b.srv, b.nc, b.lock = srv, srv.Conn(), lock
	return nil
}

// settle waits, when b reaches the data dir's own serve, for the hooks
// that serve took on its socket to be in the log (host.Settle).
func (b *backend) settle(ctx context.Context) {
	if !b.remote || b.api == api.AnyPrefix || b.asked {
		return
	}
	host.Settle(ctx, b.nc, b.api)
}

// logDown reports whether the server b reaches says its log does not
// answer (host.LogDown), and keeps its status in b.down.
func (b *backend) logDown(ctx context.Context) bool {
	down, asked := host.LogDown(ctx, b.nc, b.api)
	b.asked = b.asked || asked
	if down == nil {
		return false
	}
	b.down = down
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

// refuseSocket returns the usage error of a command that opens a backend
// while g names a system socket (g.socketPath), nil when it names none or
// when serve runs the command (g.served).
func refuseSocket(g *globals) error {
	sock := g.socketPath()
	if sock == "" || g.served != nil {
		return nil
	}
	if g.socket != "" && g.data != "" {
		return errSocketAndData()
	}
	from, drop := "--socket "+g.socket, "leave out --socket"
	if g.socket == "" {
		from, drop = "$LOGBOOK_SOCKET ("+os.Getenv("LOGBOOK_SOCKET")+")", "unset LOGBOOK_SOCKET"
	}
	name := g.commandName()
	return usageErrorf("%s: %s names a system serve's socket, which %s does not go through: it works on a data dir's log or files itself; give --data DIR for a data dir (serve's, as a user who may open it), or %s",
		name, from, name, drop)
}

// ownDataDir is resolveDataDir for a command that works on the data dir's
// own files (its keys, credentials, pinned keys): g naming a system
// socket is refuseSocket's usage error, rather than a silent change to
// some other data dir than the socket's serve's.
func ownDataDir(g *globals) (dataDir, error) {
	if err := refuseSocket(g); err != nil {
		return "", err
	}
	return resolveDataDir(g.data)
}

// errSocketAndData is the usage error of --socket given with --data.
func errSocketAndData() error {
	return usageErrorf("--socket and --data: give one (--socket asks a serve in system mode; --data opens a data dir of your own)")
}

// commandName is the command g runs as its messages lead with ("exec",
// "command output"), "this command" before cobra named it.
func (g *globals) commandName() string {
	return cmp.Or(strings.TrimPrefix(g.cmdName, "logbook "), "this command")
}
