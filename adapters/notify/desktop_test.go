package notify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/adapters/notify/notifytest"
)

// TestNotifier_Desktop: a session waiting for a person is shown once on
// the desktop, through a real session bus, to the program that owns
// org.freedesktop.Notifications there, with the key as a hint.
func TestNotifier_Desktop(t *testing.T) {
	t.Parallel()
	addr := notifytest.SessionBus(t)
	desk := notifytest.ServeDesktop(t, addr)
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	var out natslogtest.Buffer
	path := writeConfig(t, "[sinks.desk]\ntype = \"desktop\"\naddress = \""+addr+"\"\n\n[[rule]]\non = \"waiting\"\nafter = 0\nsinks = [\"desk\"]\n")
	startNotifier(t, l, srv, path, &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	last, wid := waitSession(t, l, "s-desk")
	drained(t, srv, last)
	keys, summaries, foreign := desk.Shown()
	key := notify.Key("waiting", "desk", wid.String())
	if len(keys) != 1 || keys[key] != 1 || foreign != 0 || summaries[0] != "session s-desk waits for you: a question" {
		t.Errorf("Notify calls %v (summaries %q, %d foreign), want one with key %s\n%s", keys, summaries, foreign, key, out.String())
	}
	if rec := recorded(t, l); len(rec) != 1 || rec[0].Kind != notify.SinkDesktop {
		t.Errorf("recorded %+v", rec)
	}
}

// TestUndeliverable: a board sink cannot deliver without a board, a
// desktop sink without a session bus address (its own or
// DBUS_SESSION_BUS_ADDRESS); a webhook is not judged ahead.
func TestUndeliverable(t *testing.T) {
	board := notify.Sink{Name: "tab", Type: notify.SinkBoard}
	desk := notify.Sink{Name: "desk", Type: notify.SinkDesktop}
	hook := notify.Sink{Name: "h", Type: notify.SinkWebhook, URL: "http://127.0.0.1:1/"}
	if why := notify.Undeliverable(board, false); !strings.Contains(why, "--http off") {
		t.Errorf("board without --http: %q", why)
	}
	if why := notify.Undeliverable(board, true); why != "" {
		t.Errorf("board with --http: %q", why)
	}
	if why := notify.Undeliverable(hook, false); why != "" {
		t.Errorf("webhook: %q", why)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
	if why := notify.Undeliverable(desk, true); why != "" {
		t.Errorf("desktop with DBUS_SESSION_BUS_ADDRESS: %q", why)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	desk.Address = "unix:path=/nonexistent/bus"
	if why := notify.Undeliverable(desk, true); why != "" {
		t.Errorf("desktop with an address: %q", why)
	}
	desk.Address = ""
	for _, f := range []string{"bus", "dbus-session"} {
		if _, err := os.Stat(filepath.Join(fmt.Sprintf("/run/user/%d", os.Getuid()), f)); err == nil {
			t.Skip("this user has a session bus in /run/user")
		}
	}
	if why := notify.Undeliverable(desk, true); !strings.Contains(why, "no D-Bus session bus is known") {
		t.Errorf("desktop with no bus: %q", why)
	}
}

// TestWatch_SaysUndeliverable: a config whose sink cannot deliver is
// taken, and the sink is named at WARN with the reason.
func TestWatch_SaysUndeliverable(t *testing.T) {
	t.Parallel()
	var said []string
	w := &notify.Watch{Path: writeConfig(t, "[sinks.tab]\ntype = \"board\"\n[[rule]]\non = \"waiting\"\nsinks = [\"tab\"]\n"),
		Say:           func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) },
		Undeliverable: func(s notify.Sink) string { return notify.Undeliverable(s, false) }}
	if cfg, _ := w.Check(); cfg == nil {
		t.Fatalf("not taken: %q", said)
	}
	if len(said) != 2 || said[1] != "WARN: notifications: sink tab (board) cannot deliver: serve runs with --http off, so it serves no board to show it" {
		t.Errorf("said %q", said)
	}
}
