package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/sandbox"
)

// testEnv is one embedded JetStream server in a temporary directory, a
// log on it, a client, a session and a workspace.
type testEnv struct {
	t        testing.TB
	srv      *natslog.Server
	log      *natslog.Log
	reg      *events.Registry
	client   *Client
	session  string
	ws       string
	user, pw string
}

// consumers returns how many consumers the log's stream has now.
func (e *testEnv) consumers() int {
	e.t.Helper()
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		e.t.Fatal(err)
	}
	stream, err := js.Stream(context.Background(), natslog.StreamName)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State.Consumers
}

// newEnv starts a server (with a loopback listener when listen is set,
// for helper processes) and opens everything on it, closed at test end.
func newEnv(t testing.TB, listen bool) *testEnv {
	t.Helper()
	return newEnvIn(t, listen, t.TempDir())
}

// newEnvIn is newEnv with the server's store in storeDir.
func newEnvIn(t testing.TB, listen bool, storeDir string) *testEnv {
	t.Helper()
	e := &testEnv{t: t, reg: events.NewRegistry(), ws: t.TempDir(), session: "s-" + strings.ToLower(ulid.Make().String())}
	cfg := natslog.EmbeddedConfig{StoreDir: storeDir}
	if listen {
		e.user, e.pw = "test", natslog.NewPassword()
		cfg.Listen, cfg.User, cfg.Password = "127.0.0.1:0", e.user, e.pw
	}
	srv, err := natslog.StartEmbedded(t.Context(), cfg)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	e.srv = srv
	t.Cleanup(func() { srv.Shutdown() })
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: e.reg})
	if err != nil {
		t.Fatalf("natslog.Open: %v", err)
	}
	e.log = l
	t.Cleanup(func() { l.Close() })
	e.client, err = NewClient(ClientConfig{Conn: srv.Conn(), Log: l, Reg: e.reg, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e.startSession(e.session)
	return e
}

// startSession appends session.started for id, in mode full_access so
// that every mode may be requested.
func (e *testEnv) startSession(id string) {
	e.t.Helper()
	ev := e.reg.New(events.SessionStarted{Agent: "cli", Cwd: e.ws, Mode: events.ModeFullAccess})
	ev.ID, ev.Agg, ev.Ver = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: id}, 1
	ev.At = time.Now().UTC().Truncate(time.Microsecond)
	ev.Cause = &events.Cause{Kind: "cli", Event: "test", Ref: "t"}
	if _, err := e.log.Append(e.t.Context(), events.Batch{Agg: ev.Agg, Events: []events.Envelope{ev}}); err != nil {
		e.t.Fatalf("start session %s: %v", id, err)
	}
}

// testLogger returns a logger writing to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// workerConfig returns a worker configuration for tests: short grace and
// lapse, the test's log.
func (e *testEnv) workerConfig() Config {
	return Config{
		Conn: e.srv.Conn(), Log: e.log, Reg: e.reg,
		Grace: 300 * time.Millisecond, Lapse: time.Second, AckWait: 5 * time.Second,
		Logger: testLogger(e.t), Reporter: testReporter(e.t),
	}
}

// startWorker runs a worker with cfg until the test ends and returns it
// once it is registered, with a function that stops it early and returns
// Run's error (the test's cleanup then checks nothing more).
func (e *testEnv) startWorker(cfg Config) (*Worker, func() error) {
	e.t.Helper()
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var (
		once    sync.Once
		runErr  error
		stopped bool
	)
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
			if errors.Is(runErr, context.Canceled) {
				runErr = nil
			}
		})
		return runErr
	}
	e.t.Cleanup(func() {
		if err := stop(); err != nil && !stopped {
			e.t.Errorf("worker Run: %v", err)
		}
	})
	e.waitFor("worker registered", func() bool {
		ws, _ := e.client.Workers(e.t.Context())
		for _, id := range ws {
			if id.ID == w.Identity().ID {
				return true
			}
		}
		return false
	})
	return w, func() error { stopped = true; return stop() }
}

// waitFor polls cond every 20 ms for up to 20 s.
func (e *testEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// request returns a request for argv in the env's workspace.
func (e *testEnv) request(mode string, argv ...string) command.Request {
	return command.Request{
		Session: e.session, Argv: argv, Workspace: e.ws, Mode: mode,
		Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}, RequestedBy: "test",
	}
}

// submit appends req under a fresh id and returns the id.
func (e *testEnv) submit(req command.Request) string {
	e.t.Helper()
	id := ulid.Make().String()
	if _, err := e.client.Request(e.t.Context(), id, req, nil); err != nil {
		e.t.Fatalf("request %v: %v", req.Argv, err)
	}
	return id
}

// output is what Watch read.
type output struct {
	chunks []Chunk
	all    bytes.Buffer
	byName map[string]*bytes.Buffer
}

func (o *output) add(c Chunk) error {
	o.chunks = append(o.chunks, c)
	o.all.Write(c.Data)
	if o.byName == nil {
		o.byName = map[string]*bytes.Buffer{}
	}
	if o.byName[c.Stream] == nil {
		o.byName[c.Stream] = new(bytes.Buffer)
	}
	o.byName[c.Stream].Write(c.Data)
	return nil
}

func (o *output) stream(name string) string {
	if b := o.byName[name]; b != nil {
		return b.String()
	}
	return ""
}

// follow watches command id until it ends, or fails after d.
func (e *testEnv) follow(id string, d time.Duration) (command.State, *output) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), d)
	defer cancel()
	out := &output{}
	st, err := e.client.Watch(ctx, id, WatchOptions{Follow: true}, out.add)
	if err != nil {
		e.t.Fatalf("watch %s (status %s, output %q): %v", id, st.Status, tail(out.all.String()), err)
	}
	return st, out
}

// followMoving is follow for a command whose output is large: it fails
// only once nothing of the command has been read for still, however
// long the whole takes (a loaded machine, the race detector).
func (e *testEnv) followMoving(id string, still time.Duration) (command.State, *output) {
	e.t.Helper()
	ctx, cancel := context.WithCancelCause(e.t.Context())
	defer cancel(nil)
	idle := time.AfterFunc(still, func() { cancel(fmt.Errorf("nothing read for %v", still)) })
	defer idle.Stop()
	out := &output{}
	st, err := e.client.Watch(ctx, id, WatchOptions{Follow: true}, func(c Chunk) error {
		idle.Reset(still)
		return out.add(c)
	})
	if err != nil {
		e.t.Fatalf("watch %s (status %s, %d bytes read, output %q): %v (%v)", id, st.Status, out.all.Len(), tail(out.all.String()), err, context.Cause(ctx))
	}
	return st, out
}

// read returns the output of command id stored so far.
func (e *testEnv) read(id string) (command.State, *output) {
	e.t.Helper()
	out := &output{}
	st, err := e.client.Watch(e.t.Context(), id, WatchOptions{}, out.add)
	if err != nil {
		e.t.Fatalf("read %s: %v", id, err)
	}
	return st, out
}

func tail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

// types returns the event types of command id, in order.
func (e *testEnv) types(id string) []string {
	e.t.Helper()
	recs, _, err := e.log.Load(e.t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

// sessionState returns the env's session as the log has it.
func (e *testEnv) sessionState() session.State {
	e.t.Helper()
	agg := events.Aggregate{Kind: events.KindSession, ID: e.session}
	recs, _, err := e.log.Load(e.t.Context(), agg)
	if err != nil {
		e.t.Fatal(err)
	}
	return session.Fold(session.Init(agg), recs)
}

// checkContiguous fails unless o's chunks have contiguous offsets per
// stream and contiguous positions overall, starting at 0, with no chunk
// above sandbox.MaxChunk.
func checkContiguous(t testing.TB, o *output) {
	t.Helper()
	next := map[string]int64{}
	var pos int64
	for i, c := range o.chunks {
		if len(c.Data) == 0 || len(c.Data) > sandbox.MaxChunk {
			t.Fatalf("chunk %d: %d bytes, want 1..%d", i, len(c.Data), sandbox.MaxChunk)
		}
		if c.Offset != next[c.Stream] || c.Pos != pos {
			t.Fatalf("chunk %d (%s): offset %d pos %d, want %d and %d", i, c.Stream, c.Offset, c.Pos, next[c.Stream], pos)
		}
		next[c.Stream] += int64(len(c.Data))
		pos += int64(len(c.Data))
	}
}

// needBwrap skips the test when restricted modes cannot run here.
func needBwrap(t testing.TB) {
	t.Helper()
	if err := sandbox.Available(t.Context(), ""); err != nil {
		t.Skipf("restricted modes need bubblewrap, which is not usable here: %v", err)
	}
}
