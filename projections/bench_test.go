package projections_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

// catchUpEvents is the size of BenchmarkCatchUp's log.
const catchUpEvents = 20000

// BenchmarkCatchUp measures a projection catching up from an empty store
// (on disk, Sync commits, batches of DefaultBatch) on a log of catchUpEvents
// session events in an embedded JetStream server, against the raw read
// rate of the same messages by a bare ordered consumer on the same server
// in the same iteration. Metrics: proj-ev/s (catch-up), raw-ev/s (bare
// ordered consumer, no decoding), read-ev/s (Log.Read alone: the same
// consumer plus the registry's strict decoding, the floor under any
// projection) and proj/raw (the floor is ≥ 0.60).
func BenchmarkCatchUp(b *testing.B) {
	h := projectionstest.NewHistory(projectionstest.Epoch())
	rng := rand.New(rand.NewPCG(31, 31))
	for len(h.Records) < catchUpEvents {
		if err := h.Step(rng, 100); err != nil {
			b.Fatal(err)
		}
	}
	log, srv := newLog(b, natslog.FsyncInterval)
	if err := h.AppendParallel(b.Context(), log, 32); err != nil {
		b.Fatal(err)
	}
	last, err := log.LastSeq(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	want := memHash(b, projections.Options{}, h.Records)
	base := b.TempDir()

	var raw, read, proj time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		if n := rawRead(b, js, last); n != len(h.Records) {
			b.Fatalf("raw read %d messages, want %d", n, len(h.Records))
		}
		raw += time.Since(start)

		start = time.Now()
		n := 0
		for _, err := range log.Read(b.Context(), 1) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		read += time.Since(start)
		if n != len(h.Records) {
			b.Fatalf("Read %d records, want %d", n, len(h.Records))
		}

		s, err := projections.Open(filepath.Join(base, strconv.Itoa(i)), projections.Options{})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		n, err = (&projections.Runner{Log: log, Store: s}).RunToEnd(b.Context())
		proj += time.Since(start)
		if err != nil || n != len(h.Records) {
			b.Fatalf("RunToEnd = %d, %v; want %d", n, err, len(h.Records))
		}
		b.StopTimer()
		if got := hash(b, s, last); got != want {
			b.Fatalf("hash %s, want %s", got, want)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	events := float64(i * len(h.Records))
	b.ReportMetric(events/proj.Seconds(), "proj-ev/s")
	b.ReportMetric(events/raw.Seconds(), "raw-ev/s")
	b.ReportMetric(events/read.Seconds(), "read-ev/s")
	b.ReportMetric(raw.Seconds()/proj.Seconds(), "proj/raw")
}

// rawRead reads every message of the LOGBOOK stream up to last with an
// ordered consumer pulling as the log's reader does, touching only the metadata,
// and returns how many it read.
func rawRead(b *testing.B, js jetstream.JetStream, last uint64) int {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"lb.>"}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages(natslog.ReadPull(js.Conn().MaxPayload()))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			b.Fatal(err)
		}
		md, err := m.Metadata()
		if err != nil {
			b.Fatal(err)
		}
		n++
		if md.Sequence.Stream >= last {
			return n
		}
	}
}
