package natslog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// TestStreamLost_ConsumerDeletedThenServerGone: a feed whose consumer was
// deleted, on a server that went away before the check could ask, reads
// as its stream deleted (a serve stops the moment it sees its stream
// gone); any other failure on a server gone stays what it was.
func TestStreamLost_ConsumerDeletedThenServerGone(t *testing.T) {
	t.Parallel()
	srv, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.Context(), srv.Conn(), Config{Registry: events.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	was, err := l.Identity(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	feed := fmt.Errorf("request feed closed: %w", jetstream.ErrConsumerDeleted)
	var lost *StreamLostError
	if got := l.StreamLost(was, feed); !errors.As(got, &lost) {
		t.Errorf("StreamLost(consumer deleted, server gone) = %v, want a *StreamLostError", got)
	}
	other := errors.New("request feed closed: something else")
	if got := l.StreamLost(was, other); got != other {
		t.Errorf("StreamLost(other failure, server gone) = %v, want it unchanged", got)
	}
}
