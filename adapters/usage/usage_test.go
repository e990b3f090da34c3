package usage

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func hour(d, h int) time.Time { return time.Date(2026, 5, d, h, 0, 0, 0, time.UTC) }

func states() []session.State {
	return []session.State{
		{ID: "p", Cwd: "/a", Usage: []session.UsageBucket{
			{Model: "claude-opus-4-5", Minute: hour(23, 23), Input: 10, Output: 100, Calls: 1},
			{Model: "claude-sonnet-4-5", Minute: hour(24, 1), Input: 20, Output: 200, Calls: 2},
		}},
		{ID: "agent-x", Parent: "p", Cwd: "/a", Usage: []session.UsageBucket{
			{Model: "claude-haiku-4-5-20251001", Minute: hour(23, 22), Input: 5, CacheRead: 1000, Calls: 1},
		}},
		{ID: "q", Cwd: "/b", Usage: []session.UsageBucket{
			{Model: "mystery-1", Minute: hour(24, 2), Input: 7, Output: 7, Calls: 1},
		}, Limits: []session.LimitReading{{Limit: events.Limit{Account: "codex/plus", Window: "primary", UsedPercent: 40, ResetsAt: hour(24, 5).Unix()}, MeasuredAt: hour(24, 2)}}},
		{ID: "r", Limits: []session.LimitReading{{Limit: events.Limit{Account: "codex/plus", Window: "primary", UsedPercent: 10, ResetsAt: hour(24, 5).Unix()}, MeasuredAt: hour(24, 1)}}},
	}
}

func TestGroup(t *testing.T) {
	ss := states()
	lines, err := Group(ss, Query{By: BySession})
	if err != nil {
		t.Fatal(err)
	}
	var parentHaiku, child *Line
	for i := range lines {
		l := &lines[i]
		if l.Key == "p" && strings.HasPrefix(l.Model, "claude-haiku") {
			parentHaiku = l
		}
		if l.Key == "agent-x" {
			child = l
		}
	}
	if child == nil || child.Parent != "p" || child.Tokens.CacheRead != 1000 {
		t.Fatalf("child %+v", child)
	}
	if parentHaiku != nil {
		t.Fatalf("a line of zeros for a model only the parent's subagents used: %+v", parentHaiku)
	}
	for _, l := range lines {
		if l.Tokens.Total() == 0 {
			t.Errorf("a line of zeros: %+v", l)
		}
	}
	days, _ := Group(ss, Query{By: ByDay})
	if len(days) != 4 || days[0].Key != "2026-05-23" || days[3].Key != "2026-05-24" {
		t.Fatalf("UTC days %+v", days)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	local, _ := Group(ss, Query{By: ByDay, Loc: berlin})
	for _, l := range local {
		if l.Key != "2026-05-24" && l.Model != "claude-haiku-4-5-20251001" {
			t.Errorf("in Berlin %s/%s should be on the 24th", l.Key, l.Model)
		}
	}
	proj, _ := Group(ss, Query{By: ByProject})
	if len(proj) != 4 || proj[0].Key != "/a" {
		t.Fatalf("projects %+v", proj)
	}
	since, _ := Group(ss, Query{By: ByModel, Since: hour(24, 0)})
	if len(since) != 2 {
		t.Fatalf("since %+v", since)
	}
	one, _ := Group(ss, Query{By: ByModel, Session: "p"})
	if len(one) != 3 {
		t.Fatalf("session p and its subagent %+v", one)
	}
	if _, err := Group(ss, Query{By: "fortnight"}); err == nil {
		t.Error("unknown grouping accepted")
	}
}

func TestLimits(t *testing.T) {
	l := Limits(states(), hour(24, 3))
	if len(l) != 1 || l[0].UsedPercent != 40 || l[0].Session != "q" || l[0].Expired {
		t.Fatalf("%+v", l)
	}
	if l := Limits(states(), hour(24, 6)); !l[0].Expired {
		t.Fatalf("past its reset: %+v", l)
	}
}

// A Codex plan's windows are known by their length, not the slot a
// reading puts them in: readings that moved the weekly window from one
// slot to the other show it once, beside the 5-hour one, each its latest.
func TestLimits_WindowsByLength(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 12, 6, h, 0, 0, 0, time.UTC) }
	read := func(slot string, minutes int64, used float64, h int) session.LimitReading {
		return session.LimitReading{Limit: events.Limit{Account: "codex/plus", Window: slot, UsedPercent: used, Minutes: minutes}, MeasuredAt: at(h)}
	}
	ss := []session.State{
		{ID: "old", Limits: []session.LimitReading{read("primary", 300, 10, 1), read("secondary", 10080, 20, 1)}},
		{ID: "new", Limits: []session.LimitReading{read("primary", 10080, 25, 2)}},
		{ID: "slotless", Limits: []session.LimitReading{read("primary", 0, 5, 3)}},
	}
	var got []string
	for _, l := range Limits(ss, at(4)) {
		got = append(got, fmt.Sprintf("%s %d %.0f %s", l.Window, l.Minutes, l.UsedPercent, l.Session))
	}
	want := []string{"primary 0 5 slotless", "primary 300 10 old", "primary 10080 25 new"}
	if !slices.Equal(got, want) {
		t.Errorf("limits %q, want %q: each window once, by its length, its latest reading", got, want)
	}
}

func TestPrices(t *testing.T) {
	tb := Shipped()
	if tb.Version < 1 || tb.Date == "" || len(tb.Sources) == 0 {
		t.Fatalf("shipped table %+v", tb)
	}
	for m, p := range tb.Models {
		if _, ok := tb.Sources[p.Source]; !ok {
			t.Errorf("%s: source %q not named", m, p.Source)
		}
		if _, err := time.Parse(time.DateOnly, tb.DateOf(m)); err != nil {
			t.Errorf("%s: date %q", m, tb.DateOf(m))
		}
	}
	// Every model the real recordings name has a price (../shared/corpus:
	// Claude Code 2.1 and Codex CLI 0.130-0.147).
	for _, m := range []string{"claude-opus-4-7", "claude-sonnet-4-6", "claude-haiku-4-5-20251001", "gpt-5.4", "gpt-5.5", "gpt-5.6-sol"} {
		if _, ok := tb.PriceOf(m); !ok {
			t.Errorf("%s: no price", m)
		}
	}
	if c, ok := tb.Cost("claude-opus-4-7", Tokens{Input: 1_000_000, Output: 1_000_000, CacheWrite: 1_000_000, CacheRead: 1_000_000}); !ok || c < 36.7499 || c > 36.7501 {
		t.Errorf("opus 4.7: %v %v, want 5+25+6.25+0.50", c, ok)
	}
	// gpt-5.6-sol's promotional price held until 2026-11-21; now it is
	// LiteLLM's entry's.
	if c, ok := tb.Cost("gpt-5.6-sol", Tokens{Input: 1_000_000, CacheRead: 1_000_000, Output: 1_000_000}); !ok || c < 35.4999 || c > 35.5001 {
		t.Errorf("gpt-5.6-sol: %v %v, want 5+0.50+30", c, ok)
	}
	c, ok := tb.Cost("claude-haiku-4-5-20251001", Tokens{Input: 1_000_000, CacheRead: 1_000_000})
	if !ok || c < 1.0999 || c > 1.1001 {
		t.Fatalf("haiku cost %v %v", c, ok)
	}
	if _, ok := tb.Cost("mystery-1", Tokens{Input: 5}); ok {
		t.Fatal("an unknown model has a price")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.json")
	os.WriteFile(path, []byte(`{"version":2,"date":"2026-11-01","currency":"USD","sources":{"mine":"my contract"},"models":{"mystery-1":{"source":"mine","input":2,"output":4,"cache_write":2,"cache_read":1}}}`), 0o644)
	o, err := LoadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := o.Cost("mystery-1", Tokens{Input: 1_000_000}); !ok || c != 2 || o.Override != path {
		t.Fatalf("override: %v %v %+v", c, ok, o)
	}
	if _, ok := o.PriceOf("claude-opus-4-5"); !ok {
		t.Fatal("override dropped the shipped models")
	}
	for name, bad := range map[string]struct{ text, want string }{
		"not json":       {`{`, "not valid JSON at line 1, column 2: the text ends before the table does"},
		"syntax":         {"{\"version\": 1,\n models: {}}", "not valid JSON at line 2, column 2: invalid character 'm'"},
		"wrong type":     {"{\"version\": 1,\n \"models\": {\"x\": {\"input\": \"3\"}}}", `line 2, column 30: "models.input" is a JSON string, want float64`},
		"negative":       {`{"version":2,"models":{"x":{"input":-1}}}`, `model "x": input -1 is a negative price`},
		"other currency": {`{"version":2,"currency":"EUR","models":{"x":{}}}`, "currency EUR"},
		"huge":           {`{"version":2,"models":{"x":{"input":1,"output":1e308}}}`, `model "x": output 1e+308 is over the bound of 1e+06 dollars per million tokens`},
		"just over":      {`{"version":2,"models":{"x":{"cache_read":1000000.5}}}`, `model "x": cache_read 1.0000005e+06 is over the bound`},
		"overflow":       {"{\"version\":2,\n \"models\":{\"x\":{\"input\":1e999}}}", `line 2, column 29: "models.input" is a JSON number 1e999, want float64`},
		"version 99":     {`{"version":99}`, "version 99: this Logbook reads price table versions [1 2 3]"},
		"no version":     {`{"models":{"x":{}}}`, "version missing (0): this Logbook reads price table versions [1 2 3]"},
		"no models":      {`{"version":2}`, `"models" names no model`},
		"empty models":   {`{"version":2,"models":{}}`, `"models" names no model`},
		"unknown field":  {"{\n \"modles\":{}}", `line 2, column 2: unknown member "modles"`},
	} {
		os.WriteFile(path, []byte(bad.text), 0o644)
		_, err := LoadTable(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), ": json: ") {
			t.Errorf("%s: err = %v, want %s naming %s", name, err, bad.want, path)
		}
	}
	// The bound itself is a price; a table built in code past the bound
	// prices nothing rather than an infinite cost.
	os.WriteFile(path, []byte(`{"version":1,"models":{"x":{"input":1e6}}}`), 0o644)
	if o, err := LoadTable(path); err != nil {
		t.Errorf("a price at the bound: %v", err)
	} else if c, ok := o.Cost("x", Tokens{Input: 1_000_000}); !ok || c != 1e6 {
		t.Errorf("a price at the bound: %v %v", c, ok)
	}
	huge := &Table{Models: map[string]Price{"x": {Input: math.MaxFloat64}}}
	if c, ok := huge.Cost("x", Tokens{Input: 1 << 40}); ok || c != 0 {
		t.Errorf("cost past float64: %v %v, want none", c, ok)
	}
	if sp := SpendOf(states(), huge); sp.Cost != nil && (math.IsInf(*sp.Cost, 0) || math.IsNaN(*sp.Cost)) {
		t.Errorf("spend past float64: %v", *sp.Cost)
	}
	if tb, err := LoadTable(filepath.Join(dir, "none.json")); err != nil || tb.Override != "" {
		t.Errorf("missing override: %v", err)
	}
}

// TestReport_Text: the table `logbook usage` prints (and the board shows
// cell for cell): a subagent on its own line, its sum beside its parent's,
// "no price" never $0, a window past its reset as expired, and spend as
// `session show` prints it.
func TestReport_Text(t *testing.T) {
	tb := Shipped()
	rep, err := NewReport(states(), Query{By: BySession}, tb, hour(24, 6))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b, hour(24, 6)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"SESSION  ", "agent-x (subagent of p)  claude-haiku-4-5-20251001",
		"q        ", "mystery-1  7  7  0  0  0  no price",
		"p        ", "p: 1005 (input 5, output 0, cache write 0, cache read 1000); cost $0.0001",
		"total cost: $", "(lines with no price are not in it); prices: LiteLLM's table (git 00035b69f416be24e2e323c13198d9b7d2d1bdf9, read 2026-12-02) under Logbook's v3 of 2026-12-02, USD per million tokens",
		`warning: no price for model "mystery-1"`,
		"codex/plus  primary  expired (was 40.0%)  2026-05-24T05:00:00Z  2026-05-24T02:00:00Z (4h00m ago)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mystery-1  7  7  0  0  0  $") {
		t.Errorf("an unknown model was priced:\n%s", out)
	}
	sp := SpendOf(states()[2:3], tb)
	if sp.Cost != nil || sp.Text != "14 (input 7, output 7, cache write 0, cache read 0); no price for mystery-1" {
		t.Errorf("spend of an unpriced session: %+v", sp)
	}
	if sp := SpendOf(nil, tb); sp.Text != "" || sp.Tokens.Total() != 0 {
		t.Errorf("spend of nothing: %+v", sp)
	}
}

func TestParseSinceAndZone(t *testing.T) {
	now := hour(24, 12)
	berlin, err := LoadZone("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]time.Time{
		"7d": now.AddDate(0, 0, -7), "12h": now.Add(-12 * time.Hour),
		"2026-05-23":                  time.Date(2026, 5, 23, 0, 0, 0, 0, berlin),
		"2026-12-01T08:00:00Z":        time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
		"2026-12-01T09:00:00.5+01:00": time.Date(2026, 12, 1, 8, 0, 0, 5e8, time.UTC),
	} {
		if got, err := ParseSince(s, now, berlin); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "-1h", "2026-12-01T25:00:00Z", "2026-12-01T08:00:00", "2026-12-01Tx"} {
		if _, err := ParseSince(bad, now, berlin); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: err %v", bad, err)
		}
	}
	// A zero duration reaches no time back: refused, not an empty list.
	for _, zero := range []string{"0", "0d", "0s", "0h0m", "00d"} {
		if _, err := ParseSince(zero, now, berlin); err == nil || !strings.Contains(err.Error(), "zero") || !strings.Contains(err.Error(), zero) {
			t.Errorf("%s: err %v; want a zero duration refused", zero, err)
		}
	}
	// A duration past what a time.Duration holds is too far back, not
	// of the wrong form.
	for _, far := range []string{"99999999h", "9999999999999999999ns", "876001h"} {
		if _, err := ParseSince(far, now, berlin); err == nil || !strings.Contains(err.Error(), "too far back") {
			t.Errorf("%s: err %v; want too far back", far, err)
		}
	}
	if _, err := LoadZone("Mars/Olympus"); err == nil || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("unknown zone: %v", err)
	}
}

// TestReportSession: --session of a subagent shows its own spend only
// (no line of its parent's, no zeros); of a parent, its subagents' sum
// over all of them apart; plan limits only of the selected session's
// accounts.
func TestReportSession(t *testing.T) {
	ss := append(states(), session.State{ID: "agent-y", Parent: "p", Usage: []session.UsageBucket{
		{Model: "claude-haiku-4-5-20251001", Minute: hour(23, 22), Input: 1, CacheRead: 2000, Calls: 1},
	}})
	now := hour(24, 3)
	sub, err := NewReport(ss, Query{Session: "agent-x"}, Shipped(), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Lines) != 1 || sub.Lines[0].Key != "agent-x" || sub.Lines[0].Parent != "p" || sub.Lines[0].Tokens.Total() != 1005 {
		t.Errorf("a subagent's lines %+v, want its own only", sub.Lines)
	}
	if len(sub.Subagents) != 0 || len(sub.Limits) != 0 {
		t.Errorf("a subagent's report: subagents %+v, limits %+v; want none", sub.Subagents, sub.Limits)
	}
	par, _ := NewReport(ss, Query{Session: "p"}, Shipped(), now)
	if len(par.Subagents) != 1 || par.Subagents[0].Parent != "p" || par.Subagents[0].Tokens.Total() != 3006 {
		t.Errorf("the parent's subagents' sum %+v, want p: 3006 tokens", par.Subagents)
	}
	for _, l := range par.Lines {
		if l.Tokens.Total() == 0 {
			t.Errorf("a line of zeros: %+v", l)
		}
	}
	if len(par.Limits) != 0 {
		t.Errorf("limits of other sessions' accounts for p: %+v", par.Limits)
	}
	var b strings.Builder
	if err := sub.WriteText(&b, now); err != nil || strings.Contains(b.String(), "plan limits") || strings.Contains(b.String(), " 0  0  0  0 ") {
		t.Errorf("a subagent's text (%v):\n%s", err, b.String())
	}
	q, _ := NewReport(ss, Query{Session: "q"}, Shipped(), now)
	if len(q.Limits) != 1 || q.Limits[0].Account != "codex/plus" || q.Limits[0].UsedPercent != 40 {
		t.Errorf("q's limits %+v, want its account's latest reading", q.Limits)
	}
}

// TestReport_ParentLineCarriesSubagents: by session and with --session
// of a parent, the parent's first line carries the sum over all its
// subagents, though they used a model the parent did not (haiku under an
// opus and sonnet parent), priced, in the SUBAGENTS column and in JSON;
// its other lines and the subagents' own carry none, and the sum is
// counted once.
func TestReport_ParentLineCarriesSubagents(t *testing.T) {
	ss := append(states(), session.State{ID: "agent-y", Parent: "p", Usage: []session.UsageBucket{
		{Model: "claude-haiku-4-5-20251001", Minute: hour(23, 22), Input: 1, CacheRead: 2000, Calls: 1},
	}})
	now := hour(24, 3)
	for _, q := range []Query{{By: BySession}, {Session: "p"}} {
		rep, err := NewReport(ss, q, Shipped(), now)
		if err != nil {
			t.Fatal(err)
		}
		carried := 0
		for _, l := range rep.Lines {
			if l.Subagents == nil {
				continue
			}
			carried++
			if l.Key != "p" || l.Model != "claude-opus-4-5" || l.Subagents.Total() != 3006 || l.SubagentsCost == nil || *l.SubagentsCost <= 0 {
				t.Errorf("%+v: subagents' sum on %s/%s: %+v, cost %v; want on p/claude-opus-4-5, 3006 tokens, priced", q, l.Key, l.Model, l.Subagents, CostText(l.SubagentsCost))
			}
		}
		if carried != 1 {
			t.Errorf("%+v: %d lines carry a subagents' sum, want 1", q, carried)
		}
		_, rows := rep.Columns()
		for i, r := range rows {
			if r[0] == "p" && r[1] == "claude-opus-4-5" {
				if !strings.HasPrefix(r[len(r)-1], "3006 tokens, $") {
					t.Errorf("%+v: p's first row %q; want its subagents' 3006 tokens and their cost", q, r)
				}
				if b, _ := json.Marshal(rep.Lines[i]); !strings.Contains(string(b), `"subagents_cost":0.`) {
					t.Errorf("%+v: JSON of p's first line %s; want its subagents' cost", q, b)
				}
			}
		}
	}
	// A parent that spent nothing in the selection gets no line of
	// zeros: its sum is in Report.Subagents alone.
	rep, _ := NewReport(ss, Query{Since: hour(23, 22), By: BySession}, Shipped(), now)
	for _, l := range rep.Lines {
		if l.Tokens.Total() == 0 {
			t.Errorf("a line of zeros: %+v", l)
		}
	}
	late, _ := NewReport(ss, Query{Since: hour(24, 0)}, Shipped(), now)
	for _, l := range late.Lines {
		if l.Subagents != nil {
			t.Errorf("since the subagents' last minute, %s/%s carries %+v", l.Key, l.Model, l.Subagents)
		}
	}
}

// TestGroup_AnyZone cuts days at each zone's own midnight, to the minute:
// +5:30 (Asia/Kolkata), +5:45 (Asia/Kathmandu), -9:30 (Pacific/Marquesas)
// and both sides of a DST change day (America/New_York, 2026-03-08, a day
// of 23 hours).
func TestGroup_AnyZone(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		zone         string
		before, from string // the last UTC minute of one local day, the first of the next
		day1, day2   string
	}{
		{"Asia/Kolkata", "2026-05-23T18:29:00Z", "2026-05-23T18:30:00Z", "2026-05-23", "2026-05-24"},
		{"Asia/Kathmandu", "2026-05-23T18:14:00Z", "2026-05-23T18:15:00Z", "2026-05-23", "2026-05-24"},
		{"Pacific/Marquesas", "2026-05-24T09:29:00Z", "2026-05-24T09:30:00Z", "2026-05-23", "2026-05-24"},
		{"America/New_York", "2026-03-08T04:59:00Z", "2026-03-08T05:00:00Z", "2026-03-07", "2026-03-08"},
		{"America/New_York", "2026-03-09T03:59:00Z", "2026-03-09T04:00:00Z", "2026-03-08", "2026-03-09"},
	} {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		ss := []session.State{{ID: "s", Usage: []session.UsageBucket{
			{Model: "claude-opus-4-7", Minute: at(c.before), Input: 1, Calls: 1},
			{Model: "claude-opus-4-7", Minute: at(c.from), Input: 10, Calls: 1},
		}}}
		lines, err := Group(ss, Query{By: ByDay, Loc: loc})
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2 || lines[0].Key != c.day1 || lines[0].Tokens.Input != 1 || lines[1].Key != c.day2 || lines[1].Tokens.Input != 10 {
			t.Errorf("%s, %s and %s: %+v, want %s then %s", c.zone, c.before, c.from, lines, c.day1, c.day2)
		}
	}
}

// TestGroup_WeekMonthBlock: weeks start on Monday in the zone, months
// are calendar months, and a 5-hour block starts at the hour of the
// first call after the last block ended.
func TestGroup_WeekMonthBlock(t *testing.T) {
	m := func(d, h, min int) time.Time { return time.Date(2026, 11, d, h, min, 0, 0, time.UTC) }
	ss := []session.State{{ID: "s", Usage: []session.UsageBucket{
		{Model: "gpt-5.5", Minute: m(29, 23, 50), Input: 1}, // Sunday
		{Model: "gpt-5.5", Minute: m(30, 0, 10), Input: 2},  // Monday, 20 minutes later
		{Model: "gpt-5.5", Minute: m(30, 3, 59), Input: 4},  // still the block of 23:00 (to 04:00)
		{Model: "gpt-5.5", Minute: m(30, 6, 1), Input: 8},   // a new block at 06:00
	}}}
	week, _ := Group(ss, Query{By: ByWeek})
	if len(week) != 2 || week[0].Key != "2026-11-23" || week[0].Tokens.Input != 1 || week[1].Key != "2026-11-30" || week[1].Tokens.Input != 14 {
		t.Errorf("weeks %+v", week)
	}
	month, _ := Group(ss, Query{By: ByMonth})
	if len(month) != 1 || month[0].Key != "2026-11" || month[0].Tokens.Input != 15 {
		t.Errorf("months %+v", month)
	}
	blocks, _ := Group(ss, Query{By: ByBlock})
	if len(blocks) != 2 || blocks[0].Key != "2026-11-29T23:00:00Z" || blocks[0].Tokens.Input != 7 || blocks[1].Key != "2026-11-30T06:00:00Z" || blocks[1].Tokens.Input != 8 {
		t.Errorf("blocks %+v", blocks)
	}
	// The blocks are the same in every zone (they start at a UTC hour);
	// a zone only shows them: +5:45, -3:30 and +5:30 cut no hour alike.
	for _, zone := range []string{"Asia/Kathmandu", "America/St_Johns", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skip(err)
		}
		zb, _ := Group(ss, Query{By: ByBlock, Loc: loc})
		if len(zb) != len(blocks) {
			t.Fatalf("%s: %d blocks, want %d", zone, len(zb), len(blocks))
		}
		for i := range zb {
			at, err := time.Parse(time.RFC3339, zb[i].Key)
			if err != nil || !at.Equal(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC).Add(time.Duration(i)*7*time.Hour)) || zb[i].Tokens != blocks[i].Tokens {
				t.Errorf("%s: block %d %+v, want the UTC block %+v", zone, i, zb[i], blocks[i])
			}
		}
	}
}

// TestPrices_Billed prices what the vendor bills: one-hour cache writes
// at 2x input, five-minute ones at 1.25x, a call over 200K input tokens
// at Sonnet 4.5's long-context rates, a service tier at its own rates or
// none, and gpt-5.6-sol at its promotional price only until 2026-11-21;
// --explain names the entry and tier of each part.
func TestPrices_Billed(t *testing.T) {
	tb := Shipped()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	ss := []session.State{{ID: "s", Usage: []session.UsageBucket{
		{Model: "claude-opus-4-7", Minute: day, CacheWrite: 1_000_000, CacheWrite1h: 600_000, Calls: 1},
		{Model: "claude-sonnet-4-5-20250929", Minute: day, Above: 200_000, Input: 1_000_000, Calls: 1},
		{Model: "gpt-5.5", Minute: day, Tier: "priority", Input: 1_000_000, Calls: 1},
		{Model: "gpt-5.6-sol", Minute: day, Input: 1_000_000, Calls: 1},
		{Model: "gpt-5.6-sol", Minute: day.AddDate(0, 0, 2), Input: 1_000_000, Calls: 1},
	}}}
	rep, err := NewReport(ss, Query{By: ByModel, Explain: true}, tb, day)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"claude-opus-4-7":            0.4*6.25 + 0.6*10,
		"claude-sonnet-4-5-20250929": 6,
		"gpt-5.5":                    10,
		"gpt-5.6-sol":                4 + 5,
	}
	for _, l := range rep.Lines {
		if l.Cost == nil || math.Abs(*l.Cost-want[l.Model]) > 1e-9 {
			t.Errorf("%s: %v, want $%g", l.Model, l.Cost, want[l.Model])
		}
		if len(l.Explain) == 0 {
			t.Errorf("%s: nothing explained", l.Model)
		}
	}
	var b strings.Builder
	rep.WriteText(&b, day)
	for _, w := range []string{"entry gpt-5.6-sol (openai-gpt-5.6-sol", "entry gpt-5.6-sol (litellm", "priority tier", "input over 200000 tokens"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("--explain lacks %q:\n%s", w, b.String())
		}
	}
	ss[0].Usage = []session.UsageBucket{{Model: "claude-opus-4-7", Minute: day, Tier: "priority", Input: 5, Calls: 1}}
	rep, _ = NewReport(ss, Query{By: ByModel}, tb, day)
	if rep.Lines[0].Cost != nil || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], `service tier "priority"`) {
		t.Errorf("a tier with no price: %+v %v", rep.Lines[0].Cost, rep.Warnings)
	}
}

// TestReport_CheckAndContext: --check passes a session whose calls add up
// to the agent's own running total within 1% and fails one that does
// not; with a session asked for, the last call's context is measured
// against the model's window from the table.
func TestReport_CheckAndContext(t *testing.T) {
	at := hour(23, 10)
	ss := []session.State{
		{ID: "even", Usage: []session.UsageBucket{{Model: "gpt-5.5", Minute: at, Input: 900, CacheRead: 100, Output: 100, Calls: 2}},
			AgentTotal: &events.Usage{Input: 905, CacheRead: 100, Output: 100},
			Context:    &session.ContextUse{Model: "gpt-5.5", Tokens: 105_000, At: at}},
		{ID: "off", Usage: []session.UsageBucket{{Model: "gpt-5.5", Minute: at, Input: 1100, Output: 100, Calls: 2}},
			AgentTotal: &events.Usage{Input: 1000, Output: 100}},
		{ID: "claude", Usage: []session.UsageBucket{{Model: "claude-opus-4-7", Minute: at, Input: 1, Calls: 1}}},
	}
	rep, err := NewReport(ss, Query{Check: true}, Shipped(), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 2 || !rep.Checks[0].OK || rep.Checks[1].OK || !rep.CheckFailed() || math.Abs(rep.Checks[1].Diff-100.0/11) > 1e-9 {
		t.Fatalf("checks %+v", rep.Checks)
	}
	var b strings.Builder
	rep.WriteText(&b, at)
	if !strings.Contains(b.String(), "off: DIFFERS: input 1100 (agent 1000), output 100 (agent 100), 9.09% apart") {
		t.Errorf("the check is not shown:\n%s", b.String())
	}
	rep, _ = NewReport(ss, Query{Session: "even"}, Shipped(), at)
	if rep.Context == nil || rep.Context.Window != 1_050_000 || math.Abs(rep.Context.Percent-10) > 1e-9 {
		t.Fatalf("context %+v", rep.Context)
	}
}

// TestSubsetLiteLLM keeps the anthropic and openai chat entries of
// LiteLLM's table, their price fields only, and reads them as prices per
// million tokens; the refresh tool's output of the shipped subset is the
// shipped subset.
func TestSubsetLiteLLM(t *testing.T) {
	full := `{
 "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "one of"},
 "claude-x-1": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, "cache_creation_input_token_cost": 3.75e-06,
   "cache_creation_input_token_cost_above_1hr": 6e-06, "cache_read_input_token_cost": 3e-07, "input_cost_per_token_above_200k_tokens": 6e-06,
   "litellm_provider": "anthropic", "max_input_tokens": 1000000, "mode": "chat", "supports_vision": true},
 "bedrock/claude-x-1": {"input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06, "litellm_provider": "bedrock", "mode": "chat"},
 "gpt-image-9": {"input_cost_per_token": 5e-06, "output_cost_per_token": 1e-05, "litellm_provider": "openai", "mode": "image_generation"},
 "gpt-x": {"input_cost_per_token": 1e-06, "output_cost_per_token": 8e-06, "input_cost_per_token_priority": 2e-06, "litellm_provider": "openai", "mode": "responses"}
}`
	b, err := SubsetLiteLLM([]byte(full), "litellm 9.9.9", "2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	info, models, err := ParseLiteLLM(b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "litellm 9.9.9" || info.Read != "2026-12-01" || len(models) != 2 || strings.Contains(string(b), "supports_vision") {
		t.Fatalf("%+v %v\n%s", info, models, b)
	}
	c := models["claude-x-1"]
	if c.Input != 3 || c.Output != 15 || c.CacheWrite != 3.75 || c.CacheWrite1h == nil || *c.CacheWrite1h != 6 || c.CacheRead != 0.3 || c.ContextWindow != 1_000_000 || *c.Above["200000"].Input != 6 {
		t.Errorf("claude-x-1 %+v", c)
	}
	if g := models["gpt-x"]; g.CacheWrite != 1 || g.CacheRead != 1 || *g.Tiers["priority"].Input != 2 {
		t.Errorf("gpt-x %+v: cache writes and reads are input where no price is given", g)
	}
	if _, err := SubsetLiteLLM([]byte(`{"x":`), "v", "2026-12-01"); err == nil {
		t.Error("a broken table accepted")
	}
	// The shipped subset, put through the tool again, is itself.
	var f struct {
		Version string                     `json:"version"`
		Read    string                     `json:"read"`
		Models  map[string]json.RawMessage `json:"models"`
	}
	if err := json.Unmarshal(shippedLiteLLM, &f); err != nil {
		t.Fatal(err)
	}
	whole, _ := json.Marshal(f.Models)
	again, err := SubsetLiteLLM(whole, f.Version, f.Read)
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := ParseLiteLLM(again)
	_, s, _ := ParseLiteLLM(shippedLiteLLM)
	if len(a) != len(s) || len(s) < 20 {
		t.Errorf("refreshed %d entries, shipped %d", len(a), len(s))
	}
}

// A report whose lines all lack a price says so in its total, never $0.
func TestReport_TotalWithNoPrice(t *testing.T) {
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	ss := []session.State{{ID: "s", Usage: []session.UsageBucket{{Model: "gpt-weird-9", Minute: day, Input: 100, Calls: 1}}}}
	rep, err := NewReport(ss, Query{By: ByModel}, Shipped(), day)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.TotalText(); !strings.HasPrefix(got, "total cost: no price;") {
		t.Errorf("total %q", got)
	}
}

// usage --check checks only the sessions with usage in the period a
// report covers (--since), each over its whole spend.
func TestReport_CheckSince(t *testing.T) {
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	total := &events.Usage{Input: 100}
	ss := []session.State{
		{ID: "old", AgentTotal: total, Usage: []session.UsageBucket{{Model: "gpt-5.5", Minute: day.AddDate(0, 0, -10), Input: 100, Calls: 1}}},
		{ID: "new", AgentTotal: total, Usage: []session.UsageBucket{{Model: "gpt-5.5", Minute: day, Input: 100, Calls: 1}}},
	}
	rep, err := NewReport(ss, Query{By: BySession, Check: true, Since: day.AddDate(0, 0, -1)}, Shipped(), day)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 1 || rep.Checks[0].Session != "new" || !rep.Checks[0].OK {
		t.Errorf("checks %+v, want only the session with usage since", rep.Checks)
	}
}
