package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/synth"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
	"github.com/logbook-dev/logbook/sandbox"
)

// benchEnv holds what the workloads share: the servers they run on,
// started when a workload first needs them, and the working directory.
// Its methods run on the bench's goroutine, one workload at a time.
type benchEnv struct {
	dir  string
	cfg  Config
	cli  CLI
	reg  *events.Registry
	note func(string) // progress
	runs atomic.Int64 // numbers runs, so each writes subjects of its own

	appendLogs map[natslog.Fsync]*benchLog

	// auditUse is what each audit process of the audit row used, over
	// all its runs; auditNote, once set, is 1 + the index of the note
	// that says their medians.
	auditUse  []auditUsage
	auditNote int

	read     *benchLog // holds exactly the read rows' log
	readLast uint64    // its last sequence
	readHash string    // the state hash every replay of it must give

	notes []string // what the report should say about the workloads' data

	srv     *benchServe
	imports map[string][][][][]byte  // each import row's events, by row name: per session, per batch of ≤ events.MaxBatch, message bodies
	stored  map[string][][]*nats.Msg // each import row's messages as stored, headers and all, by row name: per session, in order

	scale *scaleState // the scale rows' serve and history

	cluster *benchCluster // the cluster rows' three nodes

	signing *signingState // the signing rows' servers and logs
}

func newBenchEnv(dir string, cfg Config, cli CLI) *benchEnv {
	return &benchEnv{dir: dir, cfg: cfg, cli: cli, reg: events.NewRegistry(), note: func(string) {}, appendLogs: map[natslog.Fsync]*benchLog{}, imports: map[string][][][][]byte{}, stored: map[string][][]*nats.Msg{}}
}

// workloads is the table `logbook bench` runs, in order.
func (e *benchEnv) workloads() []benchWorkload {
	var ws []benchWorkload
	for _, mode := range e.cfg.Fsync {
		for _, per := range []int{1, 10} {
			for _, writers := range []int{1, 8, 64} {
				a := benchAppend{env: e, mode: mode, writers: writers, per: per}
				w := benchWorkload{
					group: "append", name: a.name(), unit: "ev", logbook: a.logbook,
					baselines: []benchBaseline{{name: a.rawName(), run: a.raw}},
				}
				if writers == 64 {
					// 64 writers of one event each, each waiting for its
					// own answer, never have more than 64 events to put
					// in one batch: the floor holds them to raw batches
					// of 64, and batches of 500 are shown as the server's
					// ceiling.
					w.baselines = append(w.baselines, benchBaseline{name: "atomic batch ×500, 1 publisher (the server's ceiling)", run: a.ceiling})
					if per == 1 {
						floor := 0.0
						if mode == natslog.FsyncAlways {
							floor = 0.40
						}
						w.baselines = append(w.baselines, benchBaseline{name: "atomic batch ×64, 1 publisher (the most 64 one-event writers can fill)", run: a.ceiling64, floor: floor})
					}
				}
				ws = append(ws, w)
			}
		}
	}
	ordered := func(floor float64) []benchBaseline {
		return []benchBaseline{{name: "ordered consumer read", run: e.orderedRead, floor: floor}}
	}
	// A read row's run takes a fraction of a second: one burst of load
	// from elsewhere would decide its ratio, so each runs readRuns times
	// in turn with its baseline, and its ratio is the median of theirs.
	ws = append(ws,
		benchWorkload{group: "read", name: "projection catch-up into Pebble on disk", unit: "ev", logbook: e.catchUp, baselines: ordered(0.60), runs: readRuns},
		benchWorkload{group: "read", name: "replay fold into memory", unit: "ev", logbook: e.replayFold, baselines: ordered(replayFoldFloor), runs: readRuns},
		benchWorkload{group: "read", name: "replay into Pebble in memory", unit: "ev", logbook: e.replayMem, baselines: ordered(0.60), runs: readRuns},
		benchWorkload{group: "read", name: "replay into Pebble on disk", unit: "ev", logbook: e.replayDisk, baselines: ordered(0), runs: readRuns},
		e.importRow(e.cfg.Sessions, e.cfg.Lines, "", importCeilingFloor),
		// Many small files, as a real ~/.claude/projects holds (555
		// transcripts of 17 lines on average in one recorded tree): what
		// an import pays per file shows here.
		e.importRow(e.cfg.SmallFiles, SmallFileLines, " (many small files)", 0),
	)
	starts := []benchBaseline{{name: "logbook version (process start)", run: e.versionRun}}
	if _, err := exec.LookPath("go"); err == nil { // it builds the minimal binary
		starts = append([]benchBaseline{{name: "minimal Go binary (process start)", run: e.minimalRun}}, starts...)
	}
	if e.cli.HookExe != "" {
		ws = append(ws, benchWorkload{
			group: "hook", name: "logbook-hook claude → serve, fsync always", unit: "hook",
			logbook: e.hookRun(e.cli.HookExe, "logbook-hook", "claude"), baselines: starts, check: hookCheck,
		})
	}
	ws = append(ws,
		benchWorkload{
			group: "hook", name: "logbook hook claude → serve, fsync always", unit: "hook",
			logbook: e.hookRun(e.cli.Exe, "logbook", "hook", "claude"), baselines: starts,
		},
		benchWorkload{
			group: "command", name: e.execName() + " full_access true → exited, via workers", unit: "cmd",
			logbook: e.commandRun(events.ModeFullAccess), baselines: []benchBaseline{{name: "fork/exec of true", run: e.trueRun}}, check: commandCheck,
		},
	)
	if sandbox.Available(context.Background(), "") == nil {
		ws = append(ws, benchWorkload{
			group: "command", name: e.execName() + " workspace_write true → exited, via workers", unit: "cmd",
			logbook: e.commandRun(events.ModeWorkspaceWrite), baselines: []benchBaseline{{name: "bubblewrap boundary around true, start → exit", run: e.boundaryRun}},
			checkBase: boundaryCheck,
		})
	}
	ws = append(ws, e.fullExecRows()...)
	ws = append(ws, e.gateRows()...)
	ws = append(ws, e.signingRows()...)
	ws = append(ws, e.scaleRows()...)
	return append(ws, e.clusterRows()...)
}

// close stops every server the runs started.
func (e *benchEnv) close() {
	if e.srv != nil {
		e.srv.close()
	}
	if e.scale != nil {
		e.scale.srv.close()
	}
	if e.read != nil {
		e.read.close()
	}
	if e.cluster != nil {
		e.cluster.close()
	}
	if e.signing != nil {
		e.signing.close()
	}
	for _, l := range e.appendLogs {
		l.close()
	}
}

// benchLog is an embedded server with a log and a bare JetStream handle on
// the same in-process connection.
type benchLog struct {
	srv *natslog.Server
	log *natslog.Log
	js  jetstream.JetStream
}

func (e *benchEnv) startLog(ctx context.Context, name string, mode natslog.Fsync) (*benchLog, error) {
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: filepath.Join(e.dir, name), Fsync: mode})
	if err != nil {
		return nil, err
	}
	l := &benchLog{srv: srv}
	cfg := natslog.Config{Registry: e.reg}
	if mode == natslog.FsyncInterval {
		cfg.MergeMin = events.MaxBatch + 1 // as serve does
	}
	if l.log, err = natslog.Open(ctx, srv.Conn(), cfg); err == nil {
		l.js, err = jetstream.New(srv.Conn())
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *benchLog) close() {
	if l.log != nil {
		l.log.Close()
	}
	l.srv.Shutdown()
}

// appendLog returns the append rows' server for mode.
func (e *benchEnv) appendLog(ctx context.Context, mode natslog.Fsync) (*benchLog, error) {
	if l, ok := e.appendLogs[mode]; ok {
		return l, nil
	}
	l, err := e.startLog(ctx, "append-"+mode.String(), mode)
	if err != nil {
		return nil, err
	}
	e.appendLogs[mode] = l
	return l, nil
}

// benchAppend is one append row: writers goroutines, each deciding for a
// session of its own, per events per decision, cfg.Appends events in all.
type benchAppend struct {
	env          *benchEnv
	mode         natslog.Fsync
	writers, per int
	cluster      bool // on the R3 cluster of the cluster rows
}

// target returns the row's server: the cluster, or the append rows' one
// for the row's fsync mode.
func (a benchAppend) target(ctx context.Context) (*benchLog, error) {
	if a.cluster {
		return a.env.clusterLog(ctx)
	}
	return a.env.appendLog(ctx, a.mode)
}

func (a benchAppend) name() string {
	s := "s"
	if a.writers == 1 {
		s = ""
	}
	if a.cluster {
		return fmt.Sprintf("append %d writer%s × %d ev/decision, R3 cluster", a.writers, s, a.per)
	}
	return fmt.Sprintf("append %d writer%s × %d ev/decision, fsync %s", a.writers, s, a.per, a.mode)
}

func (a benchAppend) rawName() string {
	s := "s"
	if a.writers == 1 {
		s = ""
	}
	if a.per == 1 {
		return fmt.Sprintf("publish, %d writer%s", a.writers, s)
	}
	return fmt.Sprintf("atomic batch ×%d, %d writer%s", a.per, a.writers, s)
}

func (a benchAppend) decisions() int { return max(a.env.cfg.Appends/a.per, a.writers) }

// logbook appends decisions through Log.Append, each chained to the
// writer's previous one by its expected sequence.
func (a benchAppend) logbook(ctx context.Context) (benchSample, error) {
	l, err := a.target(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := a.env.runs.Add(1)
	return benchWriters(a.writers, a.decisions(), a.per, func(w int) func() error {
		agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("bench-%d-w%d", run, w)}
		var last, ver uint64
		return func() error {
			ap, err := l.log.Append(ctx, a.env.decision(agg, last, ver+1, a.per))
			last, ver = ap.Last, ver+uint64(a.per)
			return err
		}
	})
}

// raw publishes the same messages from the same writers: one plain
// publish, or one atomic batch, per decision; no expected sequence, no
// Nats-Msg-Id, no validation, at most benchAtomicInflight at once. Subjects are under lb.out, which no reader
// of the log decodes.
func (a benchAppend) raw(ctx context.Context) (benchSample, error) {
	l, err := a.target(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := a.env.runs.Add(1)
	body := a.env.body()
	slots := make(chan struct{}, benchAtomicInflight)
	return benchWriters(a.writers, a.decisions(), a.per, func(w int) func() error {
		subject := fmt.Sprintf("%s.bench-%d-w%d", events.SubjectOutput, run, w)
		return func() error {
			slots <- struct{}{}
			defer func() { <-slots }()
			return benchPublish(ctx, l.js, subject, benchRepeat(body, a.per))
		}
	})
}

// benchAtomicInflight is how many atomic batches the server lets a stream
// have open at once (nats-server's default); more fail with err 10210, so
// raw writers beyond it wait for a slot. Logbook's one committer per log
// never has more than one open.
const benchAtomicInflight = 50

// ceiling publishes the row's number of messages in atomic batches of
// 500 from one publisher: the most the server stores durably, and the
// baseline of the append floor Logbook holds itself to.
func (a benchAppend) ceiling(ctx context.Context) (benchSample, error) { return a.ceilingOf(ctx, 500) }

// ceiling64 is ceiling with batches of 64: the most 64 writers of one
// event each can put in one batch, each waiting for its own to be
// stored, so the most the 64-writer rows could reach through atomic
// batches.
func (a benchAppend) ceiling64(ctx context.Context) (benchSample, error) { return a.ceilingOf(ctx, 64) }

// ceilingOf publishes the row's number of messages in atomic batches of
// size from one publisher.
func (a benchAppend) ceilingOf(ctx context.Context, size int) (benchSample, error) {
	l, err := a.target(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := a.env.runs.Add(1)
	body := a.env.body()
	batches := (a.decisions()*a.per + size - 1) / size
	s, err := benchWriters(1, batches, size, func(int) func() error {
		subject := fmt.Sprintf("%s.bench-%d", events.SubjectOutput, run)
		return func() error { return benchPublish(ctx, l.js, subject, benchRepeat(body, size)) }
	})
	s.lat = nil // per batch, not per event: not comparable
	return s, err
}

// benchWriters runs decisions operations on writers goroutines, each
// calling its own op (made by mk) until the shared count is done, and
// times each call. Every operation counts as per ops.
func benchWriters(writers, decisions, per int, mk func(w int) func() error) (benchSample, error) {
	ops := make([]func() error, writers)
	for w := range ops {
		ops[w] = mk(w)
	}
	var (
		next atomic.Int64
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, decisions)
		errs = make([]error, writers)
		wg   sync.WaitGroup
	)
	start := time.Now()
	for w, op := range ops {
		wg.Go(func() {
			mine := make([]time.Duration, 0, decisions/writers+1)
			for next.Add(1) <= int64(decisions) {
				t := time.Now()
				if err := op(); err != nil {
					errs[w] = fmt.Errorf("writer %d: %w", w, err)
					next.Store(int64(decisions)) // stop the others
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return benchSample{}, err
	}
	return benchSample{ops: decisions * per, elapsed: elapsed, lat: lat}, nil
}

// decision returns a decision of n events for agg, the first at ver,
// made after expect: activity changes caused by a hook, ~330 bytes each.
func (e *benchEnv) decision(agg events.Aggregate, expect, ver uint64, n int) events.Batch {
	b := events.Batch{Agg: agg, Expect: expect, Events: make([]events.Envelope, n)}
	at := time.Now().UTC().Truncate(time.Microsecond)
	cause := &events.Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: ulid.Make().String()}
	for i := range b.Events {
		ev := e.reg.New(events.SessionActivityChanged{From: "thinking", To: "tool:Bash"})
		ev.ID, ev.Agg, ev.Ver, ev.At, ev.Cause = ulid.Make(), agg, ver+uint64(i), at, cause
		ev.Corr, ev.Host, ev.Actor = "turn-1", "bench", "claude-code"
		b.Events[i] = ev
	}
	return b
}

// body returns the stored form of one event of decision: what raw
// baselines publish.
func (e *benchEnv) body() []byte {
	b, _ := e.decision(events.Aggregate{Kind: events.KindSession, ID: "bench-0-w0"}, 7, 2, 1).Events[0].MarshalJSON()
	return b
}

func benchRepeat(body []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = body
	}
	return out
}

// benchPublish stores bodies on subject: one body as a plain publish, several
// as one atomic batch.
func benchPublish(ctx context.Context, js jetstream.JetStream, subject string, bodies [][]byte) error {
	msgs := make([]*nats.Msg, len(bodies))
	for i, b := range bodies {
		msgs[i] = nats.NewMsg(subject)
		msgs[i].Data = b
	}
	if _, ok := ctx.Deadline(); !ok {
		// Without a deadline, an ack is awaited for the client's default
		// 5 s, which a loaded machine outlasts with benchAtomicInflight
		// batches in flight: the run would fail rather than measure.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, benchAckWait)
		defer cancel()
	}
	if len(msgs) == 1 {
		_, err := js.PublishMsg(ctx, msgs[0])
		return err
	}
	_, err := jetstreamext.PublishMsgBatch(ctx, js, msgs)
	return err
}

// benchAckWait is how long benchPublish awaits one publish's or batch's
// ack when its context sets no deadline.
const benchAckWait = time.Minute

// readRuns is how often each read row and its baseline run: nine, so
// that the median of the runs' ratios holds against two bursts of load
// from elsewhere on either side.
const readRuns = 9

// replayFoldFloor is the least ratio of a replay fold into memory to the
// ordered read of the same messages: decoding and folding keep up with
// the read on other cores.
const replayFoldFloor = 0.90

// readLog returns the read rows' server, whose log holds about
// cfg.Events session events (observations and the decisions they
// caused, over 100 sessions), writing it on first use.
func (e *benchEnv) readLog(ctx context.Context) (*benchLog, error) {
	if e.read != nil {
		return e.read, nil
	}
	l, err := e.startLog(ctx, "read", natslog.FsyncInterval)
	if err != nil {
		return nil, err
	}
	e.read = l
	e.note(fmt.Sprintf("writing a log of %d session events for the read rows", e.cfg.Events))
	h := newBenchHistory()
	if err := h.write(ctx, l.log, e.cfg.Events); err != nil {
		return nil, err
	}
	if e.readLast, err = l.log.LastSeq(ctx); err != nil {
		return nil, err
	}
	e.notes = append(e.notes, fmt.Sprintf("read rows: a log of %s events (observations and the decisions they caused) in %d sessions; each row and its baseline run %d times in turn, each first in every other run; rates shown are the medians, RATIO the median of the runs' ratios",
		benchThousands(int64(e.readLast)), len(h.h.Sessions), readRuns))
	return l, nil
}

// benchHistory is the read rows' generated history: observations and
// the decisions they caused, over 100 sessions, from a fixed seed.
type benchHistory struct {
	h      *synth.History
	rng    *rand.Rand
	expect map[events.Aggregate]uint64 // each session's last sequence
}

func newBenchHistory() *benchHistory {
	return &benchHistory{h: synth.NewHistory(synth.Epoch()), rng: rand.New(rand.NewPCG(4, 2)), expect: map[events.Aggregate]uint64{}}
}

// write appends about n more events of the history to log, in steps of
// up to 10,000 (AppendBatches, 32 writers).
func (b *benchHistory) write(ctx context.Context, log events.Log, n int) error {
	h := b.h
	for written := 0; written < n; {
		for len(h.Records) < min(10_000, n-written) {
			if err := h.Step(b.rng, 100); err != nil {
				return err
			}
		}
		written += len(h.Records)
		batches := h.Batches
		h.Records, h.Batches = nil, nil // the history keeps its sessions' states, not their events
		if err := AppendBatches(ctx, log, batches, b.expect, 32); err != nil {
			return err
		}
	}
	return nil
}

// AppendBatches appends batches to log from workers goroutines, each
// aggregate's batches in order by one of them, so the log's group commit
// merges decisions of different aggregates. expect holds each
// aggregate's last sequence and is updated. A batch whose outcome is
// unknown (natslog.ErrUnknownOutcome: its answer did not come within
// the log's timeout, as on a loaded machine) is appended again, with the
// same event ids and expected sequence, until it is answered or ctx
// ends: a copy stored before makes the repeat succeed as a duplicate.
func AppendBatches(ctx context.Context, log events.Log, batches []events.Batch, expect map[events.Aggregate]uint64, workers int) error {
	byAgg := map[events.Aggregate][]events.Batch{}
	todo := make(chan events.Aggregate, len(batches))
	for _, b := range batches {
		if _, ok := byAgg[b.Agg]; !ok {
			todo <- b.Agg
		}
		byAgg[b.Agg] = append(byAgg[b.Agg], b)
	}
	close(todo)
	var (
		mu   sync.Mutex
		errs = make([]error, workers)
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for agg := range todo {
				mu.Lock()
				last := expect[agg]
				mu.Unlock()
				for _, b := range byAgg[agg] {
					b.Expect = last
					ap, err := log.Append(ctx, b)
					for errors.Is(err, natslog.ErrUnknownOutcome) && ctx.Err() == nil {
						ap, err = log.Append(ctx, b)
					}
					if err != nil {
						errs[w] = err
						return
					}
					last = ap.Last
				}
				mu.Lock()
				expect[agg] = last
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// orderedRead reads every message of the read log with an ordered
// consumer pulling as the log's own reader does (natslog.ReadPull), but
// without decoding: the raw baseline of every read row.
func (e *benchEnv) orderedRead(ctx context.Context) (benchSample, error) {
	l, err := e.readLog(ctx)
	if err != nil {
		return benchSample{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	start := time.Now()
	cons, err := l.js.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.SubjectEvents + ".>"}, MaxResetAttempts: natslog.ResetAttempts})
	if err != nil {
		return benchSample{}, err
	}
	it, err := cons.Messages(natslog.ReadPull(l.js.Conn().MaxPayload()))
	if err != nil {
		return benchSample{}, err
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return benchSample{}, err
		}
		md, err := m.Metadata()
		if err != nil {
			return benchSample{}, err
		}
		n++
		if md.Sequence.Stream >= e.readLast {
			break
		}
	}
	return benchSample{ops: n, elapsed: time.Since(start)}, nil
}

// checkStore fails unless s holds the whole read log and hashes like
// every other replay of it.
func (e *benchEnv) checkStore(s *projections.Store) error {
	h, cp, err := s.Hash()
	if err != nil {
		return err
	}
	if cp != e.readLast {
		return fmt.Errorf("projection at seq %d, the log ends at %d", cp, e.readLast)
	}
	if e.readHash == "" {
		e.readHash = h
	} else if h != e.readHash {
		return fmt.Errorf("state hash %s, an earlier replay of the same log gave %s", h, e.readHash)
	}
	return nil
}

// catchUp projects the read log into a new Pebble store on disk (synced
// commits of projections.DefaultBatch records) with a Runner, as serve
// does after a restart.
func (e *benchEnv) catchUp(ctx context.Context) (benchSample, error) {
	l, err := e.readLog(ctx)
	if err != nil {
		return benchSample{}, err
	}
	dir := filepath.Join(e.dir, "catchup-"+strconv.FormatInt(e.runs.Add(1), 10))
	defer os.RemoveAll(dir)
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		return benchSample{}, err
	}
	defer s.Close()
	start := time.Now()
	n, err := (&projections.Runner{Log: l.log, Store: s}).RunToEnd(ctx)
	elapsed := time.Since(start)
	if err != nil {
		return benchSample{}, err
	}
	return benchSample{ops: n, elapsed: elapsed}, e.checkStore(s)
}

// replayFold folds the read log into every session's state in memory
// with the session reducer: what replay and rederive do before any store.
func (e *benchEnv) replayFold(ctx context.Context) (benchSample, error) {
	l, err := e.readLog(ctx)
	if err != nil {
		return benchSample{}, err
	}
	start := time.Now()
	n, err := foldSessions(ctx, l.log)
	return benchSample{ops: n, elapsed: time.Since(start)}, err
}

// foldSessions folds log from its start into every session's state in
// memory with the session reducer and returns the events folded; a log
// with no session is an error.
func foldSessions(ctx context.Context, log events.Log) (int, error) {
	n := 0
	states, _, err := replay.Fold(log.Read(ctx, 1), map[string]*session.State{},
		func(m map[string]*session.State, ev events.Envelope) map[string]*session.State {
			session.EvolveIn(m, ev)
			n++
			return m
		})
	if err == nil && len(states) == 0 {
		err = errors.New("the fold found no sessions")
	}
	return n, err
}

// replayMem is replay.At into an in-memory Pebble store: `logbook replay`.
func (e *benchEnv) replayMem(ctx context.Context) (benchSample, error) { return e.replayAt(ctx, "") }

// replayDisk is replay.At into a fresh Pebble store on disk.
func (e *benchEnv) replayDisk(ctx context.Context) (benchSample, error) {
	dir := filepath.Join(e.dir, "replay-"+strconv.FormatInt(e.runs.Add(1), 10))
	defer os.RemoveAll(dir)
	return e.replayAt(ctx, dir)
}

func (e *benchEnv) replayAt(ctx context.Context, dir string) (benchSample, error) {
	l, err := e.readLog(ctx)
	if err != nil {
		return benchSample{}, err
	}
	start := time.Now()
	s, err := replay.At(ctx, l.log, replay.Point{}, dir)
	elapsed := time.Since(start)
	if err != nil {
		return benchSample{}, err
	}
	defer s.Close()
	return benchSample{ops: int(s.Checkpoint()), elapsed: elapsed}, e.checkStore(s)
}

// benchServe is `logbook serve` running in this process on a data dir of
// its own (fsync always), with a client connection over its loopback
// listener, as other commands connect.
type benchServe struct {
	data   string
	cancel context.CancelFunc
	done   chan error
	nc     *nats.Conn
	log    *natslog.Log
	js     jetstream.JetStream
}

// serve returns the running serve, starting it on first use.
func (e *benchEnv) serve(ctx context.Context) (*benchServe, error) {
	if e.srv != nil {
		return e.srv, nil
	}
	s, err := e.startServe(ctx, filepath.Join(e.dir, "serve"), "always")
	if err != nil {
		return nil, err
	}
	e.srv = s
	return s, nil
}

// startServe runs serve in this process on data dir data with fsync mode
// fsync and further flags args, and connects to it as other commands do.
func (e *benchEnv) startServe(ctx context.Context, data, fsync string, args ...string) (*benchServe, error) {
	return e.startServeWith(ctx, e.cli.Run, data, fsync, args...)
}

// startServeWith is startServe with serve's command line run by run.
func (e *benchEnv) startServeWith(ctx context.Context, run func(context.Context, []string, io.Reader, io.Writer, io.Writer) error, data, fsync string, args ...string) (*benchServe, error) {
	e.note("starting serve")
	s := &benchServe{data: data, done: make(chan error, 1)}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		s.done <- run(sctx, append([]string{"serve", "--data", s.data, "--listen", "127.0.0.1:0", "--fsync", fsync, "--http", "off", "--no-watch"}, args...),
			bytes.NewReader(nil), io.Discard, io.Discard)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-s.done:
			cancel()
			return nil, fmt.Errorf("serve: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-s.done
			return nil, errors.New("serve did not come up in 30s")
		}
		nc, err := e.cli.Dial(ctx, s.data)
		if err != nil {
			continue
		}
		s.nc = nc
		break
	}
	var err error
	if s.log, err = natslog.Open(ctx, s.nc, natslog.Config{Registry: e.reg}); err == nil {
		s.js, err = jetstream.New(s.nc)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	// What the bench appends itself is signed as the data dir's writer
	// appends it (serve registered keys/writer.key when it started): an
	// unsigned event would be quarantined, and never projected.
	if k, kerr := attestation.ReadKey(filepath.Join(s.data, "keys", "writer.key")); kerr == nil {
		s.log.SetSigner(k)
	}
	return s, nil
}

func (s *benchServe) close() {
	if s.log != nil {
		s.log.Close()
	}
	s.nc.Close()
	s.cancel()
	<-s.done
}

// SmallFileLines is the lines of each transcript of the import row of
// many small files (Config.SmallFiles of them): a recorded tree of 555
// transcripts held 9,283 lines.
const SmallFileLines = 17

// importCeilingFloor is the least ratio of the import of transcripts of
// --lines lines to the server's ceiling (atomic batches of 1000 across
// sessions from one publisher): the import merges many files' runs into
// full atomic batches (natslog.Log.Hold), so it pays the server's
// per-batch cost about as often as the ceiling does.
const importCeilingFloor = 0.70

// importRow is the workload that imports sessions transcripts of lines
// lines into a running serve (importRun), beside the same events
// published raw per session (importRaw, the floor) and in full batches
// across sessions (importCeiling, held to ceiling when it is > 0); what
// names the shape in the row's name.
func (e *benchEnv) importRow(sessions, lines int, what string, ceiling float64) benchWorkload {
	name := fmt.Sprintf("import claude %d×%d lines → serve%s", sessions, lines, what)
	return benchWorkload{
		group: "import", name: name, unit: "ev",
		logbook: e.importRun(name, sessions, lines), baselines: []benchBaseline{
			{name: "same events, atomic batches of ≤1000 per session, 4 writers", run: e.importRaw(name), floor: 0.50},
			{name: "same events, atomic batches of 1000 across sessions, 1 publisher (the server's ceiling)", run: e.importCeiling(name), floor: ceiling},
			{name: "the same, each message with the headers the import stored with it (ids, expected sequences, signatures)", run: e.importCeilingStored(name)},
		},
	}
}

// importRun returns the run that writes sessions transcripts of lines
// lines and runs `logbook import claude` on them, in this process,
// against the running serve (its projector following the log
// meanwhile), and counts the events it appended. It keeps those events,
// under row, for the row's baselines.
func (e *benchEnv) importRun(row string, sessions, lines int) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		s, err := e.serve(ctx)
		if err != nil {
			return benchSample{}, err
		}
		run := e.runs.Add(1)
		dir := filepath.Join(e.dir, "transcripts-"+strconv.FormatInt(run, 10))
		defer os.RemoveAll(dir)
		// Each run's sessions are new to the log: the first transcript of
		// run r is session r×10⁶+1.
		ts, err := NewSynthTranscriptsFrom(dir, int(run)*1_000_000, sessions, false)
		if err != nil {
			return benchSample{}, err
		}
		for _, t := range ts {
			if err := t.Grow(lines, false); err != nil {
				return benchSample{}, err
			}
		}
		from, err := s.log.LastSeq(ctx)
		if err != nil {
			return benchSample{}, err
		}
		var out bytes.Buffer
		marks := &importMarks{}
		start, cpu0 := time.Now(), processCPU()
		err = e.cli.Run(ingest.WithMarks(ctx, marks.add), []string{"import", "claude", "--data", s.data, "--json", "--workers", "4", dir}, bytes.NewReader(nil), &out, io.Discard)
		elapsed, cpu := time.Since(start), processCPU()-cpu0
		if err != nil {
			return benchSample{}, err
		}
		caughtUp, err := e.caughtUp(ctx, s, start)
		if err != nil {
			return benchSample{}, err
		}
		caughtUp -= elapsed
		var sum struct {
			Appended int `json:"appended"`
		}
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			return benchSample{}, err
		}
		if want := sessions * lines; sum.Appended != want {
			return benchSample{}, fmt.Errorf("imported %d lines, want %d", sum.Appended, want)
		}
		imports, err := benchDecisionsFrom(ctx, s.log, from+1)
		e.imports[row] = imports
		if err == nil {
			e.stored[row], err = benchStoredFrom(ctx, s.js, from+1)
		}
		msgs := 0
		for _, ds := range imports {
			for _, d := range ds {
				msgs += len(d)
			}
		}
		e.notes = append(e.notes, fmt.Sprintf("import: %d transcripts of %d lines became %s events, %.1f per line; %.0f µs of CPU per event while it ran (importer, serve and its server together; %.1f of %d cores busy)",
			sessions, lines, benchThousands(int64(msgs)), float64(msgs)/float64(sum.Appended),
			float64(cpu.Microseconds())/float64(max(msgs, 1)), cpu.Seconds()/elapsed.Seconds(), runtime.GOMAXPROCS(0)))
		if err != nil {
			return benchSample{}, err
		}
		stages, err := importStages(ts, start, elapsed, caughtUp, marks)
		return benchSample{ops: msgs, elapsed: elapsed, stages: stages}, err
	}
}

// caughtUp returns how long after start (the import's) serve's
// projection held the log's last event: its followers verify and fold
// what the import appended, while it runs and after.
func (e *benchEnv) caughtUp(ctx context.Context, s *benchServe, start time.Time) (time.Duration, error) {
	last, err := s.log.LastSeq(ctx)
	if err != nil {
		return 0, err
	}
	for {
		cp, err := e.cli.Checkpoint(ctx, s.nc)
		if err != nil {
			return 0, err
		}
		if cp >= last {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// importMarks collects the stages an import marks as they end
// (ingest.WithMarks). Safe for concurrent use.
type importMarks struct {
	mu    sync.Mutex
	own   map[string]time.Time            // the import's own stages, by stage
	files map[string]map[string]time.Time // each file's stages, by path, then stage
}

// add records that stage of path ("" for the import's own) ended at at;
// a stage marked again keeps its first time.
func (m *importMarks) add(stage, path string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.own == nil {
		m.own, m.files = map[string]time.Time{}, map[string]map[string]time.Time{}
	}
	if path == "" {
		if _, ok := m.own[stage]; !ok {
			m.own[stage] = at
		}
		return
	}
	f := m.files[path]
	if f == nil {
		f = map[string]time.Time{}
		m.files[path] = f
	}
	if _, ok := f[stage]; !ok {
		f[stage] = at
	}
}

// importOwnStages are the import's own stages of its breakdown, in
// order: each mark and the stage it ends, timed from the mark before it
// (the first from the import's start).
var importOwnStages = []struct{ mark, stage string }{
	{ingest.MarkPlanned, "  paths checked, transcripts found (plan)"},
	{ingest.MarkConnected, "  connected to serve, log opened, append checked"},
	{ingest.MarkImported, "  files imported: each one's last append answered (below: per file)"},
	{ingest.MarkSaved, "  import index saved"},
	{ingest.MarkDone, "  summary written, log closed"},
}

// importFileStages are the stages of each file's import, in order, each
// timed from the mark before it (the first from the file's start); their
// medians over the files are shown.
var importFileStages = []struct{ from, to, stage string }{
	{ingest.MarkConnected, ingest.MarkFileStarted, "    per file: waits for a worker"},
	{ingest.MarkFileStarted, ingest.MarkFileSession, "    per file: its session read from the log"},
	{ingest.MarkFileSession, ingest.MarkFileParsed, "    per file: its lines read and parsed (waiting for a parse slot too)"},
	{ingest.MarkFileParsed, ingest.MarkFileDone, "    per file: its run decided and appended (waiting for its merged batch's answer)"},
}

// stages returns the breakdown of an import that began at start: its own
// stages, each file's (medians over the files that reached them), and
// how long after the last stage it ended (end).
func (m *importMarks) stages(start, end time.Time) []StageTime {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var out []StageTime
	last := start
	for _, st := range importOwnStages {
		at, ok := m.own[st.mark]
		if !ok {
			continue
		}
		out = append(out, StageTime{Stage: st.stage, P50ms: ms(at.Sub(last)), N: 1})
		last = at
		if st.mark != ingest.MarkImported {
			continue
		}
		for _, fs := range importFileStages {
			var ds []time.Duration
			for _, f := range m.files {
				from, ok1 := f[fs.from]
				if fs.from == ingest.MarkConnected {
					from, ok1 = m.own[fs.from]
				}
				to, ok2 := f[fs.to]
				if ok1 && ok2 {
					ds = append(ds, to.Sub(from))
				}
			}
			if len(ds) == 0 {
				continue
			}
			slices.Sort(ds)
			out = append(out, StageTime{Stage: fs.stage, P50ms: ms(ds[(len(ds)-1)/2]), N: len(ds)})
		}
	}
	if len(out) > 0 && end.After(last) {
		out = append(out, StageTime{Stage: "  command returns", P50ms: ms(end.Sub(last)), N: 1})
	}
	return out
}

// importStages breaks an import of ts that began at start and took took
// down: its stages as it marked them (marks), and beside it, the time one
// goroutine takes to parse every line of ts alone (the claude parser, no
// log), and how long after its summary serve's projection held its last
// event (caughtUp).
func importStages(ts []*SynthTranscript, start time.Time, took, caughtUp time.Duration, marks *importMarks) ([]StageTime, error) {
	p, err := claude.NewParser(claude.Config{})
	if err != nil {
		return nil, err
	}
	begin, n := time.Now(), 0
	for _, t := range ts {
		data, err := os.ReadFile(t.Path)
		if err != nil {
			return nil, err
		}
		i := 0
		for line := range bytes.Lines(data) {
			i++
			if _, err := p.Line(t.Path, i, line); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", t.Path, i, err)
			}
		}
		n += i
	}
	parse := time.Since(begin)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	out := []StageTime{{Stage: "import claude, start to summary (the timed part)", P50ms: ms(took), N: 1}}
	out = append(out, marks.stages(start, start.Add(took))...)
	return append(out,
		StageTime{Stage: fmt.Sprintf("beside the import: its %d lines parsed alone, one goroutine, no log", n), P50ms: ms(parse), N: n},
		StageTime{Stage: "serve's projection holds the import's last event, after the summary", P50ms: ms(caughtUp), N: 1},
	), nil
}

// benchDecisionsFrom reads the log from seq from and returns each session's
// events in order, as their stored bodies, cut into atomic batches of at
// most events.MaxBatch.
func benchDecisionsFrom(ctx context.Context, log events.Log, from uint64) ([][][][]byte, error) {
	index := map[events.Aggregate]int{}
	var out [][][][]byte
	for r, err := range log.Read(ctx, from) {
		if err != nil {
			return nil, err
		}
		i, ok := index[r.Agg]
		if !ok {
			i = len(out)
			index[r.Agg] = i
			out = append(out, nil)
		}
		body, err := r.Envelope.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if len(out[i]) == 0 || len(out[i][len(out[i])-1]) == events.MaxBatch {
			out[i] = append(out[i], nil)
		}
		d := len(out[i]) - 1
		out[i][d] = append(out[i][d], body)
	}
	return out, nil
}

// benchStoredFrom reads the log's stored events from seq from to the
// end of the log, as stored (subject, headers, body), and returns each
// subject's in order, the subjects in the order of their first message.
// The end is where its consumer has none pending (NumPending 0), not a
// sequence read before: a message stored last that is no event (output)
// does not leave it waiting, and an append under way when it starts is
// read whole, never cut where a sequence read earlier fell.
func benchStoredFrom(ctx context.Context, js jetstream.JetStream, from uint64) ([][]*nats.Msg, error) {
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		return nil, err
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.SubjectEvents + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
	})
	if err != nil {
		return nil, err
	}
	var out [][]*nats.Msg
	if info := c.CachedInfo(); info == nil || info.NumPending == 0 {
		return out, nil
	}
	index := map[string]int{}
	for {
		batch, err := c.Fetch(events.MaxBatch, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			i, ok := index[m.Subject()]
			if !ok {
				i = len(out)
				index[m.Subject()] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if meta.NumPending == 0 {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("stored events: none after seq %d, though some were pending", from)
		}
	}
}

// importRaw returns the run that publishes the events of import row row
// again, raw, over the same kind of connection: 4 writers (the import's
// workers), each taking a session and publishing its events in order, in
// atomic batches of at most events.MaxBatch, and counts the events.
func (e *benchEnv) importRaw(row string) benchRun {
	return func(ctx context.Context) (benchSample, error) { return e.importRawOf(ctx, e.imports[row]) }
}

func (e *benchEnv) importRawOf(ctx context.Context, imports [][][][]byte) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	if len(imports) == 0 {
		return benchSample{}, errors.New("no import to repeat")
	}
	run := e.runs.Add(1)
	todo := make(chan int, len(imports))
	for i := range imports {
		todo <- i
	}
	close(todo)
	var (
		done atomic.Int64
		errs = make([]error, 4)
		wg   sync.WaitGroup
	)
	start := time.Now()
	for w := range errs {
		wg.Go(func() {
			for i := range todo {
				subject := fmt.Sprintf("%s.bench-%d-s%d", events.SubjectOutput, run, i)
				for _, d := range imports[i] {
					if err := benchPublish(ctx, s.js, subject, d); err != nil {
						errs[w] = err
						return
					}
					done.Add(int64(len(d)))
				}
			}
		})
	}
	wg.Wait()
	return benchSample{ops: int(done.Load()), elapsed: time.Since(start)}, errors.Join(errs...)
}

// importCeiling returns the run that publishes the events of import row
// row again, raw, as full atomic batches of events.MaxBatch from one
// publisher, each session's events in order on a subject of its own and
// the sessions one after another: the fewest batches these events fit
// in, so the most the server stores of them per second.
func (e *benchEnv) importCeiling(row string) benchRun {
	return func(ctx context.Context) (benchSample, error) { return e.importCeilingOf(ctx, e.imports[row]) }
}

func (e *benchEnv) importCeilingOf(ctx context.Context, imports [][][][]byte) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	if len(imports) == 0 {
		return benchSample{}, errors.New("no import to repeat")
	}
	run := e.runs.Add(1)
	var msgs []*nats.Msg
	for i, ds := range imports {
		subject := fmt.Sprintf("%s.bench-%d-s%d", events.SubjectOutput, run, i)
		for _, d := range ds {
			for _, body := range d {
				m := nats.NewMsg(subject)
				m.Data = body
				msgs = append(msgs, m)
			}
		}
	}
	return publishBatches(ctx, s.js, msgs)
}

// publishBatches publishes msgs in order in full atomic batches of
// events.MaxBatch from one publisher and times it: one op a message.
func publishBatches(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg) (benchSample, error) {
	n := len(msgs)
	start := time.Now()
	for len(msgs) > 0 {
		k := min(len(msgs), events.MaxBatch)
		if _, err := jetstreamext.PublishMsgBatch(ctx, js, msgs[:k]); err != nil {
			return benchSample{}, err
		}
		msgs = msgs[k:]
	}
	return benchSample{ops: n, elapsed: time.Since(start)}, nil
}

// importCeilingStored returns the run that publishes the messages of
// import row row as importCeiling does (full atomic batches of
// events.MaxBatch from one publisher, each session on a subject of its
// own), each with the headers the import stored it with: its type, a
// Nats-Msg-Id (a fresh one of the same length: the stored one would be a
// duplicate), the signature headers, and on each session's first message
// its expected last subject sequence (0: a new session; a later
// decision's expectation, a sequence of the original subject, is left
// off). The server checks and stores these headers for the import and
// not for importCeiling: this is the ceiling of the same messages.
func (e *benchEnv) importCeilingStored(row string) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		s, err := e.serve(ctx)
		if err != nil {
			return benchSample{}, err
		}
		stored := e.stored[row]
		if len(stored) == 0 {
			return benchSample{}, errors.New("no import to repeat")
		}
		run := e.runs.Add(1)
		var msgs []*nats.Msg
		for i, ms := range stored {
			subject := fmt.Sprintf("%s.bench-%d-s%d", events.SubjectOutput, run, i)
			for j, sm := range ms {
				m := nats.NewMsg(subject)
				m.Data = sm.Data
				for k, vs := range sm.Header {
					m.Header[k] = vs
				}
				for _, h := range []string{jetstreamext.BatchIDHeader, jetstreamext.BatchSeqHeader, jetstreamext.BatchCommitHeader} {
					m.Header.Del(h) // the batch's own, set again as it goes
				}
				m.Header.Set(jetstream.MsgIDHeader, ulid.Make().String())
				if j > 0 || m.Header.Get(jetstream.ExpectedLastSubjSeqHeader) != "0" {
					m.Header.Del(jetstream.ExpectedLastSubjSeqHeader)
				}
				msgs = append(msgs, m)
			}
		}
		return publishBatches(ctx, s.js, msgs)
	}
}

// hookCheck holds a hook, end to end, to p50 ≤ 15 ms and p99 ≤ 40 ms:
// it runs in the agent's path for every tool call.
func hookCheck(f Figures) *Check {
	c := &Check{Text: "p50 ≤15ms, p99 ≤40ms"}
	c.OK = f.P50ms != nil && f.P99ms != nil && *f.P50ms <= 15 && *f.P99ms <= 40
	return c
}

// hookRun returns a run that starts exe (as name, with args) once per
// payload, one after another, against the running serve, and times each
// from start to exit. Every payload must have left the spool by the end.
func (e *benchEnv) hookRun(exe, name string, args ...string) benchRun {
	return e.hookRunOn(e.serve, exe, name, args...)
}

// hookRunOn is hookRun against the serve srv returns.
func (e *benchEnv) hookRunOn(srv func(context.Context) (*benchServe, error), exe, name string, args ...string) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		s, err := srv(ctx)
		if err != nil {
			return benchSample{}, err
		}
		run := e.runs.Add(1)
		smp, err := e.processesOf(ctx, exe, name, s, args, func(i int) []byte {
			return fmt.Appendf(nil, `{"session_id":"bench-hook-%d","transcript_path":"/home/user/.claude/projects/p/bench-hook-%d.jsonl","cwd":"/home/user/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_bench_%d_%d"}`,
				i%8, i%8, run, i)
		})
		if err != nil {
			return smp, err
		}
		// A hook the server did not answer in time leaves its payload to
		// the server's drain: wait for that, not longer.
		sp, err := claude.Open(e.cli.SpoolDir(s.data))
		if err != nil {
			return smp, err
		}
		for deadline := time.Now().Add(hookDrainWait); ; time.Sleep(20 * time.Millisecond) {
			left, err := sp.Pending()
			if err != nil {
				return smp, err
			}
			if len(left) == 0 {
				return smp, nil
			}
			if time.Now().After(deadline) {
				return smp, fmt.Errorf("%d hook payloads still in the spool %s after the last hook: the server did not take them", len(left), hookDrainWait)
			}
			if err := ctx.Err(); err != nil {
				return smp, err
			}
		}
	}
}

// minimalRun starts a Go program that does nothing, built for this run
// with the go command, as often as hookRun starts hooks: the least a
// process of a Go binary costs on this machine.
func (e *benchEnv) minimalRun(ctx context.Context) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	dir := filepath.Join(e.dir, "minimal")
	exe := filepath.Join(dir, "minimal")
	if _, err := os.Stat(exe); err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return benchSample{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
			return benchSample{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module minimal\n"), 0o600); err != nil {
			return benchSample{}, err
		}
		c := exec.CommandContext(ctx, "go", "build", "-o", exe, ".")
		c.Dir = dir
		c.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := c.CombinedOutput(); err != nil {
			return benchSample{}, fmt.Errorf("build a minimal Go binary (needs the go command): %w\n%s", err, out)
		}
	}
	return e.processesOf(ctx, exe, "minimal", s, nil, func(int) []byte { return nil })
}

// hookDrainWait is how long hookRun gives the server's drain, which runs
// every second, to take payloads the hooks left in the spool.
const hookDrainWait = 30 * time.Second

// versionRun starts this binary as `logbook version` as often as hookRun
// starts hooks: the cost of starting the process at all.
func (e *benchEnv) versionRun(ctx context.Context) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	return e.processes(ctx, s, []string{"version"}, func(int) []byte { return nil })
}

// processes runs this binary with args cfg.Hooks times in a row, stdin(i)
// on its standard input, on the serve's data dir, and times each run.
func (e *benchEnv) processes(ctx context.Context, s *benchServe, args []string, stdin func(i int) []byte) (benchSample, error) {
	return e.processesOf(ctx, e.cli.Exe, "logbook", s, append([]string{"--data", s.data}, args...), stdin)
}

// processesOf runs exe, as name (argv[0], the name a test binary
// dispatches on), with args cfg.Hooks times in a row, stdin(i) on its
// standard input and $LOGBOOK_DATA the serve's data dir, and times each
// run.
func (e *benchEnv) processesOf(ctx context.Context, exe, name string, s *benchServe, args []string, stdin func(i int) []byte) (benchSample, error) {
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for i := range e.cfg.Hooks {
		c := exec.CommandContext(ctx, exe, args...)
		c.Args[0] = name
		c.Env = append(os.Environ(), "LOGBOOK_DATA="+s.data)
		c.Stdin = bytes.NewReader(stdin(i))
		t := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			return benchSample{}, fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}

// commandSession starts the session the command rows run their commands
// in (one hook, in this process) and makes their workspace.
func (e *benchEnv) commandSession(ctx context.Context, s *benchServe) (sid, ws string, err error) {
	sid = "bench-command"
	ws = filepath.Join(e.dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return "", "", err
	}
	start := `{"session_id":"` + sid + `","cwd":"/home/user/project","hook_event_name":"SessionStart","source":"startup","permission_mode":"bypassPermissions"}`
	if err := e.cli.Run(ctx, []string{"--data", s.data, "hook", "claude"}, strings.NewReader(start), io.Discard, io.Discard); err != nil {
		return "", "", err
	}
	return sid, ws, nil
}

// boundaryRun runs `true` in workspace_write's boundary, bubblewrap's
// own part of it alone (sandbox.BoundaryCommand: the same namespaces and
// mounts, none of Start's locks, limits, pipes or reporter), cfg.Hooks
// times, in a workspace of its own (bubblewrap leaves the protected
// names' mount points there), /etc's unreadable paths kept by an EtcWatch
// (as a worker keeps them): what a command's start in that mode cannot
// do without.
func (e *benchEnv) boundaryRun(ctx context.Context) (benchSample, error) {
	ws := filepath.Join(e.dir, "boundary-workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return benchSample{}, err
	}
	etc := sandbox.NewEtcWatch()
	defer etc.Close()
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for range e.cfg.Hooks {
		t := time.Now()
		c, err := sandbox.BoundaryCommand(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Dir: ws, Mode: sandbox.WorkspaceWrite, Probed: true, Etc: etc})
		if err != nil {
			return benchSample{}, err
		}
		if out, err := c.CombinedOutput(); err != nil {
			return benchSample{}, fmt.Errorf("bubblewrap around true: %w\n%s", err, out)
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}

// trueRun runs `true` directly as often: the cost of a process at all.
func (e *benchEnv) trueRun(ctx context.Context) (benchSample, error) {
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for range e.cfg.Hooks {
		t := time.Now()
		if err := exec.CommandContext(ctx, "true").Run(); err != nil {
			return benchSample{}, fmt.Errorf("true: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}
