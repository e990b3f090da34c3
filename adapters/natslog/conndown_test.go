package natslog

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestConnDown: a connection whose server is gone says so, so a missing
// answer is not taken for an election ("no leader answered"); a closed
// one says it is closed; a connected one says nothing.
func TestConnDown(t *testing.T) {
	t.Parallel()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", User: "logbook", Password: NewPassword()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(s.ClientURL(), nats.UserInfo("logbook", s.cfg.Password), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	if why := connDown(nc); why != "" {
		t.Errorf("connected: connDown = %q, want none", why)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); nc.Status() != nats.RECONNECTING; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard
			t.Fatalf("status %v 30s after the server shut down", nc.Status())
		}
	}
	if why := connDown(nc); !strings.Contains(why, "lost its server and is reconnecting") {
		t.Errorf("server gone: connDown = %q", why)
	}
	nc.Close()
	if why := connDown(nc); !strings.Contains(why, "closed") {
		t.Errorf("closed: connDown = %q", why)
	}
}
