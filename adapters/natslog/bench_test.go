// Benchmarks of the log against raw JetStream on the same kind of server.
//
// Every benchmark reports events/s. Each Logbook path is paired with raw
// JetStream baselines measured in the same run, each on a fresh embedded
// server with fsync always (SyncAlways), in the same process:
//
//	BenchmarkAppend/logbook-64writers    64 goroutines, each its own session,
//	                                     one event per decision, chained by
//	                                     Expect, through Log.Append:
//	                                     validation, JSON encoding, group
//	                                     commit, OCC and Msg-Id headers.
//	BenchmarkAppend/raw-atomic-batch     one publisher, jetstreamext.PublishMsgBatch
//	                                     of 500 messages with bodies of the
//	                                     same size, no OCC, no Msg-Id.
//	BenchmarkAppend/raw-atomic-batch-64  the same with 64-message batches: the
//	                                     most that 64 one-event writers can
//	                                     put in one batch.
//	BenchmarkRead/logbook                Log.Read of every event, decoded.
//	BenchmarkRead/raw-ordered            an ordered consumer reading the same
//	                                     messages, no decoding.
//
// Read the ratios, not the absolutes: these machines are small and noisy
// (2 shared cores run the server and the client), so absolute numbers
// move a lot between runs while logbook/raw within one run is steadier.
// With -count, each sub-benchmark's runs follow one another; to pair the
// paths run by run, loop over -count 1 instead (see the command below).
//
// logbook-64writers / raw-atomic-batch is the headline append ratio.
// An atomic batch on a one-node file stream is staged in a store of its
// own, which costs several fsyncs per batch whatever its size, so the
// rate of a batch grows with its size; 64 writers with one event each can
// fill at most 64 messages per batch. raw-atomic-batch-64 /
// raw-atomic-batch is therefore about the ceiling of the headline ratio
// on the machine at hand (it falls as fsyncs get slower), and
// logbook-64writers / raw-atomic-batch-64 is what the log itself costs on
// top (validation, encoding, group commit, batches not quite full).
// decisions/batch shows how full the merged batches were (64 at most).
//
// logbook / raw-ordered is the read ratio; the gap is strict decoding
// (events.Registry.Decode), spread over GOMAXPROCS goroutines.
//
// Run (medians of 5):
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./adapters/natslog/
//
// or, paired run by run:
//
//	go test -c -o /tmp/natslog.test ./adapters/natslog/ && cd adapters/natslog &&
//	for i in 1 2 3 4 5; do /tmp/natslog.test -test.run '^$' -test.bench . -test.benchtime 3s; done

package natslog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/events"
)

const benchWriters = 64

// appendWriters runs b.N one-event decisions from benchWriters
// goroutines, each on its own session, timed, and reports the rate.
func appendWriters(b *testing.B, l *Log, reg *events.Registry) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range benchWriters {
		wg.Go(func() {
			agg := session(fmt.Sprintf("w%d", w))
			var last, ver uint64
			for next.Add(1) <= int64(b.N) {
				ver++
				a, err := l.Append(b.Context(), decision(reg, agg, last, ver, 1))
				if err != nil {
					b.Errorf("writer %d: %v", w, err)
					return
				}
				last = a.Last
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportRate(b, b.N)
}

func BenchmarkAppend(b *testing.B) {
	reg := events.NewRegistry()
	b.Run("logbook-64writers", func(b *testing.B) {
		l, _ := newLog(b)
		appendWriters(b, l, reg)
		st := l.Stats()
		if st.Batches > 0 {
			b.ReportMetric(float64(st.Decisions)/float64(st.Batches), "decisions/batch")
		}
	})
	for _, size := range []int{500, 64} {
		name := "raw-atomic-batch"
		if size != 500 {
			name += fmt.Sprintf("-%d", size)
		}
		b.Run(name, func(b *testing.B) { benchRawBatch(b, size, payload(b, reg)) })
	}
}

// benchRawBatch publishes b.N messages of body in atomic batches of size
// on the 64 writers' subjects.
func benchRawBatch(b *testing.B, size int, body []byte) {
	s := startServer(b, b.TempDir())
	l, err := Open(b.Context(), s.Conn(), Config{}) // creates the stream
	if err != nil {
		b.Fatal(err)
	}
	l.Close()
	js, err := jetstream.New(s.Conn())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += size {
		msgs := make([]*nats.Msg, min(size, b.N-sent))
		for i := range msgs {
			msgs[i] = nats.NewMsg(fmt.Sprintf("lb.ev.session.w%d", (sent+i)%benchWriters))
			msgs[i].Data = body
		}
		if _, err := jetstreamext.PublishMsgBatch(b.Context(), js, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRate(b, b.N)
}

// payload returns the encoded envelope of a typical one-event decision.
func payload(b *testing.B, reg *events.Registry) []byte {
	body, err := decision(reg, session("w1"), 7, 2, 1).Events[0].MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkRead(b *testing.B) {
	const n = 50_000
	reg := events.NewRegistry()
	l, s := newLog(b)
	for i := 0; i < n; i += events.MaxBatch {
		mustAppend(b, l, decision(reg, session(fmt.Sprintf("r%d", i)), 0, 1, min(events.MaxBatch, n-i)))
	}

	b.Run("logbook", func(b *testing.B) {
		for b.Loop() {
			got := 0
			for _, err := range l.Read(b.Context(), 0) {
				if err != nil {
					b.Fatal(err)
				}
				got++
			}
			if got != n {
				b.Fatalf("read %d events, want %d", got, n)
			}
		}
		reportRate(b, b.N*n)
	})
	b.Run("raw-ordered", func(b *testing.B) {
		js, err := jetstream.New(s.Conn())
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			cons, err := js.OrderedConsumer(b.Context(), StreamName, jetstream.OrderedConsumerConfig{
				FilterSubjects: []string{"lb.ev.>"},
			})
			if err != nil {
				b.Fatal(err)
			}
			it, err := cons.Messages(ReadPull(js.Conn().MaxPayload()))
			if err != nil {
				b.Fatal(err)
			}
			for range n {
				if _, err := it.Next(); err != nil {
					b.Fatal(err)
				}
			}
			it.Stop()
		}
		reportRate(b, b.N*n)
	})
}

// reportRate reports events per second of the timed part of b.
func reportRate(b *testing.B, events int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(events)/s, "events/s")
	}
}
