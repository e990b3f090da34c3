package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"
)

// evalJS evaluates expr on the page and returns its value as T.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestBoard_Timeline opens the page of a session with a subagent, a
// review a person decided, a command and a tool call abandoned by an
// interrupt, and finds each lane and mark on its timeline, each mark
// linked to its row of the audit; clicking the abandonment mark shows
// its cause and observed input, and "state just before" the state the
// call was open in.
func TestBoard_Timeline(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	st := e.tellStory()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+st.main)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the timeline with its subagent's lane", `!!document.querySelector('#tl-svg .tl-lane.subagent[data-session="h-sub1"] .tl-mark.phase')`, 10*time.Second)
	for _, lane := range []string{"phase", "turns", "tools", "commands", "reviews", "marks", "subagent"} {
		n := evalJS[int](t, ctx, `document.querySelectorAll('#tl-svg .tl-lane.`+lane+` .tl-mark').length`)
		if n == 0 {
			t.Errorf("lane %s has no mark", lane)
		}
	}
	// Every mark of the session's own lanes is linked to its audit row.
	unlinked := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#tl-svg .tl-lane:not(.subagent) .tl-mark')].filter(m => !document.getElementById("audit-" + m.dataset.seq)).map(m => m.dataset.seq + " " + m.getAttribute("class"))`)
	if len(unlinked) > 0 {
		t.Errorf("marks with no audit row: %v", unlinked)
	}
	titles := func(sel string) string {
		return evalJS[string](t, ctx, `[...document.querySelectorAll('`+sel+`')].map(m => m.querySelector("title").textContent).join("\n---\n")`)
	}
	for sel, want := range map[string][]string{
		"#tl-svg .tl-lane.tools .tl-mark.abandoned":  {"tool:Read t-read", "ABANDONED (interrupted)"},
		"#tl-svg .tl-lane.tools .tl-mark:not(.open)": {"tool:Bash t-ls", "closed ok"},
		"#tl-svg .tl-lane.reviews .tl-mark.allow":    {"git push origin main", "by user:person:alice: release branch"},
		"#tl-svg .tl-lane.commands .tl-mark":         {"command true requested by test", "exited code 0"},
		"#tl-svg .tl-lane.marks .tl-mark.wait":       {"waits on a person: review"},
		"#tl-svg .tl-lane.marks .tl-mark.abandon":    {"abandoned t-read: interrupted"},
		"#tl-svg .tl-lane.subagent .tl-mark.phase":   {"working"},
		"#tl-svg .tl-lane.turns .tl-mark.turn":       {"turn-1 started", "ended interrupted"},
	} {
		got := titles(sel)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: titles %q lack %q", sel, got, w)
			}
		}
	}
	until(t, ctx, "the state at the last event", `!!document.querySelector("#tl-at #tl-at-json")`, 10*time.Second)
	screenshot(t, ctx, "timeline.png")

	// The abandonment mark leads to its audit entry and its chain.
	abandon := `#tl-svg .tl-lane.marks .tl-mark.abandon`
	seq := evalJS[string](t, ctx, `document.querySelector('`+abandon+`').dataset.seq`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(abandon+` path`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the abandonment's audit row highlighted", `document.getElementById("audit-`+seq+`").classList.contains("hl")`, 5*time.Second)
	pick := evalJS[string](t, ctx, `document.querySelector(".tl-pick").innerText`)
	for _, w := range []string{"session.entry_abandoned", "reason=interrupted", "cause: hook/interrupt", "observed input: #", "[interrupt]"} {
		if !strings.Contains(pick, w) {
			t.Errorf("the chosen mark shows %q, lacking %q", pick, w)
		}
	}
	until(t, ctx, "the state at the abandonment", `!!document.querySelector('#tl-at[data-seq="`+seq+`"] #tl-at-json')`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tl-before`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the state just before", `(() => { const a = document.querySelector("#tl-at"); return a && a.dataset.seq !== "`+seq+`" && !!a.querySelector("#tl-at-json"); })()`, 10*time.Second)
	before := evalJS[string](t, ctx, `document.querySelector('#tl-at dd[data-field="open entries"]').textContent`)
	if !strings.Contains(before, "tool:Read t-read") {
		t.Errorf("just before the abandonment, open entries %q; want the Read call", before)
	}
	screenshot(t, ctx, "timeline-abandoned.png")
}

// TestBoard_Scrubber moves the timeline's cursor with the arrow keys to
// three events and compares the state the page shows with what `logbook
// replay --seq N --session ID --json` prints (replay.StateAt); then drags
// it along the strip.
func TestBoard_Scrubber(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	st := e.tellStory()
	axis := e.axis(st.main, st.sub)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+st.main)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the timeline", `!!document.querySelector('#tl-svg .tl-lane.subagent .tl-mark')`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#tl-svg`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Home)); err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, i := range []int{2, len(axis) / 2, len(axis) - 3} {
		for ; at < i; at++ {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
				t.Fatal(err)
			}
		}
		seq := axis[i]
		until(t, ctx, fmt.Sprintf("the state at #%d", seq), fmt.Sprintf(`!!document.querySelector('#tl-at[data-seq="%d"] #tl-at-json')`, seq), 10*time.Second)
		var got any
		if err := json.Unmarshal([]byte(evalJS[string](t, ctx, `document.getElementById("tl-at-json").textContent`)), &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(e.replayJSON(st.main, seq), got); d != "" {
			t.Errorf("state at #%d (-replay +page):\n%s", seq, d)
		}
	}
	// A drag along the top strip moves the cursor to where it ends.
	box := evalJS[[]float64](t, ctx, `(() => { const r = document.getElementById("tl-strip").getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`)
	y := box[1] + box[3]/2
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(box[0]+box[2]-2, y)); err != nil {
		t.Fatal(err)
	}
	last := axis[len(axis)-1]
	until(t, ctx, "the cursor at the last event", fmt.Sprintf(`document.getElementById("tl-cursor").dataset.seq === "%d"`, last), 5*time.Second)
	until(t, ctx, "the state at the last event", fmt.Sprintf(`!!document.querySelector('#tl-at[data-seq="%d"] #tl-at-json')`, last), 10*time.Second)
}

// TestBoard_Divergence opens a session an older reducer wrote (its tool
// calls recorded with the activity in lower case) and finds the first
// divergence marked on the timeline, with both decisions side by side.
func TestBoard_Divergence(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	st := e.tellStory()
	old := e.olderSession(st.sub, "old", olderGrep)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+old)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the divergence marked", `!!document.querySelector('#tl-divline') && !!document.querySelector('#tl-svg .tl-lane.divergence .tl-mark')`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tl-svg .tl-lane.divergence .tl-mark path`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "both decisions side by side", `!!document.querySelector('#tl-divergence #tl-recorded li.differs') && !!document.querySelector('#tl-divergence #tl-today li.differs')`, 5*time.Second)
	rec := evalJS[string](t, ctx, `document.querySelector('#tl-recorded li.differs').textContent`)
	today := evalJS[string](t, ctx, `document.querySelector('#tl-today li.differs').textContent`)
	if !strings.Contains(rec, `"activity":"tool:grep"`) || !strings.Contains(today, `"activity":"tool:Grep"`) {
		t.Errorf("recorded %q, today %q; want tool:grep recorded, tool:Grep today", rec, today)
	}
	// Its sessions' own audit: none of the main session's marks diverge.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+st.main)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the main session's timeline", `!!document.querySelector('#tl-svg .tl-lane.tools .tl-mark')`, 10*time.Second)
	screenshot(t, ctx, "timeline-divergence.png")
}

// TestBoard_TimelineManyEvents draws a session of about 10,000 events:
// marks closer than a few pixels merge into counted aggregates, so the
// picture holds far fewer marks than events; zooming in shows single
// marks again, and an aggregate's click zooms into what it holds.
func TestBoard_TimelineManyEvents(t *testing.T) {
	t.Parallel() // its own server, log and browser; 250 requests of ten tool calls each
	ctx := browser(t)
	e := newEnv(t)
	e.observe("big", "", "start", `{"kind":"session_start","name":"startup"}`)
	e.observe("big", "", "prompt", `{"kind":"prompt","id":"p1"}`)
	var last uint64
	for i := 0; i < 2500; i += 10 {
		var signals []string
		for j := i; j < i+10; j++ {
			id := fmt.Sprintf("t%d", j)
			signals = append(signals, `{"kind":"tool_use","id":"`+id+`","name":"Bash"}`, `{"kind":"tool_result","id":"`+id+`","status":"ok"}`)
		}
		last = e.observe("big", "", "tool", signals...)
	}
	e.waitSeq(last)
	events := len(e.axis("h-big"))
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/h-big")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the timeline", `!!document.querySelector('#tl-svg .tl-lane.tools .tl-mark')`, 60*time.Second)
	t.Logf("%d events: page and timeline drawn %v after the navigation", events, time.Since(start))
	marks := evalJS[int](t, ctx, `document.querySelectorAll('#tl-svg .tl-mark').length`)
	aggs := evalJS[int](t, ctx, `document.querySelectorAll('#tl-svg .tl-agg').length`)
	counted := evalJS[int](t, ctx, `[...document.querySelectorAll('#tl-svg .tl-lane.tools .tl-agg')].reduce((n, a) => n + Number(a.dataset.count), 0) + document.querySelectorAll('#tl-svg .tl-lane.tools .tl-mark:not(.tl-agg)').length`)
	t.Logf("%d events drawn as %d marks, %d of them aggregates", events, marks, aggs)
	if events < 10000 || aggs == 0 || marks > 2000 {
		t.Errorf("%d events drawn as %d marks (%d aggregates); want aggregates and under 2000 marks", events, marks, aggs)
	}
	if counted != 2500 {
		t.Errorf("the tool lane's marks and aggregates count %d calls, want 2500", counted)
	}
	screenshot(t, ctx, "timeline-many.png")
	// An aggregate's click zooms into it: single calls show.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tl-svg .tl-lane.tools .tl-agg rect`))); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "single tool calls after zooming in", `document.querySelectorAll('#tl-svg .tl-lane.tools .tl-mark:not(.tl-agg)').length > 0`, 10*time.Second)
}

// TestBoard_TimelineHostileText: a tool name that is markup is drawn as
// text in the timeline, never parsed.
func TestBoard_TimelineHostileText(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	evil := `<img src=x onerror=\"document.title='pwned'\">`
	e.observe("evil", "", "prompt", `{"kind":"prompt","id":"p1"}`)
	e.observe("evil", "", "tool", `{"kind":"tool_use","id":"t1","name":"`+evil+`"}`)
	e.waitSeq(e.observe("evil", "", "result", `{"kind":"tool_result","id":"t1","status":"ok"}`))
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/h-evil")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the tool call drawn", `!!document.querySelector('#tl-svg .tl-lane.tools .tl-mark')`, 10*time.Second)
	got := evalJS[string](t, ctx, `document.querySelector('#tl-svg .tl-lane.tools .tl-mark title').textContent`)
	if !strings.Contains(got, `<img src=x onerror="document.title='pwned'">`) {
		t.Errorf("the tool call's title %q lacks the name as text", got)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#timeline img, #tl-svg img, #tl-svg foreignObject').length`); n > 0 || evalJS[string](t, ctx, `document.title`) == "pwned" {
		t.Errorf("the tool's name became markup: %d elements, title %q", n, evalJS[string](t, ctx, `document.title`))
	}
}

// TestBoard_TimelineCommandMovesPhase: a command run while its session is
// ready moves the session to working and back, the moves carried by the
// command's entry events (events.TransitionOf); the phase lane draws them
// as it draws a session.transitioned.
func TestBoard_TimelineCommandMovesPhase(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	// The audit below resolves the session through the projection: it
	// must hold the session before the first look.
	e.waitSeq(e.observe("idle", "", "start", `{"kind":"session_start","name":"startup"}`, `{"kind":"mode","name":"bypassPermissions"}`))
	e.runCommand("h-idle", "true")
	// The detach follows the exit the command's state shows.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var moves []string
		for _, it := range e.audit("h-idle") {
			if (it.Type == "session.entry_opened" || it.Type == "session.entry_closed") && it.To != "" {
				moves = append(moves, it.To)
			}
		}
		if slices.Equal(moves, []string{"working", "ready"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("entry events carry the phase moves %q, want [working ready] (the attach, the detach)", moves)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/h-idle")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the timeline", `!!document.querySelector('#tl-svg .tl-lane.phase .tl-mark')`, 10*time.Second)
	got := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#tl-svg .tl-lane.phase .tl-mark')].map(m => m.querySelector("title").textContent.split("\n")[0])`)
	if want := []string{"ready", "working · background", "ready"}; !slices.Equal(got, want) {
		t.Errorf("phase lane %q, want %q", got, want)
	}
}
