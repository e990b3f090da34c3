// BenchmarkWatch measures how long a transcript line takes from the
// moment it is written to the moment the session projection shows it,
// through serve --watch's path: inotify, the import of the file from the
// session's cursor (parse, redact, decide, one atomic append with fsync
// always), and the projector following the log into Pebble. The baseline
// in the same run, on the same kind of server, is the raw JetStream part
// of that path: one publish of the line's bytes to the stream (fsync
// always) until an ordered consumer has received it.
//
// Both report p50-ms and p99-ms, the median and 99th percentile of the
// per-line latencies; watch/raw is the ratio to read (the machines are
// small and noisy). The promise is p99 under 1 s. Run (medians of 5):
//
//	go test -run '^$' -bench Watch -benchtime 200x -count 5 ./adapters/claude/
package claude

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/projections"
)

func BenchmarkWatch(b *testing.B) {
	const sid = "5e551011-0000-4000-8000-0000000000b1"
	line := func(i int) []byte {
		if i == 0 {
			return fmt.Appendf(nil, `{"type":"user","uuid":"u0","parentUuid":null,"sessionId":%q,"timestamp":"2026-11-30T10:00:00.000Z","message":{"role":"user","content":"go"}}`+"\n", sid)
		}
		return fmt.Appendf(nil, `{"type":"assistant","uuid":"a%d","parentUuid":"a%d","sessionId":%q,"timestamp":"2026-11-30T10:00:%02d.000Z","message":{"role":"assistant","model":"claude-opus-4-7","content":[{"type":"text","text":"step %d of the work"}]}}`+"\n", i, i-1, sid, i%60, i)
	}

	b.Run("watch", func(b *testing.B) {
		log, _ := natslogtest.Start(b, natslog.FsyncAlways)
		store, err := projections.Open(filepath.Join(b.TempDir(), "views"), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runner := &projections.Runner{Log: log, Store: store}
		go runner.Run(ctx)
		in, err := NewIngester(IngestConfig{Log: log, Host: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		root := b.TempDir()
		dir := filepath.Join(root, "p")
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- in.Watch(ctx, ingest.WatchConfig{Roots: []string{root}, Rescan: time.Hour}) }()
		f, err := os.OpenFile(filepath.Join(dir, sid+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		timeEach(b, func(i int) {
			start := time.Now()
			if _, err := f.Write(line(i)); err != nil {
				b.Fatal(err)
			}
			for {
				st, err := store.Session(sid)
				if err == nil && st.Lines >= i+1 {
					break
				}
				if time.Since(start) > time.Minute {
					b.Fatalf("line %d not in the projection after a minute", i+1)
				}
				time.Sleep(100 * time.Microsecond)
			}
		})
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})

	b.Run("raw", func(b *testing.B) {
		_, srv := natslogtest.Start(b, natslog.FsyncAlways)
		js, err := jetstream.New(srv.Conn())
		if err != nil {
			b.Fatal(err)
		}
		cons, err := js.OrderedConsumer(b.Context(), natslog.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"lb.ev.session.raw"}})
		if err != nil {
			b.Fatal(err)
		}
		it, err := cons.Messages()
		if err != nil {
			b.Fatal(err)
		}
		defer it.Stop()
		timeEach(b, func(i int) {
			if _, err := js.Publish(b.Context(), "lb.ev.session.raw", line(i)); err != nil {
				b.Fatal(err)
			}
			if _, err := it.Next(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// timeEach runs step(i), i = 0, 1, …, as the benchmark's loop and
// reports the median and 99th percentile of the steps' times
// (reportLatency).
func timeEach(b *testing.B, step func(i int)) {
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		start := time.Now()
		step(i)
		i++
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// reportLatency reports the median and 99th percentile of lat in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
