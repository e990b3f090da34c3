package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

func TestKeyID(t *testing.T) {
	t.Parallel()
	a, b := KeyID("s1", "k"), KeyID("s1", "k")
	if a != b || len(a) != len("key-")+32 || a[:4] != "key-" {
		t.Errorf("KeyID(s1, k) = %q, %q: want one key- id of 32 hex digits", a, b)
	}
	if KeyID("s1", "k2") == a || KeyID("s2", "k") == a {
		t.Errorf("KeyID: another session or key names the same command")
	}
}

// TestAwaitWorker: with no worker the wait ends after its grace with
// ErrNoWorker; with one it returns at once. The heartbeats stopped
// workers removed (delete markers in the bucket) count for none, before
// a live worker's as after it.
func TestAwaitWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	if err := e.client.AwaitWorker(t.Context(), 200*time.Millisecond); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("AwaitWorker with no worker: %v, want ErrNoWorker", err)
	}
	for i := range 2 {
		_, stop := e.startWorker(e.workerConfig())
		if err := e.client.AwaitWorker(t.Context(), time.Second); err != nil {
			t.Fatalf("AwaitWorker with a worker (%d stopped before it): %v", i, err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if err := e.client.AwaitWorker(t.Context(), 200*time.Millisecond); !errors.Is(err, ErrNoWorker) {
			t.Fatalf("AwaitWorker with %d stopped workers: %v, want ErrNoWorker", i+1, err)
		}
	}
	e.startWorker(e.workerConfig())
	if err := e.client.AwaitWorker(t.Context(), time.Second); err != nil {
		t.Fatalf("AwaitWorker with a worker after 2 stopped: %v", err)
	}
}

// TestWait: a command that ends within the wait is read to its end; one
// that outlasts it is marked as in the background, and a second Wait
// (a retry) finds it so, not refused.
func TestWait(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeReadOnly, "echo", "hi"))
	var out output
	r, err := e.client.Wait(t.Context(), id, 20*time.Second, out.add)
	if err != nil || r.Background || r.State.Status != command.StatusExited {
		t.Fatalf("Wait for echo: %+v, %v: want exited", r, err)
	}
	if got := out.stream("stdout"); got != "hi\n" {
		t.Errorf("Wait for echo read %q, want %q", got, "hi\n")
	}
	id = e.submit(e.request(events.ModeReadOnly, "sleep", "30"))
	for range 2 {
		r, err = e.client.Wait(t.Context(), id, 300*time.Millisecond, func(Chunk) error { return nil })
		if err != nil || !r.Background || r.State.Ended() {
			t.Fatalf("Wait for sleep: %+v, %v: want it in the background", r, err)
		}
	}
	if err := e.client.Stop(t.Context(), id, "test", "done"); err != nil {
		t.Fatal(err)
	}
}
