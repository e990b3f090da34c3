// Package natslogtest starts a real embedded JetStream log for other
// packages' tests: one server in a fresh temporary directory, stopped when
// the test ends, logs opened on a test's connections, and a buffer for the
// logs of servers and processes under test.
package natslogtest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

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

// Open opens a log on the test's connection nc with the default config and
// closes it at test end; nc stays the caller's. A failure to open fails the
// test.
func Open(t testing.TB, nc *nats.Conn) *natslog.Log {
	t.Helper()
	l, err := natslog.Open(t.Context(), nc, natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Buffer is a bytes.Buffer safe for concurrent writes and reads: the
// destination of a server's or a process's log, written by its goroutines
// while the test reads it. The zero value is empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns a copy of all written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
