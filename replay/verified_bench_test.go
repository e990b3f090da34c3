package replay_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/synth"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// BenchmarkVerifiedFold folds a signed log into every session's state in
// memory, as the signing row of `logbook bench` does: verified (fast,
// on the fast path of serve's judgment statement: each message proven
// against the statement's tree, signatures verified past it only, the
// statement taken and its stored tree proven inside the timing) beside
// the same fold not verified (unverified). The log: signing begun, a
// serve key registered and signing every append, a generated history of
// 20,000 events over 100 sessions (synth, seed 4, 2), a checkpoint and
// serve's judgment statement of it, then 999 events of sessions of their own
// past it (seed 5, 3). Per event: ns/ev (wall clock), cpu-ns/ev (the
// process's user and system CPU time, the embedded server's included:
// read the difference between fast and unverified), allocs/ev and B/ev
// (the process's, runtime.MemStats).
//
//	go test -run '^$' -bench VerifiedFold -benchtime 20x -count 5 ./replay/
//	go test -run '^$' -bench VerifiedFold/fast -benchtime 40x -cpuprofile /tmp/cpu.out ./replay/
func BenchmarkVerifiedFold(b *testing.B) {
	ctx := b.Context()
	_, srv := natslogtest.Start(b, natslog.FsyncInterval)
	admin, err := attestation.NewKey("admin@bench", attestation.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	key, err := attestation.NewKey("serve@bench", attestation.RoleServe)
	if err != nil {
		b.Fatal(err)
	}
	sl, err := natslog.Open(ctx, srv.Conn(), natslog.Config{Verifier: attestation.NewVerifier(admin.Public())})
	if err != nil {
		b.Fatal(err)
	}
	defer sl.Close()
	if _, err := sl.BeginSigning(ctx, admin, "bench", time.Now()); err != nil {
		b.Fatal(err)
	}
	if _, err := sl.RegisterKey(ctx, admin, key, "bench", time.Now()); err != nil {
		b.Fatal(err)
	}
	sl.SetSigner(key)
	history := func(seed1, seed2 uint64, n int, prefix string) {
		h := synth.NewHistory(synth.Epoch())
		rng := rand.New(rand.NewPCG(seed1, seed2))
		for len(h.Records) < n {
			if err := h.Step(rng, 100); err != nil {
				b.Fatal(err)
			}
		}
		for i := range h.Batches { // aggregates of their own
			bt := &h.Batches[i]
			bt.Agg.ID = prefix + bt.Agg.ID
			for k := range bt.Events {
				bt.Events[k].Agg = bt.Agg
			}
		}
		if err := h.AppendParallel(ctx, sl, 32); err != nil {
			b.Fatal(err)
		}
	}
	history(4, 2, 20_000, "")
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	id, err := sl.Identity(ctx)
	if err != nil {
		b.Fatal(err)
	}
	origin := merkle.Origin(id)
	tree, err := merkle.OpenStoredTree(dir, origin)
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	signer, _, err := merkle.LoadCheckpointKey(dir)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := merkle.EnsureStream(ctx, js); err != nil {
		b.Fatal(err)
	}
	cp := &merkle.Checkpointer{Log: sl, JS: js, Tree: tree, Signer: signer, Origin: origin, Judge: sl.NewJudger(admin.Public())}
	if _, _, err := cp.Once(ctx); err != nil {
		b.Fatal(err)
	}
	history(5, 3, 999, "tail-")
	runtime.GC()

	want := 0
	for _, fast := range []bool{false, true} {
		name := "unverified"
		if fast {
			name = "fast"
		}
		b.Run(name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := processCPU()
			folded := 0
			for b.Loop() {
				cfg := natslog.Config{}
				if fast {
					cfg.Verifier = attestation.NewVerifier(admin.Public())
				}
				l, err := natslog.Open(ctx, srv.Conn(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if fast {
					keys, err := merkle.LoadKeys(dir)
					if err != nil {
						b.Fatal(err)
					}
					j, why, err := merkle.FastPath(ctx, l, js, keys, dir)
					if err != nil || j == nil {
						b.Fatalf("FastPath: %v, %s", err, why)
					}
					l.SetJudged(j)
				}
				n := 0
				_, _, err = replay.Fold(l.Read(ctx, 1), map[string]*session.State{}, func(m map[string]*session.State, e events.Envelope) map[string]*session.State {
					n++
					session.EvolveIn(m, e)
					return m
				})
				if err != nil {
					b.Fatal(err)
				}
				if _, q := l.Quarantined(); q > 0 {
					b.Fatalf("%d events quarantined in a log with no forgery", q)
				}
				if want == 0 {
					want = n
				} else if n != want {
					b.Fatalf("folded %d events, another fold %d", n, want)
				}
				folded += n
				l.Close()
			}
			cpu := processCPU() - cpu0
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(folded), "ns/ev")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(folded), "cpu-ns/ev")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(folded), "allocs/ev")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(folded), "B/ev")
		})
	}
}
