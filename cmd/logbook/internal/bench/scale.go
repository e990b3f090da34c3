package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// The scale rows: queries of a large history, each answered by a running
// serve to this binary started as a process, timed from start to exit
// (end to end, as a user waits). The history is generated (ScaleHistory)
// and appended straight into the serve's log through the log's Append by
// 1000 writers at once, which the log's group commit merges into atomic
// batches of up to events.MaxBatch events; the serve's projector folds
// it, and the rows start once the projection has caught up. So the rows
// measure the query paths: API, projection reads, paging, printing.

// scaleWorking is how many sessions of the history are working.
const scaleWorking = 10

// scaleState is the scale rows' serve and what its log holds.
type scaleState struct {
	srv      *benchServe
	sessions int // sessions in the log, ScaleSessionID(1…sessions)
	long     string
	p50      map[string]float64 // p50 in ms of earlier rows, by key
}

// scaleRows returns the scale rows: for each size of cfg.ScaleSessions,
// `sessions`, `sessions --limit 100` and `sessions --phase working`;
// then `session show` and `audit` of one session of cfg.ScaleEvents
// events.
func (e *benchEnv) scaleRows() []benchWorkload {
	var ws []benchWorkload
	version := []benchBaseline{{name: "logbook version (process start)", run: e.scaleVersion}}
	first := 0
	if len(e.cfg.ScaleSessions) > 0 {
		first = e.cfg.ScaleSessions[0]
	}
	prev := 0
	for _, n := range e.cfg.ScaleSessions {
		size := benchThousands(int64(n))
		ws = append(ws, benchWorkload{
			group: "scale", name: fmt.Sprintf("sessions via serve, %s sessions", size), unit: "query",
			logbook: e.scaleQuery(n, "all", n, "sessions"), baselines: version,
			check: e.scaleAllCheck(n, prev),
		})
		ws = append(ws, benchWorkload{
			group: "scale", name: fmt.Sprintf("sessions --limit 100 via serve, %s sessions", size), unit: "query",
			logbook: e.scaleQuery(n, "limit", min(100, n), "sessions", "--limit", "100"), baselines: version,
			check: e.scaleFlatCheck("limit", n, first),
		})
		ws = append(ws, benchWorkload{
			group: "scale", name: fmt.Sprintf("sessions --phase working via serve, %d of %s sessions", scaleWorking, size), unit: "query",
			logbook: e.scaleQuery(n, "phase", min(scaleWorking, n), "sessions", "--phase", "working"), baselines: version,
			check: e.scaleFlatCheck("phase", n, first),
		})
		prev = n
	}
	if ev := e.cfg.ScaleEvents; ev > 0 {
		size := benchThousands(int64(ev))
		ws = append(ws,
			benchWorkload{
				group: "scale", name: fmt.Sprintf("session show via serve, one session of %s events", size), unit: "query",
				logbook: e.scaleLong("session", "show"), baselines: version,
			},
			benchWorkload{
				group: "scale", row: "audit", name: fmt.Sprintf("audit, one session of %s events", size), unit: "ev",
				logbook: e.scaleAudit, baselines: []benchBaseline{{name: "ordered consumer read of its subject", run: e.scaleLongRead, floor: auditFloor}},
				runs: 3,
			},
		)
	}
	return ws
}

// scaleServe returns the scale rows' serve, starting it on first use:
// fsync interval, as the rows query and do not append; no reconciler, as
// the generated sessions have no agent to look after.
func (e *benchEnv) scaleServe(ctx context.Context) (*scaleState, error) {
	if e.scale != nil {
		return e.scale, nil
	}
	srv, err := e.startServe(ctx, filepath.Join(e.dir, "scale"), "interval", "--reconcile-every", "0")
	if err != nil {
		return nil, err
	}
	e.scale = &scaleState{srv: srv, p50: map[string]float64{}}
	return e.scale, nil
}

// scaleGrow makes the scale serve's log hold n sessions, scaleWorking of
// them working (among the first ones), and waits for its projection.
func (e *benchEnv) scaleGrow(ctx context.Context, n int) (*scaleState, error) {
	s, err := e.scaleServe(ctx)
	if err != nil {
		return nil, err
	}
	if s.sessions >= n {
		return s, nil
	}
	e.note(fmt.Sprintf("writing sessions %d to %d", s.sessions+1, n))
	working := 0
	if s.sessions == 0 {
		working = scaleWorking
	}
	start := time.Now()
	batches := NewScaleHistory(e.reg).Sessions(s.sessions+1, n-s.sessions, working)
	if err := AppendBatches(ctx, s.srv.log, batches, map[events.Aggregate]uint64{}, 1000); err != nil {
		return nil, err
	}
	wrote := time.Since(start)
	if err := e.scaleCaughtUp(ctx, s); err != nil {
		return nil, err
	}
	e.notes = append(e.notes, fmt.Sprintf("scale: sessions %s–%s written in %.1fs (%.0f sessions/s), projected %.1fs later",
		benchThousands(int64(s.sessions+1)), benchThousands(int64(n)), wrote.Seconds(), float64(n-s.sessions)/wrote.Seconds(), (time.Since(start)-wrote).Seconds()))
	s.sessions = n
	return s, nil
}

// scaleCaughtUp waits until the serve's projection holds its whole log.
func (e *benchEnv) scaleCaughtUp(ctx context.Context, s *scaleState) error {
	last, err := s.srv.log.LastSeq(ctx)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		cp, err := e.cli.Checkpoint(ctx, s.srv.nc)
		if err != nil {
			return err
		}
		if cp >= last {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("projection at %d of %d after 10 minutes", cp, last)
		}
	}
}

// scaleQuery returns a run of `logbook args…` against the scale serve
// holding n sessions, cfg.Queries times; each run must print want rows.
// Its p50 is kept under key/n for later rows' checks.
func (e *benchEnv) scaleQuery(n int, key string, want int, args ...string) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		s, err := e.scaleGrow(ctx, n)
		if err != nil {
			return benchSample{}, err
		}
		smp, err := e.scaleProcesses(ctx, s, args, func(out []byte) error {
			// A row begins with the session id's shortest unique prefix: 8
			// characters or more, so no dash when one session is listed.
			if got := bytes.Count(out, []byte("\n5ca1e000")); got != want {
				return fmt.Errorf("printed %d sessions, want %d", got, want)
			}
			return nil
		})
		if err == nil {
			s.p50[fmt.Sprintf("%s/%d", key, n)] = *benchFiguresOf(smp).P50ms
		}
		return smp, err
	}
}

// scaleProcesses starts this binary with args on the scale serve's data
// dir cfg.Queries times in a row, checks each one's output and times it.
func (e *benchEnv) scaleProcesses(ctx context.Context, s *scaleState, args []string, check func(out []byte) error) (benchSample, error) {
	lat := make([]time.Duration, 0, e.cfg.Queries)
	start := time.Now()
	for range e.cfg.Queries {
		c := exec.CommandContext(ctx, e.cli.Exe, append([]string{"--data", s.srv.data}, args...)...)
		c.Args[0] = "logbook" // the name a test binary dispatches on
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		t := time.Now()
		if err := c.Run(); err != nil {
			return benchSample{}, fmt.Errorf("logbook %v: %w\n%s", args, err, errb.Bytes())
		}
		lat = append(lat, time.Since(t))
		if err := check(out.Bytes()); err != nil {
			return benchSample{}, fmt.Errorf("logbook %v: %w", args, err)
		}
	}
	return benchSample{ops: e.cfg.Queries, elapsed: time.Since(start), lat: lat}, nil
}

// scaleVersion starts `logbook version` as often: the cost of starting
// the process at all.
func (e *benchEnv) scaleVersion(ctx context.Context) (benchSample, error) {
	s, err := e.scaleServe(ctx)
	if err != nil {
		return benchSample{}, err
	}
	return e.scaleProcesses(ctx, s, []string{"version"}, func([]byte) error { return nil })
}

// scaleAllCheck holds `sessions` to its floors: at 10,000 sessions a p50
// of 300 ms at most, end to end; from the previous size prev, growth of
// the p50 no more than the growth of the rows printed.
func (e *benchEnv) scaleAllCheck(n, prev int) func(Figures) *Check {
	return func(f Figures) *Check {
		if f.P50ms == nil {
			return nil
		}
		p50 := *f.P50ms
		if n == 10_000 {
			return &Check{Text: "p50 ≤300ms", OK: p50 <= 300}
		}
		if prev == 0 || e.scale == nil {
			return nil
		}
		before, ok := e.scale.p50[fmt.Sprintf("all/%d", prev)]
		if !ok || before <= 0 {
			return nil
		}
		rows := float64(n) / float64(prev)
		return &Check{Text: fmt.Sprintf("×%.1f for ×%.0f rows", p50/before, rows), OK: p50/before <= rows}
	}
}

// scaleFlatCheck holds a row whose answer does not grow with the history
// (key: limit, phase) to a p50 within 1.5 times (+5 ms) of the same
// row's at the first size.
func (e *benchEnv) scaleFlatCheck(key string, n, first int) func(Figures) *Check {
	return func(f Figures) *Check {
		if n == first || f.P50ms == nil || e.scale == nil {
			return nil
		}
		base, ok := e.scale.p50[fmt.Sprintf("%s/%d", key, first)]
		if !ok {
			return nil
		}
		return &Check{Text: fmt.Sprintf("×%.2f of %s's", *f.P50ms/base, benchThousands(int64(first))), OK: *f.P50ms <= 1.5*base+5}
	}
}

// scaleLongSession writes the one long session (cfg.ScaleEvents events)
// on first use and returns its id.
func (e *benchEnv) scaleLongSession(ctx context.Context) (*scaleState, error) {
	s, err := e.scaleServe(ctx)
	if err != nil {
		return nil, err
	}
	if s.long != "" {
		return s, nil
	}
	id := "5ca1e10e-0000-4000-8000-000000000001"
	e.note(fmt.Sprintf("writing one session of %d events", e.cfg.ScaleEvents))
	h := NewScaleHistory(e.reg)
	first := h.Session(id, "", events.PhaseWorking, 200)
	batches := append([]events.Batch{first}, h.activity(id, uint64(len(first.Events)), e.cfg.ScaleEvents-len(first.Events))...)
	if err := AppendBatches(ctx, s.srv.log, batches, map[events.Aggregate]uint64{}, 1); err != nil {
		return nil, err
	}
	if err := e.scaleCaughtUp(ctx, s); err != nil {
		return nil, err
	}
	s.long = id
	return s, nil
}

// scaleLong returns a run of `logbook args… <long session>`.
func (e *benchEnv) scaleLong(args ...string) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		s, err := e.scaleLongSession(ctx)
		if err != nil {
			return benchSample{}, err
		}
		return e.scaleProcesses(ctx, s, append(args, s.long), func(out []byte) error {
			if !bytes.Contains(out, []byte(s.long)) {
				return errors.New("the session is not in the output")
			}
			return nil
		})
	}
}

// scaleLongRead reads the long session's subject with an ordered
// consumer, without decoding, as often as scaleAudit runs audit.
func (e *benchEnv) scaleLongRead(ctx context.Context) (benchSample, error) {
	s, err := e.scaleLongSession(ctx)
	if err != nil {
		return benchSample{}, err
	}
	subject := events.Aggregate{Kind: events.KindSession, ID: s.long}.Subject()
	lat := make([]time.Duration, 0, e.cfg.Queries)
	start := time.Now()
	for range e.cfg.Queries {
		t := time.Now()
		cons, err := s.srv.js.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		if err != nil {
			return benchSample{}, err
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(1000))
		if err != nil {
			return benchSample{}, err
		}
		for n := 0; n < e.cfg.ScaleEvents; n++ {
			if _, err := it.Next(jetstream.NextContext(ctx)); err != nil {
				it.Stop()
				return benchSample{}, err
			}
		}
		it.Stop()
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.ScaleEvents * e.cfg.Queries, elapsed: time.Since(start), lat: lat}, nil
}
