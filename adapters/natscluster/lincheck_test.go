package natscluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/events"
)

// linHistories is how many histories TestLinearizableUnderFaults checks:
// LOGBOOK_LINCHECK_HISTORIES (.ci/cluster sets 200), or 4 in `go test
// ./...`, one per fault.
func linHistories(t *testing.T) int { return envCount(t, "LOGBOOK_LINCHECK_HISTORIES", 4) }

// The faults injected while a history runs, one per history in turn.
var linFaults = []string{"kill", "kill-leader", "sigstop", "partition"}

// Randomized multi-writer histories of appends with expected sequences
// and loads, through natslog.Log (each writer its own connection, the
// nodes in a different order), recorded while one fault hits the
// cluster, are linearizable:
//   - kill: a random node is SIGKILLed and started again;
//   - kill-leader: the stream leader is;
//   - sigstop: a random node is frozen with SIGSTOP (it holds its
//     connections and routes but answers nothing, as behind a dropped
//     link) and resumed with SIGCONT;
//   - partition: a random node is restarted with its routes withheld
//     (StartIsolated: clients reach it, no other node does), then
//     restarted with its routes.
//
// An append whose outcome is unknown is settled by the final state.
func TestLinearizableUnderFaults(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	reg := events.NewRegistry()
	var logs []events.Log
	for _, order := range [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}} {
		logs = append(logs, e.openLog(e.connectURL("writer", e.nodesURL(order), nats.DontRandomize()), reg))
	}
	fl := e.openLog(e.connect("writer"), reg)
	js, _ := jetstream.New(e.reader())

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	n := linHistories(t)
	var ops, unknown, conflicts int
	byFault := map[string]int{}
	for h := range n {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		if err := waitReplicas(ctx, js); err != nil {
			cancel()
			t.Fatalf("before history %d: %v", h, err)
		}
		fault := linFaults[h%len(linFaults)]
		heal := make(chan error, 1)
		go func() { heal <- e.inject(ctx, js, rng, fault) }()
		w := lincheck.Workload{
			Clients: logs, Final: fl, Prefix: fmt.Sprintf("lin-%d-%d", seed%1000000, h),
			Aggs: 3, Ops: 20, Seed: seed + uint64(h), OpTimeout: 10 * time.Second,
		}
		rec := w.Run(ctx)
		if err := <-heal; err != nil {
			cancel()
			t.Fatalf("history %d: %s: %v", h, fault, err)
		}
		final, err := w.FinalState(ctx)
		cancel()
		if err != nil {
			t.Fatalf("history %d (%s): final state: %v", h, fault, err)
		}
		hist, err := rec.Settle(final)
		if err != nil {
			t.Fatalf("history %d (%s): %v", h, fault, err)
		}
		res, err := lincheck.Check(hist, w.Prefix, os.Getenv("LOGBOOK_LINCHECK_DIR"), 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != "Ok" {
			t.Fatalf("history %d (%s, %d operations): porcupine says %s; visualization: %s", h, fault, res.Ops, res.Verdict, res.Viz)
		}
		ops += res.Ops
		unknown += res.Unknown
		byFault[fault]++
		for _, op := range hist {
			if op.Output.(lincheck.Output).Status == lincheck.Conflict {
				conflicts++
			}
		}
	}
	t.Logf("porcupine: %d histories (%v), %d operations (%d conflicts, %d appends settled by the final state), 0 violations",
		n, byFault, ops, conflicts, unknown)
	if out := os.Getenv("LOGBOOK_LINCHECK_REPORT"); out != "" {
		line := fmt.Sprintf("porcupine verdict Ok on %d histories of %d operations (%d conflicts, %d unknown outcomes settled by the final state); faults %v; seed %d\n",
			n, ops, conflicts, unknown, byFault, seed)
		if err := os.WriteFile(out, []byte(line), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// inject applies fault to the cluster a moment after the history starts,
// holds it for a second or two, heals it, and waits until every node is
// healthy again.
func (e *env) inject(ctx context.Context, js jetstream.JetStream, rng *rand.Rand, fault string) error {
	time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
	hold := time.Duration(800+rng.IntN(1500)) * time.Millisecond
	victim := e.c.Nodes[rng.IntN(len(e.c.Nodes))]
	switch fault {
	case "kill-leader":
		leader, err := streamLeader(ctx, js)
		if err != nil {
			return err
		}
		victim = e.c.Node(leader)
		fallthrough
	case "kill":
		victim.Kill()
		time.Sleep(hold)
		if err := victim.Start(); err != nil {
			return err
		}
	case "sigstop":
		pid := victim.Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("SIGSTOP %s: %w", victim.Name, err)
		}
		time.Sleep(hold)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT %s: %w", victim.Name, err)
		}
	case "partition":
		victim.Kill()
		if err := victim.StartIsolated(); err != nil {
			return err
		}
		time.Sleep(hold)
		victim.Kill()
		if err := victim.Start(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown fault %q", fault)
	}
	for _, nd := range e.c.Nodes {
		if err := nd.WaitHealthy(ctx); err != nil {
			return fmt.Errorf("%s after %s of %s: %w", nd.Name, fault, victim.Name, err)
		}
	}
	return nil
}
