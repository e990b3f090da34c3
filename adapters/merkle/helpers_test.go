package merkle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// host is one embedded JetStream server on a data dir with the log open.
type host struct {
	dir string
	srv *natslog.Server
	log *natslog.Log
	js  jetstream.JetStream
}

// start starts (or restarts) an embedded server on dir/js.
func start(t testing.TB, dir string) *host {
	t.Helper()
	ctx := t.Context()
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: filepath.Join(dir, "js")})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	l, err := natslog.Open(ctx, srv.Conn(), natslog.Config{})
	if err != nil {
		srv.Shutdown()
		t.Fatalf("Open: %v", err)
	}
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	h := &host{dir: dir, srv: srv, log: l, js: js}
	t.Cleanup(h.stop)
	return h
}

// stop closes the log and shuts the server down; again does nothing.
func (h *host) stop() {
	if h.srv == nil {
		return
	}
	h.log.Close()
	h.srv.Shutdown()
	h.srv = nil
}

// blockFile returns the path of the LOGBOOK stream's first block file.
func (h *host) blockFile() string {
	return filepath.Join(h.dir, "js", "jetstream", "$G", "streams", natslog.StreamName, "msgs", "1.blk")
}

var testTime = time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)

// appendStarted appends a session.started of session id with cwd.
func appendStarted(t testing.TB, l *natslog.Log, id, cwd string) {
	t.Helper()
	reg := events.NewRegistry()
	e := reg.New(events.SessionStarted{Agent: "cli", Cwd: cwd})
	e.ID = ulid.Make()
	e.Agg = events.Aggregate{Kind: events.KindSession, ID: id}
	e.Ver = 1
	e.At = testTime
	e.Cause = &events.Cause{Kind: "cli", Event: "start", Ref: "r1"}
	if _, err := l.Append(t.Context(), events.Batch{Agg: e.Agg, Events: []events.Envelope{e}}); err != nil {
		t.Fatalf("append %s: %v", id, err)
	}
}

// output publishes a command output chunk on lb.out.<cmd>.
func output(t testing.TB, js jetstream.JetStream, cmd, data string) {
	t.Helper()
	if _, err := js.Publish(t.Context(), "lb.out."+cmd, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

// fill writes the test log: seq 1 s1, 2 s2, 3 out c1, 4 s3, 5 s4 (cwd
// /work/MARKER-s4), 6 out c1, 7 s5. Only lb.out.c1 has two messages.
func fill(t testing.TB, h *host) {
	t.Helper()
	appendStarted(t, h.log, "s1", "/work/a")
	appendStarted(t, h.log, "s2", "/work/b")
	output(t, h.js, "c1", "first chunk\n")
	appendStarted(t, h.log, "s3", "/work/c")
	appendStarted(t, h.log, "s4", "/work/MARKER-s4")
	output(t, h.js, "c1", "second chunk\n")
	appendStarted(t, h.log, "s5", "/work/e")
}

// checkpointer returns a Checkpointer of h with its tree in h.dir/hashes.
func checkpointer(t testing.TB, h *host) *Checkpointer {
	t.Helper()
	tree, err := OpenTree(filepath.Join(h.dir, "hashes"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	s, _, err := LoadCheckpointKey(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.log.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &Checkpointer{Log: h.log, JS: h.js, Tree: tree, Signer: s, Origin: Origin(id)}
}

// keys returns the keys of the data dirs' key files.
func keys(t testing.TB, dirs ...string) Keys {
	t.Helper()
	var k Keys
	for _, d := range dirs {
		got, err := LoadKeys(d)
		if err != nil {
			t.Fatal(err)
		}
		k.Checkpoint = append(k.Checkpoint, got.Checkpoint...)
		k.Witness = append(k.Witness, got.Witness...)
	}
	return k
}

// witnessing runs a Witnesser for dir on l until the test ends or stop
// is called (before its server stops); it reports cosignatures and
// refusals on the channels it returns.
func witnessing(t testing.TB, dir string, l *natslog.Log, nc *nats.Conn, trust Keys) (cosigned chan Checkpoint, refused chan Refusal, stop func()) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadWitnessKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := l.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cosigned, refused = make(chan Checkpoint, 16), make(chan Refusal, 16)
	wt := &Witnesser{Log: l, JS: js, Tree: NewTree(), Witness: w, Keys: trust.Checkpoint, Origin: Origin(id),
		State:    filepath.Join(dir, "witness.json"),
		Logf:     func(f string, a ...any) { t.Logf(f, a...) },
		Refused:  func(r Refusal) { refused <- r },
		Cosigned: func(c Checkpoint) { cosigned <- c },
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := wt.Run(ctx); err != nil {
			t.Errorf("witness: %v", err)
		}
	})
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return cosigned, refused, stop
}

// flipByte flips one bit of the first byte of marker in path.
func flipByte(t testing.TB, path, marker string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(marker))
	if i < 0 {
		t.Fatalf("%s: no %q", path, marker)
	}
	b[i] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
