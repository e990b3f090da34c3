package natslog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// A Log whose Room says the disk is under its reserve refuses every
// decision whole with ErrAppendsHeld, alone or merged with others (group
// commit), and sends nothing; once there is room, the same decisions go
// in.
func TestRoom_RefusesWholeBatches(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	var full atomic.Bool
	l := openLogWith(t, s, Config{Room: func() error {
		if full.Load() {
			return errors.New("3 bytes free")
		}
		return nil
	}})
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, l, decision(reg, session("before"), 0, 1, 5))
	last, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}

	full.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = l.Append(ctx, decision(reg, session(fmt.Sprint("held-", i)), 0, 1, 1+9*(i%2)))
		})
	}
	wg.Wait()
	_, err = l.Append(ctx, decision(reg, session("before"), 5, 6, 3))
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, ErrAppendsHeld) {
			t.Errorf("append %d while under the reserve: %v, want ErrAppendsHeld", i, err)
		}
	}
	if got, err := l.LastSeq(ctx); err != nil || got != last {
		t.Fatalf("last sequence while under the reserve: %d (%v), want %d: something was sent", got, err, last)
	}

	full.Store(false)
	mustAppend(t, l, decision(reg, session("before"), 5, 6, 3))
	mustAppend(t, l, decision(reg, session("held-1"), 0, 1, 10))
}
