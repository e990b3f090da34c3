package main

// BenchmarkReplayRSS measures the peak resident memory of `logbook replay`
// on a data directory whose log holds LOGBOOK_BENCH_EVENTS session events
// (default 1,000,000: observations and the decisions they caused, over
// 1,000 sessions, written once before timing). No serve runs, so the
// command opens the log itself, embedded server included, as a user's
// replay of an idle data directory does. Metrics: peak-MiB, the child's
// maximum resident set (getrusage ru_maxrss; the floor is ≤ 200 MiB), and
// ev/s. LOGBOOK_BENCH_DATA names a data directory to keep the log in and
// reuse (written when it holds none). Run with
//
//	go test -run '^$' -bench ReplayRSS -benchtime 1x ./cmd/logbook/

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/synth"
)

func BenchmarkReplayRSS(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("LOGBOOK_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("LOGBOOK_BENCH_EVENTS=%q: %v", s, err)
		}
	}
	bin := buildBinary(b)
	data := os.Getenv("LOGBOOK_BENCH_DATA")
	if data == "" {
		data = b.TempDir()
	}
	last := writeSynthLog(b, filepath.Join(data, "jetstream"), n, 1000)
	var peak int64
	var elapsed time.Duration
	for b.Loop() {
		c := exec.Command(bin, "replay", "--data", data)
		c.Env = append(os.Environ(), "LOGBOOK_NATS_URL=", "LOGBOOK_CREDS=")
		c.Stdout, c.Stderr = io.Discard, os.Stderr
		t := time.Now()
		if err := c.Run(); err != nil {
			b.Fatalf("logbook replay: %v", err)
		}
		elapsed += time.Since(t)
		peak = max(peak, c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss*1024)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(last)*float64(b.N)/elapsed.Seconds(), "ev/s")
}

// writeSynthLog writes about n session events of a generated history over
// sessions sessions to the log in storeDir, unless it holds events
// already, and returns its last sequence.
func writeSynthLog(b *testing.B, storeDir string, n, sessions int) uint64 {
	b.Helper()
	ctx := context.Background()
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: storeDir, Fsync: natslog.FsyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	reg := events.NewRegistry()
	l, err := natslog.Open(ctx, srv.Conn(), natslog.Config{Registry: reg, MergeMin: events.MaxBatch + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	last, err := l.LastSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if last > 0 {
		return last
	}
	h := synth.NewHistory(synth.Epoch())
	rng := rand.New(rand.NewPCG(10, 6))
	expect := map[events.Aggregate]uint64{}
	for written := 0; written < n; {
		for len(h.Records) < min(10_000, n-written) {
			if err := h.Step(rng, sessions); err != nil {
				b.Fatal(err)
			}
		}
		written += len(h.Records)
		batches := h.Batches
		h.Records, h.Batches = nil, nil
		if err := bench.AppendBatches(ctx, l, batches, expect, 32); err != nil {
			b.Fatal(err)
		}
	}
	if last, err = l.LastSeq(ctx); err != nil {
		b.Fatal(err)
	}
	return last
}
