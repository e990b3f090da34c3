package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"
)

// A follower of the log's end (FollowRaw, Follow past its catch-up: the
// projector, the checkpointer) read through nats.go pays, for every
// message, the client's decoding of its header block into a map of every
// header (the server's bookkeeping too) and the ordered consumer's
// wrappers, one message after the other in the connection's read loop.
// followRaw reads the same messages from a consumer of its own over a
// connection of its own that speaks the NATS protocol itself (rawConn, as
// the bounded raw read does), and keeps an ordered consumer's
// guarantees: messages in stream order, each once; a gap in the
// consumer's deliveries, a missed heartbeat, a dropped connection or a
// server restart recreate the consumer from the first sequence not yet
// yielded.

// Raw follow tuning.
const (
	// rawFollowStall is how long a raw follower waits without a message
	// or a heartbeat before it takes the consumer for lost and starts
	// again: five of its heartbeats (followHeartbeat) missed. The watch
	// counts the time the follower's reader spends on a message (yield)
	// too, as time without one: a projector slow on a loaded machine
	// must not have its consumer made again and again, so the stall is
	// kept at what it was with 2 s heartbeats, not two of them.
	rawFollowStall = 5 * time.Second
	// rawFollowReconnect is how often a raw follower whose connection
	// dropped looks whether the Log's connection is back.
	rawFollowReconnect = 50 * time.Millisecond
)

// errRawReset reports a raw follower's consumer that must be recreated:
// a gap in its deliveries, a status it does not expect.
var errRawReset = errors.New("raw follow: consumer to reset")

// followRaw yields filter's messages from from on, in order, until ctx
// is done (then it returns without yielding an error) or the loop
// stops, over raw connections (rawConn) on a stream of one replica. With
// raw each Msg carries its header block in hdr and Header nil (the
// caller decodes it, msgHeader); otherwise Header holds the judged
// headers (decodeHeader). Each failure (a dropped connection, a gap, a
// missed heartbeat, a server restart) recreates the consumer from the
// first sequence not yet yielded, once the Log's connection is
// connected again, a second after the last try. As with the ordered
// consumer, ResetAttempts creations of the consumer failing in a row end
// the sequence with the last one's error, and so does the Log's
// connection closed; a failure while the embedded Server restarted
// JetStream (the consumer gone, or none made) is not counted: the
// follow starts again once the restart is over (ElectionWait at most). A raw connection that cannot be made as the Log's
// was (errRawUnsupported), or that fails ResetAttempts times in a row
// with no message between, hands the follow over to consume, the
// ordered consumer, from that sequence on.
func (l *Log) followRaw(ctx context.Context, filter string, from uint64, raw bool, yield func(Msg, error) bool) {
	next := max(from, 1)
	created, conn := 0, 0 // failures in a row: of the consumer's creation, of the rest
	for {
		gen := l.restartsNow()
		n, stopped, err := l.rawFollowOnce(ctx, filter, next, raw, yield)
		if stopped || ctx.Err() != nil {
			return
		}
		if n > next {
			created, conn = 0, 0
		}
		next = n
		var cerr *createError
		if l.restartedSince(gen) {
			// The embedded server restarted JetStream (the consumer
			// gone, or none made: no responders, the stream not found):
			// try again once the restart is over, not counted.
			if werr := l.awaitRestarted(ctx, time.Now().Add(ElectionWait)); werr != nil {
				if ctx.Err() == nil {
					yield(Msg{}, fmt.Errorf("read %s from %d: %w", filter, next, errors.Join(werr, err)))
				}
				return
			}
			continue
		}
		if errors.As(err, &cerr) {
			if created++; created >= ResetAttempts {
				yield(Msg{}, fmt.Errorf("read %s from %d: %w", filter, next, cerr.err))
				return
			}
		} else if conn++; conn >= ResetAttempts || errors.Is(err, errRawUnsupported) {
			l.consume(ctx, filter, next, 0, yield)
			return
		}
		if werr := l.awaitConnected(ctx); werr != nil {
			if ctx.Err() == nil {
				yield(Msg{}, fmt.Errorf("read %s from %d: %w", filter, next, errors.Join(err, werr)))
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// createError is a raw follower's failure to create its consumer.
type createError struct{ err error }

// Error returns the creation's error text.
func (e *createError) Error() string { return e.err.Error() }

// Unwrap returns the creation's error.
func (e *createError) Unwrap() error { return e.err }

// awaitConnected waits until the Log's connection is connected (it
// reconnects on its own after a server restart); an error when ctx ends
// first or the connection is closed for good.
func (l *Log) awaitConnected(ctx context.Context) error {
	nc := l.js.Conn()
	for {
		switch nc.Status() {
		case nats.CONNECTED:
			return nil
		case nats.CLOSED:
			return nats.ErrConnectionClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rawFollowReconnect):
		}
	}
}

// rawFollowOnce follows filter from next over one raw connection and
// one consumer until either fails, ctx is done or the loop stops. It
// returns the first sequence not yet yielded, whether the loop stopped,
// and why it ended otherwise.
func (l *Log) rawFollowOnce(ctx context.Context, filter string, next uint64, raw bool, yield func(Msg, error) bool) (uint64, bool, error) {
	if l.srv != nil {
		// A restart of JetStream ends the follow at once (the
		// consumer is gone); followRaw starts again after it.
		var cancel context.CancelFunc
		ctx, cancel = l.srv.untilRestart(ctx)
		defer cancel()
	}
	rc, err := l.dialRaw(ctx)
	if err != nil {
		return next, false, err
	}
	defer rc.close()
	cctx, cancel := l.withTimeout(ctx)
	cons, err := l.js.CreateConsumer(cctx, StreamName, rawConsumer(filter, next))
	cancel()
	if err != nil {
		return next, false, &createError{err}
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = l.js.DeleteConsumer(dctx, StreamName, name)
	}()
	var progress atomic.Uint64
	defer rc.watch(ctx, rawFollowStall, &progress)()

	pulls, err := l.startPulls(rc, name, readPull, followExpiry, followHeartbeat)
	if err != nil {
		return next, false, err
	}
	var (
		subject string // the last subject met, not allocated again
		dseq    uint64 // the consumer's last delivery sequence
	)
	for {
		f, err := rc.next()
		if err != nil {
			return next, false, err
		}
		progress.Add(1)
		if f.reply == nil {
			code, text := rawStatus(f.hdr)
			switch {
			case code == "100": // heartbeat
				continue
			case code == "409" && strings.Contains(text, "Batch Completed"):
				// Said after the pull's last message, which ended it
				// here already.
				continue
			case code == "408" || code == "409" && strings.Contains(text, "MaxBytes"):
				// The oldest pull expired, or ended on its bytes.
				if err := pulls.served(); err != nil {
					return next, false, err
				}
				continue
			}
			return next, false, fmt.Errorf("%w: status %s %s", errRawReset, code, text)
		}
		delivered, seq, cseq, ns, _, err := ackMetaAll(unsafe.String(unsafe.SliceData(f.reply), len(f.reply)))
		if err != nil {
			return next, false, err
		}
		if delivered != 1 || cseq != dseq+1 || seq < next {
			return next, false, fmt.Errorf("%w: delivery %d of seq %d (consumer seq %d after %d, next %d): not the next message", errRawReset, delivered, seq, cseq, dseq, next)
		}
		dseq = cseq
		if string(f.subject) != subject {
			subject = string(f.subject)
		}
		next = seq + 1
		m := Msg{Seq: seq, Subject: subject, Data: f.data, Time: time.Unix(0, int64(ns))}
		if raw {
			m.hdr = f.hdr
		} else {
			m.Header = decodeHeader(f.hdr)
		}
		if !yield(m, nil) {
			return next, true, nil
		}
		if err := pulls.delivered(f); err != nil {
			return next, false, err
		}
	}
}
