package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
)

// StageTime is one stage of a row's breakdown: the median, over the
// row's operations that reached it, of the time from the stage before
// it to this one.
type StageTime struct {
	Stage string  `json:"stage"`  // what the stage ends with, e.g. "command.started appended"
	P50ms float64 `json:"p50_ms"` // median duration, milliseconds
	N     int     `json:"n"`      // operations that reached the stage
}

// commandStages are the stages of the command path's breakdown: serve's
// side of an exec on its socket up to the request's decision
// (execsock.SetTrace; `logbook exec`, which has no such stages, is timed
// from its start to its request's decision in one), the request
// appended, one per worker.Stage in its order, then serve's and the
// client's end. Each is timed from the stage the command reached just
// before it (see breakdown).
var commandStages = []string{
	"exec started → serve accepted (process start, connect)",
	"request read (peer credentials, decode)",
	"arguments parsed, actor named",
	"journal settled (session not found at first)",
	"session resolved",
	"request built (redaction rules, client)",
	"request decided (session, workspace, worker, active commands)",
	"request appended",
	"worker sees it",
	"admission (claim, load, checks)",
	"command.started appended",
	"session attached (restricted: known once bubblewrap runs)",
	"sandbox prepared (pipes, cgroup, bwrap args)",
	"forked (process or bubblewrap runs)",
	"process started (restricted: boundary built, released)",
	"first output",
	"exit seen",
	"tree killed, reaped (the boundary goes meanwhile)",
	"exit (output read)",
	"command.exited appended",
	"exec sees the exit",
	"exit status sent",
	"client exits",
}

// The breakdown's last two lines are not stages but the CPU time one
// command cost, the mean over the row's commands (user and system).
const (
	cpuSelfStage     = "CPU per command, this process: serve, its workers and server (mean)"
	cpuChildrenStage = "CPU per command, child processes: exec, bubblewrap, true (mean)"
)

// commandTimes is what one command's breakdown is made of: the times
// its stages ended, zero where unknown.
type commandTimes struct {
	begin, end time.Time                     // the exec process started, exited
	decided    time.Time                     // command.requested's decision time (its At)
	appended   time.Time                     // command.requested stored (the stream's timestamp)
	marks      [worker.NumStages]time.Time   // the worker's stages (worker.SetTrace)
	served     [execsock.NumStages]time.Time // serve's stages of an exec on its socket (execsock.SetTrace)
}

// commandCheck holds a command, exec start to exit, to p50 ≤ 10 ms and
// p99 ≤ 25 ms: agents run hundreds of commands a session.
func commandCheck(f Figures) *Check {
	c := &Check{Text: "p50 ≤10ms, p99 ≤25ms"}
	c.OK = f.P50ms != nil && f.P99ms != nil && *f.P50ms <= 10 && *f.P99ms <= 25
	return c
}

// boundaryCheck holds a command in a restricted mode, exec start to
// exit, to what the full_access row is held to over bubblewrap's own
// start and exit of the same command (base, measured in the same run):
// p50 ≤ its p50 + 10 ms and p99 ≤ its p99 + 25 ms.
func boundaryCheck(f, base Figures) *Check {
	if base.P50ms == nil || base.P99ms == nil {
		return &Check{Text: "p50 ≤bubblewrap+10ms, p99 ≤bubblewrap+25ms (bubblewrap not timed)"}
	}
	p50, p99 := *base.P50ms+10, *base.P99ms+25
	c := &Check{Text: fmt.Sprintf("p50 ≤bubblewrap+10ms (%.1fms), p99 ≤bubblewrap+25ms (%.1fms)", p50, p99)}
	c.OK = f.P50ms != nil && f.P99ms != nil && *f.P50ms <= p50 && *f.P99ms <= p99
	return c
}

// execName names what the command rows run: "logbook-exec" when
// CLI.ExecExe is found, else "exec" (`logbook exec`).
func (e *benchEnv) execName() string {
	if e.cli.ExecExe != "" {
		return "logbook-exec"
	}
	return "exec"
}

// fullExecRows are the rows of `logbook exec` itself in full_access,
// beside logbook-exec's (when CLI.ExecExe is found): what the full
// binary's start and its own connection cost. They hold no floor.
func (e *benchEnv) fullExecRows() []benchWorkload {
	if e.cli.ExecExe == "" {
		return nil
	}
	return []benchWorkload{{
		group: "command", name: "logbook exec full_access true → exited, via workers", unit: "cmd",
		logbook: e.commandRunWith(e.cli.Exe, "logbook", events.ModeFullAccess), baselines: []benchBaseline{{name: "fork/exec of true", run: e.trueRun}},
	}}
}

// commandRun returns the run that starts logbook-exec (CLI.ExecExe;
// without it this binary as `logbook exec`) of `true` in mode (an
// events.Mode*) for one session, cfg.Hooks times in a row: request
// appended, picked up by a worker, started, exited, and the exit read
// back by exec. Each command's stages are timed (the workers' trace,
// worker.SetTrace, and the log's times) into the sample's breakdown.
func (e *benchEnv) commandRun(mode string) benchRun {
	if e.cli.ExecExe != "" {
		return e.commandRunWith(e.cli.ExecExe, "logbook-exec", mode)
	}
	return e.commandRunWith(e.cli.Exe, "logbook", mode)
}

// commandRunWith is commandRun's run of exe, started as name ("logbook",
// which is given the exec verb, or "logbook-exec").
func (e *benchEnv) commandRunWith(exe, name, mode string) benchRun {
	return func(ctx context.Context) (benchSample, error) { return e.commandRunIn(ctx, exe, name, mode) }
}

// commandRunIn is commandRunWith's run.
func (e *benchEnv) commandRunIn(ctx context.Context, exe, name, mode string) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	sid, ws, err := e.commandSession(ctx, s)
	if err != nil {
		return benchSample{}, err
	}
	from, err := s.log.LastSeq(ctx)
	if err != nil {
		return benchSample{}, err
	}
	var (
		mu    sync.Mutex
		times = map[string]*commandTimes{}
	)
	worker.SetTrace(func(id string, st worker.Stage, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if t := times[id]; t != nil && int(st) < len(t.marks) {
			t.marks[st] = at
		}
	})
	defer worker.SetTrace(nil)
	execsock.SetTrace(func(id string, st execsock.Stage, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if t := times[id]; t != nil && st < execsock.NumStages {
			t.served[st] = at
		}
	})
	defer execsock.SetTrace(nil)

	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start, cpu0, kids0 := time.Now(), processCPU(), childrenCPU()
	for range e.cfg.Hooks {
		id := ulid.Make().String()
		ct := &commandTimes{}
		mu.Lock()
		times[id] = ct
		mu.Unlock()
		args := []string{"--data", s.data, "exec", "--session", sid, "--id", id, "--mode", mode, "--workspace", ws, "--", "true"}
		if name != "logbook" {
			args = slices.Delete(args, 2, 3) // logbook-exec is exec
		}
		c := exec.CommandContext(ctx, exe, args...)
		c.Args[0] = name
		c.Env = append(os.Environ(), "LOGBOOK_DATA="+s.data)
		c.Stdin = bytes.NewReader(nil)
		t := time.Now()
		out, err := c.CombinedOutput()
		end := time.Now()
		if err != nil {
			return benchSample{}, fmt.Errorf("logbook %v: %w\n%s", args, err, out)
		}
		mu.Lock()
		ct.begin, ct.end = t, end
		mu.Unlock()
		lat = append(lat, end.Sub(t))
	}
	smp := benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}
	cpu, kids := processCPU()-cpu0, childrenCPU()-kids0
	worker.SetTrace(nil)
	execsock.SetTrace(nil)
	if err := e.requestTimes(ctx, s.js, from, times); err != nil {
		return smp, err
	}
	smp.stages = breakdown(times)
	perCmd := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(e.cfg.Hooks) }
	smp.stages = append(smp.stages,
		StageTime{Stage: cpuSelfStage, P50ms: perCmd(cpu), N: e.cfg.Hooks},
		StageTime{Stage: cpuChildrenStage, P50ms: perCmd(kids), N: e.cfg.Hooks})
	return smp, nil
}

// requestTimes reads the command events stored after sequence from and
// sets, for each command of times, when its request was decided and
// when it was stored.
func (e *benchEnv) requestTimes(ctx context.Context, js jetstream.JetStream, from uint64, times map[string]*commandTimes) error {
	cons, err := js.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{worker.CommandFilter},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from + 1,
	})
	if err != nil {
		return fmt.Errorf("command times: %w", err)
	}
	// One iterator for the whole read: an ordered consumer's Next is a
	// fetch of its own, which makes the server a consumer per message.
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("command times: %w", err)
	}
	defer it.Stop()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	defer context.AfterFunc(rctx, it.Stop)()
	for {
		msg, err := it.Next()
		if err != nil {
			if cerr := rctx.Err(); cerr != nil {
				err = fmt.Errorf("%w (%w)", cerr, err)
			}
			return fmt.Errorf("command times: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("command times: %w", err)
		}
		if msg.Headers().Get(natslog.HeaderType) == (events.CommandRequested{}).EventType() {
			if agg, err := events.ParseSubject(msg.Subject()); err == nil && times[agg.ID] != nil {
				env, err := e.reg.Decode(msg.Data())
				if err != nil {
					return fmt.Errorf("command times: %w", err)
				}
				times[agg.ID].decided, times[agg.ID].appended = env.At, md.Timestamp
			}
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// breakdown returns the median of each of commandStages over times.
// A stage is timed from the stage the command reached just before it,
// in time (a command without output goes from its process's start to
// its exit; in a restricted mode the session's attach is timed from
// bubblewrap's fork, which comes first); a stage no command reached is
// left out.
func breakdown(times map[string]*commandTimes) []StageTime {
	per := make([][]time.Duration, len(commandStages))
	type point struct {
		stage int // index in commandStages
		at    time.Time
	}
	for _, t := range times {
		if t.begin.IsZero() {
			continue
		}
		var all []time.Time
		all = append(all, t.served[:execsock.StageSeen]...)
		all = append(all, t.decided, t.appended)
		all = append(all, t.marks[:]...)
		all = append(all, t.served[execsock.StageSeen:]...)
		all = append(all, t.end)
		var points []point
		for i, at := range all {
			if !at.IsZero() {
				points = append(points, point{i, at})
			}
		}
		slices.SortStableFunc(points, func(a, b point) int { return a.at.Compare(b.at) })
		prev := t.begin
		for _, p := range points {
			per[p.stage] = append(per[p.stage], p.at.Sub(prev))
			prev = p.at
		}
	}
	var out []StageTime
	for i, ds := range per {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, StageTime{Stage: commandStages[i], P50ms: float64(ds[(len(ds)-1)/2].Microseconds()) / 1000, N: len(ds)})
	}
	return out
}
