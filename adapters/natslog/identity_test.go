package natslog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// A stream deleted under a Log, and one created again in its place, are
// both reported by WatchStream, naming the incarnation the Log had, and a
// Follow on the deleted stream returns promptly once its ctx ends, even
// while its ordered consumer is being reset. (When a Follow notices the
// loss by itself depends on the pull's heartbeats; WatchStream is what
// notices it.)
func TestWatchStream_DeletedAndRecreated(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	mustAppend(t, l, decision(reg, session("s1"), 0, 1, 3))
	was, err := l.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if was.Created.IsZero() || was.FirstSeq != 1 || was.LastSeq != 3 {
		t.Fatalf("Identity = %+v, want a creation time and seq 1..3", was)
	}

	cctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan struct{})
	go func() {
		for range l.Follow(cctx, 1) {
		}
		close(cancelled)
	}()

	watch := make(chan error, 1)
	go func() { watch <- l.WatchStream(t.Context(), was, 20*time.Millisecond) }()
	time.Sleep(100 * time.Millisecond)

	js, _ := jetstream.New(s.Conn())
	if err := js.DeleteStream(t.Context(), StreamName); err != nil {
		t.Fatal(err)
	}
	err = <-watch
	lost, ok := errors.AsType[*StreamLostError](err)
	if !ok || !errors.Is(err, ErrStreamLost) || !lost.Now.Created.IsZero() || lost.Was.LastSeq != 3 {
		t.Fatalf("WatchStream after delete = %v, want a *StreamLostError for the deleted stream at seq 3", err)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow on a deleted stream did not return 5 s after its ctx ended")
	}
	if _, err := js.CreateStream(t.Context(), Config{}.StreamConfig()); err != nil {
		t.Fatal(err)
	}
	err = l.WatchStream(t.Context(), was, 20*time.Millisecond)
	lost, ok = errors.AsType[*StreamLostError](err)
	if !ok || lost.Now.Created.Equal(was.Created) || lost.Now.LastSeq != 0 {
		t.Fatalf("WatchStream after re-create = %v, want a *StreamLostError naming the new stream", err)
	}
	t.Log(err)
}
