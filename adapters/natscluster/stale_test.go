package natscluster

import (
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Reads while the cluster has lost its quorum: a writer's serve whose
// cluster has two of three nodes down answers sessions, session show,
// commands and workspace list from its projection as it stands, each
// within seconds and marked stale (a line on stderr for a person, the
// fields log_unavailable_since and as_of_seq in --json), and so does its
// HTTP API; replay --verify and verify fail naming the cause, exit 1.
// Once the nodes are back the same reads are not stale. How long each
// took is logged, not checked: a loaded machine stretches them all (on
// a quiet one a read answers in well under a second, not after a wait
// for a leader, natslog.ElectionWait, 30 s).
func TestQuorumLoss_ReadsFromTheProjection(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	a := e.stayingWriter()
	const sid = "stale-a"
	startSessions(t, a, []string{sid}, ws)
	var before struct {
		Checkpoint uint64 `json:"checkpoint"`
	}
	out, stderr, err := a.cli("--json", "session", "show", sid)
	if err == nil {
		err = json.Unmarshal([]byte(out), &before)
	}
	if err != nil || before.Checkpoint == 0 {
		t.Fatalf("session show before the loss: checkpoint %d, %v\n%s%s", before.Checkpoint, err, out, stderr)
	}
	if strings.Contains(stderr, "log unavailable") {
		t.Fatalf("session show with every node up says: %s", stderr)
	}

	lost := time.Now()
	e.c.Nodes[1].Kill()
	e.c.Nodes[2].Kill()
	// serve notices within its probe's wait (5 s) and a second, on a
	// quiet machine.
	budget, cancel := waitBudget(t)
	defer cancel()
	for {
		st, stderr, err := a.cli("--json", "session", "show", sid)
		if err == nil && strings.Contains(st, `"log_unavailable_since"`) {
			break
		}
		if budget.Err() != nil {
			t.Fatalf("%s after the loss session show is still not stale, near the test's deadline: %v\n%s%s", time.Since(lost).Round(time.Second), err, st, stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// How soon is a figure, not a check (a loaded machine stretches
	// serve's probe): 7–8 s on a quiet one.
	t.Logf("serve answered stale %s after the loss", time.Since(lost).Round(100*time.Millisecond))

	timed := func(args ...string) (string, string, time.Duration) {
		t.Helper()
		start := time.Now()
		out, stderr, err := a.cli(args...)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%v during the loss: %v after %s\n%s%s", args, err, took.Round(time.Millisecond), out, stderr)
		}
		t.Logf("%v: %s", args, took.Round(time.Millisecond))
		return out, stderr, took
	}
	line := regexp.MustCompile(`log unavailable since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+s\): showing the projection as of sequence (\d+)`)
	wantSeq := func(what, s string) {
		t.Helper()
		m := line.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("%s during the loss: no stale line in\n%s", what, s)
			return
		}
		if m[1] != jsonNum(before.Checkpoint) {
			t.Errorf("%s: as of sequence %s, want %d", what, m[1], before.Checkpoint)
		}
	}

	// Human output: the rows, and the line that says they are stale.
	out, stderr, _ = timed("sessions", "--all")
	if !strings.Contains(out, sid) {
		t.Errorf("sessions during the loss does not list %s:\n%s", sid, out)
	}
	wantSeq("sessions", stderr)
	out, stderr, _ = timed("sessions", "--limit", "5")
	if !strings.Contains(out, sid) {
		t.Errorf("sessions --limit 5 during the loss does not list %s:\n%s", sid, out)
	}
	wantSeq("sessions --limit 5", stderr)
	out, stderr, _ = timed("session", "show", sid)
	if !strings.Contains(out, sid) {
		t.Errorf("session show during the loss:\n%s", out)
	}
	wantSeq("session show", out+stderr)
	_, stderr, _ = timed("commands")
	wantSeq("commands", stderr)
	_, stderr, _ = timed("workspace", "list")
	wantSeq("workspace list", stderr)

	// --json: stdout keeps its shape; the mark is in the answer's object,
	// or on stderr as one object for a list.
	type mark struct {
		Since *time.Time `json:"log_unavailable_since"`
		AsOf  uint64     `json:"as_of_seq"`
	}
	check := func(what string, m mark, err error) {
		t.Helper()
		if err != nil || m.Since == nil || m.AsOf != before.Checkpoint || m.Since.Before(lost.Add(-time.Second)) {
			t.Errorf("%s: stale mark %+v (%v), want since after %s as of %d", what, m, err, lost.Format(time.RFC3339), before.Checkpoint)
		}
	}
	out, stderr, _ = timed("--json", "session", "show", sid)
	var show mark
	check("session show --json", show, json.Unmarshal([]byte(out), &show))
	out, stderr, _ = timed("--json", "sessions")
	var rows []json.RawMessage
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Errorf("sessions --json during the loss: %d rows, %v\n%s", len(rows), err, out)
	}
	var list mark
	check("sessions --json (stderr)", list, json.Unmarshal([]byte(strings.TrimSpace(stderr)), &list))
	_, stderr, _ = timed("--json", "commands")
	var cmds mark
	check("commands --json (stderr)", cmds, json.Unmarshal([]byte(strings.TrimSpace(stderr)), &cmds))

	// The HTTP API: the body's fields and the headers.
	base := httpBase(t, a)
	start := time.Now()
	resp, err := http.Get(base + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		mark
		Sessions []json.RawMessage `json:"sessions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	t.Logf("GET /v1/sessions: %s", time.Since(start).Round(time.Millisecond))
	if resp.StatusCode != http.StatusOK || len(page.Sessions) != 1 {
		t.Errorf("GET /v1/sessions during the loss: %s, %d sessions, %v", resp.Status, len(page.Sessions), err)
	}
	check("GET /v1/sessions", page.mark, err)
	if resp.Header.Get("Logbook-Log-Unavailable-Since") == "" || resp.Header.Get("Logbook-As-Of-Seq") != jsonNum(before.Checkpoint) {
		t.Errorf("GET /v1/sessions headers: %v", resp.Header)
	}

	// What needs the log fails, saying why; each waits 3 s for a leader
	// (--wait; replay's default is 10 s): no leader comes without
	// quorum, however long the wait.
	for _, args := range [][]string{{"replay", "--verify", "--wait", "3s"}, {"verify", "--wait", "3s"}} {
		start := time.Now()
		out, stderr, err := a.cli(args...)
		took := time.Since(start)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%v during the loss: %v, want exit 1\n%s%s", args, err, out, stderr)
		}
		if !strings.Contains(stderr, "log unavailable: no leader for stream LOGBOOK") {
			t.Errorf("%v during the loss says:\n%s", args, stderr)
		}
		t.Logf("%v failed in %s: %s", args, took.Round(time.Millisecond), lastLine(stderr))
	}

	for _, nd := range e.c.Nodes[1:] {
		if err := nd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range e.c.Nodes[1:] {
		if err := nd.WaitHealthy(budget); err != nil {
			t.Fatal(err)
		}
	}
	for back := time.Now(); ; time.Sleep(500 * time.Millisecond) {
		out, stderr, err := a.cli("sessions", "--all")
		if err == nil && strings.Contains(out, sid) && !strings.Contains(stderr, "log unavailable") {
			t.Logf("sessions not stale %s after the nodes came back", time.Since(back).Round(100*time.Millisecond))
			break
		}
		if budget.Err() != nil {
			t.Fatalf("%s after the nodes came back sessions still says, near the test's deadline: %v\n%s%s", time.Since(back).Round(time.Second), err, out, stderr)
		}
	}
}

// jsonNum is n as JSON and the stale line write it.
func jsonNum(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// httpBase returns the base URL of serve's HTTP API on h.
func httpBase(t *testing.T, h *host) string {
	t.Helper()
	m := regexp.MustCompile(`board, API and metrics on (http://[^\s"]+)`).FindStringSubmatch(h.output())
	if m == nil {
		t.Fatalf("%s does not say where its HTTP API is:\n%s", h.name, tail(h.output(), 2000))
	}
	return strings.TrimSuffix(m[1], "/")
}
