package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/internal/natstest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// TestPprofAddr: only a loopback host:port is taken, localhost as
// 127.0.0.1; every refusal names --pprof.
func TestPprofAddr(t *testing.T) {
	for addr, want := range map[string]string{"127.0.0.1:6060": "127.0.0.1:6060", "localhost:0": "127.0.0.1:0", "[::1]:1": "[::1]:1"} {
		if got, err := PprofAddr(addr); err != nil || got != want {
			t.Errorf("PprofAddr(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:6060", "6060"} {
		if _, err := PprofAddr(addr); err == nil || !strings.Contains(err.Error(), "--pprof") {
			t.Errorf("PprofAddr(%q): %v, want refused naming --pprof", addr, err)
		}
	}
}

// TestAudit: the audit verb answers JSON or text, refuses a request with
// no id as malformed, and returns the timeline's error as it is.
func TestAudit(t *testing.T) {
	lost := errors.New("lost")
	h := Audit(func(_ context.Context, id string) ([]replay.Item, error) {
		if id == "gone" {
			return nil, lost
		}
		return []replay.Item{}, nil
	})
	ctx := t.Context()
	if _, err := h(ctx, []byte(`{}`)); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("no id: %v, want ErrMalformed", err)
	}
	if _, err := h(ctx, []byte(`{"id":"gone"}`)); !errors.Is(err, lost) {
		t.Errorf("timeline error: %v, want it returned", err)
	}
	r, err := h(ctx, []byte(`{"id":"s1","json":true}`))
	if rep, ok := r.(AuditReply); err != nil || !ok || !json.Valid(rep.Items) || rep.Text != "" {
		t.Errorf("json: %#v, %v; want JSON items only", r, err)
	}
	if r, err := h(ctx, []byte(`{"id":"s1"}`)); err != nil || r.(AuditReply).Items != nil {
		t.Errorf("text: %#v, %v; want text only", r, err)
	}
}

// TestWriteClusterUsers: users.conf and a credentials file per role, and
// a second run refused rather than new passwords written.
func TestWriteClusterUsers(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster")
	if err := WriteClusterUsers(out, "nats://a:4222", 1); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"users.conf", "admin.json", "serve.json", "writer.json"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want a 0600 file", f, err)
		}
	}
	if err := WriteClusterUsers(out, "", 1); err == nil || !strings.Contains(err.Error(), "users.conf is there already") {
		t.Errorf("second run: %v, want refused", err)
	}
	if err := WriteClusterUsers("", "", 1); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("no dir: %v, want refused naming --out", err)
	}
	if err := WriteClusterUsers(filepath.Join(t.TempDir(), "none"), "", 0); err == nil || !strings.Contains(err.Error(), "--followers 0") {
		t.Errorf("no follower: %v, want refused naming --followers", err)
	}
}

// TestWriteClusterUsers_FollowerAnswersForItselfOnly: on a server
// running the users.conf `creds cluster` writes, each follower's
// credentials name a follower id of their own, and with one follower's a
// subscription to another's verb subjects, or to every follower's, is
// the server's permissions violation; the other follower answers its
// own, and a reader's calls get its answers alone.
func TestWriteClusterUsers_FollowerAnswersForItselfOnly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster")
	if err := WriteClusterUsers(out, "", 3); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(out, "users.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) { // a hang guard
		t.Fatal("the server of users.conf is not ready")
	}
	ids := map[string]bool{}
	creds := map[string]datadir.Creds{}
	for _, f := range []string{"follower", "follower-2", "follower-3", "reader"} {
		c, err := datadir.ReadCreds(filepath.Join(out, f+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if f != "reader" && (natslog.CheckFollowerID(c.FollowerID) != nil || ids[c.FollowerID]) {
			t.Fatalf("%s.json: follower id %q, want one of its own", f, c.FollowerID)
		}
		ids[c.FollowerID] = true
		creds[f] = c
	}
	connect := func(name string) (*nats.Conn, *natstest.Violations) {
		c := creds[name]
		v := &natstest.Violations{}
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.Role(c.Role)), nats.ErrorHandler(v.Handler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc, v
	}
	b := creds["follower-2"].FollowerID
	bc, bv := connect("follower-2")
	for _, verb := range ReadVerbs {
		if _, err := bc.Subscribe(api.FollowerRoot+b+"."+verb, func(m *nats.Msg) { m.Respond([]byte("follower-2")) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := bc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"follower", "follower-3"} {
		for _, subject := range []string{api.FollowerRoot + b + ".verify", api.FollowerRoot + b + ".session", api.FollowerRoot + "*.verify", api.FollowerRoot + ">"} {
			nc, v := connect(f)
			if _, err := nc.Subscribe(subject, func(m *nats.Msg) { m.Respond([]byte("spoofed")) }); err != nil {
				t.Fatal(err)
			}
			nc.Flush()
			if err := v.Wait(subject, 5*time.Second); err == nil { // a hang guard
				t.Fatalf("%s subscribed to %s: no permissions violation", f, subject)
			}
		}
	}
	reader, _ := connect("reader")
	for i := range 5 {
		for _, verb := range []string{api.VerbVerify, api.VerbSession} {
			m, err := reader.Request(api.FollowerRoot+b+"."+verb, []byte("{}"), 5*time.Second)
			if err != nil || string(m.Data) != "follower-2" {
				t.Fatalf("call %d of %s: %v, %v; want follower-2's answer", i, verb, m, err)
			}
		}
	}
	if errs := bv.Errs(); len(errs) > 0 {
		t.Errorf("follower-2 was refused its own subjects: %v", errs)
	}
}
