package notify_test

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/notify"
)

// sessionBus starts a real D-Bus session bus (dbus-daemon --session) for
// the test and returns its address; the test is skipped where Debian's
// dbus-daemon is not installed (.ci/run installs it).
func sessionBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (apt-get install dbus-daemon)")
	}
	addr := "unix:path=" + filepath.Join(t.TempDir(), "bus")
	c := exec.Command(bin, "--session", "--nofork", "--nopidfile", "--print-address=1", "--address="+addr)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n') // printed once it listens
	if err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	return strings.TrimSpace(line)
}

// notifications is an org.freedesktop.Notifications server on a bus: it
// counts Notify calls by the Logbook key hint.
type notifications struct {
	mu       sync.Mutex
	keys     map[string]int
	summary  []string
	lastID   uint32
	noKeyHit int
}

// Notify implements org.freedesktop.Notifications.Notify.
func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key, _ := hints[notify.HintKey].Value().(string)
	if key == "" || app != "Logbook" {
		n.noKeyHit++
	}
	n.keys[key]++
	n.summary = append(n.summary, summary)
	n.lastID++
	return n.lastID, nil
}

// GetCapabilities implements org.freedesktop.Notifications.
func (n *notifications) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

// GetServerInformation implements org.freedesktop.Notifications.
func (n *notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "logbook-test", "logbook", "1", "1.2", nil
}

// CloseNotification implements org.freedesktop.Notifications.
func (n *notifications) CloseNotification(id uint32) *dbus.Error { return nil }

// serveNotifications owns org.freedesktop.Notifications on the bus at
// addr until the test ends.
func serveNotifications(t *testing.T, addr string) *notifications {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n := &notifications{keys: map[string]int{}}
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v (reply %d)", err, reply)
	}
	return n
}

func (n *notifications) counts() (int, map[string]int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	total := 0
	keys := map[string]int{}
	for k, v := range n.keys {
		total += v
		keys[k] = v
	}
	return total, keys
}

// TestNotifier_Desktop: a session waiting for a person is shown once on
// the desktop, through a real session bus, to the program that owns
// org.freedesktop.Notifications there, with the key as a hint.
func TestNotifier_Desktop(t *testing.T) {
	addr := sessionBus(t)
	desk := serveNotifications(t, addr)
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
	n, keys := desk.counts()
	key := notify.Key("waiting", "desk", wid.String())
	desk.mu.Lock()
	defer desk.mu.Unlock()
	if n != 1 || keys[key] != 1 || desk.noKeyHit != 0 || desk.summary[0] != "session s-desk waits for you" {
		t.Errorf("Notify calls %d %v (summaries %q), want one with key %s\n%s", n, keys, desk.summary, key, out.String())
	}
	if rec := recorded(t, l); len(rec) != 1 || rec[0].Kind != notify.SinkDesktop {
		t.Errorf("recorded %+v", rec)
	}
}
