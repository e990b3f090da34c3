package worker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// Environment of the helper worker process.
const (
	helperURL  = "LOGBOOK_TEST_WORKER_URL"
	helperUser = "LOGBOOK_TEST_WORKER_USER"
	helperPass = "LOGBOOK_TEST_WORKER_PASSWORD"
	// helperLedger is the helper's Config.Ledger, "" for none.
	helperLedger = "LOGBOOK_TEST_WORKER_LEDGER"
	// helperAckWait is the helper's Config.AckWait (a time.Duration's
	// text), "" for the default.
	helperAckWait = "LOGBOOK_TEST_WORKER_ACKWAIT"
)

// startHelperWorker starts TestHelperWorker in a child process of its
// own: a worker on e's server, as another "logbook worker" on this host
// would be. The child is killed when the test ends; its output is logged
// if the test failed.
func (e *testEnv) startHelperWorker(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	testReporter(t) // built here, named to the child in its environment
	var logs bytes.Buffer
	child := exec.Command(os.Args[0], "-test.run=^TestHelperWorker$", "-test.v")
	child.Env = append(os.Environ(), helperURL+"="+e.srv.ClientURL(), helperUser+"="+e.user, helperPass+"="+e.pw)
	child.Env = append(child.Env, env...)
	child.Stdout, child.Stderr = &logs, &logs
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
		if t.Failed() {
			t.Logf("helper worker:\n%s", logs.String())
		}
	})
	return child
}

// helperIdentity waits until the helper worker child has registered,
// and returns its identity.
func (e *testEnv) helperIdentity(child *exec.Cmd) Identity {
	e.t.Helper()
	var id Identity
	e.waitFor("helper worker registered", func() bool {
		ws, _ := e.client.Workers(e.t.Context())
		for _, w := range ws {
			if w.Pid == child.Process.Pid {
				id = w
				return true
			}
		}
		return false
	})
	return id
}

// TestHelperWorker is not a test: run as a child process by
// TestWorker_KilledWorker, it is a worker of its own connected to the
// parent's server over TCP, and runs until it is killed.
func TestHelperWorker(t *testing.T) {
	t.Parallel()
	url := os.Getenv(helperURL)
	if url == "" {
		t.Skip("helper process for TestWorker_KilledWorker")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := natslog.Connect(url, nats.UserInfo(os.Getenv(helperUser), os.Getenv(helperPass)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	l, err := natslog.Open(ctx, nc, natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var ackWait time.Duration
	if v := os.Getenv(helperAckWait); v != "" {
		if ackWait, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(Config{Conn: nc, Log: l, Lapse: time.Second, AckWait: ackWait, Logger: testLogger(t), Ledger: os.Getenv(helperLedger), Reporter: testReporter(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}

func TestWorker_KilledWorker(t *testing.T) {
	t.Parallel()
	// A worker process is killed with SIGKILL while its command writes
	// output; a worker started afterwards on the same host, once the
	// killed one's key has lapsed, finds the command orphaned at once
	// (the process is gone), abandons it as worker_gone, and the output
	// stored up to the kill stays, each byte once.
	e := newEnv(t, true)
	mode := events.ModeWorkspaceWrite
	if sandbox.Available(t.Context(), "") != nil {
		t.Log("no bubblewrap: the command runs in full_access")
		mode = events.ModeFullAccess
	}
	child := e.startHelperWorker(t)
	victim := e.helperIdentity(child)

	id := e.submit(e.request(mode, "sh", "-c", `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.005; done`))
	e.waitFor("output", func() bool { _, o := e.read(id); return strings.Count(o.all.String(), "\n") >= 50 })
	if st, _ := e.client.Command(t.Context(), id); st.Worker != victim.ID {
		t.Fatalf("command started by %s, want the helper %s", st.Worker, victim.ID)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	_, before := e.read(id)
	// However late the next worker comes, after the killed one's key has
	// lapsed too, it finds the process gone: the mark says so.
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	beats, err := js.KeyValue(t.Context(), HeartbeatBucket)
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("the killed worker's key lapsed", func() bool {
		_, err := beats.Get(t.Context(), victim.ID)
		return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
	})

	e.startWorker(e.workerConfig())
	st, after := e.follow(id, 10*time.Second)
	if st.Status != command.StatusAbandoned || st.EndReason != ReasonGone || st.Worker != victim.ID {
		t.Fatalf("status %s reason %q worker %s; want abandoned, %s, %s", st.Status, st.EndReason, st.Worker, ReasonGone, victim.ID)
	}
	if !bytes.Equal(after.all.Bytes(), before.all.Bytes()) {
		t.Errorf("output changed after the kill: %d bytes, then %d", before.all.Len(), after.all.Len())
	}
	// The abandoned command says how much output it left.
	if st.OutputBytes != int64(after.all.Len()) {
		t.Errorf("abandoned command's output_bytes %d, its output stored %d bytes", st.OutputBytes, after.all.Len())
	}
	checkContiguous(t, after)
	var want strings.Builder
	for i := 1; want.Len() < after.all.Len(); i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := after.all.String(); !strings.HasPrefix(want.String(), got) {
		t.Errorf("output is not the command's lines in order: %q", tail(got))
	}
	msgIDs := map[string]bool{}
	for m, err := range e.log.ReadRaw(t.Context(), natslog.OutputSubject(id), 1) {
		if err != nil {
			t.Fatal(err)
		}
		mid := m.Header.Get("Nats-Msg-Id")
		if msgIDs[mid] {
			t.Errorf("output %s stored twice", mid)
		}
		msgIDs[mid] = true
	}
	e.waitFor("detach", func() bool { return len(e.sessionState().Entries) == 0 })
	want2 := []string{"command.requested", "command.started", "command.running", "command.abandoned"}
	if got := e.types(id); strings.Join(got, " ") != strings.Join(want2, " ") {
		t.Errorf("events %v, want %v", got, want2)
	}
}

// A worker process killed by SIGKILL while its workspace_write command
// runs leaves the placeholders of the workspace's missing protected names
// on the host; the next worker of the same ledger removes them when it
// starts, with the command abandoned, and leaves a person's own file.
func TestWorker_KilledWorkerPlaceholders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	if sandbox.Available(t.Context(), "") != nil {
		t.Skip("no bubblewrap: workspace_write cannot run")
	}
	ledger := filepath.Join(t.TempDir(), "placeholders")
	child := e.startHelperWorker(t, helperLedger+"="+ledger)
	e.helperIdentity(child)
	id := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo up; sleep 300"))
	e.waitFor("output", func() bool { _, o := e.read(id); return strings.Contains(o.all.String(), "up") })
	names := sandbox.ProtectedNames()
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(e.ws, n)); err != nil {
			t.Fatalf("placeholder %s while the command runs: %v", n, err)
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	// A person's own .mcp.json, made once the worker is gone.
	mine := filepath.Join(e.ws, ".mcp.json")
	if err := os.Remove(mine); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg := e.workerConfig()
	cfg.Ledger = ledger
	e.startWorker(cfg)
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusAbandoned {
		t.Fatalf("status %s; want abandoned", st.Status)
	}
	e.waitFor("placeholders removed", func() bool {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(e.ws, n)); n != ".mcp.json" && err == nil {
				return false
			}
		}
		return true
	})
	if b, err := os.ReadFile(mine); err != nil || string(b) != "{}" {
		t.Errorf("the person's own .mcp.json: %q, %v", b, err)
	}
	if recs, _ := filepath.Glob(filepath.Join(ledger, "*")); len(recs) != 0 {
		t.Errorf("ledger still holds %q", recs)
	}
}

// Environment of TestHelperHeldBoundary.
const (
	helperHeldWS     = "LOGBOOK_TEST_HELD_WS"
	helperHeldLedger = "LOGBOOK_TEST_HELD_LEDGER"
)

// TestHelperHeldBoundary is not a test: run as a child process by
// TestWorker_SweepsAHeldBoundaryOfADeadWorker, it builds a held boundary
// as a worker does before its command.started, says so, and waits to be
// killed.
func TestHelperHeldBoundary(t *testing.T) {
	t.Parallel()
	ws := os.Getenv(helperHeldWS)
	if ws == "" {
		t.Skip("helper process for TestWorker_SweepsAHeldBoundaryOfADeadWorker")
	}
	p, err := sandbox.Start(context.Background(), sandbox.Spec{Argv: []string{"sleep", "300"}, Env: []string{"PATH=/usr/bin:/bin"},
		Workspace: ws, Mode: sandbox.ReadOnly, Ledger: os.Getenv(helperHeldLedger), Hold: true}, nil)
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	time.Sleep(200 * time.Millisecond) // bubblewrap's setup done: it waits for Release
	fmt.Println("held", p.Pid())
	select {}
}

// A worker process killed while it holds a boundary (its command not yet
// started, so nothing for another worker to abandon) leaves bubblewrap's
// sandbox waiting for good; a live worker of the host kills it at its
// next ledger sweep, and the command never ran. Without a ledger, which
// records nothing, the sweep finds it all the same (by the marker its
// argv[0] carries, see sandbox.SweepBoundaries).
func TestWorker_SweepsAHeldBoundaryOfADeadWorker(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	for _, withLedger := range []bool{true, false} {
		t.Run(fmt.Sprintf("ledger=%v", withLedger), func(t *testing.T) {
			sweepsAHeldBoundary(t, withLedger)
		})
	}
}

// sweepsAHeldBoundary is TestWorker_SweepsAHeldBoundaryOfADeadWorker,
// the worker and the killed one recording in a ledger or not.
func sweepsAHeldBoundary(t *testing.T, withLedger bool) {
	e := newEnv(t, false)
	ledger := ""
	if withLedger {
		ledger = filepath.Join(t.TempDir(), "ledger")
	}
	cfg := e.workerConfig()
	cfg.Ledger, cfg.LedgerSweep = ledger, 200*time.Millisecond
	e.startWorker(cfg)
	// Its consumers come after its start's sweeps: only a later sweep can
	// find what the helper leaves.
	e.waitFor("the worker's consumers", func() bool { return e.consumers() > 0 })

	ws := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestHelperHeldBoundary$")
	child.Env = append(os.Environ(), helperHeldWS+"="+ws, helperHeldLedger+"="+ledger)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "held") {
		t.Fatalf("helper: %q", line)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	inSandbox := func() (bwrap, sleep int) {
		ents, _ := os.ReadDir("/proc")
		for _, d := range ents {
			b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			if err != nil {
				continue
			}
			cwd, _ := os.Readlink("/proc/" + d.Name() + "/cwd")
			switch {
			case bytes.HasPrefix(b, []byte("sleep\x00")) && cwd == ws:
				sleep++
			case bytes.Contains(b, []byte(ws)):
				bwrap++
			}
		}
		return bwrap, sleep
	}
	if n, _ := inSandbox(); n == 0 {
		t.Log("bubblewrap left nothing behind this time")
	}
	e.waitFor("the live worker's sweep to kill what the dead one's bubblewrap left", func() bool {
		n, s := inSandbox()
		if s > 0 {
			t.Fatalf("the held boundary's command runs after its worker died")
		}
		return n == 0
	})
}

// pidOnHost takes the pid from a worker id of the host named, and from
// no other: not one of another host whose name begins the same, nor a
// malformed one.
func TestPidOnHost(t *testing.T) {
	start := "01M97QF0NFFAA0DT9R5RYSFZ01"
	for _, c := range []struct {
		worker, host string
		pid          int
		ok           bool
	}{
		{"vm-22078-" + start, "vm", 22078, true},
		{"my-host-7-" + start, "my-host", 7, true},
		{"my-host-7-" + start, "my", 0, false},
		{"my-5-7-" + start, "my", 0, false},
		{"host_local-7-" + start, "host.local", 7, true},
		{"vm-0-" + start, "vm", 0, false},
		{"vm-007-" + start, "vm", 0, false},
		{"vm-7-notaulid", "vm", 0, false},
		{"vm-7", "vm", 0, false},
	} {
		pid, ok := pidOnHost(c.worker, c.host)
		if pid != c.pid || ok != c.ok {
			t.Errorf("pidOnHost(%q, %q) = %d, %v; want %d, %v", c.worker, c.host, pid, ok, c.pid, c.ok)
		}
	}
}
