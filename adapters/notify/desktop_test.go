package notify_test

import (
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
