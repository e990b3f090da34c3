// Package reconcile runs serve's reconciler: a loop that, every interval,
// finds the live sessions a tick could change (an agent process found
// gone, or nothing observed for the abandon-after time) and has the
// session's ingester decide on each (claude.Ingester.Reconcile), so that
// an agent that went away leaves no entry open forever; and, through
// Config.Checks, ends the check runs whose runner vanished, so none
// stays running forever.
//
// The decision is the reducer's (reducers/session's tick); this package
// owns only when to look and which sessions to look at: it reads the
// projection, probes agent processes and waits for the hooks acknowledged
// before a pass, and appends nothing itself.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// ReadyEvery is how often a Reconciler looks at ready sessions (whose
// agent process may end while idle): less often than at busy ones, as
// they are most of a long-lived data dir.
const ReadyEvery = time.Minute

// MinSettleWait is the least a pass waits for the hooks taken before it
// (api.Service.HooksSettled); it waits one interval when that is longer.
const MinSettleWait = time.Second

// The range of Config.Interval: a pass reads every live session and
// probes agent processes, so one more often than MinInterval only burns
// CPU; one rarer than MaxInterval leaves a gone agent's session open for
// a day.
const (
	MinInterval = 100 * time.Millisecond
	MaxInterval = 24 * time.Hour
)

// Config is what a Reconciler needs. The zero value is not usable:
// Service and Interval are required.
type Config struct {
	// Service is serve's service: its projection (Store), its ingester
	// (Ing), and its CaughtUp and HooksSettled. Owned by the caller,
	// which keeps it open while Run runs.
	Service *api.Service
	// AbandonAfter is how long a working session with no known agent
	// process may go with nothing observed before its open entries are
	// marked stale. 0: never.
	AbandonAfter time.Duration
	// Interval is the time between passes, in [MinInterval, MaxInterval].
	Interval time.Duration
	// Host and Boot are this host's name and boot ID (claude.BootID):
	// an agent process of another host or boot is not looked at.
	Host, Boot string
	// Report, when set, is told of trouble, one line without a newline:
	// a pass that failed, a session it could not decide on, a pass held
	// off and the first that is not. Each line starts with its level,
	// "WARN: " for a fault, "INFO: " for news (servelog's markers: see
	// servelog.SayPart), whatever the names it quotes read. Called on
	// Run's goroutine.
	Report func(msg string)
	// Marked, when set, is told after a pass that marked n > 0 sessions.
	// Called on Run's goroutine.
	Marked func(n int)
	// Checks, when set, is called once a pass: it ends the check runs
	// whose runner vanished (workspace.Manager.EndVanishedChecks over
	// the projection's running runs) and returns how many it ended.
	// Called on Run's goroutine; its error is reported.
	Checks func(ctx context.Context) (int, error)
	// Ended, when set, is told after a pass that ended n > 0 check runs.
	Ended func(n int)
}

// Reconciler is serve's reconciler (see the package comment). Create one
// with New; it is not safe for concurrent use: one goroutine calls Run,
// or Pass and Tick.
type Reconciler struct {
	cfg     Config
	passes  int  // passes run to the end so far
	holding bool // the last pass was held off (unsettled), and said so
	// wake is when a session the last pass found silent but still in
	// its quiet period (claude.Quiet) comes out of it: the next pass
	// runs then if that is before the next interval. Zero: none.
	wake time.Time
}

// New returns a Reconciler on cfg; a negative AbandonAfter is taken as 0.
// It starts nothing: call Run. It panics when cfg.Service is nil or
// cfg.Interval is not positive, a caller's mistake (serve's flags are
// checked before).
func New(cfg Config) *Reconciler {
	if cfg.Service == nil || cfg.Interval <= 0 {
		panic(fmt.Sprintf("reconcile.New: Service %v, Interval %v: want a service and a positive interval", cfg.Service != nil, cfg.Interval))
	}
	cfg.AbandonAfter = max(cfg.AbandonAfter, 0)
	return &Reconciler{cfg: cfg}
}

// UnsettledError is a pass held off: Due sessions that it decided
// nothing on, because hooks acknowledged before it were not all in the
// log (Err, from api.Service.HooksSettled).
type UnsettledError struct {
	Due int
	Err error
}

// Error says how many sessions the pass decided nothing on, and why.
func (e *UnsettledError) Error() string {
	noun := "sessions"
	if e.Due == 1 {
		noun = "session"
	}
	return fmt.Sprintf("deciding nothing on %d %s until the hooks taken before the pass are in the log (%v)", e.Due, noun, e.Err)
}

// Unwrap returns Err.
func (e *UnsettledError) Unwrap() error { return e.Err }

func (r *Reconciler) report(format string, args ...any) {
	if r.cfg.Report != nil {
		r.cfg.Report(fmt.Sprintf(format, args...))
	}
}

// Run reconciles at once, then every interval, until ctx is done; it
// then returns nil. A failed pass is reported (Config.Report), not
// returned.
func (r *Reconciler) Run(ctx context.Context) error {
	// The first pass reads the projection: one that has not caught up
	// with the log yet (a serve just started) would find nothing due
	// until the next interval.
	if err := r.cfg.Service.CaughtUp(ctx); err != nil && ctx.Err() == nil {
		r.report("WARN: %v", err)
	}
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.Tick(ctx)
		var (
			soon <-chan time.Time
			w    *time.Timer
		)
		if !r.wake.IsZero() {
			// A session silent but for its quiet period is looked at
			// again when that ends, not an interval later.
			w = time.NewTimer(max(time.Until(r.wake), MinInterval))
			soon = w.C
		}
		select {
		case <-ctx.Done():
			if w != nil {
				w.Stop()
			}
			return nil
		case <-t.C:
		case <-soon:
		}
		if w != nil {
			w.Stop()
		}
	}
}

// Tick runs one pass and says what came of it (Config.Report and
// Marked). A pass held off (UnsettledError) is said once, and not again
// until a pass has run to the end: a server whose log is slow for an
// hour says so once, not every interval.
func (r *Reconciler) Tick(ctx context.Context) {
	if r.cfg.Checks != nil {
		n, err := r.cfg.Checks(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.report("WARN: check runs: %v", err)
		case n > 0 && r.cfg.Ended != nil:
			r.cfg.Ended(n)
		}
	}
	n, err := r.Pass(ctx)
	var held *UnsettledError
	switch {
	case ctx.Err() != nil:
	case errors.As(err, &held):
		if !r.holding {
			r.report("WARN: %v; trying again every %s", err, r.cfg.Interval)
		}
		r.holding = true
	case err != nil:
		r.report("WARN: %v", err)
	default:
		if r.holding {
			r.report("INFO: the hooks it waited for are in the log; deciding again")
			r.holding = false
		}
		if n > 0 && r.cfg.Marked != nil {
			r.cfg.Marked(n)
		}
	}
}

// Pass reconciles every candidate session and returns how many got
// marks. Ready sessions are candidates on the first pass run to the end
// and then once every ReadyEvery.
//
// A pass decides on a session from what it does not see: its agent
// process gone, nothing observed for AbandonAfter. So once it has found
// the sessions due (their agent processes looked at), it decides nothing
// until every hook acknowledged before then is in the log
// (api.Service.HooksSettled): a hook the agent sent before it went, still
// queued in the intake or the spool, decides first. When that is not
// sure within max(Interval, MinSettleWait), the pass decides nothing and
// fails with an *UnsettledError. A session it could not decide on is
// reported and passed over; other errors (reading the projection) end
// the pass.
func (r *Reconciler) Pass(ctx context.Context) (int, error) {
	svc, after := r.cfg.Service, r.cfg.AbandonAfter
	check := func(p events.Process) events.ProcessCheck { return claude.CheckProcess(p, r.cfg.Host, r.cfg.Boot) }
	now := time.Now()
	phases := []string{events.PhaseWorking, events.PhaseWaiting}
	if every := max(int(ReadyEvery/r.cfg.Interval), 1); r.passes%every == 0 {
		phases = append(phases, events.PhaseReady)
	}
	var due []string
	r.wake = time.Time{}
	for _, phase := range phases {
		// One row decoded at a time, and only the sessions a tick would
		// change kept: a pass over thousands of sessions holds one
		// session's state, not all of them. Deciding on the projected
		// state first also means quiet sessions are never read from the
		// log (which would make the server load every old block of
		// theirs); Reconcile decides again on the log's state.
		err := svc.Store.SessionRows(phase, "", func(id string, row []byte) (bool, error) {
			// The fields a tick decides on are read first, into a small
			// value: a session whose agent process lives, or that has
			// none and is not stale, is passed over without its whole
			// state decoded. That is most of them, every pass, and a
			// pass over ready sessions grows with all sessions seen.
			var head tickHead
			if err := json.Unmarshal(row, &head); err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", id, err)
			}
			// A waiting session waits on a person: never stale
			// (reducers/session's tick), so only its agent process
			// is looked at, and its state is not decoded every pass.
			stale := phase == events.PhaseWorking && after > 0 && now.Sub(head.ObservedAt) >= after
			if quiet := head.ReceivedAt.Add(claude.Quiet); stale && quiet.After(now) {
				// Silent by the agent's account, but still taking
				// lines in (an import): looked at again when quiet.
				if r.wake.IsZero() || quiet.Before(r.wake) {
					r.wake = quiet
				}
				if head.AgentProcess == nil {
					return true, nil
				}
			}
			if !head.due(stale, check) {
				return true, nil
			}
			var s session.State
			if err := json.Unmarshal(row, &s); err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", id, err)
			}
			ok, err := svc.Ing.WouldReconcile(s, now, after, check)
			if err != nil {
				r.report("WARN: %s: %v", id, err)
			}
			if ok {
				due = append(due, id)
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	if len(due) > 0 {
		// After the agent processes were looked at: a hook acknowledged
		// before one was found gone is waited for.
		sctx, cancel := context.WithTimeout(ctx, max(r.cfg.Interval, MinSettleWait))
		err := svc.HooksSettled(sctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, &UnsettledError{Due: len(due), Err: err}
		}
		// The tick's time is when it decides, after that wait.
		now = time.Now()
	}
	r.passes++
	n := 0
	for _, id := range due {
		agg := events.Aggregate{Kind: events.KindSession, ID: id}
		ap, _, err := svc.Ing.Reconcile(ctx, agg, now, after, check)
		if err != nil {
			if ctx.Err() != nil {
				return n, err
			}
			r.report("WARN: %s: %v", id, err)
			continue
		}
		if ap.Last != 0 {
			n++
		}
	}
	return n, nil
}

// tickHead is the part of a session's projected state (session.State's
// JSON) that a tick decides on.
type tickHead struct {
	ObservedAt   time.Time       `json:"observed_at"`
	ReceivedAt   time.Time       `json:"received_at"`
	AgentProcess *events.Process `json:"agent_process"`
}

// due reports whether a tick could decide anything for the session: with
// an agent process, only when check finds that very process gone (the
// rule of reducers/session's tick); without one, only when it is stale.
// It is a filter: WouldReconcile decides on the whole state.
func (h tickHead) due(stale bool, check func(events.Process) events.ProcessCheck) bool {
	if h.AgentProcess == nil {
		return stale
	}
	c := check(*h.AgentProcess)
	return c.Process.Same(*h.AgentProcess) && c.Result == events.ProcessGone
}
