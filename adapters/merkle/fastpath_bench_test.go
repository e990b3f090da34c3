package merkle

// BenchmarkFastPath measures what verifying a signed log costs a reader,
// each reading beside its unverified twin in the same iteration (read
// the ratios). The log: 50,000 signed session events, a session of
// 20,000 of them among 300 of 100, a checkpoint and serve's judgment
// statement of all of it.
//
//	fold-verified/unverified  Log.Read of the whole log with a Verifier
//	                          that checks every Ed25519 signature, over
//	                          the same read without a Verifier
//	fold-fast/unverified      the same on the fast path: FastPath (one
//	                          note signature, the stored hashes proven
//	                          against the root) and every message's leaf
//	                          hash checked, signatures verified past the
//	                          statement only
//	load-unverified/raw       Log.Load of the 20,000-event session without
//	                          a Verifier, over the same raw read
//	load-verified/raw         Log.Load of the 20,000-event session (what
//	                          audit reads) with every signature checked,
//	                          over an ordered consumer reading its subject
//	                          (ReadRaw) without decoding
//	load-fast/raw             the same load on the fast path
//
// Run (medians of 5):
//
//	go test -run '^$' -bench FastPath -benchtime 3x -count 5 ./adapters/merkle/

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// appendSession appends n events of session id, in batches of
// events.MaxBatch.
func appendSession(b testing.TB, l *natslog.Log, reg *events.Registry, id string, n int) {
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	var expect uint64
	for v := 1; v <= n; {
		batch := events.Batch{Agg: agg, Expect: expect}
		for ; v <= n && len(batch.Events) < events.MaxBatch; v++ {
			var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:Bash-%d", v)}
			if v == 1 {
				p = events.SessionStarted{Agent: "claude-code", Cwd: "/home/user/project"}
			}
			e := reg.New(p)
			e.ID, e.Agg, e.Ver, e.At = ulid.Make(), agg, uint64(v), testTime
			e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Ref: e.ID.String()}
			batch.Events = append(batch.Events, e)
		}
		a, err := l.Append(b.Context(), batch)
		if err != nil {
			b.Fatal(err)
		}
		expect = a.Last
	}
}

func BenchmarkFastPath(b *testing.B) {
	s := startSigned(b)
	reg := events.NewRegistry()
	for i := range 300 {
		appendSession(b, s.log, reg, fmt.Sprintf("s%03d", i), 100)
	}
	appendSession(b, s.log, reg, "long", 20_000)
	cp := judging(b, s)
	if _, _, err := cp.Once(b.Context()); err != nil {
		b.Fatal(err)
	}
	long := events.Aggregate{Kind: events.KindSession, ID: "long"}
	k := keys(b, s.dir)
	open := func(verified bool) *natslog.Log {
		cfg := natslog.Config{}
		if verified {
			cfg = natslog.Config{Verifier: reader(b, s).Verifier()}
		}
		l, err := natslog.Open(b.Context(), s.srv.Conn(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	fast := func(l *natslog.Log) {
		j, why, err := FastPath(b.Context(), l, s.js, k, s.dir)
		if err != nil || j == nil {
			b.Fatalf("FastPath: %v, %s", err, why)
		}
		l.SetJudged(j)
	}
	fold := func(l *natslog.Log) {
		n := 0
		for _, err := range l.Read(b.Context(), 1) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 50_002 {
			b.Fatalf("read %d events, want 50002", n)
		}
	}
	load := func(l *natslog.Log) {
		recs, _, err := l.Load(b.Context(), long)
		if err != nil || len(recs) != 20_000 {
			b.Fatalf("load: %d events, %v", len(recs), err)
		}
	}
	raw := func(ctx context.Context) {
		n := 0
		for _, err := range s.log.ReadRaw(ctx, long.Subject(), 1) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 20_000 {
			b.Fatalf("raw read %d, want 20000", n)
		}
	}
	timed := func(d *time.Duration, f func()) {
		t := time.Now()
		f()
		*d += time.Since(t)
	}
	var unv, ver, fst, rawT, loadU, loadV, loadF time.Duration
	for b.Loop() {
		for _, run := range []func(){
			func() { l := open(false); timed(&unv, func() { fold(l) }); l.Close() },
			func() { l := open(true); timed(&ver, func() { fold(l) }); l.Close() },
			func() { l := open(true); timed(&fst, func() { fast(l); fold(l) }); l.Close() },
			func() { timed(&rawT, func() { raw(b.Context()) }) },
			func() { l := open(false); timed(&loadU, func() { load(l) }); l.Close() },
			func() { l := open(true); timed(&loadV, func() { load(l) }); l.Close() },
			func() { l := open(true); timed(&loadF, func() { fast(l); load(l) }); l.Close() },
		} {
			run()
		}
	}
	b.ReportMetric(unv.Seconds()/ver.Seconds(), "fold-verified/unverified")
	b.ReportMetric(unv.Seconds()/fst.Seconds(), "fold-fast/unverified")
	b.ReportMetric(rawT.Seconds()/loadU.Seconds(), "load-unverified/raw")
	b.ReportMetric(rawT.Seconds()/loadV.Seconds(), "load-verified/raw")
	b.ReportMetric(rawT.Seconds()/loadF.Seconds(), "load-fast/raw")
}
