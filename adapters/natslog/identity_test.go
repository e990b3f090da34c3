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
// both reported by WatchStream, naming the incarnation the Log had; a Follow
// in progress on the deleted stream ends with an error instead of waiting
// for good, and a Follow whose ctx ends during its reset returns promptly.
func TestWatchStream_DeletedAndRecreated(t *testing.T) {
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

	follow := make(chan error, 1)
	go func() {
		for _, err := range l.Follow(t.Context(), 1) {
			if err != nil {
				follow <- err
				return
			}
		}
		follow <- nil
	}()
	cctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan time.Duration, 1)
	go func() {
		for range l.Follow(cctx, 1) {
		}
		cancelled <- 0
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
	select {
	case err := <-follow:
		if err == nil {
			t.Fatal("Follow on a deleted stream ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow on a deleted stream still waits after 10 s")
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
