package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/sandbox"
)

// Names shared by every worker of a log. They are part of the deployment:
// workers of one log must agree on them.
const (
	// DurableName is the durable pull consumer all workers share on
	// CommandFilter: each request is delivered to one of them at a time.
	DurableName = "workers"
	// CommandFilter is the subject filter of command events.
	CommandFilter = events.SubjectEvents + "." + events.KindCommand + ".>"
	// HeartbeatBucket is the KV bucket of live workers: key = worker id,
	// value = its Identity as JSON, expiring after the bucket's TTL.
	HeartbeatBucket = "logbook-workers"
	// ClaimBucket is the KV bucket of claims: key = command id, value =
	// the id of the worker allowed to start it.
	ClaimBucket = "logbook-claims"
	// ClaimTTL is how long a claim is kept (the bucket's TTL): far longer
	// than any start takes; a claim only matters until the command is
	// started or refused.
	ClaimTTL = 24 * time.Hour
)

// Defaults of Config.
const (
	// DefaultLapse is the heartbeat bucket's TTL when a worker creates it:
	// a worker that has not put its heartbeat for this long is dead.
	DefaultLapse = 10 * time.Second
	// DefaultAckWait is how long a taken request stays with its worker
	// without an ack or a progress report before it is delivered again:
	// how long a request delivered to a worker that died waits for its
	// next delivery, where nothing passes it on sooner (see
	// Worker.offerWaiting). A worker reports progress on a request it
	// holds every third of its own Config.AckWait: workers of one
	// consumer are given the same.
	DefaultAckWait = 5 * time.Second
	// DefaultMaxRunning bounds the commands one worker runs at once.
	DefaultMaxRunning = 256
	// DefaultMaxOutputBytes caps the output stored for one command (64
	// MiB, all streams); past it output is counted in command.exited's
	// output_dropped, not stored.
	DefaultMaxOutputBytes = 64 << 20
	// DefaultAppendTimeout bounds each append a worker makes when its own
	// context is gone (reporting an exit during shutdown).
	DefaultAppendTimeout = 10 * time.Second
	// DefaultLedgerSweep is Config.LedgerSweep's default.
	DefaultLedgerSweep = 30 * time.Second
)

// maxAckPending bounds the requests delivered and not yet acked across
// all workers of the durable.
const maxAckPending = 256

// requestExpiry and requestHeartbeat bound the intake's pulls (and the
// control feed's, which a writer's admission waits for, and the
// watches'). A pull the server lost (sent while the cluster elected the
// consumer's leader, or parked on a leader that a loaded or stopped node
// lost without stepping down) shows as two missed heartbeats, and the
// intake pulls again: after about 2×requestHeartbeat rather than
// nats.go's default of 30 s (half the 30 s expiry, twice), during which
// waiting commands would not start. A pull whose leader heartbeats but
// does not deliver what the stream holds ends at its expiry: on a loaded
// three-node cluster a request appended just after a worker's first pull
// was seen to wait out the whole expiry (then 10 s) before the next
// pull took it at once, so the expiry is short too; an idle worker pulls
// again every requestExpiry.
const (
	requestExpiry    = 3 * time.Second
	requestHeartbeat = time.Second
)

// Config configures a Worker. Conn and Log are required; the rest has
// defaults.
type Config struct {
	// Conn is the connection to the log's NATS server. Not owned: the
	// caller closes it after Run has returned.
	Conn *nats.Conn
	// Log is the event log on Conn (a *natslog.Log). Not owned.
	Log events.Log
	// Reg decodes events; nil means events.NewRegistry().
	Reg *events.Registry
	// Host names this host in the worker's identity and in
	// command.started; "" means os.Hostname().
	Host string
	// Grace is the time between SIGTERM and SIGKILL when a command is
	// stopped; 0 means sandbox.DefaultGrace (2 s).
	Grace time.Duration
	// Bwrap is the bubblewrap executable; "" means bwrap in PATH.
	Bwrap string
	// Reporter is the executable restricted commands run under, which
	// reports how each ended (sandbox.Spec.Reporter; cmd/logbook-reporter
	// is one); "" means sandbox.FindReporter's: logbook-reporter beside
	// the worker's executable, else that executable itself, slower to
	// start (New then logs a warning, once a process). New fails if one
	// named here is not an executable file.
	Reporter string
	// Protected lists paths that stay read-only in restricted modes even
	// inside a writable workspace (e.g. the Logbook data dir), as
	// sandbox.Spec.Protected.
	Protected []string
	// MaxOutputBytes caps the output stored for one command, all streams
	// together; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Hidden lists paths restricted commands must not see at all: the
	// Logbook data dir (credentials, spool, views) and credential files,
	// as sandbox.Spec.Hidden.
	Hidden []string
	// Ledger is the directory, in the data dir, where restricted starts
	// record the placeholders they make in workspaces and the bubblewrap
	// process they fork (as sandbox.Spec.Ledger), so that what a worker
	// killed mid-command left is removed, and killed, when a worker
	// starts, when one finds a dead worker, and every LedgerSweep
	// (sandbox.SweepPlaceholders); "" records nothing. What a dead
	// process's bubblewrap left running is killed at those times, ledger
	// or not (sandbox.SweepBoundaries).
	Ledger string
	// LedgerSweep is how often the worker sweeps Ledger, and what dead
	// processes' bubblewrap left, besides those times: a worker process
	// of the host that died with no started command (killed while a
	// boundary was held, before its command.started) leaves nothing to
	// abandon, and what its bubblewrap left waits for this sweep. 0
	// means DefaultLedgerSweep.
	LedgerSweep time.Duration
	// Pins is the directory, in the data dir, where the workers of this
	// host record each session's directory, resolved, as the first of
	// them to judge one of its commands found it (cwdPin): every worker
	// refuses a command once the directory resolves elsewhere. "" keeps
	// each worker's pins in its own memory.
	Pins string
	// Keep lists directories inside Hidden where workspaces lie, as
	// sandbox.Spec.Keep: hidden around at each command's start.
	Keep []string
	// HiddenSet, when set, gives Hidden and Keep at each command
	// instead (HiddenSet.Paths), so that an account made after the
	// worker started has its credential paths hidden from its next
	// command on; Hidden and Keep are then not used.
	HiddenSet *HiddenSet
	// Allow lists the host paths restricted commands see besides their
	// workspace and the system directories, as sandbox.Spec.Allow; nil
	// means none (serve and worker pass sandbox.DefaultAllow unless
	// --sandbox-allow says otherwise).
	Allow []sandbox.Allow
	// Lapse is the heartbeat TTL used when this worker creates
	// HeartbeatBucket; 0 means DefaultLapse. An existing bucket keeps its
	// own TTL, and the worker beats every quarter of it.
	Lapse time.Duration
	// AckWait is the durable consumer's ack wait; 0 means DefaultAckWait.
	// The consumer is created or updated with it.
	AckWait time.Duration
	// MaxRunning bounds the commands this worker runs at once; 0 means
	// DefaultMaxRunning. A worker at the bound takes no new request.
	MaxRunning int
	// Clock stamps events; nil means time.Now.
	Clock events.Clock
	// IDs makes event ids; nil means ulid.Make.
	IDs events.IDSource
	// Logger receives what happens to commands and what goes wrong in the
	// background; nil discards it.
	Logger *slog.Logger
	// Redactor redacts everything the worker records from a command
	// before it is stored or logged: its output (lb.out.<id>), the
	// reasons of its refusals, argv[0] in its session's entry, and its
	// argv in the worker's log lines.
	// In serve it is the data dir's redact.txt rules over the built-in
	// ones, followed as the file changes (a redact.Live Redactor: a
	// command's output takes the rules in force as each piece of it is
	// stored); nil means redact.Default().
	Redactor *redact.Redactor
	// Handoff, when set, passes the worker the requests a Client of
	// this process appends as their appends are acknowledged (see
	// Handoff), beside the consumer's delivery; New adds the worker to
	// it (nil: the worker makes one of its own, for offerWaiting). Not
	// owned.
	Handoff *Handoff
}

// Identity names one worker: a worker process on a host, started at a
// time. Its JSON is the value of the worker's heartbeat key.
type Identity struct {
	// ID is "<host>-<pid>-<start ULID>" with bytes outside [A-Za-z0-9_-]
	// of the host replaced by '_': unique, and one NATS subject token.
	ID      string `json:"id"`
	Host    string `json:"host"`
	Pid     int    `json:"pid"`
	Started string `json:"started"` // the start ULID; its time part is the start time (ms)
	// Boot is the host's boot id (/proc/sys/kernel/random/boot_id), ""
	// when unknown.
	Boot string `json:"boot,omitempty"`
	// ProcStart is the process's start time in clock ticks after boot
	// (/proc/<pid>/stat), 0 when unknown. With Boot it tells a process
	// from a later one that got the same pid.
	ProcStart uint64 `json:"proc_start,omitempty"`
}

// Worker runs the commands it takes off the log. Create it with New and
// run it with Run, once. Its methods are safe for concurrent use.
type Worker struct {
	cfg      Config
	id       Identity
	js       jetstream.JetStream
	log      *slog.Logger
	cmds     *events.Executor[command.State]
	cwdPins  sync.Map // session id → its pin (cwdPin), cached: a pin never changes
	sessions *events.Executor[session.State]

	beats  jetstream.KeyValue
	claims jetstream.KeyValue
	lapse  time.Duration // the heartbeat bucket's TTL

	probe bwrapProbe // bubblewrap, probed once
	// etc holds /etc's covered paths for the restricted starts, from Run
	// until Run returns.
	etc *sandbox.EtcWatch
	// hiddenWatch holds the hidden paths resolved for admission's checks
	// and the restricted starts, from Run until Run returns.
	hiddenWatch *sandbox.HiddenWatch

	slots chan struct{}  // one per running or starting command
	bg    sync.WaitGroup // stdin writers

	mu      sync.Mutex
	running map[string]*job     // commands this worker started or is starting
	open    map[string]*tracked // commands not ended, from the control feed
	fed     chan struct{}       // closed and replaced (under mu) each time the control feed reads a request
	missing map[string]time.Time
	// requests counts the command.requested events the control feed has
	// read: each open command's order.
	requests uint64

	caughtUp atomic.Bool   // the control feed has read the log's command events once
	kick     chan struct{} // caughtUp was just set
	caught   chan struct{} // closed once caughtUp is set
	lastBeat atomic.Int64  // unix ns of the last stored heartbeat
	started  atomic.Bool

	// taker is what the intake lends Config.Handoff while it takes
	// requests (lend), nil otherwise; under takerMu.
	takerMu sync.Mutex
	taker   *taker
}

// tracked is what the control feed knows of a command that has not ended.
type tracked struct {
	session string
	// The workspace (cleaned, as requested) and mode of its request, and
	// the request's place among all requests the control feed has read
	// (1 first).
	workspace string
	mode      string
	order     uint64
	started   bool
	worker    string
	// Where its process runs (command.started, command.running); pid 0
	// until known.
	host      string
	pid       int
	procStart uint64
	boot      string
	cgroup    string
}

// New returns a worker for cfg with a fresh identity. It connects
// nothing yet; Run does.
func New(cfg Config) (*Worker, error) {
	if cfg.Conn == nil || cfg.Log == nil {
		return nil, errors.New("worker: Config.Conn and Config.Log are required")
	}
	if cfg.Reg == nil {
		cfg.Reg = events.NewRegistry()
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default()
	}
	if cfg.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("worker: hostname: %w", err)
		}
		cfg.Host = h
	}
	if cfg.Grace < 0 || cfg.Lapse < 0 || cfg.AckWait < 0 || cfg.MaxRunning < 0 || cfg.LedgerSweep < 0 {
		return nil, fmt.Errorf("worker: negative Grace %v, Lapse %v, AckWait %v, MaxRunning %d or LedgerSweep %v", cfg.Grace, cfg.Lapse, cfg.AckWait, cfg.MaxRunning, cfg.LedgerSweep)
	}
	if cfg.LedgerSweep == 0 {
		cfg.LedgerSweep = DefaultLedgerSweep
	}
	if cfg.Lapse == 0 {
		cfg.Lapse = DefaultLapse
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.MaxRunning == 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.IDs == nil {
		cfg.IDs = ulid.Make
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if _, err := sandbox.FindReporter(cfg.Reporter); err != nil {
		if cfg.Reporter != "" {
			return nil, fmt.Errorf("worker: Config.Reporter: %w", err)
		}
		slowReporter.Do(func() {
			logger.Warn("restricted commands run under a slower reporter", "err", err)
		})
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("worker: jetstream: %w", err)
	}
	id := newIdentity(cfg.Host)
	w := &Worker{
		cfg: cfg,
		id:  id,
		js:  js,
		log: logger.With("worker", id.ID),
		cmds: &events.Executor[command.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: command.Init, Evolve: command.Evolve, Settled: command.State.Ended,
			IDs: cfg.IDs, Host: cfg.Host, Actor: "logbook-worker",
		},
		sessions: &events.Executor[session.State]{
			Log: cfg.Log, Reg: cfg.Reg, Init: session.Init, Evolve: session.Evolve,
			IDs: cfg.IDs, Host: cfg.Host, Actor: "logbook-worker",
		},
		slots:   make(chan struct{}, cfg.MaxRunning),
		running: make(map[string]*job),
		open:    make(map[string]*tracked),
		missing: make(map[string]time.Time),
		kick:    make(chan struct{}, 1),
		caught:  make(chan struct{}),
	}
	if w.cfg.Handoff == nil {
		// One of its own: the requests it passes itself when they may
		// start (offerWaiting) are taken as a Client's are.
		w.cfg.Handoff = NewHandoff()
	}
	w.cfg.Handoff.add(w)
	return w, nil
}

// slowReporter logs, once a process, that restricted commands run under
// the worker's own executable as their reporter, for want of
// sandbox.ReporterName beside it.
var slowReporter sync.Once

// Identity returns the worker's identity.
func (w *Worker) Identity() Identity { return w.id }

// Run registers the worker's heartbeat, then takes requests, runs their
// commands, follows the control feed and checks other workers' liveness
// until ctx is done. It then stops the commands it runs (SIGTERM, SIGKILL
// after the grace), reports their exits (each append bounded by
// DefaultAppendTimeout), removes its heartbeat and returns ctx's error.
// It returns earlier with an error if the buckets, the consumer or the
// stdin subscription cannot be set up, or if the request feed fails for
// good. Run owns every goroutine it starts; all have ended when it
// returns. Run may be called once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("worker: Run called twice")
	}
	begun := time.Now()
	if err := w.setup(ctx); err != nil {
		return err
	}
	w.etc = sandbox.NewEtcWatch()
	defer w.etc.Close()
	w.hiddenWatch = sandbox.NewHiddenWatch()
	defer w.hiddenWatch.Close()
	w.sweepCgroups()
	w.sweepPlaceholders()
	// procCtx outlives the intake: commands are stopped only after no new
	// one can start.
	procCtx, stopProcs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopProcs()

	sub, err := w.cfg.Conn.Subscribe(StdinSubject(w.id.ID, "*"), w.onStdin)
	if err != nil {
		return fmt.Errorf("worker %s: subscribe stdin: %w", w.id.ID, err)
	}
	defer sub.Unsubscribe() // on early return; done explicitly below

	var loops sync.WaitGroup
	errc := make(chan error, 3)
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	for _, loop := range []func(context.Context) error{
		w.beat,
		w.control,
		func(ctx context.Context) error { return w.intake(ctx, procCtx, begun) },
	} {
		loops.Go(func() {
			if err := loop(loopCtx); err != nil && loopCtx.Err() == nil {
				errc <- err
			}
		})
	}
	var runErr error
	select {
	case <-ctx.Done():
		runErr = ctx.Err()
	case runErr = <-errc:
	}
	stopLoops()
	loops.Wait()
	// Stop what still runs; each job's supervisor reports its exit. The
	// log first says who stops each and why (stopRunning).
	w.stopRunning(ctx)
	w.mu.Lock()
	for _, j := range w.running {
		j.stop()
	}
	w.mu.Unlock()
	stopProcs()
	w.waitJobs()
	_ = sub.Unsubscribe()
	w.bg.Wait()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultAppendTimeout)
	defer cancel()
	if err := w.beats.Delete(dctx, w.id.ID); err != nil {
		w.log.Warn("remove heartbeat", "err", err)
	}
	return runErr
}

// stopRunning appends, for each command this worker runs (its
// command.started stored), the stop this worker asks of it as it stops
// itself (command.StopReasonWorkerStopping, by "worker <id>"), all at
// once and each bounded by DefaultAppendTimeout, so that the exit that
// follows (stopped) names who stopped it. A command that has a stop
// already, or has ended, gets none; an append that fails is logged and
// the command is stopped all the same.
func (w *Worker) stopRunning(ctx context.Context) {
	w.mu.Lock()
	var ids []string
	for id, j := range w.running {
		if j.live.Load() {
			ids = append(ids, id)
		}
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultAppendTimeout)
	defer cancel()
	by := "worker " + w.id.ID
	cause := events.Cause{Kind: attestation.CauseWorker, Event: attestation.WorkerStopping, Detail: w.id.ID}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			agg := events.Aggregate{Kind: events.KindCommand, ID: id}
			_, _, err := w.cmds.Execute(sctx, agg, func(s command.State) (events.Decision, error) {
				if s.Ended() || s.StopRequested {
					return nil, nil
				}
				c := cause
				c.Ref = id
				return command.Decide(s, command.Stop{By: by, Reason: command.StopReasonWorkerStopping, At: w.now(), Cause: c})
			})
			if err != nil {
				w.log.Warn("stop request as the worker stops", "command", id, "err", err)
			}
		})
	}
	wg.Wait()
}

// waitJobs waits until no command runs or starts.
func (w *Worker) waitJobs() {
	for range cap(w.slots) {
		w.slots <- struct{}{}
	}
	for range cap(w.slots) {
		<-w.slots
	}
}

// setup binds the KV buckets, stores the first heartbeat and ensures the
// durable consumer.
//
// A bucket it creates has as many replicas as the log's stream: on a
// cluster a bucket on one node would stop every worker (no claim, no
// heartbeat) while that node is down. A bucket that exists keeps its
// own replicas; one with fewer than the stream's is logged at WARN.
func (w *Worker) setup(ctx context.Context) error {
	var replicas int
	err := untilServed(ctx, w.log, "stream "+natslog.StreamName, func(ctx context.Context) error {
		st, err := w.js.Stream(ctx, natslog.StreamName)
		if err == nil {
			replicas = st.CachedInfo().Config.Replicas
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("worker %s: stream %s: %w", w.id.ID, natslog.StreamName, err)
	}
	w.beats, err = w.bucket(ctx, replicas, jetstream.KeyValueConfig{
		Bucket: HeartbeatBucket, Description: "live Logbook workers", History: 1, TTL: w.cfg.Lapse,
		Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		return fmt.Errorf("worker %s: %w", w.id.ID, err)
	}
	st, err := w.beats.Status(ctx)
	if err != nil {
		return fmt.Errorf("worker %s: heartbeat bucket status: %w", w.id.ID, err)
	}
	w.lapse = st.TTL()
	if w.lapse <= 0 {
		return fmt.Errorf("worker %s: heartbeat bucket %s has no TTL; recreate it", w.id.ID, HeartbeatBucket)
	}
	w.claims, err = w.bucket(ctx, replicas, jetstream.KeyValueConfig{
		Bucket: ClaimBucket, Description: "which worker may start a command", History: 1, TTL: ClaimTTL,
		Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		return fmt.Errorf("worker %s: %w", w.id.ID, err)
	}
	// The bucket's stream may be electing a leader (a node killed as
	// the worker starts): the first heartbeat waits that out.
	if err := untilServed(ctx, w.log, "first heartbeat", w.putBeat); err != nil {
		return fmt.Errorf("worker %s: first heartbeat: %w", w.id.ID, err)
	}
	return nil
}

// bucket creates the KV bucket of cfg with replicas replicas, or binds it
// if it exists (warning when it has fewer), asking again while the
// cluster elects a leader (untilServed).
func (w *Worker) bucket(ctx context.Context, replicas int, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	cfg.Replicas = max(replicas, 1)
	var kv jetstream.KeyValue
	err := untilServed(ctx, w.log, "bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
		kv, err = w.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = w.js.KeyValue(ctx, cfg.Bucket)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	if st, err := kv.Status(ctx); err == nil {
		if ks, ok := st.(*jetstream.KeyValueBucketStatus); ok && ks.StreamInfo().Config.Replicas < cfg.Replicas {
			w.log.Warn("bucket has fewer replicas than the log's stream: while a node that holds it is down no worker starts a command; delete it with no worker running, to have it created again",
				"bucket", cfg.Bucket, "replicas", ks.StreamInfo().Config.Replicas, "stream_replicas", cfg.Replicas)
		}
	}
	return kv, nil
}

// now returns the decision time: the clock, UTC, microsecond precision
// (what the envelope stores).
func (w *Worker) now() time.Time { return w.cfg.Clock().UTC().Truncate(time.Microsecond) }

// intake takes requests off the durable consumer until ctx is done. Once
// its first pull is out it logs that the worker takes requests, with the
// time since Run began (begun): a request appended before then waits in
// the log, and a slow cluster shows there.
func (w *Worker) intake(ctx, procCtx context.Context, begun time.Time) error {
	// The consumer is delivered every command event, not the requests
	// alone: a command's events share its one subject (lb.ev.command.<id>,
	// the type in a header) and a consumer filters by subject only. A
	// command that runs to its exit costs four deliveries (requested,
	// started, running, exited), three of them acked unread below.
	var cons jetstream.Consumer
	err := untilServed(ctx, w.log, "consumer "+DurableName, func(ctx context.Context) (err error) {
		cons, err = w.js.CreateOrUpdateConsumer(ctx, natslog.StreamName, jetstream.ConsumerConfig{
			Durable:       DurableName,
			Description:   "Logbook workers: command requests",
			FilterSubject: CommandFilter,
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       w.cfg.AckWait,
			MaxAckPending: maxAckPending,
			MaxDeliver:    -1,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("worker %s: consumer %s: %w", w.id.ID, DurableName, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1),
		jetstream.PullExpiry(requestExpiry), jetstream.PullHeartbeat(requestHeartbeat))
	if err != nil {
		return fmt.Errorf("worker %s: consume %s: %w", w.id.ID, DurableName, err)
	}
	defer it.Stop()
	w.log.Info("taking command requests", "consumer", DurableName, "after", time.Since(begun).Round(time.Millisecond))
	var handlers sync.WaitGroup
	defer handlers.Wait()
	defer w.lend(ctx, procCtx, &handlers)() // before the Wait: no take begins after it
	// Requests left waiting by a worker that died take their ack wait to
	// come back: once the control feed has read the log, they are taken
	// at once instead (offerWaiting).
	intakeEnd, offered := make(chan struct{}), make(chan struct{})
	defer func() { close(intakeEnd); <-offered }()
	go func() {
		defer close(offered)
		select {
		case <-w.caught:
			w.mu.Lock()
			reqs := w.waitingLocked("")
			w.mu.Unlock()
			w.offerWaiting(reqs)
		case <-intakeEnd:
		}
	}()
	for {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			<-w.slots
			if ctx.Err() != nil {
				return nil
			}
			// A deleted consumer (its stream deleted, most often) ends the
			// feed now, while the server that can say why is still up.
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				return fmt.Errorf("worker %s: request feed closed: %w", w.id.ID, err)
			}
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				// The pending pull is lost; Next pulls again.
				w.log.Warn("request feed: no heartbeat from the consumer's leader; pulling again", "after", 2*requestHeartbeat)
				continue
			}
			w.log.Warn("next request", "err", err)
			continue
		}
		if msg.Headers().Get(natslog.HeaderType) != (events.CommandRequested{}).EventType() {
			<-w.slots
			_ = msg.Ack()
			continue
		}
		handlers.Go(func() {
			if !w.handle(ctx, procCtx, msg) {
				<-w.slots
			}
		})
	}
}

// handle takes one delivered request and acks it, or puts it back. It
// reports whether a command was started (its slot then belongs to the
// command's supervisor).
func (w *Worker) handle(ctx, procCtx context.Context, msg jetstream.Msg) bool {
	agg, err := events.ParseSubject(msg.Subject())
	if err != nil || agg.Kind != events.KindCommand {
		_ = msg.Term()
		return false
	}
	done := make(chan struct{})
	defer close(done)
	go func() { // keep the request ours while we wait for a take or work on it
		t := time.NewTicker(w.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	if w.cfg.Handoff.delivered(ctx, agg.ID) {
		// Settled by a take the Handoff began: nothing is left to do.
		_ = msg.Ack()
		return false
	}
	mark(agg.ID, StageDelivered)
	v, err := w.takeFor(ctx, procCtx, agg.ID, requestSession(w.cfg.Reg, msg.Data()))
	if err != nil {
		w.log.Warn("take command", "command", agg.ID, "err", err)
	}
	switch v {
	case verdictStarted, verdictDone:
		_ = msg.Ack()
	case verdictLater:
		_ = msg.NakWithDelay(w.cfg.AckWait)
	case verdictRetry:
		_ = msg.NakWithDelay(time.Second)
	case verdictWait:
		_ = msg.NakWithDelay(waitRedelivery)
	}
	return v == verdictStarted
}

// requestSession returns the session the delivered request body names,
// "" when it does not decode as a command.requested. It is a hint only,
// for reading the session while the command itself is read: what runs
// is decided on the command as the log's loads judge it.
func requestSession(reg *events.Registry, body []byte) string {
	e, err := reg.Decode(body)
	if err != nil {
		return ""
	}
	if p, ok := e.Data.(events.CommandRequested); ok {
		return p.Session
	}
	return ""
}
