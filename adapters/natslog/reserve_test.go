package natslog

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// Appends held: every decision is refused whole with ErrAppendsHeld,
// alone or merged with others (group commit), and nothing of any is
// stored; the stream's settings but MaxBytes are untouched, stored
// messages are kept; let go, the same decisions go in.
func TestHoldAppends_RefusesWholeBatches(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, l, decision(reg, session("before"), 0, 1, 5))
	st, err := l.js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	before := st.CachedInfo()

	for range 2 { // the second is a no-op
		if err := s.HoldAppends(ctx, true); err != nil {
			t.Fatalf("HoldAppends(true): %v", err)
		}
	}
	if info, err := st.Info(ctx); err != nil {
		t.Fatal(err)
	} else {
		want := before.Config
		want.MaxBytes = int64(before.State.Bytes)
		if diff := cmp.Diff(want, info.Config); diff != "" {
			t.Errorf("held stream's config (-want +got):\n%s", diff)
		}
	}

	// Decisions of 1 and 10 events, sent together so that group commit
	// merges them, and one alone.
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = l.Append(ctx, decision(reg, session(fmt.Sprint("held-", i)), 0, 1, 1+9*(i%2)))
		})
	}
	wg.Wait()
	errs = append(errs, func() error {
		_, err := l.Append(ctx, decision(reg, session("before"), 5, 6, 3))
		return err
	}())
	for i, err := range errs {
		if !errors.Is(err, ErrAppendsHeld) {
			t.Errorf("append %d while held: %v, want ErrAppendsHeld", i, err)
		}
	}
	if last, err := l.LastSeq(ctx); err != nil || last != before.State.LastSeq {
		t.Fatalf("last sequence while held: %d (%v), want %d: something was stored", last, err, before.State.LastSeq)
	}

	for range 2 {
		if err := s.HoldAppends(ctx, false); err != nil {
			t.Fatalf("HoldAppends(false): %v", err)
		}
	}
	if info, err := st.Info(ctx); err != nil || info.Config.MaxBytes != -1 {
		t.Fatalf("let go: max_bytes %d (%v), want -1", info.Config.MaxBytes, err)
	}
	mustAppend(t, l, decision(reg, session("before"), 5, 6, 3))
	mustAppend(t, l, decision(reg, session("held-1"), 0, 1, 10))
	recs, _, err := l.Load(ctx, session("before"))
	if err != nil || len(recs) != 8 {
		t.Fatalf("session before: %d events (%v), want 8", len(recs), err)
	}
}

// A stream that discards old messages is never given a MaxBytes: the
// server would delete its oldest messages to meet it.
func TestHoldAppends_RefusesADiscardOldStream(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	js, err := jetstream.New(s.Conn())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}.StreamConfig()
	cfg.Discard = jetstream.DiscardOld
	if _, err := js.CreateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.HoldAppends(t.Context(), true); err == nil {
		t.Fatal("HoldAppends on a discard-old stream: nil error")
	}
	st, err := js.Stream(t.Context(), StreamName)
	if err != nil || st.CachedInfo().Config.MaxBytes != -1 {
		t.Fatalf("max_bytes after the refusal: %v", err)
	}
}
