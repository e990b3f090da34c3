package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// handoffEnv returns e's workers' Handoff, n workers started with it,
// and a Client that passes its requests to them.
func handoffEnv(t *testing.T, e *testEnv, n int) (*Handoff, []*Worker, *Client) {
	t.Helper()
	h := NewHandoff()
	var ws []*Worker
	for range n {
		cfg := e.workerConfig()
		cfg.Handoff = h
		w, _ := e.startWorker(cfg)
		ws = append(ws, w)
	}
	for _, w := range ws {
		e.waitFor("worker taking requests", func() bool {
			w.takerMu.Lock()
			defer w.takerMu.Unlock()
			return w.taker != nil
		})
	}
	cl, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", Handoff: h})
	if err != nil {
		t.Fatal(err)
	}
	return h, ws, cl
}

// settledDeliveries waits until the workers' consumer has every request
// delivered and acknowledged.
func settledDeliveries(t *testing.T, e *testEnv) {
	t.Helper()
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("every request acknowledged", func() bool {
		c, err := js.Consumer(t.Context(), natslog.StreamName, DurableName)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0
	})
}

// A request a Client with a Handoff appends starts on a worker of the
// Handoff without the consumer's delivery (paused here for an hour):
// once, and the delivery that comes later is acknowledged without a
// second start.
func TestHandoff_StartsWithoutDelivery(t *testing.T) {
	e := newEnv(t, false)
	h, _, cl := handoffEnv(t, e, 1)
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PauseConsumer(t.Context(), natslog.StreamName, DurableName, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	if _, err := cl.Request(t.Context(), id, e.request(events.ModeFullAccess, "echo", "handed"), nil); err != nil {
		t.Fatal(err)
	}
	st, out := e.follow(id, 20*time.Second)
	if st.Status != "exited" || st.ExitCode == nil || *st.ExitCode != 0 || out.stream("stdout") != "handed\n" {
		t.Fatalf("command %s ended %s (exit %v), stdout %q; want exited 0, %q", id, st.Status, st.ExitCode, out.stream("stdout"), "handed\n")
	}
	if _, err := js.ResumeConsumer(t.Context(), natslog.StreamName, DurableName); err != nil {
		t.Fatal(err)
	}
	settledDeliveries(t, e)
	if got := e.types(id); countOf(got, "command.started") != 1 {
		t.Fatalf("command %s events %v: want command.started once", id, got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.taking) != 0 || len(h.settled) != 0 {
		t.Fatalf("handoff keeps %d takes and %d settled commands after every delivery; want none", len(h.taking), len(h.settled))
	}
}

// Many requests at once, through two workers of one Handoff and their
// consumer together: every command starts once and exits, and every
// delivery is acknowledged.
func TestHandoff_ManyAtOnce(t *testing.T) {
	e := newEnv(t, false)
	_, _, cl := handoffEnv(t, e, 2)
	const n = 24
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = ulid.Make().String()
		wg.Go(func() {
			if _, err := cl.Request(t.Context(), ids[i], e.request(events.ModeFullAccess, "echo", fmt.Sprint(i)), nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		st, out := e.follow(id, 30*time.Second)
		if st.Status != "exited" || out.stream("stdout") != fmt.Sprintf("%d\n", i) {
			t.Errorf("command %d (%s) ended %s, stdout %q", i, id, st.Status, out.stream("stdout"))
		}
	}
	settledDeliveries(t, e)
	for _, id := range ids {
		if got := e.types(id); countOf(got, "command.started") != 1 {
			t.Errorf("command %s events %v: want command.started once", id, got)
		}
	}
}

// A workspace_write request handed over while another holds its
// workspace is put back, not lost: the delivery starts it once the
// first has ended, and neither starts twice.
func TestHandoff_PutBackWhileWorkspaceHeld(t *testing.T) {
	needBwrap(t)
	e := newEnv(t, false)
	_, _, cl := handoffEnv(t, e, 1)
	first, second := ulid.Make().String(), ulid.Make().String()
	for _, id := range []string{first, second} {
		if _, err := cl.Request(t.Context(), id, e.request(events.ModeWorkspaceWrite, "sh", "-c", "sleep 0.3; echo "+id), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{first, second} {
		st, out := e.follow(id, 60*time.Second)
		if st.Status != "exited" || out.stream("stdout") != id+"\n" {
			t.Fatalf("command %s ended %s, stdout %q", id, st.Status, out.stream("stdout"))
		}
		if got := e.types(id); countOf(got, "command.started") != 1 {
			t.Fatalf("command %s events %v: want command.started once", id, got)
		}
	}
	a, _ := e.client.Command(t.Context(), first)
	b, _ := e.client.Command(t.Context(), second)
	if b.StartedAt.Before(a.EndedAt) {
		t.Fatalf("the second writer started at %v, before the first ended at %v", b.StartedAt, a.EndedAt)
	}
	settledDeliveries(t, e)
}

// A Handoff whose workers have stopped taking requests takes nothing:
// the request waits for a worker's delivery, as without one.
func TestHandoff_StoppedWorkerTakesNothing(t *testing.T) {
	e := newEnv(t, false)
	h := NewHandoff()
	cfg := e.workerConfig()
	cfg.Handoff = h
	_, stop := e.startWorker(cfg)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", Handoff: h})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cl.Request(ctx, id, e.request(events.ModeFullAccess, "true"), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := e.types(id); !slices.Equal(got, []string{"command.requested"}) {
		t.Fatalf("command %s events %v with no worker taking requests; want only command.requested", id, got)
	}
	cfg = e.workerConfig()
	cfg.Handoff = h
	e.startWorker(cfg)
	if st, _ := e.follow(id, 30*time.Second); st.Status != "exited" {
		t.Fatalf("command %s ended %s once a worker runs; want exited", id, st.Status)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// A reservation whose request does not land as a new command lets go
// of what it took: a retried request of a command already on the log
// (requested by a client without the Handoff while the consumer is
// paused, so nothing has claimed it) reserves a worker, claims the
// command meanwhile, finds the id taken and settles as not appended:
// the claim is let go, the worker's slot freed and the Handoff keeps
// nothing, so the consumer's delivery starts the command, once.
func TestHandoff_ReservationLetGoWhenNotAppended(t *testing.T) {
	e := newEnv(t, false)
	h, ws, cl := handoffEnv(t, e, 1)
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PauseConsumer(t.Context(), natslog.StreamName, DurableName, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	plain, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	req := e.request(events.ModeFullAccess, "echo", "once")
	req.At = time.Now().UTC().Truncate(time.Microsecond) // the retry is the same request
	if _, err := plain.Request(t.Context(), id, req, nil); err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	if _, err := cl.Request(t.Context(), id, req, nil); err != nil {
		t.Fatalf("retried request: %v", err)
	}
	e.waitFor("the reservation let go", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		// At most the intake's own slot, held while it waits for a
		// delivery.
		return len(h.taking) == 0 && len(w.slots) <= 1
	})
	if _, err := w.claims.Get(t.Context(), id); err == nil {
		t.Fatalf("command %s is claimed after a reservation whose request did not land; want the claim let go", id)
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	if got := e.types(id); countOf(got, "command.started") != 0 {
		t.Fatalf("command %s events %v before its delivery: want no start", id, got)
	}
	if _, err := js.ResumeConsumer(t.Context(), natslog.StreamName, DurableName); err != nil {
		t.Fatal(err)
	}
	st, out := e.follow(id, 20*time.Second)
	if st.Status != "exited" || out.stream("stdout") != "once\n" {
		t.Fatalf("command %s ended %s, stdout %q; want exited, %q", id, st.Status, out.stream("stdout"), "once\n")
	}
	settledDeliveries(t, e)
	if got := e.types(id); countOf(got, "command.started") != 1 {
		t.Fatalf("command %s events %v: want command.started once", id, got)
	}
}
