package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A request the cluster cannot serve yet (no answer in time, 503) is
// asked again until it is served; any other error ends it at once, and
// so does the end of ctx.
func TestUntilServed(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	storeFull := &jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "error creating store for consumer"}
	metaFull := &jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "write /d/jetstream/jetstream/$G/streams/LOGBOOK/obs/workers/meta.inf.tmp: no space left on device"}
	answers := []error{context.DeadlineExceeded, unavailable, storeFull, metaFull, nil}
	calls := 0
	err := untilServed(t.Context(), quiet, "test", func(context.Context) error {
		calls++
		return answers[calls-1]
	})
	if err != nil || calls != 5 {
		t.Errorf("after a timeout, a 503 and two store refusals: err %v after %d calls, want nil after 5", err, calls)
	}

	// A consumer the server refuses for its config is no store refusal.
	badConfig := &jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "consumer subject filters cannot overlap"}
	calls = 0
	err = untilServed(t.Context(), quiet, "test", func(context.Context) error { calls++; return badConfig })
	if !errors.Is(err, badConfig) || calls != 1 {
		t.Errorf("a refused config: err %v after %d calls, want it at once", err, calls)
	}

	refused := errors.New("permissions violation")
	calls = 0
	err = untilServed(t.Context(), quiet, "test", func(context.Context) error { calls++; return refused })
	if !errors.Is(err, refused) || calls != 1 {
		t.Errorf("a refusal: err %v after %d calls, want it at once", err, calls)
	}

	// ctx ends while an attempt is under way: its error, with the answer.
	ended, end := context.WithCancel(t.Context())
	err = untilServed(ended, quiet, "test", func(context.Context) error { end(); return unavailable })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, unavailable) {
		t.Errorf("ended during an attempt: err %v, want ctx's error joined with the answer", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = untilServed(ctx, quiet, "test", func(context.Context) error { return unavailable })
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, unavailable) {
		t.Errorf("never served: err %v, want ctx's error joined with the last answer", err)
	}
}
