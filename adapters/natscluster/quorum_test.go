package natscluster

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// quorumDown is how long TestQuorumLoss keeps two of three nodes down:
// $LOGBOOK_QUORUM_DOWN (a Go duration), default 60s. Anything past
// natslog.ElectionWait (30 s) takes every wait for a leader to its end
// while the stream has none, so reads and appends give up at least once
// during the outage; that is the case the test is for.
func quorumDown(t *testing.T) time.Duration {
	d := 60 * time.Second
	if s := os.Getenv("LOGBOOK_QUORUM_DOWN"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("LOGBOOK_QUORUM_DOWN=%q: %v", s, err)
		}
	}
	return d
}

// Quorum loss: a writer's serve on a three-node cluster that loses two
// nodes keeps taking hooks (into its journal), answers status from its
// projection saying since when the log is unavailable, and once the
// nodes are back appends what it took, in order, each once. Hooks flow
// from before the loss until after the return; every acknowledged hook
// is in the log once, and serve never exits.
func TestQuorumLoss(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	if os.Getenv("LOGBOOK_CLUSTER_FAULTS") == "" {
		t.Skip("long form: .ci/cluster (its faults section)")
	}
	down := quorumDown(t)
	e := newStreamEnv(t)
	ws := t.TempDir()
	a := e.stayingWriter()
	startSessions(t, a, []string{"quorum-a"}, ws)

	load, stopLoad := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var acked []string
	wg.Go(func() { acked = hookLoad(load, t, a, "quorum-a", ws) })

	time.Sleep(2 * time.Second)
	lost := time.Now()
	e.c.Nodes[1].Kill()
	e.c.Nodes[2].Kill()
	t.Logf("nodes n2 and n3 down at %s for %s", lost.Format(time.TimeOnly), down)
	// While they are down: serve runs, and says the log is unavailable.
	var said, gauge string
	for time.Since(lost) < down {
		time.Sleep(time.Second)
		if exited(a) {
			t.Fatalf("serve exited while the cluster had no quorum:\n%s", tail(a.output(), 4000))
		}
		if gauge == "" && time.Since(lost) > 40*time.Second {
			gauge = unavailableGauge(t, a)
		}
		if said == "" && time.Since(lost) > 40*time.Second {
			out, stderr, err := a.cli("doctor")
			if i := strings.Index(out, "log unavailable since"); i >= 0 {
				said, _, _ = strings.Cut(out[i:], "\n")
			} else {
				t.Logf("doctor during the loss: %v\n%s%s", err, out, stderr)
			}
		}
	}
	for _, nd := range e.c.Nodes[1:] {
		if err := nd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	for _, nd := range e.c.Nodes[1:] {
		if err := nd.WaitHealthy(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	cancel()
	time.Sleep(3 * time.Second) // hooks go on after the return
	stopLoad()
	wg.Wait()
	if exited(a) {
		t.Fatalf("serve exited:\n%s", tail(a.output(), 4000))
	}
	if said == "" {
		t.Errorf("doctor never said the log was unavailable during the loss")
	}
	if gauge == "" {
		t.Errorf("/metrics never showed logbook_log_unavailable_seconds above 0 during the loss")
	}
	if g := unavailableGauge(t, a); g != "" {
		t.Errorf("/metrics after the return: %s, want 0", g)
	}
	waitSpool(t, a)
	final := sameState(t, a)
	recs := readLog(t, e.reader())

	marks := map[string]int{}
	for _, r := range recs {
		if r.Type != "obs.claude.hook" {
			continue
		}
		for _, m := range acked {
			if strings.Contains(string(r.Data), `\"`+m+`\"`) {
				marks[m]++
			}
		}
	}
	var lostN, doubled int
	for _, m := range acked {
		switch marks[m] {
		case 0:
			lostN++
			if lostN <= 3 {
				t.Errorf("acknowledged hook %s is not in the log", m)
			}
		case 1:
		default:
			doubled++
			t.Errorf("hook %s is in the log %d times", m, marks[m])
		}
	}
	// .ci/cluster prints this line.
	t.Logf("quorum loss: 2 of 3 nodes down %s; hooks acknowledged %d, in the log %d, lost %d, doubled %d; hash at seq %d %s; doctor said: %s; %s",
		back.Sub(lost).Round(time.Second), len(acked), len(acked)-lostN, lostN, doubled, final.Seq, final.LiveHash, said, gauge)
	if len(acked) == 0 {
		t.Error("no hook acknowledged")
	}
}

// unavailableGauge returns the logbook_log_unavailable_seconds line of
// serve's /metrics on h when its value is above 0, else "".
func unavailableGauge(t *testing.T, h *host) string {
	m := regexp.MustCompile(`board, API and metrics on (http://[^\s"]+)`).FindStringSubmatch(h.output())
	if m == nil {
		t.Fatalf("%s does not say where its metrics are:\n%s", h.name, tail(h.output(), 2000))
	}
	resp, err := http.Get(strings.TrimSuffix(m[1], "/") + "/metrics")
	if err != nil {
		t.Logf("GET /metrics: %v", err)
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Logf("GET /metrics: %s: %s", resp.Status, tail(string(body), 300))
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "logbook_log_unavailable_seconds "); ok && v != "0" {
			return line
		}
	}
	return ""
}

// exited reports whether h's process has ended.
func exited(h *host) bool {
	h.mu.Lock()
	done := h.done
	h.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}
