// Package usage answers "what did this agent spend": it groups the usage
// the session projection keeps (session.State.Usage: tokens per model, UTC
// minute, service tier and long-context band, folded from the adapters'
// usage signals) by session, model, day, week, month, 5-hour block or
// project, and prices tokens at query time from a versioned price table,
// so a price correction never rewrites history.
//
// The price table ships with the binary: LiteLLM's model price table
// (litellm.json beside this file, a dated subset of its
// model_prices_and_context_window.json, refreshed by
// .ci/refresh-prices), with Logbook's own entries (prices.json
// beside this file: dated, their sources named, per million tokens) over
// it, and a file in the data dir (prices.json, the same format) over both,
// model by model. A model the table does not name has no price: it shows
// its tokens and "no price", never $0.
package usage

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/logbook-dev/logbook/reducers/session"
)

// Tokens are token counts summed over usage buckets.
type Tokens struct {
	Input        int64 `json:"input"`
	Output       int64 `json:"output"`
	CacheWrite   int64 `json:"cache_write"`
	CacheWrite1h int64 `json:"cache_write_1h"` // of CacheWrite, the one-hour kind
	CacheRead    int64 `json:"cache_read"`
	Reasoning    int64 `json:"reasoning"` // of Output
	Calls        int64 `json:"calls"`
}

// Total returns input, output and cache tokens summed.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

func (t *Tokens) add(b session.UsageBucket) {
	t.Input += b.Input
	t.Output += b.Output
	t.CacheWrite += b.CacheWrite
	t.CacheWrite1h += b.CacheWrite1h
	t.CacheRead += b.CacheRead
	t.Reasoning += b.Reasoning
	t.Calls += b.Calls
}

// Plus returns t and u summed.
func (t Tokens) Plus(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.Output + u.Output, t.CacheWrite + u.CacheWrite, t.CacheWrite1h + u.CacheWrite1h,
		t.CacheRead + u.CacheRead, t.Reasoning + u.Reasoning, t.Calls + u.Calls}
}

// Groupings Group knows.
const (
	BySession = "session"
	ByModel   = "model"
	ByDay     = "day"
	ByWeek    = "week"  // key: the Monday that starts the week, YYYY-MM-DD
	ByMonth   = "month" // key: YYYY-MM
	ByBlock   = "block" // key: the start of a 5-hour billing block, RFC 3339 in the zone
	ByProject = "project"
)

// BlockLength is how long a usage block lasts (ByBlock): the five hours
// of a plan's usage window, as ccusage's blocks report counts them.
const BlockLength = 5 * time.Hour

// Query selects and groups usage.
type Query struct {
	By      string         // BySession (default), ByModel, ByDay, ByWeek, ByMonth, ByBlock or ByProject
	Since   time.Time      // buckets of the minutes that end after it; zero: all
	Session string         // only this session and its subagents; "": all
	Loc     *time.Location // the zone days, weeks, months and blocks are cut in; nil: UTC
	// Explain asks NewReport to say, for each priced line, which table
	// entry, tier and long-context band priced which tokens.
	Explain bool
	// Check asks NewReport to compare each selected session's spend with
	// the agent's own running total, where it keeps one (Report.Checks).
	Check bool
}

// Line is the tokens of one group and model. For BySession, Parent names
// the parent of a subagent's session, and a parent's first line (in model
// order) carries its subagents' sum in Subagents: over all of them and
// every model they used, whichever models the parent used itself (never
// folded into its own tokens; its other lines carry none).
type Line struct {
	Key       string  `json:"key"`   // session id, model, day (YYYY-MM-DD), week, month, block or project (cwd)
	Model     string  `json:"model"` // "" when the agent did not name it
	Tokens    Tokens  `json:"tokens"`
	Parent    string  `json:"parent,omitempty"`
	Subagents *Tokens `json:"subagents,omitempty"`
	// buckets and subBuckets are the usage buckets summed in Tokens and
	// Subagents: each is priced at its own minute, tier and band.
	buckets, subBuckets []session.UsageBucket
}

// selected reports whether b's minute ends after since (zero: all).
func selected(b session.UsageBucket, since time.Time) bool {
	return since.IsZero() || b.Minute.Add(time.Minute).After(since)
}

// blockStarts returns the starts of the 5-hour blocks the minutes of
// usage in ss fall in: a block starts at the UTC hour of the first minute
// not in an earlier block (as ccusage counts them, so the blocks are the
// same in every zone; loc only shows them) and lasts BlockLength.
func blockStarts(ss []session.State, since time.Time, loc *time.Location) []time.Time {
	var mins []time.Time
	for _, s := range ss {
		for _, b := range s.Usage {
			if selected(b, since) {
				mins = append(mins, b.Minute)
			}
		}
	}
	slices.SortFunc(mins, func(a, b time.Time) int { return a.Compare(b) })
	var starts []time.Time
	for _, m := range mins {
		if n := len(starts); n > 0 && m.Before(starts[n-1].Add(BlockLength)) {
			continue
		}
		starts = append(starts, m.UTC().Truncate(time.Hour).In(loc))
	}
	return starts
}

// Group sums the usage of ss by q, one line per group and model, in key
// then model order (days, weeks, months and blocks in time order).
func Group(ss []session.State, q Query) ([]Line, error) {
	loc := q.Loc
	if loc == nil {
		loc = time.UTC
	}
	by := q.By
	if by == "" {
		by = BySession
	}
	switch by {
	case BySession, ByModel, ByDay, ByWeek, ByMonth, ByBlock, ByProject:
	default:
		return nil, fmt.Errorf("usage: unknown grouping %q (want session, model, day, week, month, block or project)", by)
	}
	var blocks []time.Time
	if by == ByBlock {
		sel := slices.DeleteFunc(slices.Clone(ss), func(s session.State) bool {
			return q.Session != "" && s.ID != q.Session && s.Parent != q.Session
		})
		blocks = blockStarts(sel, q.Since, loc)
	}
	type key struct{ k, model string }
	sums := map[key]*Line{}
	children := map[string]*Line{} // parent session → its subagents' sum, every model
	for _, s := range ss {
		chosen := q.Session == "" || s.ID == q.Session || s.Parent == q.Session
		if !chosen && (by != BySession || s.Parent == "") {
			continue
		}
		for _, b := range s.Usage {
			if !selected(b, q.Since) {
				continue
			}
			if by == BySession && s.Parent != "" {
				// A parent's subagents' sum is over all of them, even
				// when the query selects only one.
				c := children[s.Parent]
				if c == nil {
					c = &Line{}
					children[s.Parent] = c
				}
				c.Tokens.add(b)
				c.buckets = append(c.buckets, b)
			}
			if !chosen {
				continue
			}
			var k string
			switch t := b.Minute.In(loc); by {
			case BySession:
				k = s.ID
			case ByModel:
				k = b.Model
			case ByDay:
				k = t.Format(time.DateOnly)
			case ByWeek:
				// Monday, counted in calendar days so a DST change
				// does not move it.
				k = time.Date(t.Year(), t.Month(), t.Day()-(int(t.Weekday())+6)%7, 0, 0, 0, 0, loc).Format(time.DateOnly)
			case ByMonth:
				k = t.Format("2006-01")
			case ByBlock:
				i, _ := slices.BinarySearchFunc(blocks, b.Minute, func(s, m time.Time) int {
					if s.After(m) {
						return 1
					}
					return -1
				})
				k = blocks[max(i-1, 0)].Format(time.RFC3339)
			case ByProject:
				k = s.Cwd
			}
			l := sums[key{k, b.Model}]
			if l == nil {
				l = &Line{Key: k, Model: b.Model}
				if by == BySession {
					l.Parent = s.Parent
				}
				sums[key{k, b.Model}] = l
			}
			l.Tokens.add(b)
			l.buckets = append(l.buckets, b)
		}
	}
	out := make([]Line, 0, len(sums))
	for _, l := range sums {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Model < out[j].Model
	})
	for i := range out {
		// On the parent's first line, whatever models its subagents
		// used: a parent with no line of its own in the selection gets
		// no line of zeros (Report.Subagents has its sum).
		if c := children[out[i].Key]; by == BySession && c != nil {
			t := c.Tokens
			out[i].Subagents, out[i].subBuckets = &t, c.buckets
			delete(children, out[i].Key)
		}
	}
	return out, nil
}

// Limit is the latest reading of one plan-limit window over all sessions,
// and whether it is past its reset at the time asked.
type Limit struct {
	session.LimitReading
	Session string `json:"session"` // the session whose reading it is
	Expired bool   `json:"expired"` // the window reset since it was measured: its percentage no longer holds
}

// Limits returns the latest reading per account and window among ss, as
// of now, in account then window order. A window is known by its length
// (Minutes) when the reading gives one, else by its slot's name: Codex
// names its windows by slot (primary, secondary), and which window a
// slot holds is the reading's to say (the 5-hour one in primary on one
// reading, the weekly one on another), so two slots never show the same
// window twice while another goes unshown.
func Limits(ss []session.State, now time.Time) []Limit {
	return limitsOf(ss, nil, now)
}

// limitsOf is Limits of the accounts in accounts only; nil: all.
func limitsOf(ss []session.State, accounts map[string]bool, now time.Time) []Limit {
	type key struct {
		account, window string
		minutes         int64
	}
	latest := map[key]Limit{}
	for _, s := range ss {
		for _, r := range s.Limits {
			if accounts != nil && !accounts[r.Account] {
				continue
			}
			k := key{r.Account, r.Window, 0}
			if r.Minutes > 0 {
				k = key{r.Account, "", r.Minutes}
			}
			if l, ok := latest[k]; !ok || r.MeasuredAt.After(l.MeasuredAt) {
				latest[k] = Limit{LimitReading: r, Session: s.ID}
			}
		}
	}
	out := make([]Limit, 0, len(latest))
	for _, l := range latest {
		l.Expired = l.ResetsAt > 0 && !now.Before(time.Unix(l.ResetsAt, 0))
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Account != out[j].Account {
			return out[i].Account < out[j].Account
		}
		if out[i].Minutes != out[j].Minutes {
			return out[i].Minutes < out[j].Minutes
		}
		return out[i].Window < out[j].Window
	})
	return out
}

// Unpriced returns the models of lines the table has no price for (in
// some tier or at some time of their usage).
func (t *Table) Unpriced(lines []Line) []string {
	var out []string
	for _, l := range lines {
		if _, _, err := t.LineCost(l); err != nil && !slices.Contains(out, l.Model) {
			out = append(out, l.Model)
		}
	}
	sort.Strings(out)
	return out
}
