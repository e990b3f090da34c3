package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// hostile is a title and a tool input that are HTML if a page ever
// took them for it.
const hostile = `<img src=x onerror="window.__pwned=1"><b>bold</b>`

// transcript writes a Claude Code transcript of session id under dir: a
// prompt at at, and unless open, the answer two seconds later (the
// session is then ready; open leaves its turn working), with title as
// its custom title when not "".
func transcript(t *testing.T, dir, id string, at time.Time, open bool, title string) {
	t.Helper()
	ts := func(d time.Duration) string { return at.Add(d).UTC().Format("2006-01-02T15:04:05.000Z") }
	b := fmt.Sprintf(`{"type":"user","uuid":"%[1]s-u","parentUuid":"","sessionId":%[1]q,"cwd":"/home/user/list","timestamp":%[2]q,"message":{"role":"user","content":"go"}}`+"\n", id, ts(0))
	if !open {
		b += fmt.Sprintf(`{"type":"assistant","uuid":"%[1]s-a","parentUuid":"%[1]s-u","sessionId":%[1]q,"cwd":"/home/user/list","timestamp":%[2]q,"message":{"id":"msg-%[1]s","model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`+"\n", id, ts(2*time.Second))
	}
	if title != "" {
		b += fmt.Sprintf(`{"type":"custom-title","customTitle":%q,"sessionId":%q}`+"\n", title, id)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// importDir imports every transcript under dir and waits for the
// projection.
func importDir(t *testing.T, e *env, dir string) {
	t.Helper()
	ts, err := claude.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if strings.Contains(tr.Path, "/subagents/") {
			continue
		}
		if _, err := e.ing.ImportTranscript(t.Context(), tr, nil); err != nil {
			t.Fatalf("%s: %v", tr.Path, err)
		}
	}
	last, err := e.log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.waitSeq(last)
}

// evaluate returns the value of the JavaScript expression expr.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestBoard_ListInABrowser reads the board's session list in headless
// Chromium: ready sessions the most recently heard from first (today's
// before months-old imports), each row's cost as the session's own
// spend priced as `session show` prices it, pending rows naming the tool,
// a short redacted action and a review's remaining budget, a working
// session not heard from for minutes marked "quiet for …" before any
// stale mark, hostile titles and inputs shown as text, and a narrow
// window with nothing wider than it.
func TestBoard_ListInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "projects", "-home-user-list")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := []string{sid(101), sid(102), sid(103)}
	transcript(t, dir, old[0], now.AddDate(0, -3, 0), false, "")
	transcript(t, dir, old[1], now.AddDate(0, 0, -2), false, hostile)
	transcript(t, dir, old[2], now.AddDate(-1, 0, 0), false, "")
	quiet := sid(104)
	transcript(t, dir, quiet, now.Add(-5*time.Minute), true, "")
	importDir(t, e, dir)
	importDir(t, e, usageFixture(t))
	// Today's: one ready by hooks, one waiting on a dialog whose command
	// holds a secret and markup, one on a review of the gate.
	today, dialog, review := sid(105), sid(106), sid(107)
	e.prompt(today, "p")
	e.stop(today)
	e.prompt(dialog, "p")
	e.hook(dialog, "PermissionRequest", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{
		"command": "curl -H 'Authorization: Bearer ghp_0123456789abcdefghijABCDEFGHIJ012345' " + hostile + " https://example.com/" + strings.Repeat("x", 200)}})
	e.waitSeq(e.prompt(review, "p"))
	verdict := e.gateReview(review, "toolu_push")
	defer func() {
		e.do("POST", "/v1/reviews/toolu_push", `{"session":"`+review+`","verdict":"deny","reason":"done looking","by":"alice"}`, nil, 200, nil)
		<-verdict
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the list and the pending decisions", row(today, "group-ready", "ready")+`&&!!document.querySelector('#pending-list li[data-kind="review"] .budget')&&!!document.querySelector('#pending-list li[data-id="`+dialog+`"]')`, 20*time.Second)

	// Ready: the most recently heard from first.
	ss, err := e.store.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	var ready []session.Summary
	for _, s := range ss {
		if s.Phase == events.PhaseReady && s.Parent == "" {
			ready = append(ready, session.Summarize(s))
		}
	}
	slices.SortFunc(ready, func(a, b session.Summary) int {
		return cmp.Or(b.LastActivity().Compare(a.LastActivity()), strings.Compare(a.ID, b.ID))
	})
	var want []string
	for _, s := range ready {
		want = append(want, s.ID)
	}
	got := evaluate[[]string](t, ctx, `[...document.querySelectorAll('#group-ready > ol > li')].map(li => li.dataset.id)`)
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("ready rows (-want +got):\n%s", d)
	}
	if len(got) < 5 || got[0] != today || got[len(got)-1] != old[2] {
		t.Errorf("ready rows %v: want today's %s first, the year-old %s last", got, today, old[2])
	}

	// Costs: each row's is its own spend, as `session show` prices it.
	for _, id := range []string{usageParent, old[0], "agent-" + usageAgent} {
		st, err := e.store.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		sp := usage.SpendOf([]session.State{st}, usage.Shipped())
		if sp.Cost == nil {
			t.Fatalf("%s has no cost: %+v", id, sp)
		}
		w := fmt.Sprintf("$%.2f", *sp.Cost)
		if *sp.Cost < 0.005 {
			w = "<$0.01"
		}
		if len(sp.Unpriced) > 0 {
			w += "+"
		}
		sel := `document.querySelector('a.row[data-id="` + id + `"] .cost')`
		if id == "agent-"+usageAgent {
			evaluate[bool](t, ctx, `document.querySelector('li[data-id="`+usageParent+`"] details').open = true`)
		}
		text := evaluate[string](t, ctx, sel+`.textContent`)
		title := evaluate[string](t, ctx, sel+`.title`)
		if text != w || !strings.HasPrefix(title, fmt.Sprintf("$%.4f for %d tokens", *sp.Cost, sp.Tokens.Total())) {
			t.Errorf("%s's cost shows %q (%q), session show's %s", id, text, title, sp.Text)
		}
	}

	// Pending: the tool and a short redacted action, a review's budget.
	rv := evaluate[string](t, ctx, `document.querySelector('#pending-list li[data-kind="review"]').innerText`)
	if !strings.Contains(rv, "Bash") || !strings.Contains(rv, "git push origin main") || !strings.Contains(rv, "left") {
		t.Errorf("the review's row: %q; want the tool, the action and the budget left", rv)
	}
	dl := evaluate[string](t, ctx, `document.querySelector('#pending-list li[data-id="`+dialog+`"] .action').textContent`)
	if !strings.HasPrefix(dl, "curl -H") || strings.Contains(dl, "ghp_") || !strings.HasSuffix(dl, "…") || len(dl) > ActionCut {
		t.Errorf("the dialog's action %q: want it redacted and cut to %d bytes", dl, ActionCut)
	}
	waitRow := evaluate[string](t, ctx, `document.querySelector('#pending-list li[data-id="`+dialog+`"]').innerText`)
	if !strings.Contains(waitRow, "Bash") {
		t.Errorf("the dialog's row %q does not name the tool", waitRow)
	}
	if l := evaluate[string](t, ctx, `document.querySelector('#pending-list li[data-id="`+dialog+`"] .phase').textContent`); l != "permission" {
		t.Errorf("the dialog's row is labelled %q, want permission", l)
	}

	// Quiet: a working session not heard from for five minutes.
	until(t, ctx, "the quiet session", row(quiet, "group-working", "working"), 5*time.Second)
	q := evaluate[string](t, ctx, `(a => a.classList.contains("quiet") ? a.querySelector(".quiet-for").textContent : "not quiet")(document.querySelector('a.row[data-id="`+quiet+`"]'))`)
	if q != "quiet for 5m" && q != "quiet for 6m" {
		t.Errorf("the session heard from 5 minutes ago: %q, want quiet for 5m", q)
	}
	if evaluate[bool](t, ctx, `document.querySelector('a.row[data-id="`+review+`"]').classList.contains("quiet")`) {
		t.Errorf("a session heard from now looks quiet")
	}

	// Hostile text stays text.
	shown := evaluate[string](t, ctx, `document.querySelector('a.row[data-id="`+old[1]+`"] .what').textContent`)
	if !strings.Contains(shown, hostile) {
		t.Errorf("the hostile title shows as %q", shown)
	}
	if n := evaluate[int](t, ctx, `document.querySelectorAll('#board img, #board b').length + (window.__pwned ? 100 : 0)`); n != 0 {
		t.Errorf("a title or tool input became HTML (%d elements)", n)
	}
	screenshot(t, ctx, "list.png")

	// Narrow: nothing is wider than the window.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 800)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the list laid out narrow", `innerWidth === 400`, 5*time.Second)
	if w := evaluate[int](t, ctx, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("at 400px the page is %dpx wide", w)
	}
	screenshot(t, ctx, "list-narrow.png")
}

// streamBlocker stands between the browser and the server and keeps the
// stream from it: "refused" answers 502, "held" never answers, and
// "buffered" answers its headers and then nothing (a proxy that buffers
// server-sent events).
func streamBlocker(t *testing.T, target, how string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	mux := http.NewServeMux()
	mux.Handle("/", rp)
	mux.HandleFunc("/v1/stream", func(w http.ResponseWriter, r *http.Request) {
		switch how {
		case "refused":
			http.Error(w, "no streams through this proxy", http.StatusBadGateway)
		case "held":
			<-r.Context().Done()
		case "buffered":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// TestBoard_PollsWhenTheStreamIsBlocked serves the board through a proxy
// that refuses, holds or buffers the stream: the first paint comes from
// the JSON API all the same, the header says "live updates unavailable,
// polling every 5s", and sessions that start and wait afterwards show
// without a reload.
func TestBoard_PollsWhenTheStreamIsBlocked(t *testing.T) {
	t.Parallel() // its cases run beside the package's other tests, not before them
	for _, how := range []string{"refused", "held", "buffered"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // mostly the page's timers: a browser and server each
			ctx := browser(t)
			e := newEnv(t)
			e.waitSeq(e.prompt(sid(1), "p"))
			addr := streamBlocker(t, e.http.URL, how)
			if err := chromedp.Do(ctx, chromedp.Navigate(addr+"/")); err != nil {
				t.Fatal(err)
			}
			until(t, ctx, "the first paint", row(sid(1), "group-working", "working"), 20*time.Second)
			evaluate[bool](t, ctx, `window.__sameLoad = true`)
			if how == "buffered" {
				// It opens: only what it fails to deliver gives it away.
				until(t, ctx, "the stream open", `document.getElementById("conn").classList.contains("on")`, 20*time.Second)
				e.prompt(sid(9), "p")
			}
			notice := `document.getElementById("conn").textContent === "live updates unavailable, polling every 5s"`
			until(t, ctx, "the polling notice", notice, 60*time.Second)
			e.prompt(sid(2), "p")
			e.permission(sid(3), "Read")
			until(t, ctx, "sessions of after the page loaded", row(sid(2), "group-working", "working")+"&&"+row(sid(3), "group-waiting", "waiting")+
				`&&!!document.querySelector('#pending-list li[data-id="`+sid(3)+`"]')`, 60*time.Second)
			if !evaluate[bool](t, ctx, `window.__sameLoad === true && `+notice) {
				t.Errorf("the page reloaded or stopped saying it polls")
			}
			screenshot(t, ctx, "polling-"+how+".png")
		})
	}
}
