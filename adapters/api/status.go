package api

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// AskStatus asks the server answering on prefix, over nc, for its
// status (VerbStatus), waiting at most IntakeWait and a second more. The
// server answers once the hooks it took on its socket before the call
// are in the log, so what the caller reads next holds them. An error is
// Call's.
func AskStatus(ctx context.Context, nc *nats.Conn, prefix string) (StatusReply, error) {
	ctx, cancel := context.WithTimeout(ctx, IntakeWait+time.Second)
	defer cancel()
	var st StatusReply
	err := Call(ctx, nc, prefix, VerbStatus, struct{}{}, &st)
	return st, err
}

// StaleOf returns the Stale of an answer resp of verb, as a Caller
// decoded it: a sessions page kept undecoded (*[]byte) is read as far as
// its head (PageStale), any other answer that embeds a Stale says its
// own. The zero Stale for the rest.
func StaleOf(verb string, resp any) Stale {
	switch r := resp.(type) {
	case *[]byte:
		if verb == VerbSessions {
			return PageStale(*r)
		}
	case interface{ StaleInfo() Stale }:
		return r.StaleInfo()
	}
	return Stale{}
}

// DownCheckEvery is how often UntilDown asks whether the log answers.
const DownCheckEvery = time.Second

// UntilDown runs f, and while it runs calls down every DownCheckEvery:
// once down reports true (the server says its log does not answer), f's
// context is cancelled and, once f has returned, UntilDown reports down
// (f's error dropped). Otherwise it returns f's error. For a read that
// may answer from the projection: a wait on the log that began just as
// the cluster lost its quorum ends when serve notices, not after
// natslog.ElectionWait. down runs on UntilDown's goroutine, f on one of
// its own.
func UntilDown(ctx context.Context, down func(context.Context) bool, f func(context.Context) error) (bool, error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(fctx) }()
	t := time.NewTicker(DownCheckEvery)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return false, err
		case <-t.C:
			if down(ctx) {
				cancel()
				<-done
				return true, nil
			}
		}
	}
}
