package main

import (
	"fmt"
	"io"
	"time"
	_ "time/tzdata" // --tz names resolve on hosts without a zoneinfo database

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func usageCmd(g *globals) *cobra.Command {
	var (
		by, since, sess, tz string
		explain, check      bool
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Tokens, cost and plan-limit headroom by session, model, day, week, month, 5-hour block or project",
		Long: `usage sums the tokens the session projection keeps per minute (from Claude
Code's message.usage, counted once per message id, one-hour cache writes
apart, and Codex's token_count totals, counted per call, cached and written
input as parts of the input) by session, model, day, week (from Monday),
month, 5-hour block or project, in any time zone, and prices each call as
the vendor bills it: LiteLLM's model price table (shipped with Logbook,
dated) under Logbook's own entries (their sources named) and the data dir's
prices.json over both; one-hour cache writes, long-context rates and the
service tier included. --explain says which entry, tier and band priced
each line. Cost is computed now, from tokens: a price correction never
rewrites history. A model or tier without a price shows its tokens, "no
price" and a warning, never $0. --check compares each session's tokens
with the agent's own running total where it keeps one (Codex) and exits 1
when one differs by more than 1%. With --session, the context window the
last call used is shown against the model's. By session, a subagent is its own line, and
a parent's first line shows in SUBAGENTS (JSON: subagents, subagents_cost)
the sum over all its subagents and their models, apart from its own spend;
under the table each parent shows that sum again, also one with no spend
of its own in the selection (--session of a subagent shows the subagent's
own spend). The
latest plan-limit reading per account and window follows (with --session,
only of the accounts that session reported), with when it was measured; a
window past its reset shows as expired.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(cmd, g, usage.Query{By: by, Explain: explain, Check: check}, since, sess, tz)
		},
	}
	cmd.Flags().StringVar(&by, "by", usage.BySession, "group by session, model, day, week, month, block (5 hours) or project")
	cmd.Flags().BoolVar(&explain, "explain", false, "say which price entry, tier and long-context band priced each line")
	cmd.Flags().BoolVar(&check, "check", false, "compare each session's tokens with the agent's own running total; exit 1 past a 1% difference")
	cmd.Flags().StringVar(&since, "since", "", "only usage from this long ago (7d, 12h, 30m) or this day (2026-05-23) on")
	cmd.Flags().StringVar(&sess, "session", "", "only this session (an id or a unique prefix) and its subagents")
	cmd.Flags().StringVar(&tz, "tz", "UTC", "the time zone days are cut in: UTC, Local, or a name such as Europe/Berlin")
	return cmd
}

func runUsage(cmd *cobra.Command, g *globals, q usage.Query, since, sess, tz string) error {
	ctx := cmd.Context()
	loc, err := usage.LoadZone(tz)
	if err != nil {
		return usageErrorf("--tz %v", err)
	}
	var from time.Time
	if since != "" || cmd.Flags().Changed("since") {
		if from, err = usage.ParseSince(since, time.Now(), loc); err != nil {
			return usageErrorf("--since %v", err)
		}
	}
	return withAPI(ctx, g, func(b *backend, call api.Caller) error {
		prices, err := usage.LoadTable(b.dd.path("prices.json"))
		if err != nil {
			return err
		}
		if sess != "" {
			if sess, err = resolveID(ctx, b, events.KindSession, sess); err != nil {
				return err
			}
		}
		ss, err := api.ListSessions[session.State](ctx, call, api.SessionsRequest{}, 0)
		if err != nil {
			return err
		}
		q.Since, q.Session, q.Loc = from, sess, loc
		rep, err := usage.NewReport(ss, q, prices, time.Now())
		if err != nil {
			return &exitError{code: codeUsage, err: err}
		}
		if g.json {
			err = writeJSON(g.stdout, rep)
		} else {
			err = term.Print(g.stdout, func(w io.Writer) error { return term.Usage(w, rep, time.Now()) })
			if err == nil && len(rep.Lines) == 0 && len(rep.Subagents) == 0 && len(rep.Copied) == 0 {
				switch {
				case sess != "":
					fmt.Fprintf(g.stderr, "no usage recorded for session %s: its agent reported no model call with tokens\n", sess)
				case !from.IsZero():
					fmt.Fprintf(g.stderr, "no usage recorded since %s\n", from.In(loc).Format(time.RFC3339))
				default:
					fmt.Fprintln(g.stderr, "no usage recorded yet: no session's agent reported a model call with tokens")
				}
			}
			if err == nil && q.Check && len(rep.Checks) == 0 {
				fmt.Fprintln(g.stderr, "check: no session's agent reported its own running total (Codex does; Claude Code's transcripts carry none)")
			}
		}
		if err == nil && rep.CheckFailed() {
			return &exitError{code: 1, err: fmt.Errorf("usage --check: Logbook's tokens differ from the agent's own by more than %g%% (above)", usage.CheckTolerance)}
		}
		return err
	})
}
