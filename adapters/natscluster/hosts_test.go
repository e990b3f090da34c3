package natscluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// hookPayload returns a Claude Code hook payload (hooks reference as
// of Claude Code 2.1) of event for session sid, working in cwd.
func hookPayload(sid, cwd, event string, n int) []byte {
	base := fmt.Sprintf(`"session_id":%q,"transcript_path":"/home/user/.claude/projects/p/%s.jsonl","cwd":%q,"permission_mode":"bypassPermissions","hook_event_name":%q`, sid, sid, cwd, event)
	switch event {
	case "SessionStart":
		return []byte("{" + base + `,"source":"startup","model":"claude-opus-4-7"}`)
	case "UserPromptSubmit":
		return []byte("{" + base + fmt.Sprintf(`,"prompt":"step %d"}`, n))
	case "PreToolUse":
		return []byte("{" + base + fmt.Sprintf(`,"tool_name":"Bash","tool_use_id":"toolu_%d","tool_input":{"command":"echo %d"}}`, n, n))
	case "PostToolUse":
		return []byte("{" + base + fmt.Sprintf(`,"tool_name":"Bash","tool_use_id":"toolu_%d","tool_input":{"command":"echo %d"},"tool_response":{"stdout":"%d"}}`, n, n, n))
	default: // Stop
		return []byte("{" + base + `,"stop_hook_active":false}`)
	}
}

// workload runs n random actions on writer host h: hooks on the given
// sessions, imports of the fixture transcripts, and commands in a
// sandbox. It returns how many hooks were acknowledged (exit 0).
//
// Only an importer imports: two hosts importing one transcript at once
// contend on its session (each retry finds the other moved it).
func workload(t *testing.T, h *host, rng *rand.Rand, sessions []string, n int, ws string, importer bool) int {
	t.Helper()
	acked := 0
	hookEvents := []string{"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
	for i := range n {
		switch k := rng.IntN(10); {
		case k < 7 || k < 9 && !importer:
			sid := sessions[rng.IntN(len(sessions))]
			ev := hookEvents[rng.IntN(len(hookEvents))]
			if _, stderr, err := h.cliIn(hookPayload(sid, ws, ev, rng.IntN(1000)), "hook", "claude"); err != nil {
				t.Errorf("%s hook %s: %v\n%s", h.name, ev, err, stderr)
			} else {
				acked++
			}
		case k < 9 && importer:
			if _, stderr, err := h.cli("import", "claude", filepath.Join("..", "..", "testdata", "claude", "projects")); err != nil {
				t.Errorf("%s import: %v\n%s", h.name, err, stderr)
			}
		default:
			sid := sessions[rng.IntN(len(sessions))]
			// Each writer's commands in a folder of their own: two
			// sandboxes at once in one workspace race on the mount
			// points of missing protected names (.agents, …), which the
			// first to exit removes (a sandbox matter, not the cluster's).
			cws := filepath.Join(ws, h.name)
			if err := os.MkdirAll(cws, 0o755); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := h.cli("exec", "--session", sid, "--wait", "50s", "--mode", "workspace_write", "--workspace", cws, "--", "sh", "-c", fmt.Sprintf("echo %s-%d", h.name, i))
			if err != nil || !strings.Contains(out, fmt.Sprintf("%s-%d", h.name, i)) {
				t.Errorf("%s exec: %v\n%s%s", h.name, err, out, stderr)
			}
		}
	}
	return acked
}

// startSessions starts each session with a SessionStart hook on h.
func startSessions(t *testing.T, h *host, sessions []string, ws string) {
	t.Helper()
	for _, sid := range sessions {
		if _, stderr, err := h.cliIn(hookPayload(sid, ws, "SessionStart", 0), "hook", "claude"); err != nil {
			t.Fatalf("%s SessionStart %s: %v\n%s", h.name, sid, err, stderr)
		}
	}
}

// lastSeq returns the stream's last sequence, asked as reader.
func (e *env) lastSeq() uint64 {
	e.t.Helper()
	js, _ := jetstream.New(e.reader())
	for range 100 {
		st, err := js.Stream(e.t.Context(), natslog.StreamName)
		if err == nil {
			return st.CachedInfo().State.LastSeq
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatal("no stream info after 10 s")
	return 0
}

// reader returns the env's one connection as reader.
func (e *env) reader() *nats.Conn {
	if nc, ok := readerConns.Load(e); ok {
		return nc.(*nats.Conn)
	}
	nc := e.connect("reader")
	readerConns.Store(e, nc)
	return nc
}

var readerConns sync.Map // *env → *nats.Conn

// sameState waits until every host's projection has reached the stream's
// last sequence and checks that each agrees with a fresh replay
// (replay --verify) and that all have one state hash at one sequence.
func sameState(t *testing.T, hosts ...*host) verify {
	t.Helper()
	e := hosts[0].e
	for try := 0; ; try++ {
		last := e.lastSeq()
		var vs []verify
		for _, h := range hosts {
			vs = append(vs, h.verifyAt(last))
		}
		same := true
		for i, v := range vs {
			t.Logf("%s: seq %d live %s replay %s", hosts[i].name, v.Seq, v.LiveHash, v.ReplayHash)
			if v.Seq != vs[0].Seq || v.LiveHash != vs[0].LiveHash {
				same = false
			}
		}
		if same {
			return vs[0]
		}
		if try == 5 {
			t.Fatalf("hosts differ after the log stopped moving: %+v", vs)
		}
		time.Sleep(time.Second) // something appended meanwhile; again at the new end
	}
}

// Equal state: two writers and a reader on the cluster; a random workload
// of imports, hooks and commands from both writers; every host's
// projection reaches the same state hash at the same stream sequence,
// each equal to its own fresh replay.
func TestEqualState(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	a, b := e.writers()
	r := e.newHost("reader-c", "reader", "serve", "--role", "reader")
	w := e.newHost("worker-d", "worker", "worker")
	r.start()
	w.start()
	sessions := []string{"eq-1", "eq-2", "eq-3", "eq-4"}
	startSessions(t, a, sessions[:2], ws)
	startSessions(t, b, sessions[2:], ws)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	n := 12
	if s := os.Getenv("LOGBOOK_CLUSTER_ACTIONS"); s != "" {
		fmt.Sscan(s, &n)
	}
	var wg sync.WaitGroup
	for i, h := range []*host{a, b} {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			workload(t, h, rng, sessions, n, ws, i == 0)
		})
	}
	wg.Wait()
	v := sameState(t, a, b, r)
	if v.Seq == 0 {
		t.Fatal("nothing appended")
	}
	// The reader answers queries from its own projection.
	out, stderr, err := r.cli("sessions")
	if err != nil {
		t.Fatalf("reader sessions: %v\n%s", err, stderr)
	}
	for _, sid := range sessions {
		if !strings.Contains(out, sid) {
			t.Errorf("reader's sessions lack %s:\n%s", sid, out)
		}
	}
	// ... and appends nothing: a hook on its data dir is neither
	// delivered nor kept (a reader never delivers a spool), and says so.
	if _, stderr, err := r.cliIn(hookPayload("eq-1", ws, "Stop", 1), "hook", "claude"); err == nil || !strings.Contains(stderr, "is a follower's") {
		t.Errorf("a hook on the reader's data dir: %v\n%s\nwant an error saying it is a follower's", err, stderr)
	}
	time.Sleep(1500 * time.Millisecond) // more than a drain's period
	if last := e.lastSeq(); last != v.Seq {
		t.Errorf("the log moved from %d to %d with only the reader's hook", v.Seq, last)
	}
	if !strings.Contains(r.output(), "role reader") {
		t.Errorf("reader serve did not say it appends nothing:\n%s", r.output())
	}
}
