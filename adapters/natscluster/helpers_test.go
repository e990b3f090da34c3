package natscluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// Binaries built once per test binary, in a directory TestMain removes.
var (
	natsServerBin string
	logbookBin    string
	buildErr      error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "natscluster-bin-")
	if err == nil {
		// Removed below, or, when a -timeout panic ends the test binary
		// before that, once it is gone.
		err = sandboxtest.RemoveWhenGone(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Both at once: each is mostly its own link.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	var serverErr, logbookErr error
	var wg sync.WaitGroup
	wg.Go(func() { natsServerBin, serverErr = Build(ctx, dir, "nats-server", ServerModule) })
	wg.Go(func() {
		logbookBin, logbookErr = Build(ctx, dir, "logbook", "github.com/logbook-dev/logbook/cmd/logbook")
	})
	wg.Wait()
	buildErr = errors.Join(serverErr, logbookErr)
	cancel()
	// Four times GOMAXPROCS tests at a time (twice under -race) unless
	// the command line sets -test.parallel: each parallel test runs a
	// cluster of its own and mostly waits on its elections, fsyncs and
	// processes, so GOMAXPROCS of them leave the CPUs idle, and twice as
	// many still did (on 2 cores the package took 50 s at twice, 25 s at
	// four times, in no more CPU time).
	sandboxtest.SetParallel(4)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's cluster and the credentials of every role.
type env struct {
	t     *testing.T
	c     *Cluster
	creds string // directory with users.conf and <role>.json
	dir   string
}

// newEnv writes the users with `logbook creds cluster` and starts a
// three-node cluster that includes them.
func newEnv(t *testing.T) *env {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	e := &env{t: t, creds: filepath.Join(dir, "creds"), dir: dir}
	if _, stderr, err := e.logbook(context.Background(), "creds", "cluster", "--out", e.creds); err != nil {
		t.Fatalf("creds cluster: %v\n%s", err, stderr)
	}
	users, err := os.ReadFile(filepath.Join(e.creds, "users.conf"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, natsServerBin, filepath.Join(dir, "nodes"), 3, users)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, nd := range c.Nodes {
				if b, err := os.ReadFile(filepath.Join(nd.Dir, "node.log")); err == nil {
					t.Logf("%s log (tail):\n%s", nd.Name, tail(string(b), 3000))
				}
			}
		}
	})
	e.c = c
	return e
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// credsFile returns the credentials file of role.
func (e *env) credsFile(role string) string { return filepath.Join(e.creds, role+".json") }

// logbook runs the logbook binary with args and returns its output.
func (e *env) logbook(ctx context.Context, args ...string) (string, string, error) {
	cmd := sandboxtest.DieWithTest(exec.CommandContext(ctx, logbookBin, args...))
	cmd.Env = append(os.Environ(), "LOGBOOK_NATS_URL=", "LOGBOOK_CREDS=", "LOGBOOK_DATA=", "LOGBOOK_HTTP=off", "CLAUDE_CONFIG_DIR=/dev/null/claude", "CODEX_HOME=/dev/null/codex")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// as runs logbook against the cluster with role's credentials.
func (e *env) as(role string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(e.t.Context(), 60*time.Second)
	defer cancel()
	return e.logbook(ctx, append([]string{"--nats-url", e.c.URL(), "--creds", e.credsFile(role)}, args...)...)
}

// newStreamEnv starts the cluster as newEnv does and creates the LOGBOOK
// stream on it with streamInit.
func newStreamEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.streamInit()
	return e
}

// streamInit runs `logbook stream init --replicas 3` as admin.
func (e *env) streamInit() {
	e.t.Helper()
	out, stderr, err := e.as("admin", "stream", "init", "--replicas", "3")
	if err != nil {
		e.t.Fatalf("stream init: %v\n%s%s", err, out, stderr)
	}
}

// connect opens a NATS connection to the cluster as role.
func (e *env) connect(role string, opts ...nats.Option) *nats.Conn {
	e.t.Helper()
	return e.connectURL(role, e.c.URL(), opts...)
}

// password returns role's password.
func (e *env) password(role string) string {
	e.t.Helper()
	var c struct{ Password string }
	b, err := os.ReadFile(e.credsFile(role))
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Password
}

// connectURL opens a NATS connection to url as role.
func (e *env) connectURL(role, url string, opts ...nats.Option) *nats.Conn {
	e.t.Helper()
	var c struct{ User, Password string }
	b, err := os.ReadFile(e.credsFile(role))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		e.t.Fatal(err)
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.Role(role)), nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	return nc
}

// host is one Logbook host: a data dir and, while it runs, its process
// (serve or worker).
type host struct {
	e    *env
	name string
	data string
	role string // credentials: writer, reader or worker
	args []string
	url  string // the NATS URL its processes use; "" means the whole cluster's

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// newHost returns a host with a data dir of its own; start runs
// `logbook <args>` on it with role's credentials.
func (e *env) newHost(name, role string, args ...string) *host {
	return &host{e: e, name: name, data: filepath.Join(e.dir, "hosts", name), role: role, args: args}
}

// writers starts two writing serve hosts, writer-a and writer-b, on the
// cluster's URLs.
func (e *env) writers() (a, b *host) {
	a = e.newHost("writer-a", "writer", "serve")
	b = e.newHost("writer-b", "writer", "serve")
	a.start()
	b.start()
	return a, b
}

// stayingWriter starts writer-a serving the HTTP API on a loopback port
// and connected to node 0 only, the node that stays up when the others
// are stopped.
func (e *env) stayingWriter() *host {
	a := e.newHost("writer-a", "writer", "serve", "--http", "127.0.0.1:0")
	a.url = e.c.Nodes[0].URL() // on the node that stays
	a.start()
	return a
}

var hostLogs sync.Map // *host → *natslogtest.Buffer

// serveRole returns the role whose credentials the host's process of
// args runs with: a host of role writer runs serve as serve and a
// host of role reader runs it as follower (the roles that answer
// requests); its CLI keeps the host's role.
func serveRole(role string, args []string) string {
	if len(args) == 0 || args[0] != "serve" {
		return role
	}
	switch role {
	case "writer":
		return "serve"
	case "reader":
		return "follower"
	}
	return role
}

// start starts the host's process and, for serve, waits until serve.json
// names it.
func (h *host) start() {
	h.e.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		h.e.t.Fatalf("%s runs already", h.name)
	}
	os.Remove(filepath.Join(h.data, "serve.json"))
	takes := strings.Count(h.output(), workerReady) // the log outlives a restart
	args := append([]string{"--data", h.data, "--nats-url", h.natsURL(), "--creds", h.e.credsFile(serveRole(h.role, h.args))}, h.args...)
	cmd := sandboxtest.DieWithTest(exec.Command(logbookBin, args...)) // serve, however the test ends
	cmd.Env = append(os.Environ(), "LOGBOOK_NATS_URL=", "LOGBOOK_CREDS=", "LOGBOOK_DATA=", "LOGBOOK_HTTP=off", "CLAUDE_CONFIG_DIR=/dev/null/claude", "CODEX_HOME=/dev/null/codex")
	lb, _ := hostLogs.LoadOrStore(h, &natslogtest.Buffer{})
	cmd.Stdout, cmd.Stderr = lb.(*natslogtest.Buffer), lb.(*natslogtest.Buffer)
	if err := sandboxtest.Start(cmd); err != nil {
		h.e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	h.cmd, h.done = cmd, done
	h.e.t.Cleanup(func() {
		h.stop(syscall.SIGINT)
		if h.e.t.Failed() {
			h.e.t.Logf("%s output:\n%s", h.name, tail(h.output(), 4000))
		}
	})
	// A serve is up once it wrote serve.json; a worker once its intake
	// pulls. A command requested before then waits in the log: correct,
	// but a test's exec would count that wait against its --wait.
	ready := func() bool {
		_, err := os.Stat(filepath.Join(h.data, "serve.json"))
		return err == nil
	}
	switch h.args[0] {
	case "serve":
	case "worker":
		ready = func() bool { return strings.Count(h.output(), workerReady) > takes }
	default:
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready() {
			return
		}
		select {
		case <-done:
			h.e.t.Fatalf("%s exited at start:\n%s", h.name, h.output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.e.t.Fatalf("%s not ready after 60s:\n%s", h.name, h.output())
		}
	}
}

// workerReady is what a worker logs once it takes command requests.
const workerReady = "taking command requests"

// natsURL is the URL the host's processes connect to.
func (h *host) natsURL() string {
	if h.url != "" {
		return h.url
	}
	return h.e.c.URL()
}

// output is what the host's processes wrote so far.
func (h *host) output() string {
	lb, ok := hostLogs.Load(h)
	if !ok {
		return ""
	}
	return lb.(*natslogtest.Buffer).String()
}

// stop sends sig to the host's process and waits for it (SIGINT: at most
// 30 s, then SIGKILL).
func (h *host) stop(sig syscall.Signal) {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd, h.done = nil, nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// cli runs a logbook command on the host's data dir with its
// credentials.
func (h *host) cli(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(h.e.t.Context(), 60*time.Second)
	defer cancel()
	return h.e.logbook(ctx, append([]string{"--data", h.data, "--nats-url", h.natsURL(), "--creds", h.e.credsFile(h.role)}, args...)...)
}

// cliIn runs a logbook command with stdin.
func (h *host) cliIn(stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(h.e.t.Context(), 60*time.Second)
	defer cancel()
	cmd := sandboxtest.DieWithTest(exec.CommandContext(ctx, logbookBin, append([]string{"--data", h.data, "--nats-url", h.natsURL(), "--creds", h.e.credsFile(h.role)}, args...)...))
	cmd.Env = append(os.Environ(), "LOGBOOK_NATS_URL=", "LOGBOOK_CREDS=", "LOGBOOK_DATA=", "LOGBOOK_HTTP=off", "CLAUDE_CONFIG_DIR=/dev/null/claude", "CODEX_HOME=/dev/null/codex")
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// verify is `replay --verify` on a host: the live projection's hash and a
// fresh replay's at the live checkpoint.
type verify struct {
	Seq        uint64 `json:"seq"`
	LiveHash   string `json:"live_hash"`
	ReplayHash string `json:"replay_hash"`
	Equal      bool   `json:"equal"`
}

// waitBudget returns a context that ends a little before the test
// binary's -timeout (a tenth of the time left, at most a minute, before
// it; never without -timeout), so that a wait for a condition fails
// naming what it waited for rather than by the timeout's panic, whose
// cleanups do not run. A wait is for a condition, never against a clock:
// a loaded machine only makes it longer.
func waitBudget(t *testing.T) (context.Context, context.CancelFunc) {
	d, ok := t.Deadline()
	if !ok {
		return context.WithCancel(t.Context())
	}
	return context.WithDeadline(t.Context(), d.Add(-min(time.Until(d)/10, time.Minute)))
}

// verifyAt runs replay --verify on the host until its live checkpoint
// has reached seq (within the test's waitBudget) and returns the last
// report; it logs how long that took.
func (h *host) verifyAt(seq uint64) verify {
	h.e.t.Helper()
	ctx, cancel := waitBudget(h.e.t)
	defer cancel()
	start := time.Now()
	for {
		out, stderr, err := h.cli("--json", "replay", "--verify")
		var v verify
		if err == nil {
			err = json.Unmarshal([]byte(out), &v)
		}
		if err == nil && v.Seq >= seq {
			h.e.t.Logf("%s: replay --verify reached seq %d after %s", h.name, seq, time.Since(start).Round(100*time.Millisecond))
			if !v.Equal {
				h.e.t.Errorf("%s: live projection differs from a fresh replay: %+v", h.name, v)
			}
			return v
		}
		if ctx.Err() != nil {
			h.e.t.Fatalf("%s: replay --verify at seq %d, want %d; still after %s, near the test's deadline: %v\n%s%s", h.name, v.Seq, seq, time.Since(start).Round(time.Second), err, out, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// envCount returns the count in the environment variable name, or def
// when it is not set; a value that is not a whole number of at least 1
// fails the test.
func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count", name, s)
	}
	return n
}

// nodesURL returns the client URLs of the cluster's nodes at the indexes
// in order, comma-separated and in that order (for nats.DontRandomize).
func (e *env) nodesURL(order []int) string {
	var urls []string
	for _, j := range order {
		urls = append(urls, e.c.Nodes[j].URL())
	}
	return strings.Join(urls, ",")
}

// openLog opens a Log with reg on nc, closed when the test ends.
func (e *env) openLog(nc *nats.Conn, reg *events.Registry) *natslog.Log {
	e.t.Helper()
	l, err := natslog.Open(e.t.Context(), nc, natslog.Config{Registry: reg})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { l.Close() })
	return l
}
