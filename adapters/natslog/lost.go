package natslog

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamLost returns err, or, when err is a failure (not a cancellation)
// and the stream l was opened on (was) is gone or replaced, the
// *StreamLostError that explains it: a feed that fails because its
// stream was deleted should say so. It asks the server for the stream's
// identity, waiting at most 2 s. A feed whose consumer was deleted
// while the server then went away (a serve on one host stops the moment
// it sees its stream deleted, before this check can ask) is taken as
// its stream deleted: the server deletes a stream's consumers with it.
func (l *Log) StreamLost(was Identity, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrStreamLost) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now, ierr := l.Identity(ctx)
	switch {
	case errors.Is(ierr, ErrStreamLost):
		return &StreamLostError{Was: was}
	case ierr == nil && !now.Created.Equal(was.Created):
		return &StreamLostError{Was: was, Now: now}
	case ierr != nil && errors.Is(err, jetstream.ErrConsumerDeleted) && (Unreachable(ierr) || errors.Is(ierr, nats.ErrConnectionClosed) || errors.Is(ierr, nats.ErrNoResponders) || errors.Is(ierr, context.DeadlineExceeded)):
		return &StreamLostError{Was: was}
	}
	return err
}

// Unreachable reports whether err, from a read of the log, says the
// connection to its server is gone for good (nats.go's "messages iterator
// closed: connection closed"): on one host, serve stopped.
func Unreachable(err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, jetstream.ErrMsgIteratorClosed) && !errors.Is(err, jetstream.ErrConsumerDeleted)
}
