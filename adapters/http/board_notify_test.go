package httpapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/events"
)

// TestBoard_BrowserNotification: with a board sink in notify.toml, a
// session waiting for a person is shown as a browser notification by a
// board tab whose person allowed notifications: the notifier records
// notification.sent, the board's live stream carries it, and board.js
// makes a Notification of it, once.
func TestBoard_BrowserNotification(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	conf := filepath.Join(t.TempDir(), notify.File)
	if err := os.WriteFile(conf, []byte("[sinks.tab]\ntype = \"board\"\n\n[[rule]]\non = \"waiting\"\nafter = 0\nsinks = [\"tab\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	var said natslogtest.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&said, format+"\n", args...) }
	n := &notify.Notifier{Log: e.log, Registry: events.NewRegistry(), JS: js, Watch: &notify.Watch{Path: conf, Say: say}, Host: "h1", Say: say}
	nctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(nctx) }()
	t.Cleanup(func() { stop(); <-done })

	// The person allows notifications (the bell's prompt, answered).
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: e.http.URL,
		BrowserContextID: chromedp.FromContext(ctx).BrowserContextID}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the stream connected", `document.getElementById("conn").classList.contains("on")`, 10*time.Second)
	until(t, ctx, "notifications allowed", `Notification.permission === "granted" && document.getElementById("bell").classList.contains("granted")`, 10*time.Second)
	for {
		_, err := js.Consumer(t.Context(), "LOGBOOK", notify.DurableName)
		if err == nil {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("no notifier consumer:\n%s", said.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// What each Notification is made with, kept to be read back.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const N = window.Notification; window.__shown = [];
	  window.Notification = new Proxy(N, { construct(target, args) { window.__shown.push(args[0] + "|" + (args[1] || {}).body); return Reflect.construct(target, args); } });
	  return true; })()`)); err != nil {
		t.Fatal(err)
	}
	s := sid(7)
	e.prompt(s, "p1")
	e.permission(s, "Bash")
	until(t, ctx, "the browser notification", `document.getElementById("bell").dataset.told === "1"`, 30*time.Second)
	screenshot(t, ctx, "board-notified.png")
	sent := 0
	for r, err := range e.log.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := r.Data.(events.NotificationSent); ok && d.Kind == notify.SinkBoard && d.Session == s {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("%d notification.sent for the board, want 1\n%s", sent, said.String())
	}
	if told, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("bell").dataset.told`)); told != "1" {
		t.Errorf("the board showed %s notifications, want 1", told)
	}

	// A notification whose title and body hold a right-to-left
	// override, ESC and BEL is made with them escaped, as on the rows.
	sent2 := events.NotificationSent{Rule: "r", Sink: "tab", Kind: notify.SinkBoard, On: "waiting", Key: "k-evil", Session: s,
		Title: "T\u202eevil\x1b[2J", Body: "B\x07\u2066x\u2069"}
	env := e.reg.New(sent2)
	env.ID, env.Agg, env.Ver, env.At = ulid.Make(), events.Aggregate{Kind: events.KindNotification, ID: "k-evil"}, 1, time.Now().UTC().Truncate(time.Microsecond)
	env.Cause = &events.Cause{Kind: notify.CauseKind, Event: "session.transitioned", Detail: "r", Ref: ulid.Make().String()}
	env.Host, env.Actor = "h1", "logbook-notify"
	if _, err := e.log.Append(t.Context(), events.Batch{Agg: env.Agg, Expect: 0, Events: []events.Envelope{env}}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the second notification", `document.getElementById("bell").dataset.told === "2"`, 30*time.Second)
	shown := evalJS[[]string](t, ctx, `window.__shown`)
	if want := `T\u202eevil\x1b[2J|B\x07\u2066x\u2069`; len(shown) != 2 || shown[1] != want {
		t.Errorf("the notifications were made with %q; want the second %q", shown, want)
	}
}
