package merkle

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestReadAll_DamagedLastMessage: the checkpoint stream's last message
// changed in place on disk is still counted by the server but never
// given; a read to the end stops (after followStall) with the messages
// before it, and checkpointHoles names the one missing, rather than the
// read waiting for it for ever.
func TestReadAll_DamagedLastMessage(t *testing.T) {
	t.Parallel() // its own server and store; it mostly waits out the read's stall (followStall)
	dir := t.TempDir()
	start := func() (*natslog.Server, jetstream.JetStream) {
		srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(srv.Conn())
		if err != nil {
			t.Fatal(err)
		}
		return srv, js
	}
	srv, js := start()
	if _, err := EnsureStream(t.Context(), js); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"first checkpoint body", "LAST-checkpoint body"} {
		if _, err := PublishCheckpoint(t.Context(), js, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Shutdown()
	blk := filepath.Join(dir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT, "streams", CheckpointStream, "msgs", "1.blk")
	b, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("LAST-"))
	if i < 0 {
		t.Fatalf("%s holds no LAST-", blk)
	}
	b[i] ^= 1
	if err := os.WriteFile(blk, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, js = start()
	defer srv.Shutdown()
	held, err := checkpointsHeld(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ReadAll(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Seq != 1 {
		t.Fatalf("read %d messages, want seq 1 alone", len(all))
	}
	if what := checkpointHoles(all, held); held != 2 || what == "" || !bytes.Contains([]byte(what), []byte("(seq 2)")) {
		t.Errorf("held %d, holes %q; want seq 2 named", held, what)
	}
}
