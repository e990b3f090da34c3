package natslog

import (
	"errors"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

func TestAppendWithRetry(t *testing.T) {
	l, _ := newLog(t)
	reg := events.NewRegistry()
	s1 := session("s1")
	mustAppend(t, l, decision(reg, s1, 0, 1, 1))

	// next appends one event after what it was shown; on its first call a
	// rival moves the aggregate first, so that decision is stale.
	calls := 0
	next := func(recs []events.Record, last uint64) (events.Batch, error) {
		calls++
		if calls == 1 {
			mustAppend(t, l, decision(reg, s1, last, uint64(len(recs)+1), 1))
		}
		return decision(reg, s1, last, uint64(len(recs)+1), 1), nil
	}
	app, err := AppendWithRetry(t.Context(), l, s1, next, 3)
	if err != nil {
		t.Fatalf("AppendWithRetry: %v", err)
	}
	if calls != 2 || app.First != 3 {
		t.Errorf("AppendWithRetry decided %d times and appended at %d; want 2 and 3", calls, app.First)
	}

	t.Run("gives up after attempts", func(t *testing.T) {
		stale := func(recs []events.Record, last uint64) (events.Batch, error) {
			return decision(reg, s1, last-1, uint64(len(recs)+1), 1), nil
		}
		if _, err := AppendWithRetry(t.Context(), l, s1, stale, 2); !errors.Is(err, events.ErrConflict) {
			t.Errorf("AppendWithRetry(always stale) = %v, want ErrConflict", err)
		}
	})
	t.Run("nothing to do", func(t *testing.T) {
		none := func([]events.Record, uint64) (events.Batch, error) { return events.Batch{}, nil }
		before := lastSeq(t, l)
		if app, err := AppendWithRetry(t.Context(), l, s1, none, 1); err != nil || app != (events.Appended{}) || lastSeq(t, l) != before {
			t.Errorf("AppendWithRetry(no events) = %+v, %v; want nothing appended", app, err)
		}
	})
	t.Run("decide error", func(t *testing.T) {
		refuse := func([]events.Record, uint64) (events.Batch, error) { return events.Batch{}, events.ErrRejected }
		if _, err := AppendWithRetry(t.Context(), l, s1, refuse, 3); !errors.Is(err, events.ErrRejected) {
			t.Errorf("AppendWithRetry(refusing) = %v, want ErrRejected", err)
		}
	})
}
