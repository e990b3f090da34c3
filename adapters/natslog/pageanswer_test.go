package natslog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A page read the server did not answer in time is asked again, and the
// read succeeds once it is answered; any other error ends it at once,
// as does the end of its context or of the Log.
func TestUntilPageAnswered(t *testing.T) {
	unanswered := fmt.Errorf("direct get of lb.ev.session.s from seq 1: %w: %w", errUnanswered, context.DeadlineExceeded)
	l := &Log{quit: make(chan struct{})}

	tries := 0
	err := l.untilPageAnswered(t.Context(), func(context.Context) error {
		if tries++; tries < 3 {
			return unanswered
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("answered at the third try: err %v after %d tries; want nil after 3", err, tries)
	}

	refused := errors.New("stream not found")
	tries = 0
	err = l.untilPageAnswered(t.Context(), func(context.Context) error { tries++; return refused })
	if !errors.Is(err, refused) || tries != 1 {
		t.Fatalf("another error: err %v after %d tries; want it at once", err, tries)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	tries = 0
	err = l.untilPageAnswered(ctx, func(context.Context) error { tries++; return unanswered })
	if !errors.Is(err, errUnanswered) || tries < 2 || ctx.Err() == nil {
		t.Fatalf("never answered within its context: err %v after %d tries (ctx %v); want the last try's error once ctx ended", err, tries, ctx.Err())
	}

	close(l.quit)
	tries = 0
	err = l.untilPageAnswered(t.Context(), func(context.Context) error { tries++; return unanswered })
	if !errors.Is(err, errUnanswered) || tries != 1 {
		t.Fatalf("a closed Log: err %v after %d tries; want the first try's error", err, tries)
	}
}
