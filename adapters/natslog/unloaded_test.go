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
	storeStopped(t, dir, "meta")
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

// TestStartEmbedded_CreationCutIsMadeAgain: a process killed between the
// two files of a stream's creation (meta.inf written, meta.sum not yet)
// leaves a stream the next server does not load. With nothing stored in
// it, the start removes it and the next open creates it again; a stream
// that holds a message and lost its meta.sum is still refused, named.
func TestStartEmbedded_CreationCutIsMadeAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		append bool
	}{{"empty", false}, {"holds a message", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			name := ""
			if tc.append {
				name = "cut"
			}
			storeStopped(t, dir, name)
			sum := filepath.Join(dir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT, "streams", StreamName, "meta.sum")
			if err := os.Remove(sum); err != nil {
				t.Fatal(err)
			}
			// A clean stop wrote the stream's state; a creation cut
			// short has none.
			if err := os.Remove(filepath.Join(filepath.Dir(sum), "msgs", "index.db")); err != nil {
				t.Fatal(err)
			}
			s2, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
			if tc.append {
				if err == nil {
					s2.Shutdown()
					t.Fatal("started over a stream that holds a message and lost its meta.sum")
				}
				if !strings.Contains(err.Error(), "stream "+StreamName+" was not loaded by the server") {
					t.Errorf("error %q; want it to name the stream", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("start after a cut creation: %v", err)
			}
			defer s2.Shutdown()
			l2, err := Open(t.Context(), s2.Conn(), Config{})
			if err != nil {
				t.Fatalf("open after a cut creation: %v", err)
			}
			defer l2.Close()
			mustAppend(t, l2, decision(events.NewRegistry(), session("cut"), 0, 1, 1))
			if _, err := os.Stat(sum); err != nil {
				t.Errorf("the stream made again has no meta.sum: %v", err)
			}
		})
	}
}

// storeStopped makes the log's store in dir on an embedded server, with
// one decision of session name appended (none for ""), and stops the
// server.
func storeStopped(t *testing.T, dir, name string) {
	t.Helper()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.Context(), s.Conn(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		mustAppend(t, l, decision(events.NewRegistry(), session(name), 0, 1, 1))
	}
	l.Close()
	s.Shutdown()
}
