package natscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/events"
)

// appendRun appends n aggregates of per events each through l, one
// atomic batch per aggregate, and returns the events appended.
func appendRun(t *testing.T, l *natslog.Log, reg *events.Registry, prefix string, n, per int) int {
	t.Helper()
	for i := range n {
		agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("%s-%d", prefix, i)}
		evs := make([]events.Envelope, per)
		for j := range evs {
			evs[j] = lincheck.SessionEvent(reg, agg, uint64(j+1), "lag", "t")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := l.Append(ctx, events.Batch{Agg: agg, Events: evs})
		// A leader killed with the batch in flight leaves its outcome
		// unknown: the same batch again is stored once.
		for errors.Is(err, natslog.ErrUnknownOutcome) && ctx.Err() == nil {
			_, err = l.Append(ctx, events.Batch{Agg: agg, Events: evs})
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	return n * per
}

// Reads while a replica catches up: a node killed while the log grew is
// started again, and reads made at once (their ordered consumers land on
// any replica, the one catching up included) each return every event up
// to the end the stream leader reported, and a follow from the start
// yields every event with no gap. A replica's consumer reports nothing
// pending once it has delivered what that replica holds, which can be
// short of the end; a read that ended there returned a short log, and a
// follow (the projector's) went on past the end and skipped the events
// between.
//
// When the killed node was the JetStream meta leader, the readers' first
// consumer creations went out while the cluster had none: nobody answers
// such a request, and each waited out the read's whole deadline; the
// read then ended, cut by its context, with no error and no event (an
// empty history passing for the whole, 4 runs in 10). A consumer is now
// asked for again, each attempt bounded, and a read cut short says so.
// It runs in .ci/cluster only (a cluster, a kill and a restart).
func TestReadWhileReplicaCatchesUp(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	if os.Getenv("LOGBOOK_CLUSTER_KILLS") == "" {
		t.Skip("long form: .ci/cluster")
	}
	e := newStreamEnv(t)
	reg := events.NewRegistry()
	w := e.openLog(e.connectURL("writer", e.c.Nodes[0].URL()), reg)
	total := appendRun(t, w, reg, "before", 5, 100)
	for round := range 1 {
		lag := e.c.Nodes[2]
		lag.Kill()
		total += appendRun(t, w, reg, fmt.Sprintf("down%d", round), 20, 100)
		if err := lag.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, lag)
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				// Through the restarted node, and through the others.
				// The restarted node may not answer for a while yet: an
				// open is asked again there; the reads are the check.
				nc := e.connectURL("reader", e.c.Nodes[(2+i)%3].URL())
				var (
					r   *natslog.Log
					err error
				)
				for deadline := time.Now().Add(60 * time.Second); ; {
					if r, err = natslog.Open(t.Context(), nc, natslog.Config{Registry: reg}); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Error(err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				defer r.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				if i%2 == 0 {
					n := 0
					for _, err := range r.Read(ctx, 1) {
						if err != nil {
							t.Errorf("read %d: %v", i, err)
							return
						}
						n++
					}
					if n != total {
						t.Errorf("round %d, read %d: %d events, want %d", round, i, n, total)
					}
					return
				}
				want := uint64(1)
				for rec, err := range r.Follow(ctx, 1) {
					if err != nil {
						t.Errorf("follow %d: %v", i, err)
						return
					}
					if rec.Seq != want {
						t.Errorf("round %d, follow %d: seq %d after %d: %d events skipped", round, i, rec.Seq, want-1, rec.Seq-want)
						return
					}
					if want == uint64(total) {
						return
					}
					want++
				}
				t.Errorf("round %d, follow %d: ended at seq %d, want %d", round, i, want-1, total)
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		err := lag.WaitHealthy(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitListening waits until nd accepts client connections (its
// JetStream may still be catching up).
func waitListening(t *testing.T, nd *Node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", nd.ClientPort), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after 30s: %v", nd.Name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
