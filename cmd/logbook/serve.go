package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/run"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/replay"
)

func serveCmd(g *globals) *cobra.Command {
	var (
		listen   string
		fsync    string
		workers  int
		accept   bool
		admin    string
		pprofAt  string
		cacheMiB int64
		role     string
		wf       workerFlags
		live     liveFlags
		gf       gateFlags
		// logFormat is --log-format: serve's log as slog text or JSON.
		logFormat string
		hf        httpFlags
		ck        checkpointFlags
		sf        systemFlags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the log, the projector and the API on the data dir",
		Long: `serve runs an embedded NATS JetStream server on the data dir (or uses
--nats-url), keeps the Pebble projections in step with the log, answers the
other commands on a loopback listener protected by generated credentials
(creds.json in the data dir), and delivers hook payloads spooled while it
was down.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch logFormat {
			case "text", "json":
			default:
				return usageErrorf("--log-format %q: want text or json", logFormat)
			}
			if err := checkAddrFlags(map[string]string{"http": hf.addr}); err != nil {
				return err
			}
			if pprofAt != "" {
				if _, err := pprofListenAddr(pprofAt); err != nil {
					return err
				}
			}
			// One format for everything serve logs.
			g.stderr = servelog.New(g.stderr, logFormat)
			g.acceptLoss, g.adminCreds = accept, admin
			g.viewsCache = cacheMiB << 20
			if pprofAt != "" {
				at, stop, err := listenPprof(cmd.Context(), pprofAt)
				if err != nil {
					return err
				}
				defer stop()
				fmt.Fprintf(g.stderr, "logbook serve: profiles on http://%s/debug/pprof/ and memory figures on http://%s/debug/memstats\n", at, at)
			}
			wp := workerPool{n: workers, flags: wf, live: live, gate: gf, http: hf, ckpt: ck, sys: sf}
			if err := checkServeCreds(g, role); err != nil {
				return err
			}
			switch role {
			case string(natslog.RoleWriter):
				if g.natsURL != "" {
					// A worker connects with a worker's credentials, which a
					// writer's serve does not hold on a cluster of one's own.
					if cmd.Flags().Changed("workers") && workers != 0 {
						return usageErrorf("--nats-url --workers %d: run workers as `logbook worker --nats-url URL --creds worker.json` (a worker's credentials, not a writer's)", workers)
					}
					wp.n = 0
				}
			case string(natslog.RoleReader):
				if g.natsURL == "" {
					return usageErrorf("--role reader follows a cluster of your own: pass --nats-url and --creds with follower credentials")
				}
				if cmd.Flags().Changed("workers") && workers != 0 {
					return usageErrorf("--role reader --workers %d: a reader appends nothing, so it runs no workers", workers)
				}
				if len(live.watch) > 0 {
					return usageErrorf("--role reader --watch: a reader appends nothing, so it imports no transcripts")
				}
				wp.n, wp.reader = 0, true
			default:
				return usageErrorf("--role %q: want writer or reader", role)
			}
			return serve(cmd.Context(), g, listen, fsync, wp)
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 2, `sandbox workers to run in this process (0: none; run "logbook worker" elsewhere; with --nats-url always none)`)
	wf.register(cmd)
	live.register(cmd)
	cmd.Flags().StringVar(&hf.addr, "http", "", "host:port for the HTTP API, the live board and /metrics (e.g. 127.0.0.1:7070); on loopback, clients of another user than serve's or root need a token from http-tokens.json in the data dir; an address other than loopback needs --http-cert and --http-key, and every client a token; off when empty")
	cmd.Flags().StringVar(&hf.cert, "http-cert", "", "TLS certificate file (PEM) for --http")
	cmd.Flags().StringVar(&hf.key, "http-key", "", "TLS key file (PEM) for --http")
	gf.register(cmd)
	sf.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback host:port for clients (port 0 picks one; it is written to serve.json)")
	cmd.Flags().BoolVar(&accept, "accept-stream-loss", false, "start even when the log lost events the projection has seen (the stream was deleted, re-created or cut): set the projection aside and rebuild it from the log")
	cmd.Flags().StringVar(&admin, "admin-creds", "", `admin credentials file (from "logbook creds issue --role admin") the embedded server also accepts; by default admin's password lives only in this process, to create or check the stream at start`)
	cmd.Flags().Int64Var(&cacheMiB, "views-cache", 8, "MiB of Pebble block cache for the projections")
	bound(cmd.Flags(), "workers", 0, maxWorkers)
	bound(cmd.Flags(), "views-cache", 1, maxViewsCacheMiB)
	cmd.Flags().StringVar(&pprofAt, "pprof", "", "loopback host:port to serve net/http/pprof (/debug/pprof/) and the Go runtime's memory figures (/debug/memstats) on; off when empty")
	cmd.Flags().StringVar(&role, "role", "writer", "writer (with --nats-url: serve credentials), or reader: with --nats-url and follower credentials, build the projection and answer queries on the follower's own subjects but append nothing (no hooks, reconciler, workers or --watch); a follower such as a fleet board")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "serve's log: text (log/slog key=value lines) or json (one JSON object a line)")
	ck.add(cmd)
	cmd.Flags().StringVar(&fsync, "fsync", "always", "when the log reaches the disk: always (before every acknowledgement) or interval (every second; faster, can lose the last second on an OS crash)")
	return cmd
}

// workerPool is how many sandbox workers serve runs, and their settings,
// with the settings of the other loops that run beside them (the
// reconciler, transcript watching).
type workerPool struct {
	n     int
	flags workerFlags
	live  liveFlags
	gate  gateFlags
	// reader is serve --role reader: no appends, only the read verbs.
	reader bool
	http   httpFlags // the HTTP API and board; off when its addr is ""
	// ckpt is when a writer signs checkpoints (zero: the defaults); a
	// reader witnesses them.
	ckpt checkpointFlags
	sys  systemFlags // the system socket; off when its dir is ""
}

// intakeJournal is the file, in the data dir, of the hooks serve took on
// its socket and has not yet appended (api.Intake).
const intakeJournal = "hooks.journal"

// intakeFlushWait is how long a stopping serve gives the hooks it took to
// go into the log; what is left waits in the journal for the next start.
const intakeFlushWait = 10 * time.Second

// serve runs the server until ctx is done. With no pool it runs no
// sandbox workers (in-process callers: tests and benchmarks).
func serve(ctx context.Context, g *globals, listen, fsync string, pool ...workerPool) error {
	var wp workerPool
	for _, p := range pool {
		wp = p
	}
	say := func(format string, args ...any) { fmt.Fprintf(g.stderr, "logbook serve: "+format+"\n", args...) }
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	if wp.n < 0 || wp.n > maxWorkers {
		return usageErrorf("--workers %d: want 0 to %d", wp.n, maxWorkers)
	}
	// Flags are checked before anything starts.
	if err := wp.live.check(); err != nil {
		return err
	}
	if wp.gate.budget == 0 {
		wp.gate.budget = gate.DefaultBudget
	}
	if err := wp.gate.check(); err != nil {
		return err
	}
	if err := checkPolicy(dd); err != nil {
		return err
	}
	if err := wp.http.check(); err != nil {
		return err
	}
	if wp.n > 0 {
		if err := wp.flags.check(); err != nil {
			return err
		}
	}
	var mode natslog.Fsync
	switch fsync {
	case "always":
		mode = natslog.FsyncAlways
	case "interval":
		mode = natslog.FsyncInterval
	default:
		return usageErrorf("--fsync %q: want always or interval", fsync)
	}
	if listen == "" && g.natsURL == "" {
		return usageErrorf("--listen: want a loopback host:port such as 127.0.0.1:0")
	}
	if g.natsURL == "" {
		// Say so at once when the port is taken, rather than when the
		// server gives up waiting to be ready.
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", listen, err)
		}
		l.Close()
	}
	// A command that only reads gives the lock up when asked: serve
	// never refuses to start for a reader.
	lock, err := dd.lockOver(ctx, "logbook serve", func(holder string) {
		say("waiting for %s, which only reads the data dir, to give it up", holder)
	})
	if err != nil {
		return err
	}
	defer lock.Close()
	admin, err := datadir.AdminCredentials(g.adminCreds)
	if err != nil {
		return err
	}
	b := &backend{dd: dd, reg: events.NewRegistry(), lock: nil}
	opts := func() ([]nats.Option, error) {
		o, _, err := g.reach().CredsOptions()
		return o, err
	}
	conn, err := host.Connect(ctx, host.Conn{Dir: dd.dir(), URL: g.natsURL, Opts: opts, Fsync: mode, Listen: listen,
		Admin: admin, Registry: b.reg, Say: say})
	if err != nil {
		return err
	}
	b.srv, b.nc = conn.Server, conn.NC
	cfg, pinned, durability := conn.Config, conn.Pinned, conn.Durability
	defer b.Close()
	b.nc.SetErrorHandler(servelog.NATSErrors(g.stderr))
	if b.log, err = natslog.Open(ctx, b.nc, cfg); err != nil {
		return err
	}
	// A full disk pauses appends and the views' writes; serve probes and
	// goes on once the disk takes writes again (adapters/diskfull).
	pause := diskfull.NewPause(say)
	defer pause.Close()
	b.pause, b.viewsFS = pause, pause.ViewsFS(dd.path("views"))
	store, err := openViews(ctx, g, b)
	if err != nil {
		return err
	}
	defer store.Close()
	// The key serve signs with, and the watch on it (nil: none).
	sk, key, err := host.Signing{Dir: dd.dir(), Log: b.log, Cluster: g.natsURL != "", Reader: wp.reader, Pinned: pinned,
		Journal: dd.path(intakeJournal), Say: say}.Start(ctx)
	if err != nil {
		return err
	}
	if key != nil {
		cfg.Signer = key
	}
	// Everything serve redacts follows redact.txt as it changes.
	if b.rules, err = newLiveRules(dd, g.stderr, "logbook serve"); err != nil {
		return err
	}
	svc, err := newService(b, store)
	if err != nil {
		return err
	}
	svc.Unattested = func() []replay.Unattested { return unattested(b.log, "") }
	var in *api.Intake
	if !wp.reader {
		// Opened before any verb is served: hooks taken before a stop
		// are decided before the ones that come now.
		in, err = api.OpenIntake(svc, dd.path(intakeJournal), say)
		if err != nil {
			return err
		}
		defer in.Close()
		if n := in.Pending(); n > 0 {
			say("appending first %s taken before the last stop (%s)", term.Plural(n, "hook payload"), dd.path(intakeJournal))
		}
	}
	gs := gateService(b, svc, store, wp.gate, g.stderr)
	health := &host.LogHealth{}
	if b.srv == nil {
		// While the cluster's log does not answer (no stream leader), the
		// read verbs a client allows to be stale answer from the
		// projection as it stands; the gate, the reconciler and every
		// writer still wait for it (api.AllowStale). The data dir's own
		// server has no quorum to lose: a probe it does not answer in
		// time is a slow machine, and reads keep catching up.
		svc.LogState = health.State
	}
	verbs := host.Verbs{Service: svc, Gate: gs.Handlers(), Health: health, Log: b.log, Store: store,
		Durability: durability, Paused: pause.String, Reader: wp.reader}.Handlers()
	var web *host.HTTP
	if wp.http.addr != "" {
		if web, err = newHTTP(wp.http, dd, b, store, svc, gs.Gate); err != nil {
			return err
		}
		defer web.Close()
		for verb, h := range verbs {
			verbs[verb] = web.Observe(verb, h)
		}
	}
	prefix := apiPrefixFor(dd)
	if wp.reader {
		prefix = followerPrefixFor(dd)
	}
	var logMu sync.Mutex
	logAPI := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(g.stderr, "logbook serve: "+format+"\n", args...)
	}
	unsubscribe, err := host.ServeVerbs(b.nc, verbs, prefix, wp.reader, logAPI)
	if err != nil {
		return err
	}
	defer unsubscribe()
	if in != nil {
		stop, err := host.ServeIntake(ctx, in, dd.path(hooksock.Name), web.Observe(api.VerbHook, in.Accept), logAPI)
		if err != nil {
			return err
		}
		defer func() {
			if left, err := stop(intakeFlushWait); left > 0 {
				say("%s left in %s for the next start: %v", term.Plural(left, "hook payload"), dd.path(intakeJournal), err)
			}
		}()
	}
	stopSystem, err := serveSystem(ctx, wp.sys, b, in, verbs, logAPI)
	if err != nil {
		return err
	}
	defer stopSystem()
	// The log's checkpoints: a writer signs them, a reader witnesses.
	// Set up before serve.json names this server.
	checkpoints, tree, err := checkpointActor(ctx, g, b, wp.reader, wp.ckpt, web)
	if err != nil {
		return err
	}
	defer tree.Close()
	if err := b.nc.Flush(); err != nil { // the server has the subscriptions before serve.json names it
		return fmt.Errorf("serve the API: %w", err)
	}
	{
		url := g.natsURL
		if b.srv != nil {
			url = b.srv.ClientURL()
		}
		si := datadir.ServeInfo{URL: url, API: prefix, PID: os.Getpid(), Started: time.Now().UTC(), Workers: wp.n}
		if wp.n > 0 {
			allow, err := sandboxAllow(wp.flags.allow)
			if err != nil {
				return err
			}
			si.SandboxAllow = allowStrings(allow)
		}
		if err := dd.dir().WriteServeInfo(si); err != nil {
			return fmt.Errorf("write %s: %w", dd.path("serve.json"), err)
		}
		defer os.Remove(dd.path("serve.json"))
	}
	say("data %s", dd)
	if b.srv != nil {
		say("listening on %s (credentials in %s)", b.srv.ClientURL(), dd.path("creds.json"))
	}
	say("durability: %s", durability)
	if wp.reader {
		say("role reader: building the projection and answering %s on %s*; appending nothing", strings.Join(host.ReadVerbs, ", "), prefix)
	}
	wb := b
	if b.srv != nil && wp.n > 0 {
		if wb, err = b.as(ctx, natslog.RoleWorker, cfg); err != nil {
			return err
		}
		wb.nc.SetErrorHandler(servelog.NATSErrors(g.stderr))
		defer wb.Close()
		if sk != nil && wb.log.Verifier() != nil {
			sk.Logs = append(sk.Logs, wb.log)
		}
	}
	if sk != nil {
		skCtx, stopSK := context.WithCancel(ctx)
		skDone := make(chan struct{})
		go func() {
			defer close(skDone)
			sk.Run(skCtx)
		}()
		defer func() { stopSK(); <-skDone }()
	}
	workers, err := newWorkers(wp.n, wb, wp.flags, g.stderr)
	if err != nil {
		return err
	}
	if wp.n > 0 {
		say("%s", term.Plural(wp.n, "sandbox worker"))
	}

	var grp run.Group
	actor := func(run func(context.Context) error) { host.Actor(ctx, &grp, run) }
	actor(func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	sid, err := host.Loops{Dir: dd.dir(), Own: b.srv != nil, Reader: wp.reader, Pause: pause, Log: b.log, Health: health,
		Service: svc, NC: b.nc, Delivered: web.ObserveSpool, Say: say}.Add(ctx, &grp)
	if err != nil {
		return err
	}
	actor(checkpoints)
	watch, err := wp.live.watcher(svc, g.stderr)
	if err != nil {
		return err
	}
	if watch != nil {
		say("following transcripts under %s", strings.Join(wp.live.watch, ", "))
		actor(watch)
	}
	if !wp.reader {
		// Reviews a stopped server left open: no hook waits for them.
		// Then the policy file is followed as it changes.
		actor(func(ctx context.Context) error {
			sweepReviews(ctx, gs, g.stderr)
			gs.Gate.WatchPolicies(ctx)
			return nil
		})
	}
	if web != nil {
		web.Metrics.Registry().MustRegister(health.Gauge())
		say("board, API and metrics on %s", web.URL())
		actor(web.Run)
	}
	if rc := wp.live.reconciler(svc, g.stderr); rc != nil && !wp.reader {
		actor(rc.Run)
	}
	if !wp.reader {
		actor(func(ctx context.Context) error { return runWorkspaces(ctx, b, svc, g.stderr) })
	}
	for _, w := range workers {
		actor(func(ctx context.Context) error {
			err := w.Run(ctx)
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker %s: %w", w.Identity().ID, err)
		})
	}
	err = streamLost(b.log, sid, grp.Run())
	if errors.Is(err, natslog.ErrStreamLost) {
		say("%v: the log is gone; stopping", err)
	}
	say("stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// openViews opens the projections in the data dir (host.OpenViews: it
// refuses a log that lost events they were made from, or with
// --accept-stream-loss, g.acceptLoss, sets them aside and rebuilds), or
// takes the ones b.checkLog opened and checked.
func openViews(ctx context.Context, g *globals, b *backend) (*projections.Store, error) {
	if s := b.views; s != nil {
		b.views = nil
		return s, nil
	}
	return host.OpenViews(ctx, b.viewsOf(g))
}

// viewsOf is how b opens its data dir's projections for the command g.
func (b *backend) viewsOf(g *globals) host.Views {
	return host.Views{Dir: b.dd.dir(), Log: b.log, CacheSize: g.viewsCache, FS: b.viewsFS, AcceptLoss: g.acceptLoss,
		Said: func(line string) { fmt.Fprintf(g.stderr, "logbook: %s\n", line) }}
}

// checkServeCreds refuses, as a usage error, --creds of a role that
// cannot do what serve --role role does: serve answers the API, which
// takes serve credentials (a writer's may only call it), and a follower
// (--role reader) answers the read verbs on its own subjects, which takes
// follower credentials (a reader's answer nothing). Credentials that
// cannot be read are left for the connection to report.
func checkServeCreds(g *globals, role string) error {
	if g.credsPath == "" {
		return nil
	}
	c, err := readCreds(g.credsPath)
	if err != nil {
		return nil
	}
	want := natslog.RoleServe
	if role == string(natslog.RoleReader) {
		want = natslog.RoleFollower
	}
	if c.Role == string(want) || c.Role == string(natslog.RoleAdmin) {
		return nil
	}
	return usageErrorf("--creds %s: role %s; serve --role %s answers requests, which takes %s credentials (`logbook creds cluster` writes %s.json)", g.credsPath, c.Role, role, want, want)
}
