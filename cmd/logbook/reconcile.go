package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/reconcile"
	"github.com/logbook-dev/logbook/adapters/servelog"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/sandbox"
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
	return sessionReasonCmd(g, "end ID", "End a session on a person's word: its open entries are abandoned, then it ends",
		api.VerbSessionEnd, func(args []string) api.SessionEndRequest { return api.SessionEndRequest{ID: args[0]} })
}

func sessionAbandonCmd(g *globals) *cobra.Command {
	return sessionReasonCmd(g, "abandon ID ENTRY", "Mark an open entry of a session as never to close, on a person's word",
		api.VerbSessionAbandon, func(args []string) api.SessionEndRequest { return api.SessionEndRequest{ID: args[0], Entry: args[1]} })
}

// sessionReasonCmd returns a session command use that asks the server's
// verb, on a person's word and with a --reason, for the request req makes
// of its arguments (as many as use names).
func sessionReasonCmd(g *globals, use, short, verb string, req func(args []string) api.SessionEndRequest) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(len(strings.Fields(use)) - 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := req(args)
			r.Reason = reason
			return sessionRequestCmd(cmd.Context(), g, verb, r)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, in a few words (required)")
	cmd.MarkFlagRequired("reason")
	return cmd
}

// maxSessionReason is the most bytes of a session end's or an
// abandonment's reason the server takes.
const maxSessionReason = 200

// withSession runs fn through the API (withAPI) with the id of the
// session ref names (an id or a unique prefix), resolved first.
func withSession(ctx context.Context, g *globals, ref string, fn func(b *backend, call api.Caller, id string) error) error {
	return withAPI(ctx, g, func(b *backend, call api.Caller) error {
		id, err := resolveID(ctx, b, events.KindSession, ref)
		if err != nil {
			return err
		}
		return fn(b, call, id)
	})
}

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
	return withSession(ctx, g, req.ID, func(_ *backend, call api.Caller, id string) error {
		req.ID = id
		var out api.SessionEndReply
		if err := call(ctx, verb, req, &out); err != nil {
			return err
		}
		s := out.Session
		return answer(g, out, "session %s: %s, %d open entries, %d abandoned (seq %d)\n", s.ID, s.Phase, len(s.Entries), s.Abandoned, out.Seq)
	})
}

// liveFlags are serve's settings for following sessions live: the
// reconciler's abandon-after time and interval, and the transcript
// directories to watch.
type liveFlags struct {
	abandonAfter   time.Duration
	reconcileEvery time.Duration
	checkGrace     time.Duration
	watch          []string
	noWatch        bool
}

func (f *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.abandonAfter, "abandon-after", 30*time.Minute, "mark the open entries of a session with no known agent process stale after this long with nothing observed (0: never)")
	cmd.Flags().DurationVar(&f.reconcileEvery, "reconcile-every", 5*time.Second, "how often the reconciler checks agent processes and idle sessions")
	boundDuration(cmd.Flags(), "reconcile-every", reconcile.MinInterval, reconcile.MaxInterval, true)
	cmd.Flags().DurationVar(&f.checkGrace, "check-grace", wsadapter.DefaultCheckGrace, "end a running check run as error (runner vanished) this long after its start plus its timeout, when its runner is gone")
	boundDuration(cmd.Flags(), "check-grace", 0, 24*time.Hour, false)
	cmd.Flags().StringArrayVar(&f.watch, "watch", nil, "follow the transcripts under this directory as they are written: Claude Code's, such as ~/.claude/projects, or Codex CLI's rollouts, such as ~/.codex/sessions (repeatable; replaces the default folders)")
	cmd.Flags().BoolVar(&f.noWatch, "no-watch", false, "follow no transcripts (by default serve follows each agent's own folder: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects, and $CODEX_HOME/sessions or ~/.codex/sessions, from when it exists)")
}

// check reports a flag serve would refuse later: a --watch that is not
// an existing directory, a negative duration. serve calls it before it
// starts anything.
func (f liveFlags) check() error {
	if f.abandonAfter < 0 {
		return usageErrorf("--abandon-after %v: want 0 or more", f.abandonAfter)
	}
	if f.reconcileEvery != 0 && (f.reconcileEvery < reconcile.MinInterval || f.reconcileEvery > reconcile.MaxInterval) {
		return usageErrorf("--reconcile-every %v: want %s", f.reconcileEvery, durRangeText(reconcile.MinInterval, reconcile.MaxInterval, true))
	}
	if f.noWatch && len(f.watch) > 0 {
		return usageErrorf("--no-watch and --watch: give one")
	}
	for _, d := range f.watch {
		st, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return usageErrorf("--watch %s: no such directory", d)
		case err != nil:
			return fmt.Errorf("--watch: %w", err)
		case !st.IsDir():
			return usageErrorf("--watch %s: not a directory", d)
		}
	}
	return nil
}

// watcher returns the loop that follows the --watch directories or, with
// neither --watch nor --no-watch, each agent's default folders
// (ingest.Agent.DefaultRoots: followed from when they exist), and the
// folders as serve's first lines name them; nil when there are none. It
// checks --watch first, so serve refuses a missing one at start.
func (f liveFlags) watcher(svc *api.Service, stderr io.Writer) (func(context.Context) error, []string, error) {
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	var roots []api.WatchRoot
	var named []string
	switch {
	case f.noWatch:
		return nil, nil, nil
	case len(f.watch) > 0:
		for _, d := range f.watch {
			roots = append(roots, api.WatchRoot{Dir: d})
		}
		named = f.watch
	default:
		home, _ := os.UserHomeDir()
		for _, a := range agents() {
			for _, d := range a.DefaultRoots(os.Getenv, home) {
				roots = append(roots, api.WatchRoot{Dir: d, Agent: a.Name, Await: true})
				if st, err := os.Stat(d); err == nil && st.IsDir() {
					named = append(named, d)
				} else {
					named = append(named, d+" (from when it exists)")
				}
			}
		}
		if len(roots) == 0 {
			return nil, nil, nil
		}
	}
	report := func(msg string) {
		if m, ok := strings.CutPrefix(msg, "INFO: "); ok { // news, not a fault
			servelog.Say(stderr, "logbook serve: INFO: watch: "+m)
			return
		}
		servelog.Say(stderr, "logbook serve: watch: "+msg)
	}
	return func(ctx context.Context) error { return svc.WatchRoots(ctx, roots, report) }, named, nil
}

// reconciler returns serve's reconciler, nil when it is off (in-process
// callers that set no flags, or --reconcile-every 0).
func (f liveFlags) reconciler(b *backend, svc *api.Service, stderr io.Writer) *reconcile.Reconciler {
	if f.reconcileEvery <= 0 {
		return nil
	}
	host, _ := os.Hostname()
	var (
		m      *wsadapter.Manager
		mFault string // the last fault building m, said once
	)
	checks := func(ctx context.Context) (int, error) {
		if err := svc.CaughtUp(ctx); err != nil {
			return 0, err
		}
		// A runner killed mid-check left its sandbox's placeholders in the
		// worktree, and may have left bubblewrap's first child running;
		// the sweep kills the one (by the marker it carries, see
		// sandbox.SweepBoundaries) and removes the others, which its
		// ledger names, before its run is ended. The records of live processes are kept for a later pass,
		// and so the sweep runs on every pass, not only while a run is
		// open: the process a record names may die after its run ended.
		if _, _, err := sandbox.SweepPlaceholders(b.dd.path(placeholderLedger)); err != nil {
			return 0, fmt.Errorf("sweep the placeholders dead check runners left: %w", err)
		}
		runs, err := runningChecks(svc.Store)
		if err != nil || len(runs) == 0 {
			return 0, err
		}
		// The manager is built only when a run may need ending: a serve
		// with no workspace root never needs it, and a fault building it
		// is said once, not on every pass.
		if m == nil {
			mm, err := newWorkspaceManager(b, api.Local(svc.Handlers()), claude.ActorReconciler)
			if err != nil {
				if err.Error() == mFault {
					return 0, nil
				}
				mFault = err.Error()
				return 0, fmt.Errorf("cannot end vanished check runs: %w", err)
			}
			m, mFault = mm, ""
		}
		return m.EndVanishedChecks(ctx, runs, f.checkGrace)
	}
	return reconcile.New(reconcile.Config{
		Service: svc, AbandonAfter: f.abandonAfter, Interval: f.reconcileEvery,
		Host: host, Boot: claude.BootID(), Checks: checks,
		Report: func(msg string) { servelog.SayPart(stderr, "reconciler", msg) },
		Marked: func(n int) { fmt.Fprintf(stderr, "logbook serve: reconciler marked %s\n", plural(n, "session")) },
		Ended: func(n int) {
			fmt.Fprintf(stderr, "logbook serve: reconciler ended %s whose runner vanished\n", plural(n, "check run"))
		},
	})
}

// runningChecks returns every running check run the projection holds.
func runningChecks(store *projections.Store) ([]check.State, error) {
	list, err := store.Workspaces()
	if err != nil {
		return nil, err
	}
	var runs []check.State
	for _, w := range list {
		rs, err := store.Checks(w.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Status == events.CheckRunning {
				runs = append(runs, r)
			}
		}
	}
	return runs, nil
}
