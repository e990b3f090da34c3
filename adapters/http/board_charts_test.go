package httpapi

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/usage"
)

// limitsRollout writes a Codex rollout of one reading of two plan-limit
// windows, measured at at: the five-hour one 42.5% used and resetting
// at resets, the weekly one 91% used and reset at reset (past).
func limitsRollout(t *testing.T, at, resets, reset time.Time) string {
	ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
	b := fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":"019e0000-0000-7000-8000-00000000c0de","cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.130.0","source":"cli"}}`+"\n", ts) +
		fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","primary":{"used_percent":42.5,"window_minutes":300,"resets_at":%d},"secondary":{"used_percent":91.0,"window_minutes":10080,"resets_at":%d},"plan_type":"plus"}}}`+"\n", ts, resets.Unix(), reset.Unix())
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBoard_SpendCharts opens the usage view in headless Chromium over a
// fixture of three models across two days, a subagent, and a reading of
// two plan-limit windows, and reads the charts' numbers: every segment
// of the chart by day (stacked by model) and by session is a line of
// `logbook usage --json --by day|session` (usage.NewReport, which the
// command prints) with its cost and tokens, each day's and session's
// sum is theirs, and each plan-limit bar is a window's reading with its
// reset time.
func TestBoard_SpendCharts(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	importDir(t, e, usageFixture(t))
	now := time.Now()
	cx, err := codex.NewIngester(codex.IngestConfig{Log: e.log, Reg: e.reg, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cx.ImportFile(t.Context(), limitsRollout(t, now.Add(-10*time.Minute), now.Add(90*time.Minute), now.Add(-time.Hour)), nil); err != nil {
		t.Fatal(err)
	}
	last, err := e.log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.waitSeq(last)
	ss, err := e.store.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	report := func(by string) usage.Report {
		rep, err := usage.NewReport(ss, usage.Query{By: by}, usage.Shipped(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	day, sess := report("day"), report("session")
	if len(day.Lines) < 3 || len(day.Limits) != 2 {
		t.Fatalf("the fixture: %d lines by day, %d limits", len(day.Lines), len(day.Limits))
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/usage")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the charts", `!!document.querySelector('#charts #chart-day rect.seg') && !!document.querySelector('#chart-limits g.limit')`, 10*time.Second)
	segs := func(chart string) [][]string {
		return evaluate[[][]string](t, ctx, `[...document.querySelectorAll('#`+chart+` rect.seg')].map(r => [r.dataset.key, r.dataset.model, r.dataset.cost, r.dataset.tokens])`)
	}
	sums := func(chart, group string) [][]string {
		return evaluate[[][]string](t, ctx, `[...document.querySelectorAll('#`+chart+` g.`+group+`, #`+chart+` a.`+group+`')].map(g => [g.dataset.key, g.dataset.sum, g.querySelector("text.sum").textContent])`)
	}
	cost := func(l usage.PricedLine) float64 {
		if l.Cost == nil {
			return 0
		}
		return *l.Cost
	}
	wantSegs := func(lines []usage.PricedLine, keys []string) [][]string {
		var out [][]string
		for _, k := range keys {
			for _, l := range lines {
				if l.Key == k {
					out = append(out, []string{l.Key, l.Model, usage.CostText(l.Cost), fmt.Sprint(l.Tokens.Total())})
				}
			}
		}
		return out
	}
	wantSums := func(lines []usage.PricedLine, keys []string, tokens bool) [][]string {
		var out [][]string
		for _, k := range keys {
			var c float64
			var n int64
			for _, l := range lines {
				if l.Key == k {
					c += cost(l)
					n += l.Tokens.Total()
				}
			}
			if tokens {
				text := fmt.Sprint(n)
				if n >= 1e6 {
					text = fmt.Sprintf("%.1fM", float64(n)/1e6)
				} else if n >= 1e3 {
					text = fmt.Sprintf("%.1fk", float64(n)/1e3)
				}
				out = append(out, []string{k, fmt.Sprint(n), text})
			} else {
				out = append(out, []string{k, fmt.Sprint(c), fmt.Sprintf("$%.2f", c)})
			}
		}
		return out
	}
	var days []string
	for _, l := range day.Lines {
		if len(days) == 0 || days[len(days)-1] != l.Key {
			days = append(days, l.Key)
		}
	}
	if len(days) != 2 {
		t.Fatalf("the fixture spends on %v, want two days", days)
	}
	// Sessions, the most spent first.
	spent := map[string]float64{}
	var keys []string
	for _, l := range sess.Lines {
		if _, ok := spent[l.Key]; !ok {
			keys = append(keys, l.Key)
		}
		spent[l.Key] += cost(l)
	}
	sortByDesc(keys, spent)
	check := func(tokens bool) {
		t.Helper()
		if d := gocmp.Diff(wantSegs(day.Lines, days), segs("chart-day")); d != "" {
			t.Errorf("by day, the chart's segments differ from usage --json's lines (-cli +board):\n%s", d)
		}
		if d := gocmp.Diff(wantSums(day.Lines, days, tokens), sums("chart-day", "day")); d != "" {
			t.Errorf("by day, the chart's sums (-cli +board):\n%s", d)
		}
		if d := gocmp.Diff(wantSegs(sess.Lines, keys), segs("chart-session")); d != "" {
			t.Errorf("by session, the chart's segments differ from usage --json's lines (-cli +board):\n%s", d)
		}
		if d := gocmp.Diff(wantSums(sess.Lines, keys, tokens), sums("chart-session", "session")); d != "" {
			t.Errorf("by session, the chart's sums (-cli +board):\n%s", d)
		}
	}
	check(false)

	var wantLimits [][]string
	for _, l := range day.Limits {
		wantLimits = append(wantLimits, []string{l.Account, l.Window, fmt.Sprintf("%.1f%%", l.UsedPercent), time.Unix(l.ResetsAt, 0).UTC().Format(time.RFC3339), fmt.Sprint(l.Expired)})
	}
	gotLimits := evaluate[[][]string](t, ctx, `[...document.querySelectorAll('#chart-limits g.limit')].map(g => [g.dataset.account, g.dataset.window, g.dataset.used, g.dataset.resets, g.dataset.expired])`)
	if d := gocmp.Diff(wantLimits, gotLimits); d != "" {
		t.Errorf("plan limits (-cli +board):\n%s", d)
	}
	if len(gotLimits) != 2 || gotLimits[0][4] == gotLimits[1][4] {
		t.Errorf("plan limits %v: want one live window and one past its reset", gotLimits)
	}
	resets := evaluate[[]string](t, ctx, `[...document.querySelectorAll('#chart-limits text.resets')].map(t => t.textContent)`)
	for i, l := range day.Limits {
		at := time.Unix(l.ResetsAt, 0).UTC().Format(time.RFC3339)
		if w := "resets " + at; !l.Expired && !containsAll(resets[i], "42.5% used", w, "(in 1h") {
			t.Errorf("the live window's bar says %q, want 42.5%% used and %q", resets[i], w)
		}
		if l.Expired && !containsAll(resets[i], "expired (was 91.0%)", "reset "+at) {
			t.Errorf("the expired window's bar says %q", resets[i])
		}
	}
	screenshot(t, ctx, "charts.png")

	if err := chromedp.Do(ctx, chromedp.Click(`//section[@id="charts"]//button[text()="tokens"]`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the charts in tokens", `!!document.querySelector('#charts[data-metric="tokens"]')`, 5*time.Second)
	check(true)
	screenshot(t, ctx, "charts-tokens.png")
}

// sortByDesc sorts keys by their value in v, the largest first, then by
// key.
func sortByDesc(keys []string, v map[string]float64) {
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(v[b], v[a]), strings.Compare(a, b))
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
