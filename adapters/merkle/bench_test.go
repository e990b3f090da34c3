// Benchmarks of what the Merkle tree costs. Each reports msgs/s (or
// events/s):
//
//	BenchmarkTree/append-file    LeafHash of a 1 KiB message and
//	                             Tree.AppendHash to a stored-hash file: the
//	                             tree's own cost per message.
//	BenchmarkRead/raw            ReadRaw of every message of a 20000-message
//	                             log (an ordered consumer), no hashing.
//	BenchmarkRead/tree           Extend of a fresh tree over the same log:
//	                             the same read plus leaf data, hashing and
//	                             stored hashes. tree / raw is the cost on a
//	                             reader's throughput.
//	BenchmarkAppend/plain        64 writers appending one-event decisions
//	                             through Log.Append (fsync always).
//	BenchmarkAppend/checkpointer the same while a Checkpointer follows the
//	                             log, hashes every message and signs a
//	                             checkpoint every 1000 (serve's default).
//	                             checkpointer / plain is the cost on append
//	                             throughput, both on the one machine.
//
// Run (medians of 5):
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./adapters/merkle/
package merkle

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

func BenchmarkTree(b *testing.B) {
	b.Run("append-file", func(b *testing.B) {
		t, err := OpenTree(filepath.Join(b.TempDir(), "hashes"))
		if err != nil {
			b.Fatal(err)
		}
		defer t.Close()
		m := natslog.Msg{Subject: "lb.ev.session.s1", Data: make([]byte, 1024)}
		m.Header = map[string][]string{"Lb-Type": {"session.started"}, "Nats-Msg-Id": {"x"}}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			m.Seq = uint64(i) + 1
			if err := t.AppendHash(LeafHash(m)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

const benchLog = 20000

func BenchmarkRead(b *testing.B) {
	h := start(b, b.TempDir())
	out := make([]byte, 512)
	for i := range benchLog {
		if _, err := h.js.Publish(b.Context(), fmt.Sprintf("lb.out.c%d", i%50), out); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, err := range h.log.ReadRaw(b.Context(), natslog.StreamSubjects, 1) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchLog {
				b.Fatalf("read %d", n)
			}
		}
		b.ReportMetric(float64(b.N*benchLog)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("tree", func(b *testing.B) {
		for b.Loop() {
			t := NewTree()
			if err := Extend(b.Context(), h.log, t, false, nil); err != nil {
				b.Fatal(err)
			}
			if t.Size() != benchLog {
				b.Fatalf("tree of %d", t.Size())
			}
		}
		b.ReportMetric(float64(b.N*benchLog)/b.Elapsed().Seconds(), "msgs/s")
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, withTree := range []bool{false, true} {
		name := "plain"
		if withTree {
			name = "checkpointer"
		}
		b.Run(name, func(b *testing.B) {
			h := start(b, b.TempDir())
			if withTree {
				c := checkpointer(b, h)
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() {
					if err := c.Run(ctx); err != nil {
						b.Error(err)
					}
				})
				defer func() { cancel(); wg.Wait() }()
			}
			reg := events.NewRegistry()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range 64 {
				wg.Go(func() {
					agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("w%d", w)}
					var last, ver uint64
					for next.Add(1) <= int64(b.N) {
						ver++
						var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:%d", ver)}
						if ver == 1 {
							p = events.SessionStarted{Agent: "cli", Cwd: "/work"}
						}
						e := reg.New(p)
						e.ID, e.Agg, e.Ver, e.At = ulid.Make(), agg, ver, testTime
						e.Cause = &events.Cause{Kind: "cli", Event: "start", Ref: "r1"}
						app, err := h.log.Append(context.Background(), events.Batch{Agg: agg, Expect: last, Events: []events.Envelope{e}})
						if err != nil {
							b.Error(err)
							return
						}
						last = app.Last
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
