package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/usage"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func sessionsCmd(g *globals) *cobra.Command {
	var f sessionsFlags
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, the most recently active first",
		Long: `sessions lists sessions, the most recently active first: the last time
anything was observed of the agent or recorded for the session. Ended
sessions whose last activity is over a day old are left out (--all shows
them, and so does --phase ended). On a terminal times read "3m ago"; piped,
and in --json, they are RFC 3339. The id column shows the shortest prefix
of 8 or more characters that tells the listed sessions apart: any unique
prefix of an id names the session in every command that takes one.

--stale lists only sessions working or waiting with nothing observed of the
agent for --older, measured on this host's clock (what arrived live counts
at its receipt, whatever the agent's clock said). A session waiting for a
person (a question, a permission prompt, a plan to approve) is listed with
a line saying since when it waits: that is a fact, not a stale mark; so is
a session held at a transcript line that cannot be imported, with the line. --watch redraws the list whenever an event of a session
is appended (through the running server).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if f.watch && g.socketPath() != "" {
				return usageErrorf("--watch follows the log over NATS, which the system socket does not give: leave out --watch, or run it as serve's user with --data")
			}
			if f.watch {
				return watchSessions(cmd.Context(), g, &f)
			}
			return withAPI(cmd.Context(), g, func(_ *backend, call api.Caller) error {
				return listSessionsOnce(cmd.Context(), g, call, &f, time.Now())
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Phase, "phase", "", "only sessions in this phase: ready, working, waiting or ended")
	fl.BoolVar(&f.stale, "stale", false, "only sessions working or waiting with nothing observed for --older")
	fl.DurationVar(&f.older, "older", 30*time.Minute, "with --stale: how long nothing has been observed")
	fl.IntVar(&f.Limit, "limit", 0, "list at most this many sessions, the most recently active (0: all)")
	bound(fl, "limit", 0, maxListed)
	fl.StringVar(&f.Since, "since", "", "only sessions active within this long (7d, 2h, 30m), since this day (2026-05-23, UTC) or since this time (RFC 3339: 2026-12-01T08:00:00Z)")
	fl.StringVar(&f.Cwd, "cwd", "", "only sessions whose working directory is DIR or under it")
	fl.BoolVar(&f.All, "all", false, "also list ended sessions last active over a day ago")
	fl.BoolVar(&f.Tree, "tree", false, "list subagents under their parent session, with a SUBAGENTS column: the parent's running/total, each subagent's card")
	fl.BoolVar(&f.wide, "wide", false, "every column, whole ids and paths")
	fl.BoolVar(&f.watch, "watch", false, "redraw the list whenever a session changes, until interrupted (needs a running server; one that stops is waited for)")
	return cmd
}

// sessionsFlags are the flags of `logbook sessions`: the list asked for
// (its Stale set from --stale and --older by check), and how it is shown.
type sessionsFlags struct {
	api.SessionList
	stale       bool
	older       time.Duration
	wide, watch bool
}

func (f *sessionsFlags) check(cmd *cobra.Command) error {
	switch f.Phase {
	case "", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded:
	default:
		return usageErrorf("--phase %q: want ready, working, waiting or ended", f.Phase)
	}
	if f.Limit < 0 {
		return usageErrorf("--limit %d: want 0 or more", f.Limit)
	}
	if f.Since != "" {
		if _, err := usage.ParseSince(f.Since, time.Now(), time.UTC); err != nil {
			return usageErrorf("--since %v", err)
		}
	}
	if cmd.Flags().Changed("older") && !f.stale {
		return usageErrorf("--older goes with --stale")
	}
	if f.stale && f.older <= 0 {
		return usageErrorf("--older %s: want a positive duration such as 30m", f.older)
	}
	if f.stale {
		f.Stale = f.older
	}
	if f.Cwd != "" {
		abs, err := filepath.Abs(f.Cwd)
		if err != nil {
			return usageErrorf("--cwd %s: %v", f.Cwd, err)
		}
		f.Cwd = abs
	}
	return nil
}

// listSessionsOnce prints the session list f asks for, as of now.
func listSessionsOnce(ctx context.Context, g *globals, call api.Caller, f *sessionsFlags, now time.Time) error {
	if g.json {
		// The rows as stored: the JSON of session.State, its times in
		// RFC 3339.
		out, err := f.RawRows(ctx, call, now)
		if err != nil {
			return err
		}
		return writeJSON(g.stdout, out)
	}
	sel, hidden, err := f.Rows(ctx, call, now)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	v := term.SessionsView{Now: now, Relative: term.IsTerminal(g.stdout), Wide: f.wide, Home: home, Tree: f.Tree}
	if err := term.Print(g.stdout, func(w io.Writer) error { return v.Sessions(w, sel) }); err != nil {
		return err
	}
	if f.stale {
		// A session waiting on a person is listed, but its silence is the
		// person's: it is never marked stale, and says so.
		for _, r := range sel {
			if r.Phase == events.PhaseWaiting {
				fmt.Fprintf(g.stdout, "%s is waiting for a person (%s) since %s: not stale, it waits until they answer\n", term.Cell(r.ID), term.Cell(term.Dash(r.Activity)), v.Time(r.Since))
			}
		}
		// A held session's silence is Logbook's: the agent wrote on past
		// a line that cannot be imported. Never marked stale either.
		for _, r := range sel {
			if r.HeldPath != "" {
				fmt.Fprintf(g.stdout, "%s is held at %s:%d, a line that cannot be imported (it does not parse, or reuses an earlier line's uuid with other content): not stale, the lines after it are not imported until it is skipped (import --skip-invalid)\n", term.Cell(r.ID), term.Cell(r.HeldPath), r.HeldLine)
			}
		}
	}
	if hidden > 0 {
		fmt.Fprintf(g.stderr, "%s last active over a day ago not shown (--all shows them)\n", term.Plural(hidden, "ended session"))
	}
	return nil
}

func sessionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Inspect one session, end it, or abandon one of its entries"}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's state, open entries with their age, and subagents",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd.Context(), g, args[0], func(b *backend, call api.Caller, id string) error {
				var out api.SessionReply
				if err := call(cmd.Context(), api.VerbSession, api.SessionRequest{ID: id}, &out); err != nil {
					return err
				}
				measureCards(cmd.Context(), g, call, out.Cards)
				// A bad prices.json costs the cost line only: the
				// session shows, and stderr says why its cost does not.
				// (--json says it by a null cost, as the API does.)
				prices, err := usage.LoadTable(b.dd.path("prices.json"))
				if err != nil && !g.json {
					fmt.Fprintf(g.stderr, "logbook session show: costs not shown: %s\n", term.Safe(err.Error()))
				}
				usage.PriceCards(out.Cards, out.Children, prices)
				if g.json {
					return writeJSON(g.stdout, out)
				}
				return term.Print(g.stdout, func(w io.Writer) error { return term.Session(w, out, time.Now(), prices) })
			})
		},
	}
	cmd.AddCommand(show, sessionEndCmd(g), sessionAbandonCmd(g), sessionModeCmd(g))
	return cmd
}

// measureCards sets the diff of each card of a subagent working in a
// workspace (wsadapter.MeasureCards), reading the workspaces through
// call. What cannot be measured is said on stderr; the cards show
// without it.
func measureCards(ctx context.Context, g *globals, call api.Caller, cards []session.Card) {
	if !slices.ContainsFunc(cards, func(c session.Card) bool { return c.Workspace != "" }) {
		return
	}
	var v api.WorkspacesReply
	if err := call(ctx, api.VerbWorkspaces, struct{}{}, &v); err != nil {
		fmt.Fprintf(g.stderr, "logbook session show: subagents' diffs not shown: %s\n", term.Safe(err.Error()))
		return
	}
	for _, err := range wsadapter.MeasureCards(ctx, cards, v.Workspaces, v.Projects) {
		fmt.Fprintf(g.stderr, "logbook session show: %s\n", term.Safe(err.Error()))
	}
}

// watchSessions draws the session list, then draws it again each time
// events of sessions are appended (read from the running server's log as
// they come, redrawing at most every watchSettle) and every minute for
// the relative times, until ctx ends. On a terminal each drawing replaces
// the last; piped, drawings follow one another, each after a line
// "-- HH:MM:SS". A server that stops is waited for, said on stderr (the
// last drawing stays), and followed again once one answers for the data
// dir, from a new drawing: a restart of serve does not end the watch.
func watchSessions(ctx context.Context, g *globals, f *sessionsFlags) error {
	g.requireServer = true
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	for {
		err := watchStretch(ctx, g, f, b)
		if ctx.Err() != nil {
			return stopErr(ctx)
		}
		if !errors.Is(err, errReopen) {
			return err
		}
		fmt.Fprintf(g.stderr, "%s: the server stopped: waiting for one to answer for the data dir\n", g.cmdName)
		if b, err = awaitServer(ctx, g); err != nil {
			if ctx.Err() != nil {
				return stopErr(ctx)
			}
			return err
		}
		how := "the server"
		if dd, err := resolveDataDir(g.data); err == nil {
			if si, ok := dd.readServeInfo(); ok {
				how = fmt.Sprintf("logbook serve pid %d", si.PID)
			}
		}
		fmt.Fprintf(g.stderr, "%s: following through %s\n", g.cmdName, how)
	}
}

// watchStretch is one stretch of watchSessions on b, which it closes: it
// ends with errReopen when the connection to the server was lost or
// taken again on the way (the server stopped, or was restarted), with
// nil when ctx ends, and with any other error as it comes.
func watchStretch(ctx context.Context, g *globals, f *sessionsFlags, b *backend) error {
	defer b.Close()
	if b.down != nil {
		return fmt.Errorf("--watch follows the log, which does not answer: %s (without --watch the list comes from the projection)", host.UnavailableText(*b.down.LogUnavailableSince, b.down.LogError))
	}
	last, err := b.log.LastSeq(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed, feed := b.log.Changes(ctx, events.SubjectEvents+"."+events.KindSession+".>", last+1)
	tty := term.IsTerminal(g.stdout)
	draw := func() error {
		now := time.Now()
		switch {
		case g.json:
			// One JSON array a drawing, one after the other: a stream
			// of JSON values, as jq reads one, with nothing between.
		case tty:
			fmt.Fprint(g.stdout, "\x1b[H\x1b[2J")
		default:
			fmt.Fprintf(g.stdout, "-- %s\n", now.Format("15:04:05"))
		}
		return listSessionsOnce(ctx, g, b.call, f, now)
	}
	// A burst of events settles into one drawing.
	err = term.Redraw(ctx, "session", changed, feed, time.Minute, watchSettle, draw)
	if err != nil && b.remote && (!b.nc.IsConnected() || b.nc.Stats().Reconnects > 0) {
		return errReopen
	}
	return err
}

// awaitServer opens a backend through the server that answers for the
// data dir, polling every watchRetry while none does, until ctx ends
// (then it returns ctx's error). Errors other than there being no
// server are returned at once.
func awaitServer(ctx context.Context, g *globals) (*backend, error) {
	for {
		b, err := openBackend(ctx, g)
		if err == nil || !errors.Is(err, host.ErrNoServer) {
			return b, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(watchRetry):
		}
	}
}

// watchRetry is how often a watch whose server stopped looks for one.
const watchRetry = 500 * time.Millisecond

// watchSettle is how long --watch waits after an event for the ones
// that follow it, before it draws.
const watchSettle = 200 * time.Millisecond
