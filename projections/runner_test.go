package projections_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

// newLog starts an embedded JetStream server in a temporary directory and
// opens the log on it; both stop at the end of the test. Tests that do
// not depend on the log's durability use FsyncInterval: it only saves
// time.
func newLog(t testing.TB, fsync natslog.Fsync) (*natslog.Log, *natslog.Server) {
	t.Helper()
	return natslogtest.Start(t, fsync)
}

// logWith returns a log holding h's batches.
func logWith(t testing.TB, h *projectionstest.History) *natslog.Log {
	t.Helper()
	log, _ := newLog(t, natslog.FsyncInterval)
	if _, err := h.AppendTo(context.Background(), log); err != nil {
		t.Fatal(err)
	}
	return log
}

// storeOn returns seed's history of 200 steps over 4 sessions, a log
// holding it, and a store opened with default options in a fresh
// directory dir, empty; the caller closes the store.
func storeOn(t testing.TB, seed uint64) (*projectionstest.History, *natslog.Log, string, *projections.Store) {
	t.Helper()
	h := history(t, seed, 200, 4)
	log := logWith(t, h)
	dir := filepath.Join(t.TempDir(), "p")
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h, log, dir, s
}

// appendAll appends batches to log in order; a failure fails the test.
func appendAll(t testing.TB, log *natslog.Log, batches []events.Batch) {
	t.Helper()
	for _, b := range batches {
		if _, err := log.Append(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
}

// memHash is the hash of recs applied to a fresh in-memory store.
func memHash(t testing.TB, opts projections.Options, recs []events.Record) string {
	t.Helper()
	s, err := projections.OpenMem(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	apply(t, s, recs, 0)
	return hash(t, s, lastSeq(recs))
}

// TestRunner_RunOnce: RunOnce applies one batch after the checkpoint,
// RunToEnd the rest, and the projection read from the real log equals
// the one folded from the records in memory.
func TestRunner_RunOnce(t *testing.T) {
	t.Parallel()
	h := history(t, 21, 200, 4)
	log := logWith(t, h)
	s := open(t, t.TempDir(), projections.Options{})
	r := &projections.Runner{Log: log, Store: s, Batch: 7}
	for i := 1; i <= 3; i++ {
		n, err := r.RunOnce(t.Context())
		if err != nil || n != 7 {
			t.Fatalf("RunOnce %d = %d, %v; want 7, nil", i, n, err)
		}
		if got := s.Checkpoint(); got != uint64(7*i) {
			t.Fatalf("checkpoint after RunOnce %d = %d, want %d", i, got, 7*i)
		}
	}
	n, err := r.RunToEnd(t.Context())
	if err != nil || n != len(h.Records)-21 {
		t.Fatalf("RunToEnd = %d, %v; want %d", n, err, len(h.Records)-21)
	}
	if n, err := r.RunOnce(t.Context()); n != 0 || err != nil {
		t.Errorf("RunOnce when caught up = %d, %v; want 0, nil", n, err)
	}
	if got, want := hash(t, s, lastSeq(h.Records)), memHash(t, projections.Options{}, h.Records); got != want {
		t.Errorf("hash from the log %s, from memory %s", got, want)
	}
	checkRows(t, s, h)
}

// TestRunner_Resume: a runner stopped midway and a new one on the
// reopened store finish with the projection a single run makes.
func TestRunner_Resume(t *testing.T) {
	t.Parallel()
	h, log, dir, s := storeOn(t, 22)
	r := &projections.Runner{Log: log, Store: s, Batch: 10}
	for range 5 {
		if _, err := r.RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, projections.Options{})
	if s.Checkpoint() != 50 {
		t.Fatalf("checkpoint after reopen = %d, want 50", s.Checkpoint())
	}
	r = &projections.Runner{Log: log, Store: s}
	n, err := r.RunToEnd(t.Context())
	if err != nil || n != len(h.Records)-50 {
		t.Fatalf("RunToEnd = %d, %v; want %d", n, err, len(h.Records)-50)
	}
	if got, want := hash(t, s, lastSeq(h.Records)), memHash(t, projections.Options{}, h.Records); got != want {
		t.Errorf("resumed hash %s, want %s", got, want)
	}
}

// TestRunner_DecodeError: a stored message that does not decode stops
// the runner with its sequence in the error, every time, with the
// records before it committed.
func TestRunner_DecodeError(t *testing.T) {
	t.Parallel()
	h := history(t, 23, 60, 2)
	log, srv := newLog(t, natslog.FsyncInterval)
	half := len(h.Batches) / 2
	appendAll(t, log, h.Batches[:half])
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(t.Context(), "lb.ev.session.broken", []byte(`{"id":"nope"`))
	if err != nil {
		t.Fatal(err)
	}
	bad := ack.Sequence
	// Later decisions for a fresh session, past the broken message.
	more := projectionstest.NewHistory(projectionstest.Epoch())
	for i := 1; i <= 3; i++ {
		o := events.Observation{Key: fmt.Sprint("l", i), Parser: "test/1", Line: i, Kind: "user",
			Meta: events.Meta{SessionID: "x"}, Signals: []events.Sig{{Kind: events.SigPrompt}}}
		if _, err := more.Observe("later", events.ClaudeLineObserved{Observation: o}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := more.AppendTo(t.Context(), log); err != nil {
		t.Fatal(err)
	}

	s := open(t, t.TempDir(), projections.Options{})
	r := &projections.Runner{Log: log, Store: s, Batch: 5}
	for attempt := range 2 {
		_, err := r.RunToEnd(t.Context())
		if !errors.Is(err, events.ErrMalformed) {
			t.Fatalf("attempt %d: RunToEnd = %v, want ErrMalformed", attempt, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("seq %d ", bad)) {
			t.Errorf("attempt %d: error %q does not name seq %d", attempt, err, bad)
		}
		if got := s.Checkpoint(); got != bad-1 {
			t.Errorf("attempt %d: checkpoint = %d, want %d", attempt, got, bad-1)
		}
	}
	if _, err := s.Session("later"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("session after the broken record was projected: %v", err)
	}
}

// TestRunner_Run follows the log live while decisions are appended and
// stops with its context; the result equals a projection from memory.
func TestRunner_Run(t *testing.T) {
	t.Parallel()
	h := history(t, 24, 300, 5)
	log, _ := newLog(t, natslog.FsyncInterval)
	first := len(h.Batches) / 3
	appendAll(t, log, h.Batches[:first])
	s := open(t, t.TempDir(), projections.Options{})
	r := &projections.Runner{Log: log, Store: s, Batch: 50, Interval: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	appendAll(t, log, h.Batches[first:])
	last := lastSeq(h.Records)
	deadline := time.Now().Add(20 * time.Second)
	for s.Checkpoint() < last {
		if time.Now().After(deadline) {
			t.Fatalf("Run stuck at checkpoint %d of %d", s.Checkpoint(), last)
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if got, want := hash(t, s, last), memHash(t, projections.Options{}, h.Records); got != want {
		t.Errorf("live hash %s, want %s", got, want)
	}
}

// TestRunner_RunCommitsForAWaiter: with an Interval far longer than the
// test, a WaitFor is answered as soon as Run has applied what it waits
// for, whether the wait starts after the append or before it, and while
// another waits for a later sequence; the projection equals one from
// memory.
func TestRunner_RunCommitsForAWaiter(t *testing.T) {
	t.Parallel()
	h := history(t, 25, 60, 3)
	log, _ := newLog(t, natslog.FsyncInterval)
	s := open(t, t.TempDir(), projections.Options{})
	r := &projections.Runner{Log: log, Store: s, Batch: 100000, Interval: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// A guard against a hang, not a timing: without the demand the
	// first wait would last the hour.
	wctx, wcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer wcancel()
	// A waiter for a sequence never appended holds up no other.
	far, farCancel := context.WithCancel(t.Context())
	farDone := make(chan error, 1)
	go func() { farDone <- s.WaitFor(far, lastSeq(h.Records)+1000) }()
	defer func() {
		farCancel()
		if err := <-farDone; !errors.Is(err, context.Canceled) {
			t.Errorf("WaitFor of a sequence never appended = %v, want context.Canceled", err)
		}
	}()
	half := len(h.Batches) / 2
	for i, b := range h.Batches {
		if i < half {
			ap, err := log.Append(t.Context(), b)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.WaitFor(wctx, ap.Last); err != nil {
				t.Fatalf("batch %d: WaitFor(%d) after the append: %v", i, ap.Last, err)
			}
			continue
		}
		// The wait starts first, for the sequence the append will end at.
		want := s.Checkpoint() + uint64(len(b.Events))
		waited := make(chan error, 1)
		go func() { waited <- s.WaitFor(wctx, want) }()
		ap, err := log.Append(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Last != want {
			t.Fatalf("batch %d ends at %d, want %d", i, ap.Last, want)
		}
		if err := <-waited; err != nil {
			t.Fatalf("batch %d: WaitFor(%d) before the append: %v", i, want, err)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	last := lastSeq(h.Records)
	if got, want := hash(t, s, last), memHash(t, projections.Options{}, h.Records); got != want {
		t.Errorf("hash %s, want %s", got, want)
	}
}

// TestRunner_RunSyncsWhatItCommitsForAWaiter: a commit made for a
// waiter skips the fsync (a crash of the machine right after it loses
// the batch with its checkpoint), and Run syncs it as it stops, or
// Interval after it while it runs.
func TestRunner_RunSyncsWhatItCommitsForAWaiter(t *testing.T) {
	t.Parallel()
	h := history(t, 26, 20, 2)
	log, _ := newLog(t, natslog.FsyncInterval)
	fs := vfs.NewCrashableMem()
	s := open(t, "p", projections.Options{FS: fs})
	// afterCrash is the checkpoint of the store as a crash of the machine
	// now would leave it: only what was synced.
	afterCrash := func() uint64 {
		t.Helper()
		c, err := projections.Open("p", projections.Options{FS: fs.CrashClone(vfs.CrashCloneCfg{})})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Checkpoint()
	}
	run := func(interval time.Duration) (stop func()) {
		r := &projections.Runner{Log: log, Store: s, Batch: 100000, Interval: interval}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
		}
	}
	appendAndWait := func(b events.Batch) uint64 {
		t.Helper()
		ap, err := log.Append(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WaitFor(t.Context(), ap.Last); err != nil {
			t.Fatal(err)
		}
		return ap.Last
	}

	stop := run(time.Hour)
	last := appendAndWait(h.Batches[0])
	if got := afterCrash(); got >= last {
		t.Errorf("checkpoint %d after a crash right after the commit for a waiter, want it lost (< %d): the commit waited for the fsync", got, last)
	}
	stop()
	if got := afterCrash(); got != last {
		t.Errorf("checkpoint %d after a crash once Run stopped, want %d", got, last)
	}

	stop = run(10 * time.Millisecond)
	defer stop()
	last = appendAndWait(h.Batches[1])
	for afterCrash() != last { // synced Interval after the commit
		select {
		case <-t.Context().Done():
			t.Fatalf("checkpoint %d never synced", last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// sessionsV2 is the session view at the schema version after the current
// one.
type sessionsV2 struct{ projections.SessionView }

func (sessionsV2) Version() int { return projections.SessionView{}.Version() + 1 }

// TestRunner_SchemaChange: a store built by an older view version is
// rebuilt from the log and swapped in by RunToEnd.
func TestRunner_SchemaChange(t *testing.T) {
	t.Parallel()
	h, log, dir, s := storeOn(t, 25)
	if _, err := (&projections.Runner{Log: log, Store: s, Batch: 9}).RunToEnd(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v2 := projections.Options{Views: []projections.View{sessionsV2{}}}
	s = open(t, dir, v2)
	if !s.Stale() {
		t.Fatal("not stale under a new view version")
	}
	r := &projections.Runner{Log: log, Store: s, Batch: 9}
	if _, err := r.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !s.Stale() || s.Checkpoint() != lastSeq(h.Records) {
		t.Fatalf("during the rebuild: stale %v checkpoint %d; want the old store answering", s.Stale(), s.Checkpoint())
	}
	if _, err := r.RunToEnd(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Stale() {
		t.Fatal("still stale after RunToEnd")
	}
	if got, want := hash(t, s, lastSeq(h.Records)), memHash(t, v2, h.Records); got != want {
		t.Errorf("rebuilt hash %s, fresh %s", got, want)
	}
}
