package natslog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/logbook-dev/logbook/events"
)

// TestStartEmbedded_DamagedStreamMetadataNamed: a stream whose meta.inf
// was changed under the server (so meta.sum no longer matches) is not
// loaded by it; the start fails naming the file, rather than letting the
// next open create the stream again over its messages as a new one.
func TestStartEmbedded_DamagedStreamMetadataNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.Context(), s.Conn(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, decision(events.NewRegistry(), session("meta"), 0, 1, 1))
	l.Close()
	s.Shutdown()
	meta := filepath.Join(dir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT, "streams", StreamName, "meta.inf")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(strings.Replace(string(b), StreamName, "LOGBOOX", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err == nil {
		s2.Shutdown()
		t.Fatal("started over a stream whose metadata is damaged")
	}
	if !strings.Contains(err.Error(), "stream "+StreamName+" was not loaded by the server") || !strings.Contains(err.Error(), meta) {
		t.Errorf("error %q; want it to name the stream and %s", err, meta)
	}
}
