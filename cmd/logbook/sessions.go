package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/usage"
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
a line saying since when it waits: that is a fact, not a stale mark. --watch redraws the list whenever an event of a session
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
	fl.StringVar(&f.phase, "phase", "", "only sessions in this phase: ready, working, waiting or ended")
	fl.BoolVar(&f.stale, "stale", false, "only sessions working or waiting with nothing observed for --older")
	fl.DurationVar(&f.older, "older", 30*time.Minute, "with --stale: how long nothing has been observed")
	fl.IntVar(&f.limit, "limit", 0, "list at most this many sessions, the most recently active (0: all)")
	bound(fl, "limit", 0, maxListed)
	fl.StringVar(&f.since, "since", "", "only sessions active within this long (7d, 2h, 30m), since this day (2026-05-23, UTC) or since this time (RFC 3339: 2026-12-01T08:00:00Z)")
	fl.StringVar(&f.cwd, "cwd", "", "only sessions whose working directory is DIR or under it")
	fl.BoolVar(&f.all, "all", false, "also list ended sessions last active over a day ago")
	fl.BoolVar(&f.tree, "tree", false, "list subagents under their parent session")
	fl.BoolVar(&f.wide, "wide", false, "every column, whole ids and paths")
	fl.BoolVar(&f.watch, "watch", false, "redraw the list whenever a session changes, until interrupted (needs a running server)")
	return cmd
}

// sessionsFlags are the flags of `logbook sessions`.
type sessionsFlags struct {
	phase                  string
	stale                  bool
	older                  time.Duration
	since                  string // as usage.ParseSince reads it; "": no limit
	limit                  int
	cwd                    string
	all, tree, wide, watch bool
}

// endedHiddenAfter is how long after its last activity an ended session
// leaves the default list.
const endedHiddenAfter = 24 * time.Hour

func (f *sessionsFlags) check(cmd *cobra.Command) error {
	switch f.phase {
	case "", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded:
	default:
		return usageErrorf("--phase %q: want ready, working, waiting or ended", f.phase)
	}
	if f.limit < 0 {
		return usageErrorf("--limit %d: want 0 or more", f.limit)
	}
	if f.since != "" {
		if _, err := usage.ParseSince(f.since, time.Now(), time.UTC); err != nil {
			return usageErrorf("--since %v", err)
		}
	}
	if cmd.Flags().Changed("older") && !f.stale {
		return usageErrorf("--older goes with --stale")
	}
	if f.stale && f.older <= 0 {
		return usageErrorf("--older %s: want a positive duration such as 30m", f.older)
	}
	if f.cwd != "" {
		abs, err := filepath.Abs(f.cwd)
		if err != nil {
			return usageErrorf("--cwd %s: %v", f.cwd, err)
		}
		f.cwd = abs
	}
	return nil
}

// from is the time --since reaches back to from now (a relative since
// moves with now, as a --watch redraws); zero when --since is not given.
// check has refused a since that does not parse.
func (f *sessionsFlags) from(now time.Time) time.Time {
	if f.since == "" {
		return time.Time{}
	}
	t, err := usage.ParseSince(f.since, now, time.UTC)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (f *sessionsFlags) request() api.SessionsRequest {
	req := api.SessionsRequest{Phase: f.phase}
	if f.stale {
		req.StaleMS = max(f.older.Milliseconds(), 1)
	}
	return req
}

// lastActivity is session.Summary.LastActivity of r: when its agent was
// last heard from, what the list is sorted by.
func (r sessionRow) lastActivity() time.Time { return r.Summary.LastActivity() }

// selectSessions keeps the rows of rs f asks for, the most recently
// active first (ties: by id), at most f.limit of them; hidden counts the
// ended sessions left out for their age.
func (f *sessionsFlags) selectSessions(rs []sessionRow, now time.Time) (out []sessionRow, hidden int) {
	for _, r := range rs {
		last := r.lastActivity()
		if from := f.from(now); !from.IsZero() && last.Before(from) {
			continue
		}
		if f.cwd != "" && r.Cwd != f.cwd && !strings.HasPrefix(r.Cwd, strings.TrimSuffix(f.cwd, "/")+"/") {
			continue
		}
		if !f.all && f.phase != events.PhaseEnded && r.Phase == events.PhaseEnded && now.Sub(last) > endedHiddenAfter {
			hidden++
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b sessionRow) int {
		if c := b.lastActivity().Compare(a.lastActivity()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.tree {
		out = treeOrder(out)
	}
	if f.limit > 0 && len(out) > f.limit {
		out = out[:f.limit]
	}
	return out, hidden
}

// mostRecent is selectSessions for a list with a --limit: it reads the
// sessions the most recently active first, page after page, and stops as
// soon as it has f.limit of them (or, with --since, reaches one active
// before it), so the answer costs the same at any number of sessions.
func (f *sessionsFlags) mostRecent(ctx context.Context, call api.Caller, now time.Time) (out []sessionRow, hidden int, err error) {
	req := f.request()
	req.Summaries, req.Order = true, api.OrderActivity
	for len(out) < f.limit {
		req.Limit = max(2*(f.limit-len(out)), 100)
		var p struct {
			Next string `json:"next"`
			api.Stale
			Sessions []sessionRow `json:"sessions"`
		}
		if err := call(ctx, api.VerbSessions, req, &p); err != nil {
			return nil, 0, err
		}
		sel, h := f.selectSessions(p.Sessions, now)
		out, hidden = append(out, sel...), hidden+h
		if p.Next == "" || len(p.Sessions) == 0 {
			break
		}
		if from := f.from(now); !from.IsZero() && p.Sessions[len(p.Sessions)-1].lastActivity().Before(from) {
			break // every later page is older still
		}
		req.After = p.Next
	}
	if len(out) > f.limit {
		out = out[:f.limit]
	}
	return out, hidden, nil
}

// treeOrder puts each session's subagents right after it (and theirs
// after them), keeping the order of rs otherwise; a subagent whose parent
// is not in rs stays where it is. Depth is set on each row.
func treeOrder(rs []sessionRow) []sessionRow {
	in := make(map[string]bool, len(rs))
	for _, r := range rs {
		in[r.ID] = true
	}
	kids := map[string][]sessionRow{}
	var roots []sessionRow
	for _, r := range rs {
		if r.Parent != "" && in[r.Parent] && r.Parent != r.ID {
			kids[r.Parent] = append(kids[r.Parent], r)
		} else {
			roots = append(roots, r)
		}
	}
	out := make([]sessionRow, 0, len(rs))
	seen := map[string]bool{}
	var add func(r sessionRow, depth int)
	add = func(r sessionRow, depth int) {
		if seen[r.ID] {
			return
		}
		seen[r.ID] = true
		r.depth = depth
		out = append(out, r)
		for _, k := range kids[r.ID] {
			add(k, depth+1)
		}
	}
	for _, r := range roots {
		add(r, 0)
	}
	return out
}

// listSessionsOnce prints the session list f asks for, as of now.
func listSessionsOnce(ctx context.Context, g *globals, call api.Caller, f *sessionsFlags, now time.Time) error {
	if g.json {
		// The rows as stored: the JSON of session.State, its times in
		// RFC 3339.
		raw, err := api.ListSessions[json.RawMessage](ctx, call, f.request(), 0)
		if err != nil {
			return err
		}
		rows := make([]sessionRow, len(raw))
		byID := make(map[string]json.RawMessage, len(raw))
		for i, r := range raw {
			if err := json.Unmarshal(r, &rows[i]); err != nil {
				return fmt.Errorf("session row: %w", err)
			}
			byID[rows[i].ID] = r
		}
		sel, _ := f.selectSessions(rows, now)
		out := make([]json.RawMessage, len(sel))
		for i, r := range sel {
			out[i] = byID[r.ID]
		}
		return writeJSON(g.stdout, out)
	}
	var (
		sel    []sessionRow
		hidden int
	)
	if f.limit > 0 && !f.tree && !f.stale {
		var err error
		if sel, hidden, err = f.mostRecent(ctx, call, now); err != nil {
			return err
		}
	} else {
		req := f.request()
		req.Summaries = true
		rows, err := api.ListSessions[sessionRow](ctx, call, req, 0)
		if err != nil {
			return err
		}
		sel, hidden = f.selectSessions(rows, now)
	}
	home, _ := os.UserHomeDir()
	v := sessionsView{now: now, relative: isTerminal(g.stdout), wide: f.wide, home: home}
	if err := termPrint(g.stdout, func(w io.Writer) error { return v.print(w, sel) }); err != nil {
		return err
	}
	if f.stale {
		// A session waiting on a person is listed, but its silence is the
		// person's: it is never marked stale, and says so.
		for _, r := range sel {
			if r.Phase == events.PhaseWaiting {
				fmt.Fprintf(g.stdout, "%s is waiting for a person (%s) since %s: not stale, it waits until they answer\n", cell(r.ID), cell(dash(r.Activity)), v.time(r.Since))
			}
		}
	}
	if hidden > 0 {
		fmt.Fprintf(g.stderr, "%s last active over a day ago not shown (--all shows them)\n", plural(hidden, "ended session"))
	}
	return nil
}

// sessionRow is a session of the table: its summary (the table of
// 10,000s of sessions reads summaries, not whole states) and, under
// --tree, how deep a subagent it is.
type sessionRow struct {
	session.Summary
	depth int
}

// sessionSummaries returns the summaries of ss, as the table shows them.
func sessionSummaries(ss []session.State) []session.Summary {
	out := make([]session.Summary, len(ss))
	for i, s := range ss {
		out[i] = session.Summarize(s)
	}
	return out
}

// sessionsView is how the session table is drawn: times relative to now
// (on a terminal) or RFC 3339, narrow or wide columns, the home directory
// written "~".
type sessionsView struct {
	now      time.Time
	relative bool
	wide     bool
	home     string
}

// cwdWidth is the most characters of a working directory the narrow
// table shows.
const cwdWidth = 40

func (v sessionsView) time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if v.relative {
		return ago(v.now, t)
	}
	return t.UTC().Format(time.RFC3339)
}

func (v sessionsView) print(w io.Writer, ss []sessionRow) error {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	short := shortIDs(ids, 8)
	tw := newTable(w)
	if v.wide {
		fmt.Fprintln(tw, "SESSION\tPHASE\tACTIVITY\tSINCE\tOPEN\tTURNS\tTOOLS\tMODEL\tSTARTED\tLAST ACTIVE\tPARENT\tCWD")
	} else {
		fmt.Fprintln(tw, "SESSION\tPHASE\tACTIVITY\tLAST ACTIVE\tCWD")
	}
	for i, s := range ss {
		id := short[i]
		if v.wide {
			id = s.ID
		}
		if s.depth > 0 {
			id = strings.Repeat("  ", s.depth-1) + "└ " + id
		}
		// Widths and the cwd's ellipsis are taken on the escaped text,
		// which is what is printed.
		id = cell(id)
		cwd := cell(dash(homeTilde(s.Cwd, v.home)))
		if v.wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", id, cell(s.Phase), cell(dash(s.Activity)), usage.Age(v.now, s.Since), s.Open, s.Turns, s.ToolCalls, cell(dash(s.Model)), v.time(s.StartedAt), v.time(s.lastActivity()), cell(dash(s.Parent)), cwd)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, cell(s.Phase), cell(dash(s.Activity)), v.time(s.lastActivity()), ellipsizeLeft(cwd, cwdWidth))
	}
	return tw.Flush()
}

// printSessions prints ss as the narrow table, times in RFC 3339.
func printSessions(w io.Writer, ss []session.Summary, now time.Time) error {
	rows := make([]sessionRow, len(ss))
	for i, s := range ss {
		rows[i] = sessionRow{Summary: s}
	}
	return sessionsView{now: now}.print(w, rows)
}

// shortIDs returns, for each of ids, its shortest prefix of at least
// least characters that no other of ids begins with; an id of up to
// 2*least characters is shown whole.
func shortIDs(ids []string, least int) []string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	common := func(a, b string) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	need := make(map[string]int, len(ids))
	for i, id := range sorted {
		n := least
		if i > 0 {
			n = max(n, common(id, sorted[i-1])+1)
		}
		if i+1 < len(sorted) {
			n = max(n, common(id, sorted[i+1])+1)
		}
		if len(id) <= 2*least {
			n = len(id) // short enough to show whole
		}
		need[id] = min(n, len(id))
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:need[id]]
	}
	return out
}

func sessionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Inspect one session, end it, or abandon one of its entries"}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's state, open entries with their age, and subagents",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd.Context(), g, func(b *backend, call api.Caller) error {
				id, err := resolveID(cmd.Context(), b, events.KindSession, args[0])
				if err != nil {
					return err
				}
				var out api.SessionReply
				if err := call(cmd.Context(), api.VerbSession, api.SessionRequest{ID: id}, &out); err != nil {
					return err
				}
				if g.json {
					return writeJSON(g.stdout, out)
				}
				// A bad prices.json costs the cost line only: the
				// session shows, and stderr says why its cost does not.
				prices, err := usage.LoadTable(b.dd.path("prices.json"))
				if err != nil {
					fmt.Fprintf(g.stderr, "logbook session show: costs not shown: %s\n", termSafe(err.Error()))
				}
				return termPrint(g.stdout, func(w io.Writer) error { return printSession(w, out, time.Now(), prices) })
			})
		},
	}
	cmd.AddCommand(show, sessionEndCmd(g), sessionAbandonCmd(g), sessionModeCmd(g))
	return cmd
}

func printSession(w io.Writer, r api.SessionReply, now time.Time, prices *usage.Table) error {
	s := r.Session
	tw := newTable(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, cell(v)) }
	row("session", s.ID)
	row("phase", s.Phase)
	row("activity", dash(s.Activity))
	row("agent", dash(s.Agent))
	if s.Version != "" {
		row("version", s.Version)
	}
	if s.Parent != "" {
		row("parent", s.Parent)
	}
	if s.AgentType != "" {
		row("agent type", s.AgentType)
	}
	row("model", dash(s.Model))
	row("cwd", dash(s.Cwd))
	if r.Workspace != "" {
		row("workspace", r.Workspace)
	}
	row("branch", dash(s.GitBranch))
	row("title", dash(s.Title))
	if s.Parent != "" && s.Mode == "" && s.AgentMode == "" {
		row("mode", "inherits parent")
	} else {
		row("mode", fmt.Sprintf("%s (agent: %s, revision %d)", dash(s.Mode), dash(s.AgentMode), s.ModeRevision))
	}
	row("turns", fmt.Sprint(s.Turns))
	row("tool calls", fmt.Sprint(s.ToolCalls))
	row("abandoned", fmt.Sprint(s.Abandoned))
	if own, subs := sessionSpend(r, prices); own != "" || subs != "" {
		row("tokens", dash(own))
		if subs != "" {
			row("subagents' tokens", subs)
		}
	}
	if s.LateResults > 0 {
		row("late results", fmt.Sprintf("%d (results of abandoned calls: they ran)", s.LateResults))
	}
	if s.Forks > 0 {
		row("forks", fmt.Sprintf("%d (a prompt came while another turn's calls were open: two writers on this session?)", s.Forks))
	}
	if s.ForkedFrom != "" {
		row("forked from", s.ForkedFrom)
	}
	if s.RewrittenFrom != "" {
		row("rewritten from", s.RewrittenFrom)
	}
	for _, src := range slices.Sorted(maps.Keys(s.Diverged)) {
		row("diverged", fmt.Sprintf("%s no longer holds what was imported; its rewritten form goes to %s (import claude --as-new)", src, s.Diverged[src]))
	}
	row("observations", fmt.Sprint(s.Observations))
	row("started", s.StartedAt.Format(time.RFC3339Nano))
	row("updated", s.UpdatedAt.Format(time.RFC3339Nano))
	row("since", fmt.Sprintf("%s (%s in %s %s)", s.Since.Format(time.RFC3339Nano), usage.Age(now, s.Since), s.Phase, dash(s.Activity)))
	row("last observed", fmt.Sprintf("%s (%s ago)", api.LastSeen(s).Format(time.RFC3339Nano), usage.Age(now, api.LastSeen(s))))
	if off := s.ClockOffset(); off != "" {
		// Shown, never acted on: staleness is judged on this host's clock.
		row("agent clock", fmt.Sprintf("%s (learned from a line received at %s; staleness is judged on the server's clock)", strings.TrimPrefix(off, "agent clock "), s.ClockOffsetAt.Format(time.RFC3339)))
	}
	if p := s.AgentProcess; p != nil {
		row("agent process", fmt.Sprintf("%s, started at tick %d, boot %s", p, p.Start, dash(p.Boot)))
	}
	if s.EndReason != "" {
		row("ended", s.EndReason)
	}
	if r.IsStale() {
		row("as of", fmt.Sprintf("projection at event %d of the log; %s", r.Checkpoint, r.Text(now)))
	} else {
		row("as of", fmt.Sprintf("projection at event %d of the log", r.Checkpoint))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nopen entries: %d\n", len(s.Entries))
	for _, e := range s.Entries {
		fmt.Fprintf(w, "  %-40s %-24s %-10s opened %s (%s ago)\n", cell(e.EntryID), cell(e.Activity), cell(e.Lane), e.OpenedAt.Format(time.RFC3339), now.Sub(e.OpenedAt).Round(time.Second))
	}
	if len(r.Commands) > 0 {
		active := 0
		for _, c := range r.Commands {
			if c.Active() {
				active++
			}
		}
		fmt.Fprintf(w, "\ncommands: %d (%d active)\n", len(r.Commands), active)
		var tab strings.Builder
		if err := printCommands(&tab, r.Commands, false); err != nil {
			return err
		}
		for line := range strings.Lines(tab.String()) {
			fmt.Fprint(w, "  "+line)
		}
	}
	if len(r.Children) > 0 {
		fmt.Fprintf(w, "\nsubagents: %d\n", len(r.Children))
		for _, c := range r.Children {
			fmt.Fprintf(w, "  %-40s %-8s %s\n", cell(c.ID), cell(c.Phase), cell(dash(c.AgentType)))
		}
	}
	return nil
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// watchSessions draws the session list, then draws it again each time
// events of sessions are appended (read from the running server's log as
// they come, redrawing at most every watchSettle) and every minute for
// the relative times, until ctx ends. On a terminal each drawing replaces
// the last; piped, drawings follow one another, each after a line
// "-- HH:MM:SS".
func watchSessions(ctx context.Context, g *globals, f *sessionsFlags) error {
	g.requireServer = true
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.down != nil {
		return fmt.Errorf("--watch follows the log, which does not answer: %s (without --watch the list comes from the projection)", unavailableText(*b.down.LogUnavailableSince, b.down.LogError))
	}
	call := func(ctx context.Context, verb string, req, resp any) error {
		return api.Call(ctx, b.nc, b.api, verb, req, resp)
	}
	last, err := b.log.LastSeq(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	feed := make(chan error, 1)
	go func() {
		for _, err := range b.log.FollowRaw(ctx, events.SubjectEvents+"."+events.KindSession+".>", last+1) {
			if err != nil {
				feed <- err
				return
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		feed <- nil
	}()
	tty := isTerminal(g.stdout)
	draw := func() error {
		now := time.Now()
		if tty {
			fmt.Fprint(g.stdout, "\x1b[H\x1b[2J")
		} else {
			fmt.Fprintf(g.stdout, "-- %s\n", now.Format("15:04:05"))
		}
		return listSessionsOnce(ctx, g, call, f, now)
	}
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		if err := draw(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-feed:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("session feed ended: %v", err)
		case <-tick.C:
		case <-changed:
			// Let a burst of events settle into one drawing.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(watchSettle):
			}
		}
	}
}

// watchSettle is how long --watch waits after an event for the ones
// that follow it, before it draws.
const watchSettle = 200 * time.Millisecond
