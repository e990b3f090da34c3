package merkle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestCheckpointer_FailedPublishWaitsForTheTick: when publishing a
// checkpoint fails (a full disk, the checkpoint stream gone), the tree's
// growth does not make the checkpointer try again at once: it tries at
// the next tick, so serve's log gets a warning a tick rather than one a
// message.
func TestCheckpointer_FailedPublishWaitsForTheTick(t *testing.T) {
	h := start(t, t.TempDir())
	// A checkpoint stream that takes no more messages: every publish
	// is refused at once, as on a full disk.
	st, err := h.js.Stream(t.Context(), CheckpointStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := h.js.UpdateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := PublishCheckpoint(t.Context(), h.js, []byte("filler")); err != nil {
		t.Fatal(err)
	}
	c := checkpointer(t, h)
	c.Every, c.Interval = 1, time.Hour
	var said atomic.Int64
	var last atomic.Value
	c.Logf = func(format string, args ...any) {
		said.Add(1)
		last.Store(fmt.Sprintf(format, args...))
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for i := range 40 {
		appendStarted(t, h.log, fmt.Sprintf("s%d", i), "/work/x")
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.Tree.Size() < 40 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.Tree.Size() < 40 {
		t.Fatalf("tree holds %d leaves, want 40", c.Tree.Size())
	}
	for said.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the first try, which may still be on its way
	}
	cancel()
	<-done
	if n := said.Load(); n == 0 || n > 2 {
		t.Errorf("%d warnings for 40 messages within one tick, want 1 or 2 (the last: %v)", n, last.Load())
	}
	if s, _ := last.Load().(string); len(s) < 5 || s[:5] != "WARN:" {
		t.Errorf("the warning %q does not start with WARN:", s)
	}
}
