package natslog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("read lb.ev.> from 1: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{fmt.Errorf("load: stream msg get: %w", errLeaderless), true},
		{fmt.Errorf("x: %w", &jetstream.APIError{Code: 500, ErrorCode: jsErrNoPeers}), true},
		{fmt.Errorf("x: %w", nats.ErrNoResponders), true},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("x: %w", jetstream.ErrNoHeartbeat), true},
		{fmt.Errorf("x: %w", &jetstream.APIError{Code: 400, ErrorCode: 10071}), false},
		{fmt.Errorf("x: %w", nats.ErrPermissionViolation), false},
		{fmt.Errorf("append: %w", events.ErrConflict), false},
		{&DecodeError{Seq: 3, Subject: "lb.ev.session.x", Err: fmt.Errorf("%w: %w", events.ErrMalformed, context.DeadlineExceeded)}, false},
		{errors.New("other"), false},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
