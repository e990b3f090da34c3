package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if err := WriteClusterUsers(out, "nats://a:4222"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"users.conf", "admin.json", "serve.json", "writer.json"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want a 0600 file", f, err)
		}
	}
	if err := WriteClusterUsers(out, ""); err == nil || !strings.Contains(err.Error(), "users.conf is there already") {
		t.Errorf("second run: %v, want refused", err)
	}
	if err := WriteClusterUsers("", ""); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("no dir: %v, want refused naming --out", err)
	}
}
