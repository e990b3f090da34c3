package natslog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Identity names one incarnation of the LOGBOOK stream and where it
// stands. A stream deleted and created again under the same name has a
// new Created time; an append-only stream (DenyDelete, DenyPurge) keeps
// FirstSeq at 1 once it holds a message, and holds every sequence from
// FirstSeq to LastSeq (see Gone).
type Identity struct {
	Created  time.Time // when the server created the stream (UTC)
	FirstSeq uint64    // sequence of the oldest message kept; 0 when empty
	LastSeq  uint64    // the last sequence the stream assigned; 0 when empty
	Msgs     uint64    // messages the stream holds
}

// Gone returns how many sequences from FirstSeq to LastSeq the stream no
// longer holds. Nothing ever removes a message from an append-only
// stream, so more than 0 means messages were lost under the server: a
// block file cut short or damaged, which the server drops at its start
// while keeping LastSeq (so a lost tail does not show in LastSeq).
func (id Identity) Gone() uint64 {
	if id.LastSeq == 0 || id.FirstSeq == 0 || id.LastSeq < id.FirstSeq {
		return 0
	}
	span := id.LastSeq - id.FirstSeq + 1
	if id.Msgs >= span {
		return 0
	}
	return span - id.Msgs
}

// Identity asks the server for the stream's creation time and sequence
// range (one STREAM.INFO request, bounded by Config.Timeout when ctx has
// no deadline). A stream that no longer exists gives an error wrapping
// ErrStreamLost.
func (l *Log) Identity(ctx context.Context) (Identity, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return Identity{}, fmt.Errorf("%w: %s: %v", ErrStreamLost, StreamName, err)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("stream info %s: %w", StreamName, err)
	}
	return Identity{Created: info.Created.UTC(), FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Msgs: info.State.Msgs}, nil
}

// TailHeld returns the sequence of the newest message the stream, as id
// describes it, can still give: id.LastSeq when that message reads, else
// the first that reads walking back from it (at most tailWalk gets, then
// LastStored's answer), 0 when it holds none. The server's own count
// (id.Msgs) still includes a message whose block was damaged in place (a
// byte changed under it) until the message is read: only a read shows
// such a tail gone. It costs one direct get when the tail reads (bounded
// by Config.Timeout when ctx has no deadline).
func (l *Log) TailHeld(ctx context.Context, id Identity) (uint64, error) {
	if id.LastSeq == 0 || id.Msgs == 0 {
		return 0, nil
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	for seq, n := id.LastSeq, 0; seq >= id.FirstSeq && seq > 0 && n < tailWalk; seq, n = seq-1, n+1 {
		_, err := l.getMsg(ctx, seq, "")
		if err == nil {
			return seq, nil
		}
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, fmt.Errorf("message %d of %s: %w", seq, StreamName, err)
		}
	}
	return l.LastStored(ctx)
}

// tailWalk is how many sequences TailHeld tries one by one, back from the
// stream's last, before it asks for the last message by subject.
const tailWalk = 64

// LastStored returns the sequence of the newest message the stream still
// holds, 0 when it holds none: Identity.LastSeq less a lost tail (see
// Identity.Gone). It costs one get of the stream's last message on
// StreamSubjects (bounded by Config.Timeout when ctx has no deadline).
func (l *Log) LastStored(ctx context.Context) (uint64, error) {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	m, err := l.stream.GetLastMsgForSubject(ctx, StreamSubjects)
	served(m)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last message of %s: %w", StreamName, err)
	}
	return m.Sequence, nil
}

// ErrStreamLost reports that the LOGBOOK stream a Log was opened on is
// gone: deleted, or deleted and created again.
var ErrStreamLost = errors.New("natslog: stream lost")

// StreamLostError reports the stream a Log was opened on as deleted
// (Now is the zero Identity) or replaced by another of the same name
// (Now.Created differs from Was.Created). It wraps ErrStreamLost.
type StreamLostError struct {
	Was, Now Identity
}

// Error names both incarnations and the sequence the old one had reached.
func (e *StreamLostError) Error() string {
	if e.Now.Created.IsZero() {
		return fmt.Sprintf("natslog: stream %s (created %s, last seq %d) was deleted", StreamName, e.Was.Created.Format(time.RFC3339Nano), e.Was.LastSeq)
	}
	return fmt.Sprintf("natslog: stream %s (created %s, last seq %d) was deleted and created again at %s (first seq %d, last seq %d)",
		StreamName, e.Was.Created.Format(time.RFC3339Nano), e.Was.LastSeq, e.Now.Created.Format(time.RFC3339Nano), e.Now.FirstSeq, e.Now.LastSeq)
}

// Unwrap returns ErrStreamLost.
func (e *StreamLostError) Unwrap() error { return ErrStreamLost }

// WatchStream checks the stream every interval (0 means 1 s) until ctx is
// done, and returns a *StreamLostError as soon as the stream is gone or
// has a creation time other than was's. It returns nil when ctx ends.
// Failed checks for other reasons (a timeout, a lost connection) are
// retried at the next tick: only the server's answer that the stream is
// gone or new counts.
func (l *Log) WatchStream(ctx context.Context, was Identity, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, err := l.Identity(ctx)
		switch {
		case errors.Is(err, ErrStreamLost):
			return &StreamLostError{Was: was}
		case err != nil:
			continue
		case !now.Created.Equal(was.Created):
			return &StreamLostError{Was: was, Now: now}
		}
		was.LastSeq = now.LastSeq
	}
}
