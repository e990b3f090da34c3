package httpapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/reducers/session"
)

const (
	usageParent = "5e551011-0000-4000-8000-000000000077"
	usageAgent  = "a77"
)

// usageFixture writes a Claude Code project: a session that spent on a
// priced model and on one the price table does not name, over two days,
// and a subagent of it that spent on a third.
func usageFixture(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "projects", "-home-user-app")
	if err := os.MkdirAll(filepath.Join(dir, usageParent, "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	asst := func(uuid, parent, at, msg, model string, in, out, cw, cr int) string {
		return fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"sessionId":%q,"cwd":"/home/user/app","timestamp":%q,"message":{"id":%q,"model":%q,"role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d}}}`+"\n",
			uuid, parent, usageParent, at, msg, model, in, out, cw, cr)
	}
	user := func(uuid, parent, at string) string {
		return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%q,"sessionId":%q,"cwd":"/home/user/app","timestamp":%q,"message":{"role":"user","content":"go on"}}`+"\n", uuid, parent, usageParent, at)
	}
	main := user("u1", "", "2026-05-24T23:30:00.000Z") +
		asst("a1", "u1", "2026-05-24T23:30:02.000Z", "msg_1", "claude-opus-4-7", 6, 115, 12819, 16742) +
		asst("a2", "a1", "2026-05-24T23:30:03.000Z", "msg_1", "claude-opus-4-7", 6, 115, 12819, 16742) + // the same message again: counted once
		user("u2", "a2", "2026-05-25T00:10:00.000Z") +
		asst("a3", "u2", "2026-05-25T00:10:02.000Z", "msg_2", "mystery-9", 10, 20, 0, 0) +
		asst("a4", "a3", "2026-05-25T00:11:02.000Z", "msg_3", "claude-opus-4-7", 3, 50, 0, 30000)
	sub := strings.ReplaceAll(user("s1", "", "2026-05-25T00:10:30.000Z")+
		asst("s2", "s1", "2026-05-25T00:10:40.000Z", "msg_s", "claude-haiku-4-5-20251001", 900, 300, 2000, 5000),
		`"type":`, `"isSidechain":true,"agentId":"`+usageAgent+`","type":`)
	if err := os.WriteFile(filepath.Join(dir, usageParent+".jsonl"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, usageParent, "subagents", "agent-"+usageAgent+".jsonl"), []byte(sub), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(dir)
}

// importUsage imports the fixture, and the shared corpus's Claude Code
// and Codex recordings when they are there, and waits for the projection.
func importUsage(t *testing.T, e *env) {
	t.Helper()
	ctx := t.Context()
	paths := []string{usageFixture(t)}
	root, _ := filepath.Abs("../../../shared/corpus")
	if _, err := os.Stat(root); err == nil {
		paths = append(paths, filepath.Join(root, "claude"))
	} else {
		t.Logf("no shared corpus at %s: the fixture only", root)
	}
	ts, err := claude.Discover(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if strings.Contains(tr.Path, "/subagents/") || strings.HasPrefix(tr.Path, root) && filepath.Base(tr.Path) != "transcript.jsonl" {
			continue // subagents come with their parent; the corpus's expected.jsonl are specs
		}
		if _, err := e.ing.ImportTranscript(ctx, tr, nil); err != nil {
			t.Fatalf("%s: %v", tr.Path, err)
		}
	}
	rollouts, _ := filepath.Glob(filepath.Join(root, "codex", "*", "transcript.jsonl"))
	if len(rollouts) > 0 {
		cx, err := codex.NewIngester(codex.IngestConfig{Log: e.log, Reg: e.reg, Host: "test", SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rollouts {
			if _, err := cx.ImportFile(ctx, p, nil); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
	}
	last, err := e.log.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.waitSeq(last)
}

// TestUsage_API: GET /v1/usage answers what `logbook usage --json`
// prints (usage.NewReport over the same sessions and prices), a session's
// row carries its spend and its subagents' apart, and bad parameters are
// refused naming the parameter.
func TestUsage_API(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	importUsage(t, e)
	ss, err := e.store.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"day", "model", "session", "project"} {
		var got usage.Report
		e.get("/v1/usage?by="+by, 200, &got)
		want, err := usage.NewReport(ss, usage.Query{By: by}, usage.Shipped(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		want.Limits, got.Limits = nil, nil // read as of now: compared on the board
		if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(usage.Line{})); d != "" {
			t.Errorf("by %s (-want +got):\n%s", by, d)
		}
	}
	// 23:30 UTC on the 24th is the 25th in Tokyo: the fixture's opus
	// tokens of that hour move to the 25th, and since cuts at Tokyo's
	// midnight.
	var utc, tokyo usage.Report
	e.get("/v1/usage?by=day&since=2026-05-24", 200, &utc)
	e.get("/v1/usage?by=day&tz=Asia/Tokyo&since=2026-05-25", 200, &tokyo)
	find := func(r usage.Report, day, model string) *usage.PricedLine {
		for i, l := range r.Lines {
			if l.Key == day && l.Model == model {
				return &r.Lines[i]
			}
		}
		return nil
	}
	if find(utc, "2026-05-24", "claude-opus-4-7") == nil || find(tokyo, "2026-05-24", "claude-opus-4-7") != nil || find(tokyo, "2026-05-25", "claude-opus-4-7") == nil {
		t.Errorf("days by zone: UTC %+v, Tokyo %+v", utc.Lines, tokyo.Lines)
	}
	for _, l := range tokyo.Lines {
		if l.Key < "2026-05-25" {
			t.Errorf("in Tokyo from 2026-05-25: a line of %s", l.Key)
		}
	}
	var one usage.Report
	e.get("/v1/usage?by=session&session="+usageParent, 200, &one)
	var own, kids bool
	for _, l := range one.Lines {
		own = own || l.Key == usageParent
		if l.Tokens.Total() == 0 {
			t.Errorf("a line of zeros: %+v", l)
		}
		kids = kids || l.Key == "agent-"+usageAgent && l.Parent == usageParent
		if l.Model == "mystery-9" && l.Cost != nil {
			t.Errorf("an unknown model was priced: %+v", l)
		}
	}
	if !own || !kids {
		t.Errorf("by session of %s: %+v", usageParent, one.Lines)
	}
	if len(one.Subagents) != 1 || one.Subagents[0].Parent != usageParent || one.Subagents[0].Tokens.Total() != 8200 {
		t.Errorf("the subagents' sum of %s: %+v, want 8200 tokens", usageParent, one.Subagents)
	}

	var rep struct {
		Session session.State `json:"session"`
		Usage   SessionUsage  `json:"usage"`
	}
	e.get("/v1/sessions/"+usageParent, 200, &rep)
	kid, _ := e.store.Session("agent-" + usageAgent)
	if w := usage.SpendOf([]session.State{rep.Session}, usage.Shipped()); !cmp.Equal(rep.Usage.Own, w) || !strings.Contains(w.Text, "no price for mystery-9") {
		t.Errorf("own spend %+v, want %+v", rep.Usage.Own, w)
	}
	if w := usage.SpendOf([]session.State{kid}, usage.Shipped()); !cmp.Equal(rep.Usage.Subagents, w) || w.Tokens.Total() != 8200 {
		t.Errorf("subagents' spend %+v, want %+v (8200 tokens)", rep.Usage.Subagents, w)
	}

	for q, word := range map[string]string{"by=fortnight": "fortnight", "tz=Mars/Olympus": "Mars/Olympus", "since=yesterday": "yesterday", "session=a%20b": "session",
		// Out of range: refused, never a 500 or a silent everything.
		"since=99999999999999d": "too far back", "since=99999999d": "too far back", "since=9999999999h": "9999999999h", "since=0000-01-01": "year 1",
		"tz=../../etc/passwd": "not a time zone",
		// Given empty: refused, never "no filter".
		"by=": "by is given empty", "session=": "session is given empty", "since=": "since is given empty", "tz=": "tz is given empty"} {
		var er struct{ Error string }
		e.get("/v1/usage?"+q, 400, &er)
		if !strings.Contains(er.Error, word) {
			t.Errorf("%s: error %q does not name %q", q, er.Error, word)
		}
		if strings.Contains(er.Error, "--") || strings.Contains(er.Error, "time:") {
			t.Errorf("%s: error %q names a command-line flag or Go's own words", q, er.Error)
		}
	}
	var er struct{ Error string }
	e.get("/v1/usage?session=zzz", 404, &er)
	if !strings.Contains(er.Error, "zzz") {
		t.Errorf("session=zzz: error %q does not name it", er.Error)
	}
}

// TestBoard_UsageInABrowser opens the board's usage view in headless
// Chromium and reads what a person sees: every cell of the table by day,
// model and session, the total line and the plan limits are what
// `logbook usage` prints for the same log (usage.Report's Columns,
// TotalText and LimitColumns, which the command line writes), and a
// session's page shows its spend and its subagents' as `session show`
// does.
func TestBoard_UsageInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	importUsage(t, e)
	ss, err := e.store.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	cells := func(sel string) [][]string {
		out, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('`+sel+` tr')].map(tr => [...tr.children].map(c => c.textContent))`))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i, by := range []string{"day", "model", "session"} {
		var err error
		if i == 0 {
			err = chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/usage/"+by))
		} else {
			_, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = "#/usage/`+by+`"`))
		}
		if err != nil {
			t.Fatal(err)
		}
		until(t, ctx, "the usage view by "+by, `!!document.querySelector('#usage-view[data-by="`+by+`"] #usage-table')`, 10*time.Second)
		rep, err := usage.NewReport(ss, usage.Query{By: by}, usage.Shipped(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		head, rows := rep.Columns()
		want := append([][]string{head}, rows...)
		if d := cmp.Diff(want, cells("#usage-table")); d != "" {
			t.Errorf("by %s, the board's table differs from the command line's (-cli +board):\n%s", by, d)
		}
		total, _ := chromedp.Run(ctx, chromedp.TextContent("#usage-total"))
		if total != rep.TotalText() {
			t.Errorf("by %s: total %q, the command line's %q", by, total, rep.TotalText())
		}
		if by == "day" {
			screenshot(t, ctx, "usage.png")
			lh, lrows := rep.LimitColumns(time.Now())
			got := cells("#limits-table")
			if len(lrows) == 0 && len(got) == 0 {
				continue
			}
			if len(got) != len(lrows)+1 || !cmp.Equal(got[0], lh) {
				t.Fatalf("plan limits: board %q, command line %q", got, lrows)
			}
			for j, r := range lrows {
				// The age in MEASURED moves on between the two reads.
				r[4], got[j+1][4] = strings.Split(r[4], " (")[0], strings.Split(got[j+1][4], " (")[0]
				if !cmp.Equal(r, got[j+1]) {
					t.Errorf("plan limit %d: board %q, command line %q", j, got[j+1], r)
				}
			}
		}
	}

	// Days cut in another zone, as `logbook usage --by day --tz Asia/Tokyo`.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = "#/usage/day?tz=Asia/Tokyo"`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the usage view in Tokyo", `!!document.querySelector('#usage-view[data-by="day"][data-tz="Asia/Tokyo"] #usage-table')`, 10*time.Second)
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	rep, err := usage.NewReport(ss, usage.Query{By: "day", Loc: tokyo}, usage.Shipped(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	head, rows := rep.Columns()
	if d := cmp.Diff(append([][]string{head}, rows...), cells("#usage-table")); d != "" {
		t.Errorf("by day in Tokyo, the board's table differs from the command line's (-cli +board):\n%s", d)
	}

	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = "#/s/`+usageParent+`"`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the session's usage", `!!document.querySelector('#session[data-id="`+usageParent+`"] #usage-own')`, 10*time.Second)
	st, _ := e.store.Session(usageParent)
	kids, _ := e.store.Children(usageParent)
	own, _ := chromedp.Run(ctx, chromedp.TextContent("#usage-own"))
	subs, _ := chromedp.Run(ctx, chromedp.TextContent("#usage-subagents"))
	if w := usage.SpendOf([]session.State{st}, usage.Shipped()).Text; own != w {
		t.Errorf("the page shows tokens %q, session show %q", own, w)
	}
	if w := usage.SpendOf(kids, usage.Shipped()).Text; subs != w || w == "" {
		t.Errorf("the page shows subagents' tokens %q, session show %q", subs, w)
	}
	screenshot(t, ctx, "session-usage.png")
}

// TestUsage_BadPrices: a price table that does not load (a bad
// prices.json) costs a session's view its cost only: the session and its
// tokens show, and price_error says why; the usage view, which is
// nothing but prices, is refused naming the file.
func TestUsage_BadPrices(t *testing.T) {
	t.Parallel()
	bad := errors.New("price table /data/prices.json: line 2, column 30: \"models.input\" is a JSON string, want float64")
	e := newEnv(t, func(s *envSettings) {
		s.Prices = func() (*usage.Table, error) { return nil, bad }
	})
	importUsage(t, e)
	var rep struct {
		Session session.State `json:"session"`
		Usage   SessionUsage  `json:"usage"`
	}
	e.get("/v1/sessions/"+usageParent, 200, &rep)
	if rep.Session.ID != usageParent || rep.Usage.Own.Tokens.Total() == 0 || rep.Usage.Own.Cost != nil ||
		!strings.Contains(rep.Usage.Own.Text, "cost not shown") || rep.Usage.PriceError != "costs not shown: "+bad.Error() {
		t.Errorf("session with a bad price table: %+v", rep)
	}
	var er struct{ Error string }
	e.get("/v1/usage", 500, &er)
	if !strings.Contains(er.Error, "prices.json: line 2, column 30") {
		t.Errorf("usage with a bad price table: %q", er.Error)
	}
	// The list: tokens, no cost, and why.
	var page sessionsPage
	e.get("/v1/sessions?limit=1000", 200, &page)
	if page.PriceError != "costs not shown: "+bad.Error() {
		t.Errorf("the list's price_error %q", page.PriceError)
	}
	for _, s := range page.Sessions {
		if s.ID == usageParent && (s.Tokens == 0 || s.Cost != nil) {
			t.Errorf("%s in the list with a bad price table: tokens %d, cost %v", s.ID, s.Tokens, s.Cost)
		}
	}
}

// TestUsage_HugePrices: a prices.json with a price so large that costs
// would be +Inf is refused at the parser, so the session view answers
// 200 without a cost (never 500 "unsupported value: +Inf") and the
// usage view is refused naming the model and the field.
func TestUsage_HugePrices(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{"version":2,"models":{"claude-opus-4-7":{"input":1e308,"output":1e308,"cache_write":1e308,"cache_read":1e308}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(s *envSettings) {
		s.Prices = func() (*usage.Table, error) { return usage.LoadTable(path) }
	})
	importUsage(t, e)
	var rep struct {
		Session session.State `json:"session"`
		Usage   SessionUsage  `json:"usage"`
	}
	e.get("/v1/sessions/"+usageParent, 200, &rep)
	if rep.Session.ID != usageParent || rep.Usage.Own.Cost != nil ||
		!strings.Contains(rep.Usage.PriceError, `model "claude-opus-4-7": input 1e+308 is over the bound`) {
		t.Errorf("session with a huge price: %+v", rep)
	}
	var er struct{ Error string }
	e.get("/v1/usage", 500, &er)
	if !strings.Contains(er.Error, path) || !strings.Contains(er.Error, `model "claude-opus-4-7": input 1e+308`) || strings.Contains(er.Error, "Inf") {
		t.Errorf("usage with a huge price: %q", er.Error)
	}
}
