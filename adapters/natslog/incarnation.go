package natslog

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Incarnation names the stream id describes as it is now, for an import
// index: "LOGBOOK@<created, RFC 3339 with nanoseconds>", followed by
// " gone N" when N of its messages are no longer kept (Gone). A stream
// created again, or one that lost messages, names another incarnation.
func (id Identity) Incarnation() string {
	s := StreamName + "@" + id.Created.Format(time.RFC3339Nano)
	if gone := id.Gone(); gone > 0 {
		s += fmt.Sprintf(" gone %d", gone)
	}
	return s
}

// ServerGone reports whether err, from appends to the log, says its
// server went away (Unreachable, no server or responder, no stream
// answer, disconnected): work stopped there can resume when a server
// answers again.
func ServerGone(err error) bool {
	return Unreachable(err) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrDisconnected)
}
