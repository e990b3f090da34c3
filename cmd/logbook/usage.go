package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
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
tokens and "no price". By session, a subagent is its own line and its
parent's line shows the subagents' sum apart from its own. The latest
plan-limit reading per account and window follows, with when it was
measured; a window past its reset shows as expired.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(cmd.Context(), g, by, since, sess, tz)
		},
	}
	cmd.Flags().StringVar(&by, "by", usage.BySession, "group by session, model, day or project")
	cmd.Flags().StringVar(&since, "since", "", "only usage from this long ago (7d, 12h, 30m) or this day (2026-05-23) on")
	cmd.Flags().StringVar(&sess, "session", "", "only this session (an id or a unique prefix) and its subagents")
	cmd.Flags().StringVar(&tz, "tz", "UTC", "the time zone days are cut in: UTC, Local, or a name such as Europe/Berlin")
	return cmd
}

// usageReport is what `usage --json` prints.
type usageReport struct {
	By     string        `json:"by"`
	Since  time.Time     `json:"since,omitzero"`
	TZ     string        `json:"tz"`
	Prices priceInfo     `json:"prices"`
	Lines  []usageLine   `json:"lines"`
	Limits []usage.Limit `json:"limits"`
}

type priceInfo struct {
	Version  int               `json:"version"`
	Date     string            `json:"date"`
	Currency string            `json:"currency"`
	Sources  map[string]string `json:"sources"`
	Override string            `json:"override,omitempty"`
}

type usageLine struct {
	usage.Line
	Cost          *float64 `json:"cost"`           // null: no price
	SubagentsCost *float64 `json:"subagents_cost"` // null: no subagents, or no price
}

func runUsage(ctx context.Context, g *globals, by, since, sess, tz string) error {
	loc, err := loadZone(tz)
	if err != nil {
		return &exitError{code: codeUsage, err: err}
	}
	var from time.Time
	if since != "" {
		if from, err = parseSince(since, time.Now(), loc); err != nil {
			return &exitError{code: codeUsage, err: err}
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
		lines, err := usage.Group(ss, usage.Query{By: by, Since: from, Session: sess, Loc: loc})
		if err != nil {
			return &exitError{code: codeUsage, err: err}
		}
		rep := usageReport{By: by, Since: from, TZ: loc.String(), Lines: []usageLine{}, Limits: usage.Limits(ss, time.Now())}
		rep.Prices = priceInfo{Version: prices.Version, Date: prices.Date, Currency: prices.Currency, Sources: prices.Sources, Override: prices.Override}
		for _, l := range lines {
			ul := usageLine{Line: l}
			if c, ok := prices.Cost(l.Model, l.Tokens); ok {
				ul.Cost = &c
				if l.Subagents != nil {
					sc, _ := prices.Cost(l.Model, *l.Subagents)
					ul.SubagentsCost = &sc
				}
			}
			rep.Lines = append(rep.Lines, ul)
		}
		if g.json {
			return writeJSON(g.stdout, rep)
		}
		return termPrint(g.stdout, func(w io.Writer) error { return printUsage(w, rep, time.Now()) })
	})
}

func printUsage(w io.Writer, rep usageReport, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := strings.ToUpper(rep.By) + "\tMODEL"
	if rep.By == usage.ByModel {
		head = "MODEL"
	}
	fmt.Fprintf(tw, "%s\tINPUT\tOUTPUT\tCACHE WRITE\tCACHE READ\tCOST\tSUBAGENTS\n", head)
	var total float64
	unpriced := false
	for _, l := range rep.Lines {
		cost := "no price"
		if l.Cost != nil {
			cost = fmt.Sprintf("$%.4f", *l.Cost)
			total += *l.Cost
		} else {
			unpriced = true
		}
		sub := "-"
		if l.Subagents != nil {
			sub = fmt.Sprintf("%d tokens", l.Subagents.Total())
			if l.SubagentsCost != nil {
				sub += fmt.Sprintf(", $%.4f", *l.SubagentsCost)
			}
		}
		key := l.Key
		if l.Parent != "" {
			key += " (subagent of " + l.Parent + ")"
		}
		if rep.By != usage.ByModel {
			key = dash(key) + "\t" + dash(l.Model)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", dash(key), l.Tokens.Input, l.Tokens.Output, l.Tokens.CacheWrite, l.Tokens.CacheRead, cost, sub)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	note := ""
	if unpriced {
		note = " (lines with no price are not in it)"
	}
	fmt.Fprintf(w, "\ntotal cost: $%.4f%s; prices: table v%d of %s, %s per million tokens", total, note, rep.Prices.Version, rep.Prices.Date, rep.Prices.Currency)
	if rep.Prices.Override != "" {
		fmt.Fprintf(w, ", with %s over it", rep.Prices.Override)
	}
	fmt.Fprintln(w)
	if len(rep.Limits) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nplan limits (latest reading per account and window):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ACCOUNT\tWINDOW\tUSED\tRESETS\tMEASURED\n")
	for _, l := range rep.Limits {
		used := fmt.Sprintf("%.1f%%", l.UsedPercent)
		if l.Expired {
			used = "expired (was " + used + ")"
		}
		win := l.Window
		switch m := l.Minutes; {
		case m > 0 && m%1440 == 0:
			win += fmt.Sprintf(" (%dd)", m/1440)
		case m > 0 && m%60 == 0:
			win += fmt.Sprintf(" (%dh)", m/60)
		case m > 0:
			win += fmt.Sprintf(" (%dm)", m)
		}
		resets := "-"
		if l.ResetsAt > 0 {
			resets = time.Unix(l.ResetsAt, 0).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s (%s ago)\n", l.Account, win, used, resets, l.MeasuredAt.Format(time.RFC3339), age(now, l.MeasuredAt))
	}
	return tw.Flush()
}

// loadZone returns the zone tz names: "UTC", "Local", or an IANA name.
func loadZone(tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "Local", "local":
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("--tz %q: %v (want UTC, Local or a name such as Europe/Berlin)", tz, err)
	}
	return loc, nil
}

// parseSince reads --since: a duration back from now (7d, 12h, 30m) or a
// day (YYYY-MM-DD, midnight in loc).
func parseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if d, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return d, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration such as 7d, 12h or 30m, or a day such as 2026-05-23", s)
}

// sessionSpend describes a session's own tokens and cost, and its
// subagents', for session show.
func sessionSpend(r api.SessionReply, prices *usage.Table) (own, subs string) {
	describe := func(ss []session.State) string {
		lines, _ := usage.Group(ss, usage.Query{By: usage.ByModel})
		var tok usage.Tokens
		var cost float64
		var unpriced []string
		for _, l := range lines {
			tok = tok.Plus(l.Tokens)
			if c, ok := prices.Cost(l.Model, l.Tokens); ok {
				cost += c
			} else {
				unpriced = append(unpriced, dash(l.Model))
			}
		}
		if tok.Total() == 0 {
			return ""
		}
		s := fmt.Sprintf("%d (input %d, output %d, cache write %d, cache read %d); ", tok.Total(), tok.Input, tok.Output, tok.CacheWrite, tok.CacheRead)
		switch {
		case len(unpriced) == len(lines):
			s += "no price for " + strings.Join(unpriced, ", ")
		case len(unpriced) > 0:
			s += fmt.Sprintf("cost $%.4f, and no price for %s", cost, strings.Join(unpriced, ", "))
		default:
			s += fmt.Sprintf("cost $%.4f", cost)
		}
		return s
	}
	return describe([]session.State{r.Session}), describe(r.Children)
}
