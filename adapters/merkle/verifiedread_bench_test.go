package merkle

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// BenchmarkVerifiedRead measures the work of reading a signed log with
// every message proven against serve's signed statement (the fast
// path), per message, beside the same read unverified: what audit's
// read stage and a verified fold pay for each message (the header block
// parsed, the leaf hashed and checked, the judged fields taken, the
// event judged). The log: a session of 20,000 events, a checkpoint and
// serve's judgment statement of it, then 999 events of another session
// past the statement (verified by their signatures, as a live log has).
// Each iteration opens a Log, takes the fast path (fast only) and reads:
//
//	load/…  the 20,000-event session loaded streamed, as audit loads it
//	read/…  the whole log read in order (Log.Read), as a fold reads it
//
// The server runs in this process: its CPU and allocations are counted
// in each, so read the difference between fast and unverified. Per
// message: ns/msg (wall clock of the iteration), cpu-ns/msg (the
// process's user and system CPU time, steadier than the wall clock on a
// busy machine), allocs/msg and B/msg (the process's, from
// runtime.MemStats). Profile one with
//
//	go test -run '^$' -bench 'VerifiedRead/read/fast' -benchtime 40x -cpuprofile /tmp/cpu.out ./adapters/merkle/
func BenchmarkVerifiedRead(b *testing.B) {
	const n, past = 20_000, 999
	s := startSigned(b)
	reg := events.NewRegistry()
	appendSession(b, s.log, reg, "long", n)
	cp := judging(b, s)
	if _, _, err := cp.Once(b.Context()); err != nil {
		b.Fatal(err)
	}
	appendSession(b, s.log, reg, "tail", past)
	long := events.Aggregate{Kind: events.KindSession, ID: "long"}
	k := keys(b, s.dir)
	load := func(l *natslog.Log) int {
		recs, _, err := l.LoadStreamed(b.Context(), long)
		if err != nil || len(recs) != n {
			b.Fatalf("load: %d events, %v", len(recs), err)
		}
		return n
	}
	read := func(l *natslog.Log) int {
		got := 0
		for _, err := range l.Read(b.Context(), 1) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if want := n + past + 2; got != want { // and signing.began, key.registered
			b.Fatalf("read %d events, want %d", got, want)
		}
		return got
	}
	for _, work := range []struct {
		name string
		run  func(*natslog.Log) int
	}{{"load", load}, {"read", read}} {
		for _, fast := range []bool{false, true} {
			name := work.name + "/unverified"
			if fast {
				name = work.name + "/fast"
			}
			b.Run(name, func(b *testing.B) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu0 := processCPU(b)
				msgs := 0
				for b.Loop() {
					cfg := natslog.Config{}
					if fast {
						cfg.Verifier = attestation.NewVerifier(s.admin.Public())
					}
					l, err := natslog.Open(b.Context(), s.srv.Conn(), cfg)
					if err != nil {
						b.Fatal(err)
					}
					if fast {
						j, why, err := FastPath(b.Context(), l, s.js, k, s.dir)
						if err != nil || j == nil {
							b.Fatalf("FastPath: %v, %s", err, why)
						}
						l.SetJudged(j)
					}
					msgs += work.run(l)
					l.Close()
				}
				cpu := processCPU(b) - cpu0
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(msgs), "cpu-ns/msg")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(msgs), "ns/msg")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(msgs), "allocs/msg")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(msgs), "B/msg")
			})
		}
	}
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
