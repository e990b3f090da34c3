package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/run"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/diskfull"
	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	httpapi "github.com/logbook-dev/logbook/adapters/http"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/adapters/otel"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// IntakeJournal is the file, in the data dir, of the hooks serve took on
// its socket and has not yet appended (api.Intake).
const IntakeJournal = "hooks.journal"

// IntakeFlushWait is how long a stopping serve gives the hooks it took to
// go into the log; what is left waits in the journal for the next start.
const IntakeFlushWait = 10 * time.Second

// Config is one `logbook serve`: its flags, checked by the caller, and
// Wire, which builds the parts of the caller's own over what Serve opens.
type Config struct {
	Dir datadir.Dir // the data dir; Serve takes its lock
	// URL is --nats-url; "" starts the data dir's own server on Listen.
	URL string
	// Opts returns the --creds options for URL (Conn.Opts).
	Opts func() ([]nats.Option, error)
	// Fsync is when the embedded server's log reaches the disk.
	Fsync natslog.Fsync
	// Listen is the embedded server's loopback host:port (port 0 picks
	// one); unused with URL.
	Listen string
	// AdminCreds is --admin-creds, an admin credentials file the embedded
	// server also accepts; "": none (datadir.AdminCredentials).
	AdminCreds string
	// Reader is serve --role reader: it builds the projection and answers
	// the read verbs on the follower's subjects, and appends nothing.
	Reader bool
	// FollowerID, with Reader, is the follower id its credentials name
	// (datadir.Creds.FollowerID): it answers on
	// "logbook.ro.<FollowerID>.", the only follower subjects the server
	// lets those credentials take. "" (admin's credentials) answers on
	// api.FollowerPrefixFor of the host and data dir.
	FollowerID string
	// Unsigned makes serve sign nothing: no key made or registered, no
	// signing.began appended, so its log stays what a log was before
	// signing (every event "before signing", no signature verified by
	// its reads or its checkpoints' judgment). No flag sets it: it is
	// the unsigned twin `logbook bench` measures serve against, in
	// its own process.
	Unsigned bool
	// Workers is how many sandbox workers run in this process (0: none);
	// SandboxAllow is their allowlist, as serve.json records it.
	Workers      int
	SandboxAllow []string
	// AcceptLoss and ViewsCache are how the projection is opened
	// (Views.AcceptLoss; Views.CacheSize, bytes).
	AcceptLoss bool
	ViewsCache int64
	// HTTPAddr, HTTPCert and HTTPKey are the HTTP surface's (HTTPConfig);
	// off when HTTPAddr is "".
	HTTPAddr, HTTPCert, HTTPKey string
	// OTLPAddr is --otlp, the host:port of the OTLP/HTTP receiver
	// (Wired.OTLP; "": none); a writer's only.
	OTLPAddr string
	// OTLPGRPCAddr is --otlp-grpc, the host:port of the same receiver
	// over OTLP/gRPC (Wired.OTLP's ServeGRPC; "": none); a writer's only.
	OTLPGRPCAddr string
	// OTLPExport is --otlp-export, the OTLP/HTTP traces URL the
	// exporter sends sessions to (otel.Exporter; "": none), with
	// OTLPHeaders on every request.
	OTLPExport  string
	OTLPHeaders http.Header
	// CheckpointEvery (messages) and CheckpointInterval are when a
	// writer signs the log's checkpoints (merkle.ActorConfig; zero: the
	// defaults).
	CheckpointEvery    int64
	CheckpointInterval time.Duration
	// SocketDir is the system socket's directory (System.Dir; "": no
	// system socket, and a reader must leave it so); SocketAccess and
	// SocketDeciders are System's Access and Deciders.
	SocketDir                    string
	SocketAccess, SocketDeciders api.Access
	// SocketGroup is System.Group: the gid given the socket, 0660; ""
	// for none.
	SocketGroup string
	// Stderr is serve's log: every line Serve says, "logbook serve: "
	// first. Writes come from several goroutines.
	Stderr io.Writer
	// Wire builds the caller's parts over what Serve opened, once the
	// projection is open and the log signs; its error ends Serve.
	Wire func(ctx context.Context, p Parts) (Wired, error)
}

// Parts are what Serve opened, for Wire: Serve owns and closes them all
// when it returns.
type Parts struct {
	Registry *events.Registry
	NC       *nats.Conn
	Server   *natslog.Server // nil on a cluster
	Log      *natslog.Log
	Store    *projections.Store
	// Pause is what serve knows of a full disk (adapters/diskfull).
	Pause *diskfull.Pause
}

// Wired are the caller's parts of serve, built by Config.Wire. Service
// and Gate are required; a nil func is a loop not run.
type Wired struct {
	Service *api.Service
	Gate    *gate.Service
	// Output reads a command's output over HTTP, and Redactor redacts
	// what is posted there (HTTPConfig); used only with Config.HTTPAddr.
	Output   httpapi.OutputReader
	Redactor *redact.Redactor
	// Own are the system socket's verbs of its own (System.Own).
	Own map[string]Handler
	// Exec makes the runner of the exec socket's requests (ServeExec,
	// at execsock.Name in the data dir), logbook-exec's way in, given a
	// Caller that answers serve's API verbs in this process
	// (api.InProcess over the verbs serve answers on NATS); nil, or a
	// reader: no exec socket.
	Exec func(call api.Caller) ExecRunner
	// OTLP takes the agents' telemetry on Config.OTLPAddr and
	// Config.OTLPGRPCAddr; required with either.
	OTLP *otel.Receiver
	// Watch follows the transcripts under Watching (serve --watch).
	Watch    func(context.Context) error
	Watching []string
	// Reconcile, Reviews (open reviews swept, then the policy followed)
	// and Workspaces are a writer's loops; a reader runs none.
	Reconcile  func(context.Context) error
	Reviews    func(context.Context) error
	Workspaces func(context.Context) error
	// Workers makes Config.Workers sandbox workers on nc and l (on the
	// data dir's own server, a connection of the worker role of their
	// own); nil or none: no workers.
	Workers func(nc *nats.Conn, l *natslog.Log) ([]*worker.Worker, error)
}

// Serve runs serve on cfg until ctx is done: it takes the data dir's
// lock (asking a command that only reads to give it up), connects
// (Connect), opens the log, the projection (OpenViews) and its signing
// (Signing.Start), wires cfg.Wire's parts, opens the intake journal
// (a writer's), answers the API (ServeVerbs), the hook socket
// (ServeIntake), the system socket (System) and HTTP (NewHTTP), writes
// serve.json (removed on return), and runs the loops (Loops), the
// checkpoints (merkle.Actor), the workers, a writer's notifier
// (notify.Notifier, once the data dir has a notify.toml) and Wired's
// loops in one run.Group, with a writer's OTLP receiver on
// cfg.OTLPAddr and cfg.OTLPGRPCAddr (Wired.OTLP; the addresses are
// opened first, and one taken is refused at once) and the OTLP exporter to cfg.OTLPExport
// (otel.Exporter); a notify.toml that does not parse at the
// start is refused (*notify.ConfigError). It returns nil once ctx is
// cancelled, the stream's loss (natslog.ErrStreamLost) when the log is
// replaced, and any other error of what it starts, each naming the
// part. What it does is said on cfg.Stderr. Once serve.json is written,
// ctx cancelled during the rest of the start is a stop like any later
// one: nil, not the cancel's error from the step it interrupted.
func Serve(ctx context.Context, cfg Config) (err error) {
	announced := false
	defer func() {
		if announced && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
	}()
	// A start that fails on a full disk fails with whatever the server or
	// Pebble answered ("insufficient resources", most often): say which
	// part of the data dir takes no writes, and what to do.
	parts := []string{string(cfg.Dir), cfg.Dir.Path("jetstream"), cfg.Dir.Path("views"), cfg.Dir.Path("spool")}
	full := false
	defer func() {
		if err == nil || announced || cfg.Reader || full {
			return
		}
		if cfg.URL == "" && errors.Is(err, natslog.ErrAppendsHeld) {
			// The log's own store: what serve appends as it starts (its
			// signing, its journal) was held for the reserve (Room).
			if short, ok := diskfull.ShortOf(cfg.Dir.Path("jetstream")); ok {
				err = &heldStartError{dir: cfg.Dir, store: cfg.Dir.Path("jetstream"), short: short, err: err}
				return
			}
		}
		for _, dir := range parts {
			if why := diskfull.Probe(dir, false); why != "" {
				err = fmt.Errorf("%w\n%s takes no writes (%s): %s and start serve again", err, dir, why, diskfull.Remedy(why))
				return
			}
		}
	}()
	var sayMu sync.Mutex
	say := func(format string, args ...any) {
		sayMu.Lock()
		defer sayMu.Unlock()
		servelog.Say(cfg.Stderr, fmt.Sprintf("logbook serve: "+format, args...))
	}
	// info says what is news, not a fault, however its names read
	// (servelog's "INFO: " marker).
	info := func(format string, args ...any) { say("INFO: "+format, args...) }
	dd := cfg.Dir
	if cfg.URL == "" {
		// Say so at once when the port is taken, rather than when the
		// server gives up waiting to be ready.
		l, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
		}
		l.Close()
	}
	var otlpL net.Listener
	if cfg.OTLPAddr != "" && !cfg.Reader {
		l, err := otel.Listen(cfg.OTLPAddr)
		if err != nil {
			return err
		}
		otlpL = l
		defer otlpL.Close()
	}
	var otlpG net.Listener
	if cfg.OTLPGRPCAddr != "" && !cfg.Reader {
		l, err := otel.ListenGRPC(cfg.OTLPGRPCAddr)
		if err != nil {
			return err
		}
		otlpG = l
		defer otlpG.Close()
	}
	// The board's port, held from here: one another process holds
	// refuses serve before the data dir is touched.
	var httpListener net.Listener
	if cfg.HTTPAddr != "" {
		l, err := ListenHTTP(cfg.HTTPAddr)
		if err != nil && dd.WaitEnding(ctx) {
			// The serve just killed held it: its port went with its lock.
			l, err = ListenHTTP(cfg.HTTPAddr)
		}
		if err != nil {
			// The port is most likely taken by the serve that holds this
			// data dir: that is what to say, not to pick another port.
			if werr := dd.WriterHolds(); werr != nil {
				return werr
			}
			return err
		}
		httpListener = l
		defer func() {
			if httpListener != nil {
				httpListener.Close()
			}
		}()
	}
	if err := dd.ForeignError(); err != nil {
		return err
	}
	// A command that only reads gives the lock up when asked: serve
	// never refuses to start for a reader.
	lock, err := dd.LockOver(ctx, "logbook serve", func(holder string) {
		info("waiting for %s, which only reads the data dir, to give it up", holder)
	})
	if err != nil {
		return err
	}
	defer lock.Close()
	// A serve started on a full disk does not start, a fresh store or
	// one made before alike: the server would take an existing store
	// and wait, paused, for space, but refuse to make a new one.
	if !cfg.Reader {
		for _, dir := range parts {
			if why := diskfull.Probe(dir, false); why != "" {
				full = true
				return fmt.Errorf("%s takes no writes (%s): %s and start serve again", dir, why, diskfull.Remedy(why))
			}
		}
	}
	if !cfg.Reader {
		// A notify.toml that does not parse is refused at the start, as
		// policy.toml is; later faults keep the last good config.
		if _, _, err := notify.Load(dd.Path(notify.File)); err != nil {
			return err
		}
	}
	admin, err := datadir.AdminCredentials(cfg.AdminCreds)
	if err != nil {
		return err
	}
	p := Parts{Registry: events.NewRegistry()}
	conn, err := Connect(ctx, Conn{Dir: dd, URL: cfg.URL, Opts: cfg.Opts, Fsync: cfg.Fsync, Listen: cfg.Listen,
		Admin: admin, Registry: p.Registry, Say: say})
	if err != nil {
		return err
	}
	p.Server, p.NC = conn.Server, conn.NC
	lcfg, pinned, durability := conn.Config, conn.Pinned, conn.Durability
	lcfg.OnQuarantine = sayMissing(say)
	defer func() {
		if p.Log != nil {
			p.Log.Close()
		}
		if p.Server != nil {
			p.Server.Shutdown()
		} else if p.NC != nil {
			p.NC.Drain()
			api.Forget(p.NC)
		}
	}()
	p.NC.SetErrorHandler(servelog.NATSErrors(cfg.Stderr))
	if p.Log, err = natslog.Open(ctx, p.NC, lcfg); err != nil {
		return err
	}
	// What serve's last checkpoint states it judged is not judged
	// again: the projector's catch-up verifies signatures only past it.
	if js, err := jetstream.New(p.NC); err == nil {
		if why, err := merkle.UseFastPath(ctx, p.Log, js, string(dd)); err != nil {
			say("WARN: fast path: %v; every signature is verified", err)
		} else if p.Log.Judgment() != nil {
			info("fast path: %s", why)
		}
	}
	// A full disk pauses appends and the views' writes; serve probes and
	// goes on once the disk takes writes again (adapters/diskfull).
	p.Pause = diskfull.NewPause(say)
	defer p.Pause.Close()
	// A follower's data dir keeps where its log is: a command that finds
	// it without its serve says so rather than start a log there.
	remote := ""
	if p.Server == nil {
		remote = cfg.URL
	}
	role := "writer"
	if cfg.Reader {
		role = "reader"
	}
	p.Store, err = OpenViews(ctx, Views{Dir: dd, Log: p.Log, CacheSize: cfg.ViewsCache, FS: p.Pause.ViewsFS(dd.Path("views")),
		AcceptLoss: cfg.AcceptLoss, Said: func(line string) { fmt.Fprintf(cfg.Stderr, "logbook: %s\n", line) }, Remote: remote, Role: role})
	if err != nil {
		return err
	}
	defer p.Store.Close()
	// The key serve signs with, and the watch on it (nil: none).
	var (
		sk  *KeyWatch
		key *attestation.Key
	)
	if cfg.Unsigned {
		info("signing nothing: events are appended unsigned, as before signing")
	} else if sk, key, err = (Signing{Dir: dd, Log: p.Log, Cluster: cfg.URL != "", Reader: cfg.Reader, Pinned: pinned,
		Journal: dd.Path(IntakeJournal), Say: say}).Start(ctx); err != nil {
		return err
	}
	if key != nil {
		lcfg.Signer = key
	}
	w, err := cfg.Wire(ctx, p)
	if err != nil {
		return err
	}
	svc := w.Service
	svc.Said = say // before the spool's drain: a payload it sets aside is said
	svc.Paused = p.Pause.String
	svc.PausedSince = func() time.Time {
		since, _, _ := p.Pause.Since()
		return since
	}
	svc.Spooled = func() int {
		n, _ := filepath.Glob(filepath.Join(dd.Path("spool"), "*.json"))
		return len(n)
	}
	if n := svc.Spooled(); cfg.Reader && n > 0 {
		// Kept before this data dir was a reader's, or by a hook that
		// ran before serve.json said so: a reader delivers none.
		say("WARN: the spool %s holds %s, which this serve never delivers: a reader takes no hooks (point the hooks that kept them at the data dir of the serve that appends to the log)", dd.Path("spool"), term.Plural(n, "hook payload"))
	}
	var in *api.Intake
	if !cfg.Reader {
		// Opened before any verb is served: hooks taken before a stop
		// are decided before the ones that come now.
		in, err = api.OpenIntake(svc, dd.Path(IntakeJournal), say)
		if err != nil {
			return err
		}
		defer in.Close()
		if n := in.Pending(); n > 0 {
			info("appending first %s taken before the last stop (%s)", term.Plural(n, "hook payload"), dd.Path(IntakeJournal))
		}
	}
	health := &LogHealth{Reader: cfg.Reader}
	if p.Server == nil {
		// While the cluster's log does not answer (no stream leader), the
		// read verbs a client allows to be stale answer from the
		// projection as it stands; the gate, the reconciler and every
		// writer still wait for it (api.AllowStale). The data dir's own
		// server has no quorum to lose: a probe it does not answer in
		// time is a slow machine, and reads keep catching up.
		svc.LogState = health.State
	}
	verbs := Verbs{Service: svc, Gate: w.Gate.Handlers(), Health: health, Log: p.Log, Store: p.Store,
		Durability: durability, Paused: p.Pause.String, Reader: cfg.Reader}.Handlers()
	var web *HTTP
	if cfg.HTTPAddr != "" {
		web, err = NewHTTP(HTTPConfig{
			Addr: cfg.HTTPAddr, Cert: cfg.HTTPCert, Key: cfg.HTTPKey, DataDir: string(dd),
			Log: p.Log, Conn: p.NC, Store: p.Store, Reg: p.Registry, Service: svc,
			Reviews: w.Gate.Gate, Output: w.Output, Redactor: w.Redactor, Listener: httpListener, PausedSince: func() time.Time {
				since, _, _ := p.Pause.Since()
				return since
			},
		})
		if err != nil {
			return err
		}
		httpListener = nil // web's now
		defer web.Close()
		for verb, h := range verbs {
			verbs[verb] = web.Observe(verb, h)
		}
	}
	hostname, _ := os.Hostname()
	prefix := api.PrefixFor(hostname, string(dd))
	if cfg.Reader {
		prefix = api.FollowerPrefixFor(hostname, string(dd))
		if cfg.FollowerID != "" {
			prefix = api.FollowerRoot + cfg.FollowerID + "."
		}
		if err := prefixFree(p.NC, prefix); err != nil {
			return err
		}
	}
	unsubscribe, err := ServeVerbs(p.NC, verbs, prefix, cfg.Reader, say)
	if err != nil {
		return err
	}
	defer unsubscribe()
	if in != nil {
		stop, err := ServeIntake(ctx, in, dd.Path(hooksock.Name), web.Observe(api.VerbHook, in.Accept), say)
		if err != nil {
			return err
		}
		defer func() {
			if left, err := stop(IntakeFlushWait); left > 0 {
				say("%s left in %s for the next start: %v", term.Plural(left, "hook payload"), dd.Path(IntakeJournal), err)
			}
		}()
	}
	if w.Exec != nil && !cfg.Reader {
		stopExec, err := ServeExec(ctx, dd.Path(execsock.Name), w.Exec(api.InProcess(verbs, say)), say)
		if err != nil {
			return err
		}
		defer stopExec()
	}
	if cfg.SocketDir != "" && in != nil {
		stopSystem, err := System{Dir: cfg.SocketDir, Access: cfg.SocketAccess, Deciders: cfg.SocketDeciders, Group: cfg.SocketGroup,
			Hook: in.Accept, Verbs: verbs, Logf: say, Own: w.Own}.Serve(ctx)
		if err != nil {
			return err
		}
		defer stopSystem()
	}
	// The log's checkpoints: a writer signs them, a reader witnesses.
	// Set up before serve.json names this server.
	js, err := jetstream.New(p.NC)
	if err != nil {
		return err
	}
	checkpoints, tree, err := merkle.Actor(ctx, merkle.ActorConfig{
		Dir: string(dd), Log: p.Log, JS: js, Reader: cfg.Reader, Every: cfg.CheckpointEvery, Interval: cfg.CheckpointInterval,
		Say: say, Observed: web.ObserveCheckpoint, Hole: health.Hole,
	})
	if err != nil {
		return err
	}
	defer tree.Close()
	if err := p.NC.Flush(); err != nil { // the server has the subscriptions before serve.json names it
		return fmt.Errorf("serve the API: %w", err)
	}
	url := cfg.URL
	if p.Server != nil {
		url = p.Server.ClientURL()
	}
	// What notify.toml says is in serve's log before serve.json names
	// this server.
	var nw *notify.Watch
	if !cfg.Reader {
		nw = &notify.Watch{Path: dd.Path(notify.File), Say: say,
			Undeliverable: func(s notify.Sink) string { return notify.Undeliverable(s, web != nil) }}
		nw.Check()
	}
	si := datadir.ServeInfo{URL: url, API: prefix, PID: os.Getpid(), Started: time.Now().UTC(), Workers: cfg.Workers, Reader: cfg.Reader}
	if cfg.Workers > 0 {
		si.SandboxAllow = cfg.SandboxAllow
	}
	if web != nil {
		si.Board = web.URL()
	}
	if err := dd.WriteServeInfo(si); err != nil {
		return fmt.Errorf("write %s: %w", dd.Path("serve.json"), err)
	}
	defer os.Remove(dd.Path("serve.json"))
	announced = true
	info("data %s", dd)
	if p.Server != nil {
		info("listening on %s (credentials in %s)", p.Server.ClientURL(), dd.Path("creds.json"))
	}
	info("durability: %s", durability)
	if cfg.Reader {
		info("role reader: building the projection and answering %s on %s*; appending nothing", strings.Join(ReadVerbs, ", "), prefix)
	}
	workers, err := startWorkers(ctx, cfg, p, lcfg, w.Workers, sk)
	if err != nil {
		return err
	}
	defer workers.close()
	if sk != nil {
		skCtx, stopSK := context.WithCancel(ctx)
		skDone := make(chan struct{})
		go func() {
			defer close(skDone)
			sk.Run(skCtx)
		}()
		defer func() { stopSK(); <-skDone }()
	}
	ws, err := workers.make()
	if err != nil {
		return err
	}
	if cfg.Workers > 0 {
		info("%s", term.Plural(cfg.Workers, "sandbox worker"))
	}

	var grp run.Group
	actor := func(run func(context.Context) error) { Actor(ctx, &grp, run) }
	actor(func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	sid, err := Loops{Dir: dd, Own: p.Server != nil, Reader: cfg.Reader, Pause: p.Pause, Log: p.Log, Health: health,
		Service: svc, NC: p.NC, Delivered: web.ObserveSpool, Say: say}.Add(ctx, &grp)
	if err != nil {
		return err
	}
	actor(checkpoints)
	if w.Watch != nil {
		info("following transcripts under %s", strings.Join(w.Watching, ", "))
		actor(w.Watch)
	}
	if !cfg.Reader && w.Reviews != nil {
		actor(w.Reviews)
	}
	if web != nil {
		web.Metrics.Registry().MustRegister(health.Gauge())
		info("board, API and metrics on %s", web.URL())
		actor(web.Run)
	}
	if !cfg.Reader && w.Reconcile != nil {
		actor(w.Reconcile)
	}
	if !cfg.Reader {
		// Notifications, by notify.toml's rules, once it exists.
		actor((&notify.Notifier{Log: p.Log, Registry: p.Registry, JS: js, Watch: nw, Host: hostname, Say: say}).Run)
	}
	if !cfg.Reader && w.Workspaces != nil {
		actor(w.Workspaces)
	}
	if otlpL != nil && w.OTLP != nil {
		if w.OTLP.Say == nil {
			w.OTLP.Say = say
		}
		info("OpenTelemetry (OTLP/HTTP) taken on http://%s%s and %s", otlpL.Addr(), otel.PathLogs, otel.PathTraces)
		actor(func(ctx context.Context) error { return w.OTLP.Serve(ctx, otlpL) })
	}
	if otlpG != nil && w.OTLP != nil {
		if w.OTLP.Say == nil {
			w.OTLP.Say = say
		}
		info("OpenTelemetry (OTLP/gRPC) taken on %s", otlpG.Addr())
		actor(func(ctx context.Context) error { return w.OTLP.ServeGRPC(ctx, otlpG) })
	}
	if cfg.OTLPExport != "" {
		info("sessions exported as traces to %s", otel.ShownURL(cfg.OTLPExport))
		actor((&otel.Exporter{Log: p.Log, Registry: p.Registry, JS: js, URL: cfg.OTLPExport, Headers: cfg.OTLPHeaders, Say: say}).Run)
	}
	for _, w := range ws {
		actor(func(ctx context.Context) error {
			err := w.Run(ctx)
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker %s: %w", w.Identity().ID, err)
		})
	}
	err = p.Log.StreamLost(sid, grp.Run())
	if errors.Is(err, natslog.ErrStreamLost) {
		say("%v: the log is gone; stopping", err)
	}
	say("stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// workerConn is where serve's sandbox workers append: serve's own
// connection and log, or on the data dir's own server a connection of
// the worker role with a log of its own (owned, closed by close).
type workerConn struct {
	nc    *nats.Conn
	log   *natslog.Log
	owned bool
	mk    func(nc *nats.Conn, l *natslog.Log) ([]*worker.Worker, error)
}

// sayMissing returns a natslog.Config.OnQuarantine that says, at ERROR,
// each event a read found following a missing one of its aggregate
// (attestation.FollowsMissing): a message lost under the server, most
// often a block file damaged in place, which the server's own counts do
// not show until the message is read, so that neither serve's start nor
// doctor can tell it. It says the first such event of each aggregate
// (of the first 1000), then every 1000th event with the count.
func sayMissing(say func(string, ...any)) func(natslog.Quarantined) {
	var (
		mu   sync.Mutex
		n    uint64
		told = map[events.Aggregate]bool{}
	)
	return func(q natslog.Quarantined) {
		if q.Verdict.Status != attestation.FollowsMissing {
			return
		}
		mu.Lock()
		n++
		c, first := n, !told[q.Agg] && len(told) < 1000
		if first {
			told[q.Agg] = true
		}
		mu.Unlock()
		switch {
		case first:
			say("ERROR: the log lost an event of %s: seq %d: %s; its events after the loss are left out of every fold, and decisions on it go on from its last event before it; run `logbook verify` to see what is missing", q.Agg, q.Seq, q.Verdict.Why)
		case c%1000 == 0:
			say("ERROR: %d events follow one their aggregate lost; run `logbook verify`", c)
		}
	}
}

// startWorkers opens the workers' connection of cfg on p (see
// workerConn), with lcfg; a log of its own that judges reads is added
// to sk's logs, so it signs with serve's key.
func startWorkers(ctx context.Context, cfg Config, p Parts, lcfg natslog.Config, mk func(*nats.Conn, *natslog.Log) ([]*worker.Worker, error), sk *KeyWatch) (*workerConn, error) {
	wc := &workerConn{nc: p.NC, log: p.Log, mk: mk}
	if p.Server == nil || cfg.Workers <= 0 {
		return wc, nil
	}
	nc, err := p.Server.ConnectAs(natslog.RoleWorker)
	if err != nil {
		return nil, err
	}
	l, err := natslog.Open(ctx, nc, lcfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetErrorHandler(servelog.NATSErrors(cfg.Stderr))
	wc.nc, wc.log, wc.owned = nc, l, true
	if sk != nil && l.Verifier() != nil {
		sk.Logs = append(sk.Logs, l)
	}
	return wc, nil
}

// make makes the workers (Wired.Workers); none without it.
func (wc *workerConn) make() ([]*worker.Worker, error) {
	if wc.mk == nil {
		return nil, nil
	}
	return wc.mk(wc.nc, wc.log)
}

// close closes the workers' connection and log when they are their own.
func (wc *workerConn) close() {
	if !wc.owned {
		return
	}
	wc.log.Close()
	wc.nc.Drain()
	api.Forget(wc.nc)
}

// heldStartError is a start of serve on dir refused because what it
// appends as it starts was held: the disk under the log's store has less
// than the log's reserve free (diskfull.Room). It says how much is
// free, how much serve needs, and what to do; it unwraps to the
// append's error (natslog.ErrAppendsHeld).
type heldStartError struct {
	dir   datadir.Dir
	store string
	short diskfull.Shortfall
	err   error
}

func (e *heldStartError) Error() string {
	s := e.short
	msg := fmt.Sprintf("serve cannot start on %s: the disk under its log (%s) has %s free, and serve needs %s free there (the log's reserve: a sixteenth of the file system, %s to %s, so that no atomic batch is cut by a full disk); ",
		e.dir, e.store, mib(s.Free), mib(s.Reserve), mib(diskfull.MinReserve), mib(diskfull.MaxReserve))
	if s.Size <= s.Reserve {
		return msg + fmt.Sprintf("that file system holds %s in all: put the data dir (--data) on a larger one, or grow this one, and start serve again", mib(s.Size))
	}
	return msg + fmt.Sprintf("free at least %s more there and start serve again", mib(s.Reserve-s.Free))
}

func (e *heldStartError) Unwrap() error { return e.err }

// mib is n bytes for a person: "16 MiB", "0.5 MiB".
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
