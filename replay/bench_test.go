package replay_test

// BenchmarkReplay folds a whole log into memory — every session's state,
// through the strict decoder and the session reducer — against a bare
// ordered consumer reading the same messages on the same server in the
// same iteration (no decoding). The floor is fold/raw ≥ 0.80.
//
//	go test -run '^$' -bench Replay -benchtime 3x -count 5 ./replay/
//
// LOGBOOK_BENCH_EVENTS sets the log's size (default 1,000,000; the
// setup appends them once, under fsync interval, before timing).

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/synth"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

func BenchmarkReplay(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("LOGBOOK_BENCH_EVENTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx := b.Context()
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: b.TempDir(), Fsync: natslog.FsyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	log, err := natslog.Open(ctx, srv.Conn(), natslog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	fill(b, js, n)

	var raw, fold time.Duration
	for b.Loop() {
		t := time.Now()
		if got := rawCount(b, js); got != n {
			b.Fatalf("raw read %d, want %d", got, n)
		}
		raw += time.Since(t)
		t = time.Now()
		states := map[string]*session.State{}
		count := 0
		_, _, err := replay.Fold(log.Read(ctx, 1), states, func(m map[string]*session.State, e events.Envelope) map[string]*session.State {
			count++
			session.EvolveIn(m, e)
			return m
		})
		if err != nil || count != n {
			b.Fatalf("fold: %d events, %v", count, err)
		}
		fold += time.Since(t)
	}
	k := float64(b.N)
	b.ReportMetric(float64(n)*k/fold.Seconds(), "fold-ev/s")
	b.ReportMetric(float64(n)*k/raw.Seconds(), "raw-ev/s")
	b.ReportMetric(raw.Seconds()/fold.Seconds(), "fold/raw")
}

// fill publishes n session events (1,000 sessions, activity changes after
// a start) as raw messages, 1,000 per atomic batch.
func fill(b *testing.B, js jetstream.JetStream, n int) {
	reg := events.NewRegistry()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ver := map[int]uint64{}
	var batch []*nats.Msg
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := jetstreamext.PublishMsgBatch(b.Context(), js, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		sid := i % 1000
		ver[sid]++
		var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:Bash-%d", i)}
		if ver[sid] == 1 {
			p = events.SessionStarted{Agent: "claude-code", Cwd: "/home/user/project", Model: "claude-opus-4-7"}
		}
		e := reg.New(p)
		e.ID, e.Agg, e.Ver, e.At = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("s-%04d", sid)}, ver[sid], at
		e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: e.ID.String()}
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(e.Agg.Subject())
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, e.ID.String())
		batch = append(batch, m)
		if len(batch) == 1000 {
			flush()
		}
	}
	flush()
}

// rawCount reads every message with a bare ordered consumer pulling as
// the log's reader does (natslog.ReadPull).
func rawCount(b *testing.B, js jetstream.JetStream) int {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	last := info.State.LastSeq
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"lb.ev.>"}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Messages(natslog.ReadPull(js.Conn().MaxPayload()))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		n++
		md, _ := m.Metadata()
		if md.Sequence.Stream >= last {
			return n
		}
	}
}

// BenchmarkReplaySynth is BenchmarkReplay on the log `logbook bench`
// reads: a generated history (synth, seed 4, 2) of observations and the
// decisions they caused over 100 sessions, appended by 32 writers. Its
// sub-benchmarks run the bare ordered read (raw) and the fold (fold)
// apart, so a CPU profile of either shows that path alone:
//
//	go test -run '^$' -bench ReplaySynth/fold -benchtime 5x -cpuprofile /tmp/fold.prof ./replay/
//
// Besides wall time per event each reports the process's CPU time per
// event (user and system, the embedded server's included: on a loaded
// machine it moves far less than wall time), the collector's share of it
// as the runtime estimates it, heap bytes allocated per event and
// collections per read. LOGBOOK_BENCH_EVENTS sets the log's size
// (default 200,000).
func BenchmarkReplaySynth(b *testing.B) {
	n := 200_000
	if s := os.Getenv("LOGBOOK_BENCH_EVENTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	log, srv := natslogtest.Start(b, natslog.FsyncInterval)
	h := synth.NewHistory(synth.Epoch())
	rng := rand.New(rand.NewPCG(4, 2))
	for len(h.Records) < n {
		if err := h.Step(rng, 100); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.AppendParallel(b.Context(), log, 32); err != nil {
		b.Fatal(err)
	}
	// As in logbook bench, the history is not kept: the heap holds what
	// the server and the read hold, so the collector runs as often as it
	// does there.
	n, h = len(h.Records), nil
	runtime.GC()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw", func(b *testing.B) {
		cpu, gc, heap, cycles := processCPU(), gcCPU(), heapAllocs(), gcCycles()
		for b.Loop() {
			if got := rawCount(b, js); got != n {
				b.Fatalf("raw read %d, want %d", got, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*n), "cpu-ns/event")
		b.ReportMetric(float64(gcCPU()-gc)/float64(b.N*n), "gc-cpu-ns/event")
		b.ReportMetric(float64(heapAllocs()-heap)/float64(b.N*n), "heap-B/event")
		b.ReportMetric(float64(gcCycles()-cycles)/float64(b.N), "gcs/op")
	})
	b.Run("fold", func(b *testing.B) {
		cpu, gc, heap, cycles := processCPU(), gcCPU(), heapAllocs(), gcCycles()
		for b.Loop() {
			count := 0
			states, _, err := replay.Fold(log.Read(b.Context(), 1), map[string]*session.State{}, func(m map[string]*session.State, e events.Envelope) map[string]*session.State {
				count++
				session.EvolveIn(m, e)
				return m
			})
			if err != nil || count != n || len(states) == 0 {
				b.Fatalf("fold: %d events into %d sessions, %v", count, len(states), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*n), "cpu-ns/event")
		b.ReportMetric(float64(gcCPU()-gc)/float64(b.N*n), "gc-cpu-ns/event")
		b.ReportMetric(float64(heapAllocs()-heap)/float64(b.N*n), "heap-B/event")
		b.ReportMetric(float64(gcCycles()-cycles)/float64(b.N), "gcs/op")
	})
}

// processCPU returns the CPU time (user and system) this process has
// used so far, the embedded server's included; 0 when the system does
// not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAllocs returns the bytes this process has allocated on the heap
// so far (runtime/metrics /gc/heap/allocs), the embedded server's
// included.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcCycles returns how many garbage collections this process has
// completed (runtime/metrics /gc/cycles/total).
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcCPU returns the CPU time the garbage collector has used so far, as
// the runtime estimates it (runtime/metrics /cpu/classes/gc/total).
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}
