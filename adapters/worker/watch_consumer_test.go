package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// TestWatchDeletesItsConsumer: a watch leaves no consumer on the server
// when it returns (each `exec --wait` watches; consumers left behind
// would pile up, a few goroutines and some state each, for the server's
// inactivity threshold).
func TestWatchDeletesItsConsumer(t *testing.T) {
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(t.Context(), natslog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		info, err := stream.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	id := e.submit(e.request(events.ModeFullAccess, "echo", "hi"))
	e.follow(id, 10*time.Second)
	before := count()
	for range 5 {
		e.follow(id, 10*time.Second)
		if _, err := e.client.Watch(t.Context(), id, WatchOptions{}, func(Chunk) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if after := count(); after > before {
		t.Errorf("consumers on the stream: %d before ten watches, %d after; want no more", before, after)
	}
}
