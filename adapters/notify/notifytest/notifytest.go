// Package notifytest runs, for tests, what a desktop notification
// reaches: a real D-Bus session bus (Debian's dbus-daemon) and a program
// on it that owns org.freedesktop.Notifications (the Desktop
// Notifications Specification 1.2) and counts what it is shown.
package notifytest

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/logbook-dev/logbook/adapters/notify"
)

// HaveBus reports whether dbus-daemon is installed (Debian's package
// dbus-daemon; .ci/run installs it).
func HaveBus() bool {
	_, err := exec.LookPath("dbus-daemon")
	return err == nil
}

// SessionBus starts `dbus-daemon --session` in t.TempDir() for the test
// and returns its address (unix:path=…) once it listens; it is killed at
// the test's end. The test is skipped where dbus-daemon is not installed.
func SessionBus(t testing.TB) string {
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

// Desktop is a notification server on a bus: it counts Notify calls by
// the idempotency key hint (notify.HintKey). Safe for concurrent use.
type Desktop struct {
	mu        sync.Mutex
	keys      map[string]int
	summaries []string
	foreign   int // calls with no key or from another application
	lastID    uint32
}

// Notify implements org.freedesktop.Notifications.Notify.
func (d *Desktop) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key, _ := hints[notify.HintKey].Value().(string)
	if key == "" || app != "Logbook" {
		d.foreign++
	}
	d.keys[key]++
	d.summaries = append(d.summaries, summary)
	d.lastID++
	return d.lastID, nil
}

// GetCapabilities implements org.freedesktop.Notifications.
func (d *Desktop) GetCapabilities() ([]string, *dbus.Error) { return []string{"body"}, nil }

// GetServerInformation implements org.freedesktop.Notifications.
func (d *Desktop) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "logbook-test", "logbook", "1", "1.2", nil
}

// CloseNotification implements org.freedesktop.Notifications.
func (d *Desktop) CloseNotification(id uint32) *dbus.Error { return nil }

// ServeDesktop owns org.freedesktop.Notifications on the bus at addr
// until the test ends, and returns what it is shown.
func ServeDesktop(t testing.TB, addr string) *Desktop {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d := &Desktop{keys: map[string]int{}}
	if err := conn.Export(d, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v (reply %d)", err, reply)
	}
	return d
}

// Shown returns the Notify calls so far by key, the summaries in order,
// and how many calls came with no key or from another application.
func (d *Desktop) Shown() (keys map[string]int, summaries []string, foreign int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys = make(map[string]int, len(d.keys))
	for k, v := range d.keys {
		keys[k] = v
	}
	return keys, append([]string(nil), d.summaries...), d.foreign
}
