package natslog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// LeaderWaitError is OpenWithin's error when no stream leader answered
// within Wait: the log is unavailable. Err is the last error met.
type LeaderWaitError struct {
	Wait time.Duration
	Err  error
}

func (e *LeaderWaitError) Error() string {
	return fmt.Sprintf("log unavailable: no leader for stream %s answered within %s: %v", StreamName, e.Wait, e.Err)
}

func (e *LeaderWaitError) Unwrap() error { return e.Err }

// OpenWithin is Open, then a question only the stream's leader answers
// (its last sequence), together waiting at most wait (0: Open alone,
// which waits up to ElectionWait) for a stream leader to answer; past it
// the error is a *LeaderWaitError, unless ctx itself ended. A stream's
// info may be answered without a leader, its messages are not. The
// caller closes the Log.
func OpenWithin(ctx context.Context, nc *nats.Conn, cfg Config, wait time.Duration) (*Log, error) {
	if wait <= 0 {
		return Open(ctx, nc, cfg)
	}
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	l, err := Open(octx, nc, cfg)
	if err == nil {
		if _, err = l.LastSeq(octx); err != nil {
			l.Close()
		}
	}
	if err != nil && ctx.Err() == nil && (octx.Err() != nil || Unavailable(err)) {
		return nil, &LeaderWaitError{Wait: wait, Err: err}
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// NameUnavailable returns err, when it says the log does not answer
// (Unavailable: a cluster without a stream leader), as the error of a
// command that needs the log: "log unavailable: no leader for stream
// LOGBOOK: …" (wrapping err). Any other err, or one that says so
// already, is returned as it is.
func NameUnavailable(err error) error {
	if err == nil || !Unavailable(err) || strings.HasPrefix(err.Error(), "log unavailable") {
		return err
	}
	return fmt.Errorf("log unavailable: no leader for stream %s: %w", StreamName, err)
}
