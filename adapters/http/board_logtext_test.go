package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/events"
)

// evilText holds, after a visible word, each character the board must
// show escaped: a right-to-left override, the isolates, the marks,
// ESC (with a colour sequence), BEL, a line separator.
const evilText = "\u202eevil \u2066i\u2067j\u2068k\u2069 \u200el\u200fm \x1b[31mred\x07 a\u2028b"

// evilShown is evilText as the board shows it.
const evilShown = `\u202eevil \u2066i\u2067j\u2068k\u2069 \u200el\u200fm \x1b[31mred\x07 a\u2028b`

// evilCut is evilShown as a tool's input is shown cut to one line (the
// line separator is a space there, as every run of white space).
const evilCut = `\u202eevil \u2066i\u2067j\u2068k\u2069 \u200el\u200fm \x1b[31mred\x07 a b`

// rawText lists, on the page, every text node and shown attribute
// (title, aria-label) holding a character the board must show escaped.
const rawText = `(() => {
  const bad = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
  const out = [];
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
  for (let n = w.currentNode; n; n = w.nextNode()) {
    if (n.nodeType === 3) { if (bad.test(n.data)) out.push(JSON.stringify(n.data)); continue; }
    for (const a of ["title", "aria-label", "placeholder"]) { const v = n.getAttribute(a); if (v && bad.test(v)) out.push(a + "=" + JSON.stringify(v)); }
  }
  return out;
})()`

// TestBoard_LogTextShownEscaped: a session whose title, cwd, tool name
// and tool input, and a review's command, hold bidirectional overrides,
// isolates and marks, ESC, BEL and a line separator is shown with each
// of them escaped (\u202e, \x1b), on the board's rows, the session page,
// its audit table and timeline: no text node or tooltip on the page
// holds one, and the board's own words beside them (the risk label)
// read in order. An audit row of an abandonment links to the state just
// before it, and the stale mark's chain shows the reconciler tick's
// facts. A session URL with an unknown id names it once.
func TestBoard_LogTextShownEscaped(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	const id = "h-evil"
	meta, _ := json.Marshal(map[string]string{"title": "T" + evilText, "cwd": "/home/" + evilText + "/exe.txt"})
	sig := func(m map[string]string) string { b, _ := json.Marshal(m); return string(b) }
	body := func(kind string, sigs ...string) string {
		return fmt.Sprintf(`{"harness":"h","id":%q,"session":%q,"kind":%q,"meta":%s,"signals":[%s]}`, ulid.Make().String(), "evil", kind, meta, strings.Join(sigs, ","))
	}
	e.do("POST", "/v1/observations", body("start", sig(map[string]string{"kind": "session_start", "name": "startup"})), nil, 200, nil)
	e.do("POST", "/v1/observations", body("prompt", sig(map[string]string{"kind": "prompt", "id": "p1"})), nil, 200, nil)
	var rep struct{ Last uint64 }
	e.do("POST", "/v1/observations", body("tool", sig(map[string]string{"kind": "tool_use", "id": "t-evil", "name": "Ba" + evilText, "text": "cat " + evilText + " txt.exe"})), nil, 200, &rep)
	e.waitSeq(rep.Last)
	// Nothing heard for two hours: the reconciler marks the call stale.
	ap, _, err := e.ing.Reconcile(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id}, time.Now().Add(2*time.Hour), time.Minute, nil)
	if err != nil || ap.Last == 0 {
		t.Fatalf("reconcile: %+v %v", ap, err)
	}
	e.waitSeq(ap.Last)
	e.do("POST", "/v1/observations", body("prompt", sig(map[string]string{"kind": "prompt", "id": "p2"})), nil, 200, &rep)
	e.waitSeq(rep.Last)
	// A review of a command holding them, with a risk the policy names.
	g := e.api.cfg.Reviews.(*gate.Gate)
	policy := "review = [\"Bash(git push:*)\"]\n[risk]\n\"Bash(git push:*)\" = \"critical\"\n"
	if err := os.WriteFile(filepath.Join(g.Policies.DataDir, gate.PolicyFile), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"command": "git push origin " + evilText + " txt.exe"})
	go g.Decide(context.Background(), gate.Request{Session: id, Event: gate.EventPreToolUse, Tool: "Bash", ID: "toolu_evil", Ref: ulid.Make().String(), Input: input, BudgetMS: 600000})

	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	row := `#pending-list li[data-kind="review"][data-id="` + id + `"]`
	until(t, ctx, "the review among the pending decisions", `!!document.querySelector('`+row+` .action')`, 10*time.Second)
	until(t, ctx, "the session's row", `!!document.querySelector('#groups li[data-id="`+id+`"]')`, 10*time.Second)
	what := evalJS[string](t, ctx, `document.querySelector('`+row+` .what').textContent`)
	if !strings.Contains(what, "git push origin "+evilCut+" txt.exe") {
		t.Errorf("the pending review shows %q; want the command with its characters escaped", what)
	}
	if risk := evalJS[string](t, ctx, `(document.querySelector('`+row+` .risk') || {}).textContent || ""`); risk != "risk critical" {
		t.Errorf("the risk label reads %q", risk)
	} else {
		// The label is drawn after the action, left to right, on its line
		// (a long action is cut before it).
		if !evalJS[bool](t, ctx, `(() => { const a = document.querySelector('`+row+` .action').getBoundingClientRect(), r = document.querySelector('`+row+` .risk').getBoundingClientRect(); return r.left >= a.right - 1; })()`) {
			t.Errorf("the risk label is not after the action")
		}
	}
	sess := evalJS[string](t, ctx, `document.querySelector('#groups li[data-id="`+id+`"] a.row').textContent`)
	for _, w := range []string{"T" + evilShown, "/home/" + evilShown + "/exe.txt"} {
		if !strings.Contains(sess, w) {
			t.Errorf("the session's row shows %q, lacking %q", sess, w)
		}
	}
	if raw := evalJS[[]string](t, ctx, rawText); len(raw) > 0 {
		t.Errorf("the board shows raw characters: %v", raw)
	}
	screenshot(t, ctx, "board-logtext.png")

	// The session page: its title, its cwd, the audit's action, the
	// timeline's marks and tooltips.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+id)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the session page with its timeline", `!!document.querySelector('#session #session-title') && !!document.querySelector('#tl-svg .tl-lane.marks .tl-mark.abandon')`, 10*time.Second)
	if title := evalJS[string](t, ctx, `document.getElementById("session-title").textContent`); title != "T"+evilShown {
		t.Errorf("the page's title %q, want %q", title, "T"+evilShown)
	}
	actions := evalJS[string](t, ctx, `[...document.querySelectorAll("#audit .action")].map(a => a.textContent).join("\n")`)
	for _, w := range []string{"cat " + evilCut + " txt.exe", "git push origin " + evilCut + " txt.exe"} {
		if !strings.Contains(actions, w) {
			t.Errorf("the audit's actions %q lack %q", actions, w)
		}
	}
	until(t, ctx, "the state at the last event", `!!document.querySelector("#tl-at #tl-at-json")`, 10*time.Second)
	if raw := evalJS[[]string](t, ctx, rawText); len(raw) > 0 {
		t.Errorf("the session page shows raw characters: %v", raw)
	}
	screenshot(t, ctx, "session-logtext.png")

	// The stale mark's chain: the tick's facts.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tl-svg .tl-lane.marks .tl-mark.abandon path`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the abandonment's chain", `!!document.querySelector(".tl-pick ul.tick")`, 5*time.Second)
	pick := evalJS[string](t, ctx, `document.querySelector(".tl-pick").innerText`)
	for _, w := range []string{"obs.reconciler.tick", "last observed", "quiet period", "open entries go stale after 1 m 0 s idle", "process check: none"} {
		if !strings.Contains(pick, w) {
			t.Errorf("the stale mark's chain %q lacks %q", pick, w)
		}
	}

	// The abandonment's audit row: the state just before it.
	seq := evalJS[string](t, ctx, `document.querySelector('#tl-svg .tl-lane.marks .tl-mark.abandon').dataset.seq`)
	before := evalJS[string](t, ctx, `(() => { const ax = [...document.querySelectorAll("#audit tbody tr")].map(r => +r.dataset.seq).sort((a, b) => a - b); return String(ax[ax.indexOf(`+seq+`) - 1]); })()`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#audit-`+seq+` button.before`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the state just before #"+seq, `(() => { const a = document.querySelector("#tl-at"); return a && a.dataset.seq === "`+before+`" && !!a.querySelector("#tl-at-json"); })()`, 10*time.Second)
	if open := evalJS[string](t, ctx, `document.querySelector('#tl-at dd[data-field="open entries"]').textContent`); !strings.Contains(open, "t-evil") {
		t.Errorf("just before the stale mark, open entries %q; want t-evil", open)
	}
	screenshot(t, ctx, "session-logtext-before.png")

	// An unknown id: its name once.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/nosuch")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the error", `!!document.getElementById("page-error")`, 10*time.Second)
	if msg := evalJS[string](t, ctx, `document.getElementById("page-error").textContent`); strings.Count(msg, "nosuch") != 1 || !strings.Contains(msg, "not found") {
		t.Errorf("an unknown session's page says %q; want its id once, and not found", msg)
	}
}
