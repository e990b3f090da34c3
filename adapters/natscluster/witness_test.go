package natscluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/merkle"
)

// witnessState polls h's witness state until ok accepts it (within the
// test's waitBudget).
func witnessState(t *testing.T, h *host, what string, ok func(merkle.WitnessState) bool) merkle.WitnessState {
	t.Helper()
	ctx, cancel := waitBudget(t)
	defer cancel()
	start := time.Now()
	for {
		st, err := merkle.ReadWitnessState(filepath.Join(h.data, "witness.json"))
		if err == nil && ok(st) {
			return st
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: no %s after %s, near the test's deadline: %+v, %v\n%s", h.name, what, time.Since(start).Round(time.Second), st, err, tail(h.output(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A fork shown to two hosts: the writer's checkpoints are co-signed by a
// follower on another node of the three-node cluster; a checkpoint
// signed with the writer's own key over another root is refused, naming
// the sequences where the logs part, and `logbook doctor` on the
// follower and `logbook verify` on the writer say so. Honest checkpoints
// after it are still co-signed.
func TestWitnessRefusesAForkedCheckpoint(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	a := e.newHost("writer-a", "writer", "serve", "--checkpoint-every", "1", "--checkpoint-interval", "1s")
	a.url = e.c.Nodes[0].URL()
	a.start()
	out, stderr, err := a.cli("checkpoint", "key")
	if err != nil {
		t.Fatalf("checkpoint key: %v\n%s", err, stderr)
	}
	var vkey string
	for line := range strings.Lines(out) {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "checkpoint "); ok {
			vkey = k
		}
	}
	r := e.newHost("reader-c", "reader", "serve", "--role", "reader")
	r.url = e.c.Nodes[2].URL()
	if _, stderr, err := r.cli("checkpoint", "trust", vkey); err != nil {
		t.Fatalf("checkpoint trust: %v\n%s", err, stderr)
	}
	r.start()
	startSessions(t, a, []string{"fork-1", "fork-2"}, ws)

	// The follower co-signs the writer's checkpoints up to the log's end.
	size := int64(e.lastSeq())
	st := witnessState(t, r, fmt.Sprintf("cosignature at size %d", size), func(s merkle.WitnessState) bool {
		return s.Last != nil && s.Last.Size == size
	})
	if st.Refused != 0 {
		t.Fatalf("refused an honest checkpoint: %s", st.Refusal)
	}

	// The fork: size+2 messages with another root, signed with the
	// writer's key, published as serve would.
	signer, _, err := merkle.LoadCheckpointKey(a.data)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := merkle.Checkpoint{Origin: st.Last.Origin, Size: size + 2, Root: sha256.Sum256([]byte("another log"))}.Sign(signer)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.connect("serve"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := merkle.PublishCheckpoint(t.Context(), js, signed); err != nil {
		t.Fatal(err)
	}
	startSessions(t, a, []string{"fork-3", "fork-4"}, ws) // the log reaches the fork's size
	st = witnessState(t, r, "refusal", func(s merkle.WitnessState) bool { return s.Refused > 0 })
	t.Logf("refusal: %s", st.Refusal)
	if want := fmt.Sprintf("first differing sequence in %d..%d", size+1, size+2); !strings.Contains(st.Refusal, want) {
		t.Fatalf("refusal %q: want %q", st.Refusal, want)
	}
	if !strings.Contains(r.output(), "WITNESS REFUSED") {
		t.Fatalf("the follower's log does not say it refused:\n%s", tail(r.output(), 3000))
	}
	doc, _, _ := r.cli("--json", "doctor")
	if !strings.Contains(doc, `"witness"`) || !strings.Contains(doc, "refused 1 checkpoints") {
		t.Fatalf("doctor on the follower does not report the refusal:\n%s", doc)
	}
	// Honest checkpoints after the fork are still co-signed.
	end := int64(e.lastSeq())
	witnessState(t, r, fmt.Sprintf("cosignature at size %d after the fork", end), func(s merkle.WitnessState) bool {
		return s.Last != nil && s.Last.Size == end
	})
	// verify on the writer, which pins the follower's witness key: the
	// fork is a checkpoint signed with its key that the stored log
	// disagrees with.
	rk, stderr, err := r.cli("checkpoint", "key")
	if err != nil {
		t.Fatalf("checkpoint key: %v\n%s", err, stderr)
	}
	for line := range strings.Lines(rk) {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "witness "); ok {
			if _, stderr, err := a.cli("checkpoint", "trust", k); err != nil {
				t.Fatalf("checkpoint trust: %v\n%s", err, stderr)
			}
		}
	}
	out, stderr, err = a.cli("verify")
	t.Logf("verify:\n%s%s", out, stderr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("verify: %v, want exit 1", err)
	}
	named := false
	for s := size + 1; s <= size+2; s++ {
		named = named || strings.Contains(stderr, fmt.Sprintf("first bad sequence %d:", s))
	}
	if !named {
		t.Fatalf("verify does not name seq %d..%d:\n%s", size+1, size+2, stderr)
	}
	if !strings.Contains(out, "of them witnessed") || strings.Contains(out, " 0 of them witnessed") {
		t.Fatalf("verify finds no witnessed checkpoint:\n%s", out)
	}
}
