package natslog

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Reads made while the embedded server restarts JetStream (as HealStore
// does to clear a store write error) wait the restart out: each read of
// the whole log, raw or decoded, bounded or followed, and each load
// gives every message, never a short history or "stream not found".
func TestReadsAcrossJetStreamRestarts(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		// nats-server 2.15.3's EnableJetStream writes the account's
		// export subscriptions while in-flight requests read them
		// (setJetStreamExportSubs): dozens of restarts trip the race
		// detector inside the server.
		t.Skip("restarts JetStream dozens of times: nats-server races in EnableJetStream")
	}
	s := startServer(t, t.TempDir())
	l := openLogWith(t, s, Config{Timeout: 2 * time.Second})
	reg := events.NewRegistry()
	const aggs, per = 4, 300
	for a := range aggs {
		agg := session(fmt.Sprint("h", a))
		var seq uint64
		for v := uint64(0); v < per; v += 100 {
			seq = mustAppend(t, l, decision(reg, agg, seq, v+1, 100)).Last
		}
	}
	const total = aggs * per
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var restarts int
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.healMu.Lock()
			err := s.restartJetStream()
			s.healMu.Unlock()
			if err != nil {
				t.Errorf("restart JetStream: %v", err)
				return
			}
			restarts++
			time.Sleep(time.Duration(100+restarts%5*50) * time.Millisecond)
		}
	})
	ctx := t.Context()
	for round := range 30 {
		if seq, err := l.LastSeq(ctx); err != nil || seq != total {
			t.Fatalf("round %d: LastSeq = %d, %v; want %d", round, seq, err, total)
		}
		var n int
		for r, err := range l.Read(ctx, 1) {
			if err != nil {
				t.Fatalf("round %d: Read after %d events: %v", round, n, err)
			}
			if n++; r.Seq != uint64(n) {
				t.Fatalf("round %d: Read yielded seq %d as event %d", round, r.Seq, n)
			}
		}
		if n != total {
			t.Fatalf("round %d: Read yielded %d events, want %d", round, n, total)
		}
		n = 0
		for _, err := range l.ReadRaw(ctx, StreamSubjects, 1) {
			if err != nil {
				t.Fatalf("round %d: ReadRaw after %d messages: %v", round, n, err)
			}
			n++
		}
		if n != total {
			t.Fatalf("round %d: ReadRaw yielded %d messages, want %d", round, n, total)
		}
		agg := session(fmt.Sprint("h", round%aggs))
		recs, _, err := l.LoadStreamed(ctx, agg)
		if err != nil || len(recs) != per {
			t.Fatalf("round %d: LoadStreamed(%s) = %d events, %v; want %d", round, agg, len(recs), err, per)
		}
		recs, _, err = l.Load(ctx, agg)
		if err != nil || len(recs) != per {
			t.Fatalf("round %d: Load(%s) = %d events, %v; want %d", round, agg, len(recs), err, per)
		}
		n = 0
		if _, err := l.LoadEach(ctx, agg, nil, func(events.Record) error { n++; return nil }); err != nil || n != per {
			t.Fatalf("round %d: LoadEach(%s) handed over %d events, %v; want %d", round, agg, n, err, per)
		}
		fctx, cancel := context.WithCancel(ctx)
		n = 0
		for r, err := range l.Follow(fctx, 1) {
			if err != nil {
				t.Fatalf("round %d: Follow after %d events: %v", round, n, err)
			}
			if n++; r.Seq != uint64(n) {
				t.Fatalf("round %d: Follow yielded seq %d as event %d", round, r.Seq, n)
			}
			if n == total {
				cancel()
			}
		}
		cancel()
		if n != total {
			t.Fatalf("round %d: Follow yielded %d events, want %d", round, n, total)
		}
	}
	t.Logf("%d restarts of JetStream during the reads", restarts)
}

// A restart of JetStream that lasts longer than one read's
// Config.Timeout is waited out by each read, which asks again with a
// timeout of its own once JetStream is back: the attempt the restart
// swallowed does not use up the next one's time.
func TestReadsOutlastTheirTimeoutAcrossARestart(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		// As in TestReadsAcrossJetStreamRestarts: EnableJetStream
		// writes what an in-flight request reads, inside nats-server.
		t.Skip("restarts JetStream under reads: nats-server races in EnableJetStream")
	}
	s := startServer(t, t.TempDir())
	l := openLogWith(t, s, Config{Timeout: 300 * time.Millisecond})
	reg := events.NewRegistry()
	agg := session("slow")
	mustAppend(t, l, decision(reg, agg, 0, 1, 5))
	reads := map[string]func(ctx context.Context) (int, error){
		"Load": func(ctx context.Context) (int, error) {
			recs, _, err := l.Load(ctx, agg)
			return len(recs), err
		},
		"LoadStreamed": func(ctx context.Context) (int, error) {
			recs, _, err := l.LoadStreamed(ctx, agg)
			return len(recs), err
		},
		"LoadEach": func(ctx context.Context) (n int, err error) {
			_, err = l.LoadEach(ctx, agg, nil, func(events.Record) error { n++; return nil })
			return n, err
		},
		"LastEventSeq": func(ctx context.Context) (int, error) {
			seq, err := l.LastEventSeq(ctx)
			return int(seq), err
		},
		"Read": func(ctx context.Context) (n int, err error) {
			for _, err := range l.Read(ctx, 1) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		},
		"ReadRaw": func(ctx context.Context) (n int, err error) {
			for _, err := range l.ReadRaw(ctx, StreamSubjects, 1) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			// Half a restart: JetStream is down, and the Server says it
			// is restarting, as restartJetStream does.
			s.healMu.Lock()
			defer s.healMu.Unlock()
			cfg := *s.ns.JetStreamConfig()
			cfg.StoreDir = s.storeDir
			s.restarts.Add(1)
			if err := s.ns.ShutdownJetStream(); err != nil {
				t.Fatalf("shut down JetStream: %v", err)
			}
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := read(t.Context())
				done <- result{n, err}
			}()
			time.Sleep(4 * l.cfg.Timeout)
			err := s.ns.EnableJetStream(&cfg)
			s.restarts.Add(1)
			if err != nil {
				t.Fatalf("enable JetStream: %v", err)
			}
			if r := <-done; r.err != nil || r.n != 5 {
				t.Fatalf("%s across a restart of %v = %d events, %v; want 5", name, 4*l.cfg.Timeout, r.n, r.err)
			}
		})
	}
}

// A load whose direct get gets no answer before its timeout fails: an
// aggregate with events is never read as one with none (the batch get's
// iterator ends without an error at its deadline).
func TestLoadUnansweredIsNoEmptyHistory(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	l := openLogWith(t, s, Config{})
	reg := events.NewRegistry()
	agg := session("unanswered")
	mustAppend(t, l, decision(reg, agg, 0, 1, 3))
	l.cfg.Timeout = time.Nanosecond
	recs, last, err := l.Load(t.Context(), agg)
	if err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("Load with no time to answer = %d events, last %d, %v; want an error saying no answer came", len(recs), last, err)
	}
	l.cfg.Timeout = 5 * time.Second
	if recs, _, err := l.Load(t.Context(), agg); err != nil || len(recs) != 3 {
		t.Fatalf("Load = %d events, %v; want 3", len(recs), err)
	}
}
