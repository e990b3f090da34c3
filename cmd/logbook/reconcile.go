package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// personActor names the person running this command, for the actor of
// what they decide: "person:<user>@<host>".
func personActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "person:" + name + "@" + host
}

func sessionEndCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "end ID",
		Short: "End a session on a person's word: its open entries are abandoned, then it ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sessionRequestCmd(cmd.Context(), g, api.VerbSessionEnd, api.SessionEndRequest{ID: args[0], Reason: reason})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, in a few words (required)")
	cmd.MarkFlagRequired("reason")
	return cmd
}

func sessionAbandonCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "abandon ID ENTRY",
		Short: "Mark an open entry of a session as never to close, on a person's word",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sessionRequestCmd(cmd.Context(), g, api.VerbSessionAbandon, api.SessionEndRequest{ID: args[0], Entry: args[1], Reason: reason})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, in a few words (required)")
	cmd.MarkFlagRequired("reason")
	return cmd
}

// maxSessionReason is the most bytes of a session end's or an
// abandonment's reason the server takes.
const maxSessionReason = 200

func sessionRequestCmd(ctx context.Context, g *globals, verb string, req api.SessionEndRequest) error {
	if err := checkTyped("--reason", req.Reason, maxSessionReason); err != nil {
		return err
	}
	req.Actor, req.Ref = personActor(), ulid.Make().String()
	reason, err := redactTyped(g, req.Reason, maxSessionReason)
	if err != nil {
		return err
	}
	req.Reason = reason
	return withAPI(ctx, g, func(b *backend, call api.Caller) error {
		id, err := resolveID(ctx, b, events.KindSession, req.ID)
		if err != nil {
			return err
		}
		req.ID = id
		var out api.SessionEndReply
		if err := call(ctx, verb, req, &out); err != nil {
			return err
		}
		if g.json {
			return writeJSON(g.stdout, out)
		}
		s := out.Session
		_, err = fmt.Fprintf(g.stdout, "session %s: %s, %d open entries, %d abandoned (seq %d)\n", s.ID, s.Phase, len(s.Entries), s.Abandoned, out.Seq)
		return err
	})
}

// reconciler runs the reconciler in serve: every interval it looks at
// the sessions that may need a mark (those with a known agent process,
// and those working with nothing observed for abandonAfter)
// and lets claude.Ingester.Reconcile decide from what it sees.
type reconciler struct {
	svc          *api.Service
	abandonAfter time.Duration // 0: no stale marks
	interval     time.Duration
	host, boot   string
	stderr       io.Writer
	passes       int  // passes run to the end so far
	holding      bool // the last pass was held off (unsettled), and said so
	// wake is when a session the last pass found silent but still in
	// its quiet period (claude.Quiet) comes out of it: the next pass
	// runs then if that is before the next interval. Zero: none.
	wake time.Time
}

// readyEvery is how often the reconciler looks at ready sessions (whose
// agent process may end while idle): less often than at busy ones, as
// they are most of a long-lived data dir.
const readyEvery = time.Minute

// minSettleWait is the least a pass waits for the hooks taken before it
// (api.Service.HooksSettled); it waits one interval when that is longer.
const minSettleWait = time.Second

// unsettledError is a pass held off: due sessions that it decided nothing
// on, because hooks acknowledged before it were not all in the log (err).
type unsettledError struct {
	due int
	err error
}

func (e *unsettledError) Error() string {
	return fmt.Sprintf("deciding nothing on %s until the hooks taken before the pass are in the log (%v)", plural(e.due, "session"), e.err)
}

func (e *unsettledError) Unwrap() error { return e.err }

// Run reconciles at once, then every interval, until ctx is done.
func (r *reconciler) Run(ctx context.Context) error {
	// The first pass reads the projection: one that has not caught up
	// with the log yet (a serve just started) would find nothing due
	// until the next interval.
	if err := r.svc.CaughtUp(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(r.stderr, "logbook serve: reconciler: %v\n", err)
	}
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.tick(ctx)
		var (
			soon <-chan time.Time
			w    *time.Timer
		)
		if !r.wake.IsZero() {
			// A session silent but for its quiet period is looked at
			// again when that ends, not an interval later.
			w = time.NewTimer(max(time.Until(r.wake), minReconcileEvery))
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

// tick runs one pass and says what came of it on stderr. A pass held off
// (unsettledError) is said once, and not again until a pass has run to
// the end: a server whose log is slow for an hour says so once, not
// every interval.
func (r *reconciler) tick(ctx context.Context) {
	n, err := r.pass(ctx)
	var held *unsettledError
	switch {
	case ctx.Err() != nil:
	case errors.As(err, &held):
		if !r.holding {
			fmt.Fprintf(r.stderr, "logbook serve: reconciler: %v; trying again every %s\n", err, r.interval)
		}
		r.holding = true
	case err != nil:
		fmt.Fprintf(r.stderr, "logbook serve: reconciler: %v\n", err)
	default:
		if r.holding {
			fmt.Fprintf(r.stderr, "logbook serve: reconciler: the hooks it waited for are in the log; deciding again\n")
			r.holding = false
		}
		if n > 0 {
			fmt.Fprintf(r.stderr, "logbook serve: reconciler marked %s\n", plural(n, "session"))
		}
	}
}

// pass reconciles every candidate session and returns how many got
// marks. Ready sessions are candidates on the first pass run to the end
// and then once every readyEvery.
//
// A tick decides on a session from what it does not see: its agent
// process gone, nothing observed for abandonAfter. So once it has found
// the sessions due (their agent processes looked at), it decides nothing
// until every hook acknowledged before then is in the log
// (api.Service.HooksSettled): a hook the agent sent before it went, still
// queued in the intake or the spool, decides first. When that is not
// sure within max(interval, minSettleWait), the pass decides nothing and
// fails with an unsettledError.
func (r *reconciler) pass(ctx context.Context) (int, error) {
	check := func(p events.Process) events.ProcessCheck { return claude.CheckProcess(p, r.host, r.boot) }
	now := time.Now()
	phases := []string{events.PhaseWorking, events.PhaseWaiting}
	if every := max(int(readyEvery/r.interval), 1); r.passes%every == 0 {
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
		err := r.svc.Store.SessionRows(phase, "", func(id string, row []byte) (bool, error) {
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
			stale := phase == events.PhaseWorking && r.abandonAfter > 0 && now.Sub(head.ObservedAt) >= r.abandonAfter
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
			ok, err := r.svc.Ing.WouldReconcile(s, now, r.abandonAfter, check)
			if err != nil {
				fmt.Fprintf(r.stderr, "logbook serve: reconciler: %s: %v\n", id, err)
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
		sctx, cancel := context.WithTimeout(ctx, max(r.interval, minSettleWait))
		err := r.svc.HooksSettled(sctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, &unsettledError{due: len(due), err: err}
		}
		// The tick's time is when it decides, after that wait.
		now = time.Now()
	}
	r.passes++
	n := 0
	for _, id := range due {
		agg := events.Aggregate{Kind: events.KindSession, ID: id}
		ap, _, err := r.svc.Ing.Reconcile(ctx, agg, now, r.abandonAfter, check)
		if err != nil {
			if ctx.Err() != nil {
				return n, err
			}
			fmt.Fprintf(r.stderr, "logbook serve: reconciler: %s: %v\n", id, err)
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

// liveFlags are serve's settings for following sessions live: the
// reconciler's abandon-after time and interval, and the transcript
// directories to watch.
type liveFlags struct {
	abandonAfter   time.Duration
	reconcileEvery time.Duration
	watch          []string
}

// The range of --reconcile-every besides 0 (never): a pass reads every
// live session and probes agent processes, so one more often than
// minReconcileEvery only burns CPU; one rarer than maxReconcileEvery
// leaves a gone agent's session open for a day.
const (
	minReconcileEvery = 100 * time.Millisecond
	maxReconcileEvery = 24 * time.Hour
)

func (f *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.abandonAfter, "abandon-after", 30*time.Minute, "mark the open entries of a session with no known agent process stale after this long with nothing observed (0: never)")
	cmd.Flags().DurationVar(&f.reconcileEvery, "reconcile-every", 5*time.Second, "how often the reconciler checks agent processes and idle sessions")
	boundDuration(cmd.Flags(), "reconcile-every", minReconcileEvery, maxReconcileEvery, true)
	cmd.Flags().StringArrayVar(&f.watch, "watch", nil, "follow the transcripts under this directory as they are written: Claude Code's, such as ~/.claude/projects, or Codex CLI's rollouts, such as ~/.codex/sessions (repeatable)")
}

// check reports a flag serve would refuse later: a --watch that is not
// an existing directory, a negative duration. serve calls it before it
// starts anything.
func (f liveFlags) check() error {
	if f.abandonAfter < 0 {
		return usageErrorf("--abandon-after %v: want 0 or more", f.abandonAfter)
	}
	if f.reconcileEvery != 0 && (f.reconcileEvery < minReconcileEvery || f.reconcileEvery > maxReconcileEvery) {
		return usageErrorf("--reconcile-every %v: want %s", f.reconcileEvery, durRangeText(minReconcileEvery, maxReconcileEvery, true))
	}
	for _, d := range f.watch {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("--watch: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("--watch %s: not a directory", d)
		}
	}
	return nil
}

// watcher returns the loop that follows the --watch directories, nil
// when there are none. It checks them first, so serve refuses a missing
// one at start.
func (f liveFlags) watcher(svc *api.Service, stderr io.Writer) (func(context.Context) error, error) {
	if len(f.watch) == 0 {
		return nil, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	report := func(msg string) { fmt.Fprintf(stderr, "logbook serve: watch: %s\n", msg) }
	// A Codex CLI sessions tree (~/.codex/sessions, or one holding
	// rollout-*.jsonl files) is followed as rollouts, any other
	// directory as Claude Code transcripts; both with the same watcher.
	var claudeRoots, codexRoots []string
	for _, d := range f.watch {
		if codex.IsSessionsDir(d) {
			codexRoots = append(codexRoots, d)
		} else {
			claudeRoots = append(claudeRoots, d)
		}
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errs := make(chan error, 2)
		n := 0
		if len(claudeRoots) > 0 {
			n++
			go func() { errs <- svc.Ing.Watch(ctx, claude.WatchConfig{Roots: claudeRoots, Report: report}) }()
		}
		if len(codexRoots) > 0 {
			n++
			go func() { errs <- svc.Codex.Watch(ctx, codex.WatchConfig{Roots: codexRoots, Report: report}) }()
		}
		var first error
		for range n {
			if err := <-errs; err != nil && first == nil {
				first = err
				cancel() // one watcher could not start: stop the other
			}
		}
		return first
	}, nil
}

// reconciler returns serve's reconciler, nil when it is off (in-process
// callers that set no flags, or --reconcile-every 0).
func (f liveFlags) reconciler(svc *api.Service, stderr io.Writer) *reconciler {
	if f.reconcileEvery <= 0 {
		return nil
	}
	host, _ := os.Hostname()
	return &reconciler{svc: svc, abandonAfter: max(f.abandonAfter, 0), interval: f.reconcileEvery, host: host, boot: claude.BootID(), stderr: stderr}
}
