package lincheck_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// histories is how many histories TestEmbeddedLinearizable checks:
// LOGBOOK_LINCHECK_HISTORIES, or a few in `go test ./...`.
func histories(t *testing.T) int {
	if s := os.Getenv("LOGBOOK_LINCHECK_HISTORIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOGBOOK_LINCHECK_HISTORIES=%q: want a count", s)
		}
		return n
	}
	return 8
}

// Randomized multi-writer histories of appends with expected sequences
// and loads, each client on its own in-process connection to one
// embedded server, are linearizable.
func TestEmbeddedLinearizable(t *testing.T) {
	_, srv := natslogtest.Start(t, natslog.FsyncAlways)
	var logs []events.Log
	for range 4 {
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		logs = append(logs, natslogtest.Open(t, nc))
	}
	n := histories(t)
	ops, conflicts := 0, 0
	for h := range n {
		w := lincheck.Workload{Clients: logs, Prefix: fmt.Sprintf("lin%d", h), Aggs: 2, Ops: 15, Seed: uint64(h), OpTimeout: 30 * time.Second}
		rec := w.Run(t.Context())
		final, err := w.FinalState(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		hist, err := rec.Settle(final)
		if err != nil {
			t.Fatal(err)
		}
		res, err := lincheck.Check(hist, w.Prefix, os.Getenv("LOGBOOK_LINCHECK_DIR"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != "Ok" {
			t.Fatalf("history %d: porcupine says %s; visualization: %s", h, res.Verdict, res.Viz)
		}
		ops += res.Ops
		for _, op := range hist {
			if op.Output.(lincheck.Output).Status == lincheck.Conflict {
				conflicts++
			}
		}
	}
	if conflicts == 0 {
		t.Fatal("no append conflicted: the histories do not exercise the expected-sequence check")
	}
	t.Logf("porcupine: %d histories, %d operations (%d conflicts), 0 violations", n, ops, conflicts)
}

// The checker finds an impossible history and writes its visualization:
// a load that misses an append acknowledged before the load was called,
// and two appends acknowledged on the same expected sequence.
func TestCheckerFindsViolations(t *testing.T) {
	agg := events.Aggregate{Kind: events.KindSession, ID: "v"}.String()
	cases := map[string][]porcupine.Operation{
		"stale-load": {
			{ClientId: 0, Input: lincheck.Input{Agg: agg, IDs: []string{"a"}}, Output: lincheck.Output{Status: lincheck.OK, Last: 5}, Call: 0, Return: 10},
			{ClientId: 1, Input: lincheck.Input{Agg: agg, Load: true}, Output: lincheck.Output{Status: lincheck.OK}, Call: 20, Return: 30},
		},
		"lost-update": {
			{ClientId: 0, Input: lincheck.Input{Agg: agg, IDs: []string{"a"}}, Output: lincheck.Output{Status: lincheck.OK, Last: 5}, Call: 0, Return: 10},
			{ClientId: 1, Input: lincheck.Input{Agg: agg, IDs: []string{"b"}}, Output: lincheck.Output{Status: lincheck.OK, Last: 6}, Call: 0, Return: 10},
		},
	}
	dir := t.TempDir()
	for name, hist := range cases {
		res, err := lincheck.Check(hist, name, dir, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != "Illegal" {
			t.Errorf("%s: verdict %s, want Illegal", name, res.Verdict)
			continue
		}
		b, err := os.ReadFile(res.Viz)
		if err != nil || !strings.Contains(string(b), "<html") {
			t.Errorf("%s: visualization %q: %v", name, res.Viz, err)
		}
	}
}

// An append that was not sent (its ctx had ended) constrains nothing:
// Settle drops it and keeps the acknowledged one.
func TestSettleDropsUnsent(t *testing.T) {
	ctx := context.Background()
	l, _ := natslogtest.Start(t, natslog.FsyncAlways)
	rec := lincheck.New()
	reg := events.NewRegistry()
	agg := events.Aggregate{Kind: events.KindSession, ID: "settle"}
	e := reg.New(events.SessionStarted{Agent: "cli", Cwd: "/w"})
	e.Agg, e.Ver, e.At = agg, 1, time.Now().UTC().Truncate(time.Microsecond)
	e.Cause = &events.Cause{Kind: "cli", Event: "t", Ref: "r"}
	e.ID = [16]byte{1}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	// A cancelled ctx: not sent, so Failed, and dropped.
	if _, err := rec.Append(cctx, 0, l, events.Batch{Agg: agg, Events: []events.Envelope{e}}); err == nil {
		t.Fatal("append with a cancelled ctx succeeded")
	}
	if _, err := rec.Append(ctx, 0, l, events.Batch{Agg: agg, Events: []events.Envelope{e}}); err != nil {
		t.Fatal(err)
	}
	final, err := lincheck.LoadFinal(ctx, l, []events.Aggregate{agg})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := rec.Settle(final)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Output.(lincheck.Output).Status != lincheck.OK {
		t.Fatalf("settled history %+v, want the one acknowledged append", hist)
	}
	if res, err := lincheck.Check(hist, "settle", t.TempDir(), 10*time.Second); err != nil || res.Verdict != "Ok" {
		t.Fatalf("Check: %+v, %v", res, err)
	}
}
