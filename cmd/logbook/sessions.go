package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/reducers/session"
)

func sessionsCmd(g *globals) *cobra.Command {
	var (
		phase string
		stale bool
		older time.Duration
		limit int
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, optionally in one phase, or the stale ones",
		Long: `sessions lists sessions with their phase, activity, and SINCE: how long
they have been in that phase and activity. --stale lists only sessions
working or waiting with nothing observed of the agent for --older.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 or more", limit)
			}
			req := api.SessionsRequest{Phase: phase}
			if cmd.Flags().Changed("older") && !stale {
				return fmt.Errorf("--older goes with --stale")
			}
			if stale {
				if older <= 0 {
					return fmt.Errorf("--older %s: want a positive duration such as 30m", older)
				}
				req.StaleMS = max(older.Milliseconds(), 1)
			}
			return withAPI(cmd.Context(), g, func(_ *backend, call api.Caller) error {
				if g.json {
					// The rows as stored: the JSON of session.State.
					out, err := api.ListSessions[json.RawMessage](cmd.Context(), call, req, limit)
					if err != nil {
						return err
					}
					return writeJSON(g.stdout, out)
				}
				req.Summaries = true
				out, err := api.ListSessions[session.Summary](cmd.Context(), call, req, limit)
				if err != nil {
					return err
				}
				return termPrint(g.stdout, func(w io.Writer) error { return printSessions(w, out, time.Now()) })
			})
		},
	}
	cmd.Flags().StringVar(&phase, "phase", "", "only sessions in this phase: ready, working, waiting or ended")
	cmd.Flags().BoolVar(&stale, "stale", false, "only sessions working or waiting with nothing observed for --older")
	cmd.Flags().DurationVar(&older, "older", 30*time.Minute, "with --stale: how long nothing has been observed")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many sessions, the first in id order (0: all)")
	return cmd
}

// sessionSummaries returns the summaries of ss, as the table shows them.
func sessionSummaries(ss []session.State) []session.Summary {
	out := make([]session.Summary, len(ss))
	for i, s := range ss {
		out[i] = session.Summarize(s)
	}
	return out
}

func printSessions(w io.Writer, ss []session.Summary, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPHASE\tACTIVITY\tSINCE\tOPEN\tTURNS\tTOOLS\tMODEL\tUPDATED\tCWD")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", s.ID, s.Phase, dash(s.Activity), age(now, s.Since), s.Open, s.Turns, s.ToolCalls, dash(s.Model), s.UpdatedAt.Format(time.RFC3339), dash(s.Cwd))
	}
	return tw.Flush()
}

func sessionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Inspect one session, end it, or abandon one of its entries"}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's state, open entries with their age, and subagents",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd.Context(), g, func(_ *backend, call api.Caller) error {
				var out api.SessionReply
				if err := call(cmd.Context(), api.VerbSession, api.SessionRequest{ID: args[0]}, &out); err != nil {
					return err
				}
				if g.json {
					return writeJSON(g.stdout, out)
				}
				return termPrint(g.stdout, func(w io.Writer) error { return printSession(w, out, time.Now()) })
			})
		},
	}
	cmd.AddCommand(show, sessionEndCmd(g), sessionAbandonCmd(g))
	return cmd
}

func printSession(w io.Writer, r api.SessionReply, now time.Time) error {
	s := r.Session
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("session", s.ID)
	row("phase", s.Phase)
	row("activity", dash(s.Activity))
	row("agent", dash(s.Agent))
	if s.Parent != "" {
		row("parent", s.Parent)
	}
	if s.AgentType != "" {
		row("agent type", s.AgentType)
	}
	row("model", dash(s.Model))
	row("cwd", dash(s.Cwd))
	row("branch", dash(s.GitBranch))
	row("title", dash(s.Title))
	row("mode", fmt.Sprintf("%s (agent: %s, revision %d)", dash(s.Mode), dash(s.AgentMode), s.ModeRevision))
	row("turns", fmt.Sprint(s.Turns))
	row("tool calls", fmt.Sprint(s.ToolCalls))
	row("abandoned", fmt.Sprint(s.Abandoned))
	if s.LateResults > 0 {
		row("late results", fmt.Sprintf("%d (results of abandoned calls: they ran)", s.LateResults))
	}
	if s.Forks > 0 {
		row("forks", fmt.Sprintf("%d (a prompt came while another turn's calls were open: two writers on this session?)", s.Forks))
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
	row("since", fmt.Sprintf("%s (%s in %s %s)", s.Since.Format(time.RFC3339Nano), age(now, s.Since), s.Phase, dash(s.Activity)))
	row("last observed", fmt.Sprintf("%s (%s ago)", api.LastSeen(s).Format(time.RFC3339Nano), age(now, api.LastSeen(s))))
	if p := s.AgentProcess; p != nil {
		row("agent process", fmt.Sprintf("%s, started at tick %d, boot %s", p, p.Start, dash(p.Boot)))
	}
	if s.EndReason != "" {
		row("ended", s.EndReason)
	}
	row("checkpoint", fmt.Sprint(r.Checkpoint))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nopen entries: %d\n", len(s.Entries))
	for _, e := range s.Entries {
		fmt.Fprintf(w, "  %-40s %-24s %-10s opened %s (%s ago)\n", e.EntryID, e.Activity, e.Lane, e.OpenedAt.Format(time.RFC3339), now.Sub(e.OpenedAt).Round(time.Second))
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
			fmt.Fprintf(w, "  %-40s %-8s %s\n", c.ID, c.Phase, dash(c.AgentType))
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
