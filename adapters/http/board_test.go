package httpapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// browser returns a tab of its own for t in the test binary's headless
// Chromium (Debian's chromium package), in a browser context of its own:
// an empty profile (no cookies, storage, cache or permissions of another
// test), closed with its tab when t ends. The tab's window shows the page
// in the area the browser's first window does, and keeps its focus. It
// skips when no Chromium is installed, unless LOGBOOK_BROWSER_TESTS is
// set (CI sets it), when it fails.
func browser(t *testing.T) context.Context {
	t.Helper()
	bctx, path, err := chromium.start()
	if path == "" {
		if os.Getenv("LOGBOOK_BROWSER_TESTS") != "" {
			t.Fatal("no chromium found and LOGBOOK_BROWSER_TESTS is set: apt-get install chromium")
		}
		t.Skip("no chromium: apt-get install chromium to run the board's browser tests")
	}
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("a tab in %s: %v", path, err)
	}
	// A new window's frame differs from the first window's: the window
	// is sized so that the page gets the same area, and fixed parts of
	// the board (its footer) cover what they covered in the first one.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[4]int64](viewportJS))
	if err != nil {
		t.Fatalf("a tab in %s: %v", path, err)
	}
	if want := chromium.viewport; got[0] != want[0] || got[1] != want[1] {
		win, err := chromedp.CallBrowser(ctx, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{TargetID: chromedp.FromContext(ctx).Target.TargetID})
		if err == nil {
			_, err = chromedp.CallBrowser(ctx, cdpbrowser.SetWindowBounds, cdpbrowser.SetWindowBoundsParams{WindowID: win.WindowID,
				Bounds: &cdpbrowser.Bounds{Width: got[2] + want[0] - got[0], Height: got[3] + want[1] - got[1]}})
		}
		if err != nil {
			t.Fatalf("a tab in %s: size its window: %v", path, err)
		}
		if got, err = chromedp.Run(ctx, chromedp.Evaluate[[4]int64](viewportJS)); err != nil || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("a tab in %s: the page is %dx%d (%v), want %dx%d", path, got[0], got[1], err, want[0], want[1])
		}
	}
	// The tab is focused, as the one window of a browser of its own is:
	// the other tests' windows in the browser do not take its focus away.
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatalf("a tab in %s: focus: %v", path, err)
	}
	return ctx
}

// viewportJS is a page's inner width and height and its window's outer
// width and height, in CSS pixels.
const viewportJS = `[innerWidth, innerHeight, outerWidth, outerHeight]`

// chromium is the one headless Chromium of the test binary, started by
// the first test that asks for a browser and stopped by TestMain: one
// browser process instead of one per test, each test in a browser
// context of its own (see browser).
var chromium sharedChromium

// sharedChromium starts headless Chromium once. Its methods are safe for
// concurrent use.
type sharedChromium struct {
	once     sync.Once
	path     string          // the binary; empty when none is installed
	ctx      context.Context // the browser's first tab; tests open their own
	viewport [4]int64        // the first tab's, as viewportJS says it
	stop     func()          // ends the browser and removes its profile
	err      error
}

// start starts the browser on its first call and returns its first tab's
// context and the binary's path (empty when no Chromium is installed), or
// why the browser did not start.
func (c *sharedChromium) start() (context.Context, string, error) {
	c.once.Do(func() {
		c.path = os.Getenv("LOGBOOK_CHROMIUM")
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if c.path != "" {
				break
			}
			c.path, _ = exec.LookPath(name)
		}
		if c.path == "" {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(c.path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.WindowSize(1280, 900),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		c.ctx, c.stop = ctx, func() { cancel(); cancelAlloc() }
		if c.err = chromedp.Do(ctx, chromedp.Navigate("about:blank")); c.err == nil {
			c.viewport, c.err = chromedp.Run(ctx, chromedp.Evaluate[[4]int64](viewportJS))
		}
	})
	return c.ctx, c.path, c.err
}

// close stops the browser if it was started.
func (c *sharedChromium) close() {
	if c.stop != nil {
		c.stop()
	}
}

// artifacts returns where screenshots go: $LOGBOOK_ARTIFACTS when set,
// else the test's temporary directory.
func artifacts(t *testing.T) string {
	if d := os.Getenv("LOGBOOK_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// until polls the page until the JavaScript expression is true, at most
// for d, and fails naming what it waited for.
func until(t *testing.T, ctx context.Context, what, expr string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(10*time.Millisecond)))
	if err != nil || !ok {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: not within %v (%v); the page shows:\n%.2000s", what, d, err, html)
	}
	return time.Since(start)
}

func row(id, group, phase string) string {
	return fmt.Sprintf(`!!document.querySelector('#%s li[data-id="%s"][data-phase="%s"]')`, group, id, phase)
}

// TestBoard_LiveInABrowser loads the board in headless Chromium, sends
// hooks, and sees a session move working → waiting → working within a
// second each, without a reload; then opens the session page from the
// keyboard. Screenshots are saved (see artifacts).
func TestBoard_LiveInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	// Some sessions before the page loads.
	e.prompt(sid(1), "p")
	e.stop(sid(2))
	e.prompt(sid(3), "p")
	e.waitSeq(e.permission(sid(3), "Read"))

	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the sessions listed", row(sid(1), "group-working", "working")+"&&"+row(sid(3), "group-waiting", "waiting"), 10*time.Second)
	until(t, ctx, "the stream connected", `document.getElementById("conn").classList.contains("on")`, 10*time.Second)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameLoad = true`)); err != nil {
		t.Fatal(err)
	}

	s := sid(9)
	e.prompt(s, "p1")
	d1 := until(t, ctx, "the new session working", row(s, "group-working", "working"), time.Second)
	e.permission(s, "Bash")
	d2 := until(t, ctx, "the session waiting, on top", row(s, "group-waiting", "waiting")+fmt.Sprintf(`&&!!document.querySelector('#pending-list li[data-id="%s"]')`, s), time.Second)
	pending, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("pending").innerText`))
	for _, secret := range []string{"secret", "rm -rf"} {
		if strings.Contains(pending, secret) {
			t.Errorf("pending decisions show %q:\n%s", secret, pending)
		}
	}
	screenshot(t, ctx, "board.png")
	e.toolDone(s, "Bash", "toolu_Bash")
	d3 := until(t, ctx, "the session working again", row(s, "group-working", "working"), time.Second)
	t.Logf("board updated %v, %v, %v after each hook", d1, d2, d3)
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameLoad === true`)); err != nil || !same {
		t.Errorf("the page reloaded (%v)", err)
	}

	// Keyboard: j moves down the rows, Enter opens one, Escape goes back.
	until(t, ctx, "rows focusable", `document.querySelectorAll("#board a.row").length > 3`, 5*time.Second)
	for range 3 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("j")); err != nil {
			t.Fatal(err)
		}
	}
	focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.id || ""`))
	if focused == "" {
		t.Fatal("j focused no row")
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the session page of "+focused, fmt.Sprintf(`!!document.querySelector('#session[data-id="%s"]') && document.querySelectorAll("#audit tbody tr").length > 0`, focused), 5*time.Second)
	screenshot(t, ctx, "session.png")
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\x1b")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "back on the board", `!document.getElementById("board").hidden && location.hash === "#/"`, 5*time.Second)

	// A review the gate opened is answered from the session's page.
	verdict := e.gateReview(s, "toolu_push")
	until(t, ctx, "the review among the pending decisions", `!!document.querySelector('#pending-list li[data-kind="review"]')`, 5*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+s)); err != nil {
		t.Fatal(err)
	}
	form := `form.review[data-review="toolu_push"]`
	until(t, ctx, "the review's form", `!!document.querySelector('`+form+`')`, 5*time.Second)
	typeInto(t, ctx, form+` input[name=reason]`, "pushing the release branch")
	typeInto(t, ctx, form+` input[name=by]`, "alice")
	screenshot(t, ctx, "review.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(form+` button.allow`))); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-verdict:
		if v.Decision != "allow" || v.By.Name != "person:alice" {
			t.Errorf("the gate got %+v, want allow by person:alice", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate got no verdict from the browser")
	}
	until(t, ctx, "the review gone from the page", `!document.querySelector('`+form+`')`, 5*time.Second)
}

// typeInto types text into the input sel names, as a person would. A live
// update re-renders the session page's review forms, carrying over what
// was typed (board.js), so the node found can be gone by the time the
// keys are sent: then the field is emptied and typed into again, up to
// five times.
func typeInto(t *testing.T, ctx context.Context, sel, text string) {
	t.Helper()
	var err error
	for range 5 {
		if _, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(e => !!e && (e.value = "", true))(document.querySelector(`+strconv.Quote(sel)+`))`)); err != nil {
			break
		}
		if err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel), text)); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		t.Fatalf("type into %s: %v", sel, err)
	}
}
