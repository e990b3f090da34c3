package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// KeyID returns the command id a requester derives from a session id
// and an idempotency key: "key-" and the first 32 hex digits of the
// SHA-256 of the session id, a NUL byte and the key. The same pair
// always names the same command, so a retried request is stored once
// and run once.
func KeyID(session, key string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + key))
	return "key-" + hex.EncodeToString(sum[:16])
}

// ErrNoWorker is what AwaitWorker's error wraps when no worker came
// alive within its grace.
var ErrNoWorker = errors.New("no live worker")

// AwaitWorker returns once some worker is alive (a key of
// HeartbeatBucket, as Workers lists them, without reading the
// identities), polling every 100 ms, or fails after grace with an error
// wrapping ErrNoWorker ("no live worker for <grace>"): a request nobody
// takes would only be waited on. Errors also: Workers', and ctx's when
// it ends.
func (c *Client) AwaitWorker(ctx context.Context, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		var alive bool
		err := electionBound(ctx, "list workers", func(actx context.Context) (err error) {
			alive, err = c.anyWorker(actx)
			return err
		})
		if err != nil {
			return fmt.Errorf("workers: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if alive {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w for %v", ErrNoWorker, grace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// BackgroundGrace bounds how long Wait, its wait expired, spends
// marking the command as in the background.
const BackgroundGrace = 5 * time.Second

// interruptGrace bounds how long Wait, its ctx ended, spends marking
// the command as in the background.
const interruptGrace = 5 * time.Second

// WaitResult is what Wait saw of a command.
type WaitResult struct {
	// State is the command's state as last read.
	State command.State
	// Background: the wait expired (or ctx ended) before the command
	// did, and the command was marked as in the background (or, with
	// MarkErr, goes on unmarked). The command goes on either way.
	Background bool
	// Interrupted: ctx ended while the output was read; Wait's error is
	// ctx's.
	Interrupted bool
	// MarkErr is why the command, its wait expired, was not marked as
	// in the background within BackgroundGrace (a leader election on a
	// cluster can hold the append that long); nil when it was.
	MarkErr error
}

// Wait reads command id's output, calling fn for each chunk in order,
// for up to wait (0: what is stored now only), and returns its state
// once it ends. When the wait expires first the command is marked as in
// the background (Background) and Wait returns nil; when ctx ends first
// it is marked too, within a grace of its own, and Wait returns ctx's
// error (Interrupted). A command that ends while it is being marked is
// read to its end. Errors: Watch's, fn's, or Background's other than
// the command having ended or been backgrounded already.
func (c *Client) Wait(ctx context.Context, id string, wait time.Duration, fn func(Chunk) error) (WaitResult, error) {
	var pos int64 // end of the output fn has had so far
	print := func(ch Chunk) error {
		pos = ch.Pos + int64(len(ch.Data))
		return fn(ch)
	}
	var st command.State
	var err error
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		st, err = c.Watch(wctx, id, WatchOptions{Follow: true}, print)
		cancel()
	} else {
		// No wait: what is stored now, then the background.
		st, err = c.Watch(ctx, id, WatchOptions{}, print)
		if err == nil && !st.Ended() {
			err = context.DeadlineExceeded
		}
	}
	if ctx.Err() != nil {
		// Interrupted: the command goes on, as when the wait expires.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptGrace)
		defer cancel()
		berr := c.Background(bctx, id, wait)
		return WaitResult{State: st, Background: berr == nil, Interrupted: true}, ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Marking it takes one append; during a leader election on a
		// cluster that can wait long, and the wait is not outlived by
		// more than BackgroundGrace for it: the command goes on either
		// way.
		bctx, cancel := context.WithTimeout(ctx, BackgroundGrace)
		berr := c.Background(bctx, id, wait)
		cancel()
		if errors.Is(berr, events.ErrRejected) && !errors.As(berr, new(*EndedError)) {
			berr = nil // backgrounded already: a retry of a backgrounded run
		}
		if !errors.As(berr, new(*EndedError)) {
			var res WaitResult
			if berr != nil && ctx.Err() == nil && bctx.Err() != nil {
				res.MarkErr, berr = berr, nil
			}
			if berr != nil {
				return WaitResult{State: st}, berr
			}
			res.State, res.Background = st, true
			return res, nil
		}
		// It ended just now: read the rest.
		st, err = c.Watch(ctx, id, WatchOptions{Follow: true, After: pos}, print)
	}
	return WaitResult{State: st}, err
}
