package usage

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/logbook-dev/logbook/reducers/session"
)

// Report is a priced answer to a Query: what `logbook usage --json` prints
// and GET /v1/usage answers, so both show the same numbers.
type Report struct {
	By     string       `json:"by"`
	Since  time.Time    `json:"since,omitzero"`
	TZ     string       `json:"tz"`
	Prices PriceInfo    `json:"prices"`
	Lines  []PricedLine `json:"lines"`
	// Subagents is, by session, each shown parent's subagents' spend
	// summed over all of them and all their models, in parent order;
	// never folded into the parent's own lines.
	Subagents []ParentSpend `json:"subagents,omitempty"`
	Limits    []Limit       `json:"limits"`
	// Context is, for a session asked for (Query.Session), the context
	// window its last model call used; nil otherwise or before any call.
	Context *ContextUse `json:"context,omitempty"`
	// Warnings name what was not priced and why (a model or service tier
	// with no price), one line each.
	Warnings []string `json:"warnings,omitempty"`
	// Checks, with Query.Check, compare each selected session's spend
	// with the agent's own count, in session order.
	Checks []Check `json:"checks,omitempty"`
	// Copied is, for each selected session that holds copies of another
	// session's calls (a fork's copy of its origin's history,
	// session.State.Copied), their tokens by origin and model, whatever
	// Since: spent and counted in the origin, in no line above, in
	// session order.
	Copied []CopiedLine `json:"copied,omitempty"`
}

// CopiedLine is what the calls Session holds copies of from another
// session (From) spent with one model: counted in From, not in Session.
type CopiedLine struct {
	Session string `json:"session"`
	session.CopiedSpend
}

// copiedOf returns the Copied lines of the sessions of ss that q
// selects: q.Session and its subagents, or all.
func copiedOf(ss []session.State, q Query) []CopiedLine {
	var out []CopiedLine
	for _, s := range ss {
		if q.Session != "" && s.ID != q.Session && s.Parent != q.Session {
			continue
		}
		for _, c := range s.Copied {
			out = append(out, CopiedLine{Session: s.ID, CopiedSpend: c})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out
}

// CheckTolerance is the largest difference, in percent, between
// Logbook's count of a session's tokens and the agent's own that `usage
// --check` lets pass.
const CheckTolerance = 1.0

// Check compares the tokens Logbook counted for a session (the sum of its
// calls) with the agent's own running total (Codex's token_count
// total_token_usage, less a copied history), input side (fresh, cache
// writes and cache reads) and output apart: Diff is the larger relative
// difference in percent, OK whether it is within CheckTolerance.
type Check struct {
	Session       string  `json:"session"`
	LogbookInput  int64   `json:"logbook_input"`
	AgentInput    int64   `json:"agent_input"`
	LogbookOutput int64   `json:"logbook_output"`
	AgentOutput   int64   `json:"agent_output"`
	Diff          float64 `json:"diff_percent"`
	OK            bool    `json:"ok"`
}

// checks returns the Checks of the sessions of ss that q selects (with
// usage since q.Since, if set) and whose agent reported a running total,
// over all their usage: the agent's total is the whole session's.
func checks(ss []session.State, q Query) []Check {
	var out []Check
	for _, s := range ss {
		if s.AgentTotal == nil || q.Session != "" && s.ID != q.Session && s.Parent != q.Session {
			continue
		}
		if !slices.ContainsFunc(s.Usage, func(b session.UsageBucket) bool { return selected(b, q.Since) }) {
			continue // nothing in the period the report covers
		}
		var tok Tokens
		for _, b := range s.Usage {
			tok.add(b)
		}
		c := Check{Session: s.ID, LogbookInput: tok.Input + tok.CacheWrite + tok.CacheRead, LogbookOutput: tok.Output,
			AgentInput: s.AgentTotal.Input + s.AgentTotal.CacheWrite + s.AgentTotal.CacheRead, AgentOutput: s.AgentTotal.Output}
		rel := func(a, b int64) float64 {
			if a == b {
				return 0
			}
			return 100 * math.Abs(float64(a-b)) / math.Max(float64(max(a, b)), 1)
		}
		c.Diff = max(rel(c.LogbookInput, c.AgentInput), rel(c.LogbookOutput, c.AgentOutput))
		c.OK = c.Diff <= CheckTolerance
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out
}

// CheckFailed reports whether a check of r found a difference over
// CheckTolerance.
func (r Report) CheckFailed() bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return !c.OK })
}

// ContextUse is the context window the last call of a session used:
// Tokens of the model's Window (from the price table; 0: unknown) and
// Percent of it (0 when the window is unknown).
type ContextUse struct {
	session.ContextUse
	Window  int64   `json:"window"`
	Percent float64 `json:"percent"`
}

// ContextOf returns s's last call's context use measured against its
// model's window in t, or nil when s reported no call.
func ContextOf(s session.State, t *Table) *ContextUse {
	if s.Context == nil {
		return nil
	}
	c := &ContextUse{ContextUse: *s.Context}
	if t != nil {
		c.Window = t.ContextWindow(c.Model)
	}
	if c.Window > 0 {
		c.Percent = 100 * float64(c.Tokens) / float64(c.Window)
	}
	return c
}

// ParentSpend is what all the subagents of session Parent spent.
type ParentSpend struct {
	Parent string `json:"parent"`
	Spend
}

// PriceInfo names the price table a Report was priced with: Logbook's
// entries (Version, Date, Sources) and a data dir's file over them
// (Override), over LiteLLM's table (its version and the day it was read).
type PriceInfo struct {
	Version  int               `json:"version"`
	Date     string            `json:"date"`
	Currency string            `json:"currency"`
	Sources  map[string]string `json:"sources"`
	Override string            `json:"override,omitempty"`
	LiteLLM  LiteLLM           `json:"litellm"`
}

// PricedLine is a Line with its cost in the table's currency: Cost is nil
// when some of the line's tokens have no price; SubagentsCost is nil when
// the line has no subagents or no price. Explain, with Query.Explain,
// says which entry, tier and band priced which of its tokens.
type PricedLine struct {
	Line
	Cost          *float64    `json:"cost"`
	SubagentsCost *float64    `json:"subagents_cost"`
	Explain       []Explained `json:"explain,omitempty"`
}

// NewReport groups the usage of ss by q (see Group), prices each line
// with t and adds the plan-limit readings as of now. Its error is Group's.
func NewReport(ss []session.State, q Query, t *Table, now time.Time) (Report, error) {
	lines, err := Group(ss, q)
	if err != nil {
		return Report{}, err
	}
	by := q.By
	if by == "" {
		by = BySession
	}
	loc := q.Loc
	if loc == nil {
		loc = time.UTC
	}
	// Plan limits: with a session asked for, only the accounts its (or
	// its subagents') readings name.
	var accounts map[string]bool
	if q.Session != "" {
		accounts = map[string]bool{}
		for _, s := range ss {
			if s.ID == q.Session || s.Parent == q.Session {
				for _, r := range s.Limits {
					accounts[r.Account] = true
				}
			}
		}
	}
	rep := Report{By: by, Since: q.Since, TZ: loc.String(), Lines: []PricedLine{}, Limits: limitsOf(ss, accounts, now)}
	if by == BySession {
		rep.Subagents = subagentSpend(ss, q, t)
	}
	rep.Prices = PriceInfo{Version: t.Version, Date: t.Date, Currency: t.Currency, Sources: t.Sources, Override: t.Override, LiteLLM: t.LiteLLM}
	warned := map[string]bool{}
	warn := func(err error) {
		if w := err.Error(); !warned[w] {
			warned[w] = true
			rep.Warnings = append(rep.Warnings, w+": its tokens are shown and not counted in the cost")
		}
	}
	for _, l := range lines {
		pl := PricedLine{Line: l}
		c, parts, err := t.LineCost(l)
		if err != nil {
			warn(err)
		} else {
			pl.Cost = &c
			if q.Explain {
				pl.Explain = parts
			}
			if l.Subagents != nil {
				if sc, _, err := t.SubagentsCost(l); err == nil {
					pl.SubagentsCost = &sc
				} else {
					warn(err)
				}
			}
		}
		rep.Lines = append(rep.Lines, pl)
	}
	if q.Session != "" {
		for _, s := range ss {
			if s.ID == q.Session {
				rep.Context = ContextOf(s, t)
			}
		}
	}
	if q.Check {
		rep.Checks = checks(ss, q)
	}
	rep.Copied = copiedOf(ss, q)
	return rep, nil
}

// subagentSpend is, for each parent with a line in q's selection (or
// the parent q.Session names), its subagents' spend since q.Since.
func subagentSpend(ss []session.State, q Query, t *Table) []ParentSpend {
	kids := map[string][]session.State{}
	for _, s := range ss {
		if s.Parent == "" {
			continue
		}
		if !q.Since.IsZero() {
			s.Usage = slices.DeleteFunc(slices.Clone(s.Usage), func(b session.UsageBucket) bool { return !selected(b, q.Since) })
		}
		kids[s.Parent] = append(kids[s.Parent], s)
	}
	var out []ParentSpend
	for _, s := range ss {
		if q.Session != "" && s.ID != q.Session || len(kids[s.ID]) == 0 {
			continue
		}
		if sp := SpendOf(kids[s.ID], t); sp.Tokens.Total() > 0 {
			out = append(out, ParentSpend{Parent: s.ID, Spend: sp})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Parent < out[j].Parent })
	return out
}

// CostText is how a cost shows: "$0.0123", or "no price" for nil.
func CostText(c *float64) string {
	if c == nil {
		return "no price"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// Columns returns the header and the cells of each line as the usage
// table shows them (WriteText, and the board's usage view): the group
// and model (the model alone by model), input, output, cache write and
// of it one-hour writes, cache read tokens, cost, and the subagents'
// tokens and cost.
func (r Report) Columns() (head []string, rows [][]string) {
	head = []string{strings.ToUpper(r.By), "MODEL"}
	if r.By == ByModel {
		head = []string{"MODEL"}
	}
	head = append(head, "INPUT", "OUTPUT", "CACHE WRITE", "OF IT 1H", "CACHE READ", "COST", "SUBAGENTS")
	for _, l := range r.Lines {
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
		cells := []string{dash(key), dash(l.Model)}
		if r.By == ByModel {
			cells = []string{dash(l.Model)}
		}
		cells = append(cells, strconv.FormatInt(l.Tokens.Input, 10), strconv.FormatInt(l.Tokens.Output, 10),
			strconv.FormatInt(l.Tokens.CacheWrite, 10), strconv.FormatInt(l.Tokens.CacheWrite1h, 10), strconv.FormatInt(l.Tokens.CacheRead, 10), CostText(l.Cost), sub)
		rows = append(rows, cells)
	}
	return head, rows
}

// TotalText is the line under the table: the total cost of the priced
// lines and the price table they were priced with.
func (r Report) TotalText() string {
	var total float64
	priced, unpriced := false, false
	for _, l := range r.Lines {
		if l.Cost != nil {
			total += *l.Cost
			priced = true
		} else {
			unpriced = true
		}
	}
	cost := fmt.Sprintf("$%.4f", total)
	switch {
	case unpriced && !priced:
		cost = "no price" // never $0 for what no table prices
	case unpriced:
		cost += " (lines with no price are not in it)"
	}
	s := fmt.Sprintf("total cost: %s; prices: LiteLLM's table (%s, read %s) under Logbook's v%d of %s, %s per million tokens",
		cost, r.Prices.LiteLLM.Version, r.Prices.LiteLLM.Read, r.Prices.Version, r.Prices.Date, r.Prices.Currency)
	if r.Prices.Override != "" {
		s += ", with " + r.Prices.Override + " over them"
	}
	return s
}

// LimitColumns returns the header and cells of the plan-limit readings
// as of now: account, window (with its length), used percent ("expired
// (was N%)" past the reset), reset time and when it was measured.
func (r Report) LimitColumns(now time.Time) (head []string, rows [][]string) {
	head = []string{"ACCOUNT", "WINDOW", "USED", "RESETS", "MEASURED"}
	for _, l := range r.Limits {
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
		rows = append(rows, []string{l.Account, win, used, resets, fmt.Sprintf("%s (%s ago)", l.MeasuredAt.Format(time.RFC3339), Age(now, l.MeasuredAt))})
	}
	return head, rows
}

// WriteText writes r as `logbook usage` prints it: the table, the total
// line, and the plan limits as of now when there are any.
func (r Report) WriteText(w io.Writer, now time.Time) error {
	return r.WriteTextTables(w, now, func(head []string, rows [][]string) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, c := range rows {
			fmt.Fprintln(tw, strings.Join(c, "\t"))
		}
		return tw.Flush()
	})
}

// WriteTextTables writes what WriteText does, each of its tables (the
// report's, then the plan limits') laid out by table, given the header
// and the rows of cells as they come from the log: a terminal's printer
// makes each cell safe and measures it as it is printed.
func (r Report) WriteTextTables(w io.Writer, now time.Time, table func(head []string, rows [][]string) error) error {
	if err := table(r.Columns()); err != nil {
		return err
	}
	if len(r.Subagents) > 0 {
		fmt.Fprintln(w, "\nsubagents (summed over all of a session's subagents):")
		for _, p := range r.Subagents {
			fmt.Fprintf(w, "%s: %s\n", p.Parent, p.Text)
		}
	}
	fmt.Fprintf(w, "\n%s\n", r.TotalText())
	if len(r.Copied) > 0 {
		fmt.Fprintln(w, "\ncopied from another session (a fork's history: counted there, not in the lines above):")
		for _, c := range r.Copied {
			fmt.Fprintf(w, "%s: from %s, %s: %d tokens (input %d, output %d, cache write %d, cache read %d) in %d calls\n",
				c.Session, c.From, dash(c.Model), c.Tokens(), c.Input, c.Output, c.CacheWrite, c.CacheRead, c.Calls)
		}
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
	if r.Context != nil {
		if r.Context.Window > 0 {
			fmt.Fprintf(w, "context: the last call used %d of %s's %d tokens (%.1f%%)\n", r.Context.Tokens, r.Context.Model, r.Context.Window, r.Context.Percent)
		} else {
			fmt.Fprintf(w, "context: the last call used %d tokens (%s's window unknown)\n", r.Context.Tokens, dash(r.Context.Model))
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintf(w, "\ncheck against the agent's own counts (a difference over %g%% fails):\n", CheckTolerance)
		for _, c := range r.Checks {
			verdict := "ok"
			if !c.OK {
				verdict = "DIFFERS"
			}
			fmt.Fprintf(w, "%s: %s: input %d (agent %d), output %d (agent %d), %.2f%% apart\n", c.Session, verdict, c.LogbookInput, c.AgentInput, c.LogbookOutput, c.AgentOutput, c.Diff)
		}
	}
	if explained := slices.ContainsFunc(r.Lines, func(l PricedLine) bool { return len(l.Explain) > 0 }); explained {
		fmt.Fprintln(w, "\nhow each line was priced (per million tokens: input, output, 5-minute and 1-hour cache write, cache read):")
		for _, l := range r.Lines {
			for _, e := range l.Explain {
				band := "no long-context band"
				if e.Above > 0 {
					band = fmt.Sprintf("input over %d tokens", e.Above)
				}
				what := dash(l.Key) + " " + dash(l.Model)
				if r.By == ByModel {
					what = dash(l.Model)
				}
				fmt.Fprintf(w, "%s: %d tokens at entry %s (%s, read %s), %s tier, %s: $%g $%g $%g $%g $%g = $%.4f\n",
					what, e.Tokens.Total(), e.Entry, e.Source, e.Date, e.Tier, band,
					e.Input, e.Output, e.CacheWrite, e.CacheWrite1h, e.CacheRead, e.Cost)
			}
		}
	}
	if len(r.Limits) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nplan limits (latest reading per account and window):")
	return table(r.LimitColumns(now))
}

// Spend is what some sessions spent: their tokens, the cost of the part
// that has a price, the models without one, and Text, the line `session
// show` prints ("" when nothing was spent).
type Spend struct {
	Tokens   Tokens   `json:"tokens"`
	Cost     *float64 `json:"cost"` // nil: no model of it has a price
	Unpriced []string `json:"unpriced,omitempty"`
	Text     string   `json:"text"`
}

// PriceCards sets the Cost and Unpriced of each card in cards whose
// session is one of kids (the subagents' rows) to that session's own
// spend priced with t, as SpendOf prices it for `session show`. A nil t
// prices nothing; a card with no row among kids (a task no session took
// up, a row not read) keeps a nil Cost. cards is changed in place.
func PriceCards(cards []session.Card, kids []session.State, t *Table) {
	if t == nil {
		return
	}
	byID := make(map[string]int, len(kids))
	for i, k := range kids {
		byID[k.ID] = i
	}
	for i := range cards {
		k, ok := byID[cards[i].Session]
		if cards[i].Session == "" || !ok {
			continue
		}
		sp := SpendOf(kids[k:k+1], t)
		cards[i].Cost, cards[i].Unpriced = sp.Cost, sp.Unpriced
	}
}

// SpendOf sums the usage of ss and prices it with t. A nil t (no price
// table to be had) prices nothing: Text says the cost is not shown.
func SpendOf(ss []session.State, t *Table) Spend {
	lines, _ := Group(ss, Query{By: ByModel})
	var sp Spend
	var cost float64
	priced := false
	for _, l := range lines {
		sp.Tokens = sp.Tokens.Plus(l.Tokens)
		if t == nil {
			continue
		}
		if c, _, err := t.LineCost(l); err == nil {
			cost += c
			priced = true
		} else {
			sp.Unpriced = append(sp.Unpriced, dash(l.Model))
		}
	}
	if priced {
		sp.Cost = &cost
	}
	tok := sp.Tokens
	if tok.Total() == 0 {
		return sp
	}
	sp.Text = fmt.Sprintf("%d (input %d, output %d, cache write %d, cache read %d); ", tok.Total(), tok.Input, tok.Output, tok.CacheWrite, tok.CacheRead)
	switch {
	case t == nil:
		sp.Text += "cost not shown (no valid price table)"
	case !priced:
		sp.Text += "no price for " + strings.Join(sp.Unpriced, ", ")
	case len(sp.Unpriced) > 0:
		sp.Text += fmt.Sprintf("cost $%.4f, and no price for %s", cost, strings.Join(sp.Unpriced, ", "))
	default:
		sp.Text += fmt.Sprintf("cost $%.4f", cost)
	}
	return sp
}

// LoadZone returns the zone tz names: "UTC" (or ""), "Local", or an IANA
// name such as Europe/Berlin. Its error names tz.
func LoadZone(tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "Local", "local":
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%q is not a time zone: want UTC, Local or a name such as Europe/Berlin", tz)
	}
	return loc, nil
}

// MaxSinceDays is the furthest back a since given in days reaches:
// 100 years.
const MaxSinceDays = 36500

// ParseSince reads a since: a duration back from now (7d, 12h, 30m), a
// day (YYYY-MM-DD, midnight in loc) or an RFC 3339 time
// (2026-12-01T08:00:00Z, 2026-12-01T09:00:00.5+01:00). It is the one
// reader of a since for the command line and the HTTP API alike. Its
// error names s but no flag or parameter: the caller prefixes the name
// its user gave it. An empty s, a negative duration, or one reaching
// further back than MaxSinceDays days or before the year 1 is refused,
// and so is a zero duration (0, 0d, 0s): it reaches no time back.
func ParseSince(s string, now time.Time, loc *time.Location) (time.Time, error) {
	const want = "want a duration such as 7d, 12h or 30m, or a day such as 2026-05-23, or an RFC 3339 time such as 2026-12-01T08:00:00Z"
	if s == "" {
		return time.Time{}, fmt.Errorf("empty: %s", want)
	}
	if len(s) > len("2006-01-02") && s[len("2006-01-02")] == 'T' {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 1 {
			return time.Time{}, fmt.Errorf("%q: %s", s, want)
		}
		return t, nil
	}
	if d, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		if d.Year() < 1 {
			return time.Time{}, fmt.Errorf("%q is before the year 1: %s", s, want)
		}
		return d, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		days, err := strconv.Atoi(n)
		if err != nil || days > MaxSinceDays {
			return time.Time{}, fmt.Errorf("%q is too far back: at most %dd (100 years), or a day such as 2026-05-23", s, MaxSinceDays)
		}
		if days == 0 {
			return time.Time{}, fmt.Errorf(zeroSince, s)
		}
		return now.AddDate(0, 0, -days), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		if d > MaxSinceDays*24*time.Hour {
			return time.Time{}, fmt.Errorf("%q is too far back: at most %dd (100 years), or a day such as 2026-05-23", s, MaxSinceDays)
		}
		if d == 0 {
			return time.Time{}, fmt.Errorf(zeroSince, s)
		}
		return now.Add(-d), nil
	}
	if durationShape().MatchString(s) {
		// A duration longer than time.Duration holds (about 292 years).
		return time.Time{}, fmt.Errorf("%q is too far back: at most %dd (100 years), or a day such as 2026-05-23", s, MaxSinceDays)
	}
	return time.Time{}, fmt.Errorf("%q: %s", s, want)
}

// zeroSince is the error of a zero duration, formatted with the since.
const zeroSince = "%q is a zero duration, which reaches no time back: want a positive one such as 7d, 12h or 30m"

// durationShape is the form of a Go duration without a sign.
var durationShape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*$`)
})

// Age is how long before now t was, as the command line shows ages:
// "42s", "5m", "3h07m", "2d4h"; "-" for the zero time.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
