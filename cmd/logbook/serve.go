package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/worker"
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
		of        otlpFlags
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
			// A closed standard output or error (`serve 2>&1 | tee log`,
			// and ctrl+c, which ends tee first) is a failed write of a
			// log line, never serve's end by SIGPIPE in the middle of its
			// orderly stop.
			signal.Ignore(syscall.SIGPIPE)
			switch logFormat {
			case "text", "json":
			default:
				return usageErrorf("--log-format %q: want text or json", logFormat)
			}
			if hf.addr == "off" {
				hf.addr = ""
			}
			httpName := "http"
			if !cmd.Flags().Changed("http") && os.Getenv("LOGBOOK_HTTP") != "" {
				httpName = "http (from $LOGBOOK_HTTP)"
			}
			if err := checkAddrFlags(map[string]string{httpName: hf.addr, "otlp": of.addr, "otlp-grpc": of.grpc}); err != nil {
				return err
			}
			if err := of.check(); err != nil {
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
			wp := workerPool{n: workers, flags: wf, live: live, gate: gf, http: hf, otlp: of, ckpt: ck, sys: sf}
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
				if of.addr != "" {
					return usageErrorf("--role reader --otlp: a reader appends nothing, so it takes no telemetry")
				}
				if of.grpc != "" {
					return usageErrorf("--role reader --otlp-grpc: a reader appends nothing, so it takes no telemetry")
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
	cmd.Flags().StringVar(&hf.addr, "http", cmp.Or(os.Getenv("LOGBOOK_HTTP"), host.DefaultHTTPAddr), "host:port for the HTTP API, the live board and /metrics, or off (default $LOGBOOK_HTTP, else "+host.DefaultHTTPAddr+"); on loopback, clients of another user than serve's or root need a token from http-tokens.json in the data dir; an address other than loopback needs --http-cert and --http-key, and every client a token")
	cmd.Flags().StringVar(&hf.cert, "http-cert", "", "TLS certificate file (PEM) for --http")
	cmd.Flags().StringVar(&hf.key, "http-key", "", "TLS key file (PEM) for --http")
	of.register(cmd)
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
	otlp   otlpFlags // OpenTelemetry in (--otlp, --otlp-grpc) and out (--otlp-export)
	// ckpt is when a writer signs checkpoints (zero: the defaults); a
	// reader witnesses them.
	ckpt checkpointFlags
	sys  systemFlags // the system socket; off when its dir is ""
}

// unsignedServe, as a key of serve's context, makes it sign nothing
// (host.Config.Unsigned): only `logbook bench`, which runs serve in its
// own process, sets it (benchCLI's RunUnsigned).
type unsignedServe struct{}

// serve runs the server until ctx is done (host.Serve). With no pool it
// runs no sandbox workers (in-process callers: tests and benchmarks).
func serve(ctx context.Context, g *globals, listen, fsync string, pool ...workerPool) error {
	var wp workerPool
	for _, p := range pool {
		wp = p
	}
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
	var allow []string
	if wp.n > 0 {
		if err := wp.flags.check(); err != nil {
			return err
		}
		// Stopping, the workers give each command --grace between
		// SIGTERM and SIGKILL.
		allowStop(ctx, stopGrace+wp.flags.grace)
		a, err := sandboxAllow(wp.flags.allow)
		if err != nil {
			return err
		}
		allow = allowStrings(a)
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
	if g.natsURL == "" {
		if err := checkListen(listen); err != nil {
			return err
		}
	}
	access, deciders, gid, err := wp.sys.parse(wp.reader)
	if err != nil {
		return err
	}
	cfg := host.Config{Dir: dd.dir(), URL: g.natsURL, Fsync: mode, Listen: listen, AdminCreds: g.adminCreds,
		Reader: wp.reader, Unsigned: ctx.Value(unsignedServe{}) != nil, Workers: wp.n, SandboxAllow: allow, AcceptLoss: g.acceptLoss, ViewsCache: g.viewsCache,
		HTTPAddr: wp.http.addr, HTTPCert: wp.http.cert, HTTPKey: wp.http.key,
		OTLPAddr: wp.otlp.addr, OTLPGRPCAddr: wp.otlp.grpc, OTLPExport: wp.otlp.export, OTLPHeaders: wp.otlp.headers,
		CheckpointEvery: wp.ckpt.every, CheckpointInterval: wp.ckpt.interval,
		SocketDir: wp.sys.dir, SocketAccess: access, SocketDeciders: deciders, SocketGroup: gid, Stderr: g.stderr,
		Opts: func() ([]nats.Option, error) {
			o, _, err := g.reach().CredsOptions()
			return o, err
		},
		Wire: func(ctx context.Context, p host.Parts) (host.Wired, error) { return wireServe(dd, g, wp, p) },
	}
	if wp.reader && g.credsPath != "" {
		// A follower answers for the follower id its credentials name,
		// the only follower subjects the server lets it take.
		c, err := datadir.ReadCreds(g.credsPath)
		if err != nil {
			return fmt.Errorf("--creds: %w", err)
		}
		cfg.FollowerID = c.FollowerID
	}
	return host.Serve(ctx, cfg)
}

// wireServe builds serve's parts of this package over p (host.Wired):
// the API service, the gate, the loops of wp's flags and the workers.
func wireServe(dd dataDir, g *globals, wp workerPool, p host.Parts) (host.Wired, error) {
	b := &backend{dd: dd, reg: p.Registry, srv: p.Server, nc: p.NC, log: p.Log}
	var w host.Wired
	var err error
	// Everything serve redacts follows redact.txt as it changes.
	if b.rules, err = newLiveRules(dd, g.stderr, "logbook serve"); err != nil {
		return w, err
	}
	svc, err := newService(b, p.Store)
	if err != nil {
		return w, err
	}
	svc.Unattested = func() []replay.Unattested { return unattested(b.log, "") }
	b.handoff = worker.NewHandoff()
	gs := gateService(b, svc, p.Store, wp.gate, g.stderr)
	w = host.Wired{Service: svc, Gate: gs,
		Own: map[string]host.Handler{
			host.VerbAudit: auditAnswer(b, svc),
		},
		Exec: func(call api.Caller) host.ExecRunner { return execAnswer(b, call, svc.CatchUpOnce) },
		Workers: func(nc *nats.Conn, l *natslog.Log) ([]*worker.Worker, error) {
			wb := b
			if nc != b.nc {
				wb = &backend{dd: b.dd, reg: b.reg, nc: nc, log: l, remote: true, rules: b.rules, handoff: b.handoff}
			}
			return newWorkers(wp.n, wb, wp.flags, g.stderr)
		},
	}
	if wp.http.addr != "" {
		// Observations and verdicts posted over HTTP are redacted by the
		// rules the hook and the import use.
		if w.Output, err = newCommandClient(b); err != nil {
			return w, err
		}
		parser, err := b.parser()
		if err != nil {
			return w, err
		}
		w.Redactor = parser.Redactor()
	}
	if !wp.reader {
		if w.Watch, w.Watching, err = wp.live.watcher(svc, g.stderr); err != nil {
			return w, err
		}
	}
	if (wp.otlp.addr != "" || wp.otlp.grpc != "") && !wp.reader {
		// Telemetry is redacted by the rules the hook and the import use.
		parser, err := b.parser()
		if err != nil {
			return w, err
		}
		if w.OTLP, err = newOTLPReceiver(p, parser.Redactor(), parser.MaxRaw()); err != nil {
			return w, err
		}
	}
	if rc := wp.live.reconciler(b, svc, g.stderr); rc != nil {
		w.Reconcile = rc.Run
	}
	// Reviews a stopped server left open: no hook waits for them. Then
	// the policy file is followed as it changes.
	w.Reviews = func(ctx context.Context) error {
		sweepReviews(ctx, gs, g.stderr)
		gs.Gate.WatchPolicies(ctx)
		return nil
	}
	w.Workspaces = func(ctx context.Context) error { return runWorkspaces(ctx, b, svc, g.stderr) }
	return w, nil
}

// openViews opens the projections in the data dir (host.OpenViews: it
// refuses a log that lost events they were made from, or with
// --accept-stream-loss, g.acceptLoss, sets them aside and rebuilds), or
// takes the ones host.Open opened and checked.
func openViews(ctx context.Context, g *globals, b *backend) (*projections.Store, error) {
	if s := b.views; s != nil {
		b.views = nil
		return s, nil
	}
	return host.OpenViews(ctx, host.Views{Dir: b.dd.dir(), Log: b.log, CacheSize: g.viewsCache, AcceptLoss: g.acceptLoss,
		Said: func(line string) { fmt.Fprintf(g.stderr, "logbook: %s\n", line) }})
}

// checkServeCreds refuses, as a usage error, --creds of a role that
// cannot do what serve --role role does: serve answers the API, which
// takes serve credentials (a writer's may only call it), and a follower
// (--role reader) answers the read verbs on its own subjects, which takes
// follower credentials naming its follower id (a reader's answer
// nothing). Credentials that cannot be read are left for the connection
// to report.
func checkServeCreds(g *globals, role string) error {
	if g.credsPath == "" {
		return nil
	}
	c, err := datadir.ReadCreds(g.credsPath)
	if err != nil {
		return nil
	}
	want := natslog.RoleServe
	if role == string(natslog.RoleReader) {
		want = natslog.RoleFollower
	}
	if c.Role == string(want) && want == natslog.RoleFollower && c.FollowerID == "" {
		return usageErrorf("--creds %s: follower credentials that name no follower_id; a follower answers on its own id's subjects only: take new ones (`logbook creds issue --role follower` on the followed data dir, `logbook creds cluster` for a cluster of your own)", g.credsPath)
	}
	if c.Role == string(want) || c.Role == string(natslog.RoleAdmin) {
		return nil
	}
	return usageErrorf("--creds %s: role %s; serve --role %s answers requests, which takes %s credentials (`logbook creds cluster` writes %s.json)", g.credsPath, c.Role, role, want, want)
}
