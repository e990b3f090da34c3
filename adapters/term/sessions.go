package term

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// SessionsView is how the session table is drawn: times relative to Now
// (on a terminal) or RFC 3339, narrow or wide columns, the home directory
// written "~" (Home "": never).
type SessionsView struct {
	Now      time.Time
	Relative bool
	Wide     bool
	Home     string
	// Tree adds a last column, SUBAGENTS: a parent's count of subagents
	// at work and in all, a subagent's card (api.SessionRow.Card).
	Tree bool
}

// CwdWidth is the most terminal columns of a working directory the
// narrow session table shows.
const CwdWidth = 40

// Time is t as v shows it: relative to v.Now (Ago) or RFC 3339 in UTC;
// "-" for the zero time.
func (v SessionsView) Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if v.Relative {
		return Ago(v.Now, t)
	}
	return t.UTC().Format(time.RFC3339)
}

// Sessions writes ss as the session table: a header, then a row a
// session, its id the shortest unique prefix of 8 or more (whole when
// wide), a subagent (Depth above 0) indented under its parent. Write it
// through Print. Errors are w's.
func (v SessionsView) Sessions(w io.Writer, ss []api.SessionRow) error {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	short := ShortIDs(ids, 8)
	tw := NewTable(w)
	tree := ""
	if v.Tree {
		tree = "\tSUBAGENTS"
	}
	if v.Wide {
		fmt.Fprintln(tw, "SESSION\tPHASE\tACTIVITY\tSINCE\tOPEN\tTURNS\tTOOLS\tMODEL\tSTARTED\tLAST ACTIVE\tPARENT\tCWD"+tree)
	} else {
		fmt.Fprintln(tw, "SESSION\tPHASE\tACTIVITY\tLAST ACTIVE\tCWD"+tree)
	}
	for i, s := range ss {
		id := short[i]
		if v.Wide {
			id = s.ID
		}
		if s.Depth > 0 {
			id = strings.Repeat("  ", s.Depth-1) + "└ " + id
		}
		// Widths and the cwd's ellipsis are taken on the escaped text,
		// which is what is printed.
		id = Cell(id)
		cwd := Cell(Dash(HomeTilde(s.Cwd, v.Home)))
		tree := ""
		if v.Tree {
			tree = "\t" + v.treeCell(s)
		}
		if v.Wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s%s\n", id, Cell(s.Phase), Cell(Dash(s.Activity)), usage.Age(v.Now, s.Since), s.Open, s.Turns, s.ToolCalls, Cell(Dash(s.Model)), v.Time(s.StartedAt), v.Time(s.LastActivity()), Cell(Dash(s.Parent)), cwd, tree)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", id, Cell(s.Phase), Cell(Dash(s.Activity)), v.Time(s.LastActivity()), EllipsizeLeft(cwd, CwdWidth), tree)
	}
	return tw.Flush()
}

// SaidWidth is the most terminal columns of the last thing a subagent
// said that the narrow tree's SUBAGENTS column shows.
const SaidWidth = 48

// treeCell is the SUBAGENTS cell of row s: "running/total" for a
// parent, the card's kind, background flag, status and numbers for a
// subagent (then "said: …", cut to SaidWidth unless wide), "-" else.
func (v SessionsView) treeCell(s api.SessionRow) string {
	var parts []string
	if c := s.Card; c != nil {
		fg := "fg"
		if c.Background {
			fg = "bg"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s %dt/%dc %dtok", c.Kind, fg, c.Status, c.Turns, c.ToolCalls, c.Tokens))
		if c.LastSaid != "" {
			said := Cell(c.LastSaid)
			if !v.Wide {
				said = EllipsizeRight(said, SaidWidth)
			}
			parts = append(parts, "said: "+said)
		}
	}
	if s.Subagents != nil {
		parts = append(parts, fmt.Sprintf("subagents %d/%d", s.Subagents.Running, s.Subagents.Total))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// States writes ss as the narrow session table (their summaries,
// session.Summarize), times in RFC 3339.
func States(w io.Writer, ss []session.State, now time.Time) error {
	rows := make([]api.SessionRow, len(ss))
	for i, s := range ss {
		rows[i] = api.SessionRow{Summary: session.Summarize(s)}
	}
	return SessionsView{Now: now}.Sessions(w, rows)
}

// Session writes `session show`: one session's fields, its open entries
// with their age, its commands and subagents, and, with prices (nil: none
// shown), its own and its subagents' tokens and cost. Write it through
// Print. Errors are w's.
func Session(w io.Writer, r api.SessionReply, now time.Time, prices *usage.Table) error {
	s := r.Session
	tw := NewTable(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, Cell(v)) }
	row("session", s.ID)
	row("phase", s.Phase)
	row("activity", Dash(s.Activity))
	row("agent", Dash(s.Agent))
	if s.Version != "" {
		row("version", s.Version)
	}
	if s.Parent != "" {
		row("parent", s.Parent)
	}
	if s.AgentType != "" {
		row("agent type", s.AgentType)
	}
	row("model", Dash(s.Model))
	row("cwd", Dash(s.Cwd))
	if r.Workspace != "" {
		row("workspace", r.Workspace)
	}
	row("branch", Dash(s.GitBranch))
	row("title", Dash(s.Title))
	if s.Parent != "" && s.Mode == "" && s.AgentMode == "" {
		row("mode", "inherits parent")
	} else {
		row("mode", fmt.Sprintf("%s (agent: %s, revision %d)", Dash(s.Mode), Dash(s.AgentMode), s.ModeRevision))
	}
	row("turns", fmt.Sprint(s.Turns))
	row("tool calls", fmt.Sprint(s.ToolCalls))
	row("abandoned", fmt.Sprint(s.Abandoned))
	if r.Subagents != nil {
		row("subagents", fmt.Sprintf("%d/%d (running/total)", r.Subagents.Running, r.Subagents.Total))
	}
	if s.Parent != "" {
		row("depth", fmt.Sprint(s.Depth))
	}
	if s.LastSaid != "" {
		row("last said", s.LastSaid)
	}
	if own, subs := usage.SpendOf([]session.State{r.Session}, prices).Text, usage.SpendOf(r.Children, prices).Text; own != "" || subs != "" {
		row("tokens", Dash(own))
		if subs != "" {
			row("subagents' tokens", subs)
		}
	}
	for _, c := range s.Copied {
		row("copied tokens", fmt.Sprintf("%d (%s, %s) from session %s, a fork's copy of its history: counted there, not here", c.Tokens(), Dash(c.Model), Plural(int(c.Calls), "call"), c.From))
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
	row("since", fmt.Sprintf("%s (%s in %s %s)", s.Since.Format(time.RFC3339Nano), usage.Age(now, s.Since), s.Phase, Dash(s.Activity)))
	row("last observed", fmt.Sprintf("%s (%s ago)", api.LastSeen(s).Format(time.RFC3339Nano), usage.Age(now, api.LastSeen(s))))
	if off := s.ClockOffset(); off != "" {
		// Shown, never acted on: staleness is judged on this host's clock.
		row("agent clock", fmt.Sprintf("%s (learned from a line received at %s; staleness is judged on the server's clock)", strings.TrimPrefix(off, "agent clock "), s.ClockOffsetAt.Format(time.RFC3339)))
	}
	if s.HeldPath != "" {
		// Nothing past the line is known: the silence is Logbook's.
		row("held", fmt.Sprintf("%s:%d cannot be imported (it does not parse, or reuses an earlier line's uuid with other content: import says which): the lines after it are not imported, and the session is not marked stale, until it is skipped (import --skip-invalid)", s.HeldPath, s.HeldLine))
	}
	if p := s.AgentProcess; p != nil {
		a := fmt.Sprintf("%s, started at tick %d, boot %s", p, p.Start, Dash(p.Boot))
		if p.PidNS != "" {
			a += ", PID namespace " + p.PidNS
		}
		row("agent process", a)
	}
	switch {
	case s.EndReason != "" && s.Phase == events.PhaseEnded:
		row("ended", s.EndReason)
	case s.EndReason != "":
		// Ended once, and taken up again since (a hook of the session
		// came after its end): the end is history, not its phase.
		row("last ended", s.EndReason+" (resumed since)")
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
		fmt.Fprintf(w, "  %-40s %-24s %-10s opened %s (%s ago)\n", Cell(e.EntryID), Cell(e.Activity), Cell(e.Lane), e.OpenedAt.Format(time.RFC3339), now.Sub(e.OpenedAt).Round(time.Second))
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
		if err := Commands(&tab, r.Commands, false); err != nil {
			return err
		}
		for line := range strings.Lines(tab.String()) {
			fmt.Fprint(w, "  "+line)
		}
	}
	if r.Subagents != nil {
		fmt.Fprintf(w, "\nsubagents: %d/%d (running/total)\n", r.Subagents.Running, r.Subagents.Total)
		for i, c := range r.Cards {
			var own *session.State
			if i < len(r.Children) && r.Children[i].ID == c.Session {
				own = &r.Children[i]
			}
			for _, l := range CardLines(c, own, prices) {
				fmt.Fprintln(w, "  "+l)
			}
		}
	}
	return nil
}

// CardLines returns the lines `session show` prints for subagent card c:
// its id, kind, type, depth, foreground or background, status and own
// numbers; its spend priced with prices when own (its session's row) is
// given and prices is not nil, else its tokens; then the last thing it
// said and, when measured, its workspace's diff. Text from the log is
// escaped (Cell).
func CardLines(c session.Card, own *session.State, prices *usage.Table) []string {
	id := c.Session
	if c.Task != "" {
		id = "task " + c.Task
		if c.Session != "" {
			id += " (session " + c.Session + ")"
		}
	}
	fg := "foreground"
	if c.Background {
		fg = "background"
	}
	spend := fmt.Sprintf("%d tokens", c.Tokens)
	if own != nil && prices != nil {
		if sp := usage.SpendOf([]session.State{*own}, prices); sp.Cost != nil {
			spend += fmt.Sprintf(", $%.4f", *sp.Cost)
		}
	}
	status := c.Status
	if c.EndReason != "" {
		status += " (" + c.EndReason + ")"
	}
	out := []string{fmt.Sprintf("%s  %s %s, depth %d, %s, %s: %s, %s, %s", Cell(id), Cell(c.Kind), Cell(Dash(c.Type)), c.Depth, fg, Cell(status),
		Plural(c.Turns, "turn"), Plural(c.ToolCalls, "tool call"), spend)}
	if c.LastSaid != "" {
		out = append(out, "    said: "+Cell(c.LastSaid))
	}
	switch {
	case c.Diff != nil:
		out = append(out, fmt.Sprintf("    workspace %s: %s, +%d -%d against its base", Cell(c.Workspace), Plural(c.Diff.Files, "file"), c.Diff.Insertions, c.Diff.Deletions))
	case c.Workspace != "":
		out = append(out, "    workspace "+Cell(c.Workspace))
	}
	return out
}

// Commands writes cs as the command table, a row a command (its argv
// as bash would read it back, Argv, cut to 60 runes, the last "…");
// withSession adds each command's
// session. Write it through Print. Errors are w's.
func Commands(w io.Writer, cs []command.State, withSession bool) error {
	tw := NewTable(w)
	head := "COMMAND\tSTATUS\tCODE\tMODE\tREQUESTED\tDURATION\tOUTPUT\tARGV"
	if withSession {
		head = "COMMAND\tSESSION\tSTATUS\tCODE\tMODE\tREQUESTED\tDURATION\tOUTPUT\tARGV"
	}
	fmt.Fprintln(tw, head)
	for _, c := range cs {
		code := "-"
		if c.ExitCode != nil {
			code = fmt.Sprint(*c.ExitCode)
			if c.Signal != "" {
				code = c.Signal
			}
			if c.NotRun != "" {
				code = "not run"
			}
		}
		status := c.Status
		if c.Background && !c.Ended() {
			status += " (bg)"
		}
		if c.Evicted && c.Status != command.StatusEvicted {
			status += " (evicted)"
		}
		// Duration and output size are recorded when the process exits:
		// before that they are not known, not zero. An abandoned
		// command's output size is what its dead worker stored, which
		// the abandonment records; its duration is not known.
		dur, output := "-", "-"
		switch c.Status {
		case command.StatusExited:
			dur = (time.Duration(c.DurationMS) * time.Millisecond).String()
			output = strconv.FormatInt(c.OutputBytes, 10)
		case command.StatusAbandoned:
			output = strconv.FormatInt(c.OutputBytes, 10)
		}
		// The program as named, path and all: /tmp/ws/ls is not ls.
		argv := Cell(Argv(c.Argv)) // cut on the quoted text, which is printed
		if r := []rune(argv); len(r) > 60 {
			// "…", the one-rune mark of a cut, which commands seldom
			// hold, rather than "..." (wait..., a glob's "...").
			argv = string(r[:59]) + "…"
		}
		if withSession {
			fmt.Fprintf(tw, "%s\t%s\t", Cell(c.ID), Cell(c.Session))
		} else {
			fmt.Fprintf(tw, "%s\t", Cell(c.ID))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", Cell(status), Cell(code), Cell(c.Mode), c.RequestedAt.Format(time.RFC3339), dur, output, argv)
	}
	return tw.Flush()
}

// CommandStatus says how a command stands, e.g. "exited with code 0",
// "was refused: <reason>". Its text is the log's: print it through Safe.
func CommandStatus(st command.State) string {
	switch st.Status {
	case command.StatusExited:
		if st.NotRun != "" {
			return "did not run: " + st.NotRun
		}
		s := "exited with code " + fmt.Sprint(*st.ExitCode)
		if st.Signal != "" {
			s = "was killed by " + st.Signal
		}
		if st.Stopped {
			s += " (stopped)"
		}
		return s
	case command.StatusStarted:
		return fmt.Sprintf("is running on %s (worker %s)", st.Host, st.Worker)
	case command.StatusRequested:
		return "is waiting for a worker"
	case command.StatusAbandoned:
		return "was abandoned: " + st.EndReason
	case command.StatusRefused:
		return "was refused: " + RefusalReason(st.EndReason)
	case command.StatusEvicted:
		return "was evicted by " + st.EvictedBy
	}
	return st.Status
}

// RefusalReason is a command's refusal reason (command.State.EndReason
// of a refused command) without the "refused: " the worker's reasons
// begin with, for a sentence that already says refused.
func RefusalReason(reason string) string {
	return strings.TrimPrefix(reason, "refused: ")
}
