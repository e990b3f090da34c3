package worker

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestWatchDeletesItsConsumer: a watch leaves no consumer on the server
// when it returns (each `exec --wait` watches; consumers left behind
// would pile up, a few goroutines and some state each, for the server's
// inactivity threshold).
func TestWatchDeletesItsConsumer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "echo", "hi"))
	e.follow(id, 10*time.Second)
	before := e.consumers()
	for range 5 {
		e.follow(id, 10*time.Second)
		if _, err := e.client.Watch(t.Context(), id, WatchOptions{}, func(Chunk) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if after := e.consumers(); after > before {
		t.Errorf("consumers on the stream: %d before ten watches, %d after; want no more", before, after)
	}
}
