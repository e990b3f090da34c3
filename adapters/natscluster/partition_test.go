package natscluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/events"
)

// Partition: one node is cut off from the other two (restarted with its
// routes withheld) while a writer on the majority appends and a writer
// connected only to the cut-off node tries to. The majority goes on; the
// minority's appends are never acknowledged; once the node is routed
// again it serves every acknowledged append.
func TestPartition(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	reg := events.NewRegistry()
	cut := e.c.Nodes[2]
	major := e.connectURL("writer", e.c.Nodes[0].URL()+","+e.c.Nodes[1].URL())
	ml, err := natslog.Open(t.Context(), major, natslog.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Close()

	// The stream's leader must be on the majority side for appends to go
	// on at once; else they wait for an election, as after a node kill.
	cut.Kill()
	if err := cut.StartIsolated(); err != nil {
		t.Fatal(err)
	}
	minor, err := nats.Connect(cut.URL(), nats.UserInfo("writer", e.password("writer")), natslog.InboxOption(natslog.RoleWriter), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer minor.Close()

	// One event per aggregate and version: an append whose outcome was
	// unknown is sent again with the same event id.
	evs := map[string]events.Envelope{}
	appendOne := func(l *natslog.Log, agg events.Aggregate, expect, ver uint64, timeout time.Duration) (events.Appended, error) {
		key := fmt.Sprintf("%s/%d", agg, ver)
		ev, ok := evs[key]
		if !ok {
			ev = lincheck.SessionEvent(reg, agg, ver, "partition", "t")
			evs[key] = ev
		}
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		return l.Append(ctx, events.Batch{Agg: agg, Expect: expect, Events: []events.Envelope{ev}})
	}

	// The majority appends through the partition (retrying while it
	// elects a leader, if the cut node led).
	agg := events.Aggregate{Kind: events.KindSession, ID: "partition-major"}
	var expect uint64
	var acked []uint64
	start := time.Now()
	var stall time.Duration
	last := start
	for ver := uint64(1); ver <= 40; {
		app, err := appendOne(ml, agg, expect, ver, 5*time.Second)
		if err != nil {
			if time.Since(start) > 60*time.Second {
				t.Fatalf("majority append %d: %v", ver, err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		stall = max(stall, time.Since(last))
		last = time.Now()
		expect = app.Last
		acked = append(acked, app.Last)
		ver++
	}
	// The cut-off node cannot reach a quorum: its writer's appends fail.
	// Its open is given a few seconds, not the whole ElectionWait: no
	// election can end on the minority side, however long it waits.
	var minorErr error
	octx, ocancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer ocancel()
	if ml2, err := natslog.Open(octx, minor, natslog.Config{Registry: reg, Timeout: time.Second}); err != nil {
		minorErr = err
	} else {
		_, minorErr = appendOne(ml2, events.Aggregate{Kind: events.KindSession, ID: "partition-minor"}, 0, 1, 2*time.Second)
		ml2.Close()
	}
	if minorErr == nil {
		t.Fatal("an append through the cut-off node was acknowledged")
	}
	t.Logf("partition: majority appended %d with a longest stall of %s; the cut-off node's writer: %v", len(acked), stall.Round(time.Millisecond), minorErr)

	// Heal: the node is routed again, catches up, and serves every
	// acknowledged append.
	cut.Kill()
	if err := cut.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := cut.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(e.reader())
	if err := waitReplicas(ctx, js); err != nil {
		t.Fatal(err)
	}
	rc := e.connectURL("reader", cut.URL())
	cjs, _ := jetstream.New(rc)
	// A consumer through the healed node reads everything the majority
	// acknowledged while it was cut off.
	var got []uint64
	for len(got) < len(acked) && ctx.Err() == nil {
		c, err := cjs.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(len(got)) + 1, FilterSubjects: []string{agg.Subject()},
		})
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the healed node's API is not back yet
			continue
		}
		batch, err := c.Fetch(len(acked)-len(got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			continue
		}
		for m := range batch.Messages() {
			md, _ := m.Metadata()
			got = append(got, md.Sequence.Stream)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(acked) {
		t.Errorf("through the healed node: seqs %v, want %v", got, acked)
	}
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != uint64(len(acked)) {
		t.Errorf("stream holds %d messages, want the %d the majority acknowledged", n, len(acked))
	}
	if errors.Is(minorErr, context.Canceled) {
		t.Log("minority append cancelled")
	}
}
