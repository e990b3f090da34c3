package natslog

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports whether err, from a read or an append that has
// given up (its own wait for a leader over), says the log cannot serve
// for now rather than that the request was wrong: the stream without a
// leader (an election, a cluster that lost its quorum), answered as
// "temporarily unavailable" (503, 10008), "no peers" (10005) or not at
// all (no responders, a timeout, missed heartbeats, a connection being
// re-established). Unlike Unserved it does not look at a ctx: the caller
// that asks is one that waits such errors out for as long as it runs
// (serve's projector, its intake). A refusal (permissions, a conflict,
// bad input) and an event that does not decode are not unavailable.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*DecodeError](err); ok {
		return false
	}
	if errors.Is(err, errLeaderless) || noResponders(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) {
		return true
	}
	ae, ok := errors.AsType[*jetstream.APIError](err)
	return ok && (ae.Code == 503 || ae.ErrorCode == jsErrNoPeers || ae.ErrorCode == jsErrClusterNotAvail)
}
