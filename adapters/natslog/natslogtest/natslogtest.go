// Package natslogtest starts a real embedded JetStream log for other
// packages' tests: one server in a fresh temporary directory, stopped when
// the test ends.
package natslogtest

import (
	"context"
	"testing"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Start starts an embedded server in t.TempDir() with durability fsync and
// opens the log on it. Both are closed at test end, the log first; a
// failure to start fails the test.
func Start(t testing.TB, fsync natslog.Fsync) (*natslog.Log, *natslog.Server) {
	t.Helper()
	srv, err := natslog.StartEmbedded(context.Background(), natslog.EmbeddedConfig{StoreDir: t.TempDir(), Fsync: fsync})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	log, err := natslog.Open(context.Background(), srv.Conn(), natslog.Config{})
	if err != nil {
		srv.Shutdown()
		t.Fatalf("natslog.Open: %v", err)
	}
	t.Cleanup(func() {
		log.Close()
		if err := srv.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return log, srv
}
