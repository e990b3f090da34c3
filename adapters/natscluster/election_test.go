package natscluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// An election is waited out: the stream leader (often the meta leader
// too) is killed with SIGKILL and, at once, `import`, `exec` and
// `stream init` run against the two nodes left, as a user would on the
// README's three-node setup. Each must succeed, however long the
// elections take within natslog.ElectionWait (30 s); before, import and
// exec exited 1 after 5 s ("open stream LOGBOOK: context deadline
// exceeded"). Each command's time is logged.
func TestElectionWaitedOut(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	if os.Getenv("LOGBOOK_CLUSTER_FAULTS") == "" {
		t.Skip("long form: .ci/cluster (its faults section)")
	}
	e := newStreamEnv(t)
	ws := t.TempDir()
	js, _ := jetstream.New(e.reader())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	leader, err := streamLeader(ctx, js)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	victim := e.c.Node(leader)
	var rest []string
	for _, nd := range e.c.Nodes {
		if nd != victim {
			rest = append(rest, nd.URL())
		}
	}
	url := strings.Join(rest, ",")
	w := e.newHost("worker-d", "worker", "worker")
	w.url = url
	w.start()
	a := e.newHost("writer-a", "writer", "serve")
	a.url = url
	a.start()
	const sid = "elect-1"
	startSessions(t, a, []string{sid}, ws)
	b := e.newHost("writer-b", "writer")
	b.url = url

	victim.Kill()
	t.Logf("stream leader %s killed", victim.Name)
	var wg sync.WaitGroup
	run := func(what string, f func() (string, string, error), want string) {
		wg.Go(func() {
			start := time.Now()
			out, stderr, err := f()
			took := time.Since(start).Round(100 * time.Millisecond)
			if err != nil || !strings.Contains(out+stderr, want) {
				t.Errorf("%s after the leader was killed (%v): %v\n%s%s", what, took, err, out, stderr)
				return
			}
			t.Logf("%s with the leader killed: ok in %v", what, took)
		})
	}
	run("import", func() (string, string, error) {
		return b.cli("import", "claude", filepath.Join("..", "..", "testdata", "claude", "projects"))
	}, "")
	run("exec", func() (string, string, error) {
		return a.cli("exec", "--session", sid, "--mode", "workspace_write", "--workspace", ws, "--wait", "50s", "--", "sh", "-c", "echo elected")
	}, "elected")
	run("stream init", func() (string, string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		return e.logbook(ctx, "--nats-url", url, "--creds", e.credsFile("admin"), "stream", "init", "--replicas", "3")
	}, "stream LOGBOOK:")
	wg.Wait()
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
}
