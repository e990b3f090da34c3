package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natscluster"
	"github.com/logbook-dev/logbook/adapters/reconcile"
	"github.com/logbook-dev/logbook/events"
)

// While the log has lost its quorum the projection answers reads, but
// nothing decides on it: on a three-node cluster of nats-server processes
// with two nodes down, a service that answers a read allowed to be stale
// (api.AllowStale) at once from its projection gives no gate verdict (a
// gated PreToolUse, a person's verdict on a review) and its reconciler
// appends no abandonment mark for a session its projection shows stale,
// even asked with a context that allows stale reads. Once the nodes are
// back the log holds no verdict and no mark of the outage, and the same
// reconciler marks the session: it was held off, not unable.
func TestQuorumLoss_NoDecisionFromTheProjection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node nats-server cluster")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	ctx := t.Context()
	dir := t.TempDir()
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	bin, err := natscluster.Build(bctx, dir, "nats-server", natscluster.ServerModule)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "creds")
	if err := runCLI(ctx, []string{"creds", "cluster", "--out", creds}, strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	users, err := os.ReadFile(filepath.Join(creds, "users.conf"))
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	c, err := natscluster.Start(sctx, bin, filepath.Join(dir, "nodes"), 3, users)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	var initOut syncBuffer
	if err := runCLI(ctx, []string{"--nats-url", c.URL(), "--creds", filepath.Join(creds, "admin.json"), "stream", "init", "--replicas", "3"}, strings.NewReader(""), &initOut, &initOut); err != nil {
		t.Fatalf("stream init: %v\n%s", err, initOut.String())
	}

	// The service as serve has it, on the node that stays up.
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	g := &globals{data: data, natsURL: c.Nodes[0].URL(), credsPath: filepath.Join(creds, "serve.json"), cmdName: "logbook serve",
		stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	b, svc := openService(t, g)
	store := svc.Store
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	var health host.LogHealth
	go func() {
		defer func() { done <- struct{}{} }()
		for runCtx.Err() == nil {
			svc.Runner.Run(runCtx) // ends with the log unavailable; again, as serve does
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		health.Probe(runCtx, b.log, t.Logf)
	}()
	t.Cleanup(func() {
		stopRun()
		<-done
		<-done
	})
	svc.LogState = health.State
	var gateLog syncBuffer
	gs := gateService(b, svc, store, gateFlags{budget: 2 * time.Second}, &gateLog)

	// A working session with an open Bash call and nothing observed
	// since: a reconciler pass with a short abandon-after marks it.
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse"} {
		req, _ := json.Marshal(api.HookRequest{ID: ulid.Make().String(), Text: goneHook(ev, "tu_1")})
		if _, err := svc.Hook(ctx, req); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	if err := svc.CaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(claude.Quiet + 100*time.Millisecond) // silent, not taking lines in
	const abandonAfter = 100 * time.Millisecond
	if st, due, err := dueNow(t, svc, abandonAfter); err != nil || !due {
		t.Fatalf("session %s: due %v, %v; want due for a stale mark", st.Phase, due, err)
	}
	before := store.Checkpoint()

	lost := time.Now()
	c.Nodes[1].Kill()
	c.Nodes[2].Kill()
	for since, _ := health.State(); since.IsZero(); since, _ = health.State() {
		if time.Since(lost) > 30*time.Second {
			t.Fatal("30 s after two of three nodes went down the log still answers")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("log unavailable %s after the loss", time.Since(lost).Round(time.Millisecond))
	stale := api.AllowStale(ctx)

	// A read allowed to be stale answers at once from the projection.
	start := time.Now()
	v, err := svc.Handlers()[api.VerbSession](stale, []byte(`{"id":"`+goneSession+`"}`))
	if err != nil {
		t.Fatalf("session read during the loss: %v", err)
	}
	if r := v.(api.SessionReply); !r.IsStale() || r.AsOfSeq != before || r.Session.Phase != events.PhaseWorking {
		t.Fatalf("session read during the loss: stale %+v, phase %s; want stale as of %d, working", r.Stale, r.Session.Phase, before)
	}
	t.Logf("stale session read in %s", time.Since(start).Round(time.Millisecond))

	// The reconciler: held off, nothing marked.
	var recLog syncBuffer
	host, _ := os.Hostname()
	r := reconcile.New(reconcile.Config{Service: svc, AbandonAfter: abandonAfter, Interval: reconcile.MinInterval, Host: host, Boot: claude.BootID(),
		Report: func(msg string) { fmt.Fprintln(&recLog, msg) }})
	pctx, cancel := context.WithTimeout(stale, 20*time.Second)
	start = time.Now()
	n, err := r.Pass(pctx)
	cancel()
	if _, held := errors.AsType[*reconcile.UnsettledError](err); !held || n != 0 {
		t.Errorf("reconciler pass during the loss: %d marked, %v; want none, held off", n, err)
	}
	t.Logf("reconciler pass held off in %s: %v", time.Since(start).Round(time.Millisecond), err)

	// The gate: a gated call gets no verdict, nor does a person's answer
	// to a review.
	var wg sync.WaitGroup
	for _, call := range []struct {
		verb          string
		req           any
		decided, held string // what an answer means; what no answer means
	}{
		{gate.VerbGate, gate.HookGateRequest{ID: ulid.Make().String(), Text: goneHook("PreToolUse", "tu_2"), BudgetMS: 2000},
			"gate during the loss gave a verdict", "gate gave no verdict"},
		{gate.VerbReviewDecide, gate.DecideRequest{ID: "rv-1", Verdict: "allow", Reason: "looks fine", Actor: "person:test@host", Ref: ulid.Make().String()},
			"a person's verdict during the loss was recorded", "a person's verdict not recorded"},
	} {
		// Both calls wait at once: each is given its own few seconds.
		wg.Go(func() {
			req, _ := json.Marshal(call.req)
			// A verdict taken from the projection would come at once; one
			// from the log cannot come while it has no quorum, however long
			// the call waits. A few seconds tell both.
			cctx, cancel := context.WithTimeout(stale, 5*time.Second)
			start := time.Now()
			answer, err := gs.Handlers()[call.verb](cctx, req)
			cancel()
			if err == nil {
				t.Errorf("%s: %+v", call.decided, answer)
			}
			t.Logf("%s in %s: %v", call.held, time.Since(start).Round(time.Millisecond), err)
		})
	}
	wg.Wait()

	for _, nd := range c.Nodes[1:] {
		if err := nd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for _, nd := range c.Nodes[1:] {
		if err := nd.WaitHealthy(wctx); err != nil {
			t.Fatal(err)
		}
	}
	for since, _ := health.State(); !since.IsZero(); since, _ = health.State() {
		if wctx.Err() != nil {
			t.Fatal("the log does not answer after the nodes came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, rec := range goneRecords(t, b) {
		if rec.Actor == claude.ActorReconciler || rec.Type == (events.ReviewDecided{}).EventType() || rec.Type == (events.SessionEntryAbandoned{}).EventType() {
			t.Errorf("seq %d: %s by %s, decided during the loss", rec.Seq, rec.Type, rec.Actor)
		}
	}
	// Held off, not unable: with the log back the same pass marks.
	if err := svc.CaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Pass(ctx); err != nil || n != 1 {
		t.Errorf("reconciler pass after the loss: %d marked, %v; want 1", n, err)
	}
	if t.Failed() {
		t.Logf("reconciler said:\n%s\ngate said:\n%s", recLog.String(), gateLog.String())
	}
}
