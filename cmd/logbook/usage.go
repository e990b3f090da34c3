package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	_ "time/tzdata" // --tz names resolve on hosts without a zoneinfo database

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func usageCmd(g *globals) *cobra.Command {
	var (
		by, since, sess, tz string
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Tokens, cost and plan-limit headroom by session, model, day or project",
		Long: `usage sums the tokens the session projection keeps (from Claude Code's
message.usage, counted once per message id, and Codex's token_count totals,
counted as growth) by session, model, day or project, and prices them with
the price table shipped with Logbook (dated, its sources named) or the
data dir's prices.json over it. Cost is computed now, from tokens: a price
correction never rewrites history. A model without a price shows its
tokens and "no price". By session, a subagent is its own line and, under
the table, each parent shows the sum over all its subagents apart from
its own spend (--session of a subagent shows the subagent's own spend). The
latest plan-limit reading per account and window follows (with --session,
only of the accounts that session reported), with when it was measured; a
window past its reset shows as expired.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(cmd, g, by, since, sess, tz)
		},
	}
	cmd.Flags().StringVar(&by, "by", usage.BySession, "group by session, model, day or project")
	cmd.Flags().StringVar(&since, "since", "", "only usage from this long ago (7d, 12h, 30m) or this day (2026-05-23) on")
	cmd.Flags().StringVar(&sess, "session", "", "only this session (an id or a unique prefix) and its subagents")
	cmd.Flags().StringVar(&tz, "tz", "UTC", "the time zone days are cut in: UTC, Local, or a name such as Europe/Berlin")
	return cmd
}

func runUsage(cmd *cobra.Command, g *globals, by, since, sess, tz string) error {
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
		rep, err := usage.NewReport(ss, usage.Query{By: by, Since: from, Session: sess, Loc: loc}, prices, time.Now())
		if err != nil {
			return &exitError{code: codeUsage, err: err}
		}
		if g.json {
			return writeJSON(g.stdout, rep)
		}
		return termPrint(g.stdout, func(w io.Writer) error { return writeUsage(w, rep, time.Now()) })
	})
}

// writeUsage prints rep's text as sessions does its tables: each cell
// made safe for a terminal (cell) and measured as printed (newTable), so
// a model or project holding escape sequences or controls keeps the
// columns in line.
func writeUsage(w io.Writer, rep usage.Report, now time.Time) error {
	return rep.WriteTextTables(w, now, func(head []string, rows [][]string) error {
		tw := newTable(w)
		for _, r := range append([][]string{head}, rows...) {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = cell(c)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		return tw.Flush()
	})
}

// sessionSpend describes a session's own tokens and cost, and its
// subagents', for session show.
func sessionSpend(r api.SessionReply, prices *usage.Table) (own, subs string) {
	return usage.SpendOf([]session.State{r.Session}, prices).Text, usage.SpendOf(r.Children, prices).Text
}
