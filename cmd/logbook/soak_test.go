package main

// TestSoak is the crash soak: it runs `logbook serve` as a child process,
// drives imports of growing transcripts and hook invocations against it,
// SIGKILLs it at random moments (every other cycle while an import is in
// flight), restarts it, and repeats. Then it checks what the log holds:
//
//   - every complete transcript line exactly once: each session's line
//     observations are numbered 1..N, densely, without repeats;
//   - every hook payload that `logbook hook claude` acknowledged (exit 0)
//     exactly once, and the spool empty;
//   - no half decision: in every aggregate, versions are dense, each
//     decision directly follows the observation that caused it (its
//     cause.ref), and today's reducer re-derives every observation's
//     decisions as recorded;
//   - the live projection's state hash equals a fresh replay's
//     (`logbook replay --verify --json` against the running server).
//
// The normal suite runs 3 cycles; `go test -tags soak -run Soak
// ./cmd/logbook/` (or .ci/soak) runs 20, and LOGBOOK_SOAK_CYCLES sets any
// number. LOGBOOK_SOAK_SEED repeats a run's random choices (not its
// timing). Every child runs in a process group of its own and is killed
// when the test ends; the server listens on 127.0.0.1 only.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash soak does not run with -short")
	}
	t.Parallel() // mostly waiting on its children: beside the other slow tests
	cycles := soakDefaultCycles
	if v := os.Getenv("LOGBOOK_SOAK_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LOGBOOK_SOAK_CYCLES=%q: want a number ≥ 1", v)
		}
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LOGBOOK_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LOGBOOK_SOAK_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("soak: %d cycles, seed %d (LOGBOOK_SOAK_SEED=%d repeats the random choices)", cycles, seed, seed)

	s := newSoak(t, soakBuild(t), seed)
	ctx := t.Context()

	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { s.importLoop(load, i == 0) })
		wg.Go(func() { s.hookLoop(load) })
	}
	wg.Go(func() { s.commandLoop(load) })
	for c := 1; c <= cycles; c++ {
		srv, wait := s.startServe(ctx)
		s.treeCommand(ctx, c)
		time.Sleep(time.Duration(200+s.intN(1000)) * time.Millisecond)
		if c%2 == 0 {
			// Kill while an import is in flight, at a random moment of it.
			for deadline := time.Now().Add(3 * time.Second); s.importing.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(time.Duration(s.intN(40)) * time.Millisecond)
		}
		last, _ := s.status(ctx)
		mid := s.importing.Load() > 0
		srv.kill()
		if mid {
			s.midImport++
		}
		t.Logf("cycle %2d: up after %4d ms (%d starts so far refused: data dir busy), killed after %4d ms at seq ≥ %d, mid-import %t; so far %d imports (%d failed), %d hooks acknowledged",
			c, wait.Milliseconds(), s.refused, time.Since(s.upAt).Milliseconds(), last.LastSeq, mid,
			s.imports.Load(), s.importFails.Load(), s.acked.Load())
		time.Sleep(time.Duration(s.intN(300)) * time.Millisecond) // the load goes on with no server
	}
	stopLoad()
	wg.Wait()

	s.settle(ctx)
	s.settleTrees(ctx)
	s.verify(ctx, cycles)
}

// soak is one crash soak: the binary, its data dir, the transcripts it
// grows, and what the load was told.
type soak struct {
	t     *testing.T
	bin   string
	data  string
	dir   string // the transcripts' root, as passed to import
	procs soakProcs

	mu   sync.Mutex // guards rng, ts growth and keys
	rng  *rand.Rand
	ts   []*bench.SynthTranscript
	keys map[string]bool // hook observation keys acknowledged (exit 0)
	cmds map[string]bool // command ids whose exec reported their exit 0 and output
	why  map[string]int  // why imports failed: their last line of output

	hookN       atomic.Int64
	acked       atomic.Int64
	hookFails   atomic.Int64
	imports     atomic.Int64
	importFails atomic.Int64
	importing   atomic.Int32 // import processes running now
	// starting holds new imports back while a server starts: without a
	// server, imports work on the data dir directly, holding its lock,
	// and back to back they would keep the server out.
	starting atomic.Bool

	// treeToken is the sleep argument of every tree command's processes,
	// which finds them in /proc; trees holds the tree commands' ids.
	treeToken string
	trees     []string

	upAt      time.Time // when the current server answered
	refused   int       // serve starts refused because the data dir was busy
	midImport int       // kills while an import was running
}

func newSoak(t *testing.T, bin string, seed uint64) *soak {
	dir := t.TempDir()
	s := &soak{
		t: t, bin: bin,
		data: filepath.Join(dir, "data"),
		dir:  filepath.Join(dir, "projects"),
		rng:  rand.New(rand.NewPCG(seed, seed>>1)),
		keys: map[string]bool{},
		cmds: map[string]bool{},
		why:  map[string]int{},
	}
	ts, err := bench.NewSynthTranscripts(s.dir, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	s.ts = ts
	t.Cleanup(s.procs.killAll)
	s.treeToken = fmt.Sprintf("%d.%09d", 7000+s.intN(1000), s.intN(1e9))
	t.Cleanup(func() {
		for _, pid := range sandboxtest.ProcessesWith("sleep " + s.treeToken) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return s
}

func (s *soak) intN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

// soakBuild returns the logbook binary, made once per test binary into
// a directory of its own that TestMain removes, and that a process of
// its own removes once the test binary has ended however it ended (a
// -timeout panic runs no TestMain code after m.Run). It is a copy of
// this test binary named logbook, which runs logbook's main as the
// scripts' logbook does (TestMain): the same code as a go build of this
// package, without linking it a second time.
func soakBuild(t *testing.T) string {
	t.Helper()
	return soakBin.get(t, func() (string, error) {
		dir, err := os.MkdirTemp("", "logbook-soak-bin-")
		if err != nil {
			return "", err
		}
		if err := sandboxtest.RemoveWhenGone(dir); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
		soakBin.dir = dir
		bin := filepath.Join(dir, "logbook")
		if from := os.Getenv("LOGBOOK_SOAK_BIN_FROM"); from != "" {
			// A soak run by another test of this package: the binary that
			// test built, copied into a folder of this run's own.
			return bin, copyExecutable(from, bin)
		}
		self, err := os.Executable()
		if err != nil {
			return "", err
		}
		return bin, copyExecutable(self, bin)
	})
}

// copyExecutable is sandboxtest.CopyExecutable: the copy never open
// for writing in this process, which forks from many tests at once.
func copyExecutable(from, to string) error { return sandboxtest.CopyExecutable(from, to) }

// soakBin is the binary soakBuild built, shared by the soaks, and the
// directory it is in.
var soakBin struct {
	goBinary
	dir string
}

// command returns the binary with args on the soak's data dir, in a
// process group of its own that ctx's end kills.
func (s *soak) command(ctx context.Context, stdin []byte, args ...string) *exec.Cmd {
	return s.commandOf(ctx, s.bin, stdin, args...)
}

// commandOf is command for the binary bin; the child dies with the test
// process, however that ends (sandboxtest.DieWithTest).
func (s *soak) commandOf(ctx context.Context, bin string, stdin []byte, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, bin, append([]string{"--data", s.data}, args...)...)
	c.Env = append(os.Environ(), "LOGBOOK_DATA="+s.data)
	c.Stdin = bytes.NewReader(stdin)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sandboxtest.DieWithTest(c)
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs the binary with args to its end and returns its output.
func (s *soak) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return s.runCommand(s.command(ctx, stdin, args...))
}

// runCommand runs c, a command of the soak's, to its end and returns its
// output.
func (s *soak) runCommand(c *exec.Cmd) ([]byte, error) {
	ch, out, err := s.startCommand(c)
	if err != nil {
		return nil, err
	}
	<-ch.gone
	return out.Bytes(), ch.err
}

// start starts the binary with args and returns the child and the
// buffer its standard output and error go to, to be read once it is gone.
func (s *soak) start(ctx context.Context, stdin []byte, args ...string) (*soakChild, *bytes.Buffer, error) {
	return s.startCommand(s.command(ctx, stdin, args...))
}

// startCommand is start for c, a command of the soak's.
func (s *soak) startCommand(c *exec.Cmd) (*soakChild, *bytes.Buffer, error) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	ch, err := s.procs.start(c)
	return ch, &out, err
}

// killServe kills serve srv and waits up to within for the child ch, a
// client of it, to end; it fails the test, naming the client what and
// showing its output out, when ch runs on.
func killServe(t *testing.T, srv, ch *soakChild, within time.Duration, what string, out *bytes.Buffer) {
	t.Helper()
	srv.kill()
	select {
	case <-ch.gone:
	case <-time.After(within):
		t.Fatalf("%s still runs %s after serve died:\n%s", what, within, out.String())
	}
}

// startServe starts `logbook serve` and waits until it answers. A start
// that finds the data dir busy (an import working on it directly because
// no server ran) is retried. It returns the running server and how long
// it took to come up.
func (s *soak) startServe(ctx context.Context) (*soakChild, time.Duration) {
	s.t.Helper()
	s.starting.Store(true)
	defer s.starting.Store(false)
	start := time.Now()
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(s.data), "serve.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	for time.Since(start) < time.Minute {
		c := s.command(ctx, nil, "serve", "--listen", "127.0.0.1:0")
		c.Stdout, c.Stderr = logf, logf
		srv, err := s.procs.start(c)
		if err != nil {
			s.t.Fatal(err)
		}
		for {
			select {
			case <-srv.gone:
			case <-time.After(20 * time.Millisecond):
				if _, err := s.statusOf(ctx, c.Process.Pid); err != nil {
					continue
				}
				s.upAt = time.Now()
				return srv, time.Since(start)
			}
			break
		}
		s.refused++
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("serve did not come up in a minute; see %s", logf.Name())
	return nil, 0
}

// status asks the running server for its checkpoint and last sequence.
func (s *soak) status(ctx context.Context) (api.StatusReply, error) { return s.statusOf(ctx, 0) }

// statusOf is status, from the server with process id pid if pid > 0.
func (s *soak) statusOf(ctx context.Context, pid int) (api.StatusReply, error) {
	var r api.StatusReply
	err := s.withServer(ctx, pid, func(nc *nats.Conn) error {
		return api.Call(ctx, nc, api.AnyPrefix, api.VerbStatus, struct{}{}, &r)
	})
	return r, err
}

// withServer calls fn with a connection to the server that serve.json
// names (and that has process id pid, if pid > 0), as other commands
// connect: over its loopback listener with the data dir's credentials.
func (s *soak) withServer(ctx context.Context, pid int, fn func(*nats.Conn) error) error {
	dd := dataDir(s.data)
	si, ok := dd.readServeInfo()
	if !ok || pid > 0 && si.PID != pid {
		return errors.New("no server")
	}
	c, err := dd.dir().RoleCredentials(natslog.RoleWriter)
	if err != nil {
		return err
	}
	nc, err := natslog.Connect(si.URL, nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.Role(c.Role)), nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return fn(nc)
}

// readLog reads the whole log from the running server and gives each
// record to fn, in order.
func (s *soak) readLog(ctx context.Context, fn func(events.Record)) error {
	return s.withServer(ctx, 0, func(nc *nats.Conn) error {
		l, err := natslog.Open(ctx, nc, natslog.Config{})
		if err != nil {
			return err
		}
		defer l.Close()
		for r, err := range l.Read(ctx, 1) {
			if err != nil {
				return err
			}
			fn(r)
		}
		return nil
	})
}

// importLoop imports the transcripts again and again until ctx ends.
// The grower also appends lines to some of them before each import,
// sometimes leaving a last line half written.
func (s *soak) importLoop(ctx context.Context, grower bool) {
	for ctx.Err() == nil {
		for s.starting.Load() && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if grower {
			s.grow()
		}
		s.importing.Add(1)
		out, err := s.run(ctx, nil, "import", "claude", s.dir)
		s.importing.Add(-1)
		if ctx.Err() != nil {
			return
		}
		s.imports.Add(1)
		if err != nil {
			s.importFails.Add(1)
			s.mu.Lock()
			s.why[s.reason(out, err)]++
			s.mu.Unlock()
		}
		time.Sleep(time.Duration(s.intN(50)) * time.Millisecond)
	}
}

// reason returns why a command failed: the first "error:" line it
// printed, else its last line, else its exit error; without file names,
// session ids and process ids, so equal failures read the same, and cut
// to 160 bytes.
func (s *soak) reason(out []byte, err error) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	why := string(lines[len(lines)-1])
	for _, l := range lines {
		if bytes.HasPrefix(l, []byte("error: ")) {
			why = string(l)
			break
		}
	}
	if why == "" {
		why = err.Error()
	}
	why = strings.ReplaceAll(why, s.data, "$DATA")
	why = soakFile.ReplaceAllString(why, "")
	why = soakDetail.ReplaceAllString(why, "${1}N")
	if len(why) > 160 {
		why = why[:160] + "…"
	}
	return why
}

// Parts of failure messages that differ between otherwise equal failures.
var (
	soakFile   = regexp.MustCompile(`\S*\.jsonl:\d+: `)
	soakDetail = regexp.MustCompile(`(session/|pid |after line |seq )[A-Za-z0-9_-]+`)
)

// grow appends 5 to 40 lines to one to three transcripts, leaving the
// last one torn a quarter of the time.
func (s *soak) grow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 1 + s.rng.IntN(3) {
		t := s.ts[s.rng.IntN(len(s.ts))]
		if err := t.Grow(5+s.rng.IntN(36), s.rng.IntN(4) == 0); err != nil {
			s.t.Error(err)
		}
	}
}

// hookLoop runs `logbook hook claude` with a fresh payload again and
// again until ctx ends, and records the payloads acknowledged.
// commandLoop asks for short commands through `logbook exec` for the
// transcripts' sessions. One whose exec exits 0 having printed the
// command's output is acknowledged: it must be in the log, started once
// and ended once.
func (s *soak) commandLoop(ctx context.Context) {
	ws := s.t.TempDir()
	for n := 1; ctx.Err() == nil; n++ {
		time.Sleep(time.Duration(50+s.intN(200)) * time.Millisecond)
		id := fmt.Sprintf("soakcmd-%d", n)
		sess := s.ts[n%len(s.ts)].Session
		out, err := s.run(ctx, nil, "exec", "--session", sess, "--mode", "read_only", "--workspace", ws, "--id", id, "--wait", "20s", "--", "echo", "out-"+id)
		if ctx.Err() != nil {
			return
		}
		if err == nil && bytes.Contains(out, []byte("out-"+id)) {
			s.mu.Lock()
			s.cmds[id] = true
			s.mu.Unlock()
		}
	}
}

// treeCommand starts a long full_access command whose tree holds a
// setsid grandchild, for a session of the transcripts, and leaves it in
// the background: the serve about to be SIGKILLed runs it in one of its
// workers, so the tree's worker dies with the serve.
func (s *soak) treeCommand(ctx context.Context, cycle int) {
	id := fmt.Sprintf("soaktree-%d", cycle)
	sess := s.ts[cycle%len(s.ts)].Session
	out, err := s.run(ctx, nil, "exec", "--session", sess, "--mode", "full_access", "--workspace", s.t.TempDir(), "--id", id, "--wait", "0s",
		"--", "sh", "-c", `setsid sleep "$0" >/dev/null 2>&1 </dev/null & sleep "$0"`, s.treeToken)
	if err != nil {
		s.t.Logf("tree command %s: %v: %s", id, err, bytes.TrimSpace(out))
	}
	s.trees = append(s.trees, id)
}

// settleTrees waits, with the last server up, until every tree command has
// ended: the ones whose worker was killed are abandoned by the server's
// workers (which kill what is left of their trees first), a queued one is
// started now and stopped. Then no process of any tree may be left.
func (s *soak) settleTrees(ctx context.Context) {
	t := s.t
	for _, id := range s.trees {
		_, _ = s.run(ctx, nil, "command", "stop", id) // refused for an ended one
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := s.run(wctx, nil, "command", "output", id, "--follow")
		timedOut := wctx.Err() != nil
		cancel()
		if timedOut {
			t.Errorf("tree command %s has not ended after a minute: %v: %s", id, err, out)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := sandboxtest.ProcessesWith("sleep " + s.treeToken)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes %v of the tree commands still run after every one ended", left)
			break
		}
	}
}

func (s *soak) hookLoop(ctx context.Context) {
	for ctx.Err() == nil {
		n := s.hookN.Add(1)
		event := "PreToolUse"
		if n%2 == 0 {
			event = "PostToolUse"
		}
		tool := fmt.Sprintf("toolu_soak_%d", (n+1)/2)
		sess := s.ts[int(n)%len(s.ts)].Session
		payload := fmt.Appendf(nil, `{"session_id":%q,"transcript_path":"/home/user/.claude/projects/p/%s.jsonl","cwd":"/home/user/project","permission_mode":"default","hook_event_name":%q,"tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":%q}`,
			sess, sess, event, tool)
		out, err := s.run(ctx, payload, "hook", "claude")
		if ctx.Err() != nil {
			return // killed by the test, not acknowledged
		}
		if err != nil {
			s.hookFails.Add(1)
			s.t.Logf("hook %d not acknowledged: %v\n%s", n, err, out)
			continue
		}
		s.acked.Add(1)
		s.mu.Lock()
		s.keys["hook:"+event+":"+tool] = true
		s.mu.Unlock()
		time.Sleep(time.Duration(s.intN(20)) * time.Millisecond)
	}
}

// settle completes every transcript, starts the server a last time,
// waits for the spool to drain, imports until an import succeeds, and
// waits for the projection to reach the end of the log.
func (s *soak) settle(ctx context.Context) {
	t := s.t
	for _, tr := range s.ts {
		if err := tr.Grow(1, false); err != nil { // completes a torn line
			t.Fatal(err)
		}
	}
	s.startServe(ctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		left := s.spooled()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d hook payloads still in the spool after a minute: %v", len(left), left)
		}
	}
	for attempt := 1; ; attempt++ {
		out, err := s.run(ctx, nil, "import", "claude", s.dir)
		if err == nil {
			break
		}
		if attempt == 5 {
			t.Fatalf("final import: %v\n%s", err, out)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := s.status(ctx)
		if err == nil && st.Checkpoint == st.LastSeq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("projection not caught up after a minute: %+v, %v", st, err)
		}
	}
}

// spooled returns the ids of the entries waiting in the spool, as the
// server's drain finds them: a hook killed mid-write leaves only a
// temporary file (.tmp-<id>.json), which is no entry (it was never
// acknowledged) and which the drain's Sweep removes once it is an hour
// old. (A glob cannot tell them apart: filepath.Match has no "[!.]";
// "[^.]" is its negation, and "*" matches a leading dot.)
func (s *soak) spooled() []string {
	sp, err := claude.Open(dataDir(s.data).path("spool"))
	if err != nil {
		s.t.Fatal(err)
	}
	pending, err := sp.Pending()
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, e := range pending {
		ids = append(ids, e.ID)
	}
	return ids
}

// verify reads the whole log from the running server and checks it.
func (s *soak) verify(ctx context.Context, cycles int) {
	t := s.t
	byAgg := map[string][]events.Record{}
	var total int
	err := s.readLog(ctx, func(r events.Record) {
		byAgg[r.Agg.ID] = append(byAgg[r.Agg.ID], r)
		total++
	})
	if err != nil {
		t.Fatalf("read the log: %v", err)
	}

	var lost, dup, lines int
	// Every complete transcript line exactly once.
	for _, tr := range s.ts {
		lines += tr.Lines
		seen := map[int]int{}
		for _, r := range byAgg[tr.Aggregate()] {
			if o, ok := events.Observed(r.Data); ok && r.Type == "obs.claude.line" {
				seen[o.Line]++
			}
		}
		for n := 1; n <= tr.Lines; n++ {
			switch c := seen[n]; {
			case c == 0:
				lost++
				t.Errorf("%s: line %d is not in the log", tr.Aggregate(), n)
			case c > 1:
				dup += c - 1
				t.Errorf("%s: line %d is in the log %d times", tr.Aggregate(), n, c)
			}
		}
		for n, c := range seen {
			if n < 1 || n > tr.Lines {
				dup += c
				t.Errorf("%s: line %d is in the log but the file has %d lines", tr.Aggregate(), n, tr.Lines)
			}
		}
	}
	// Every acknowledged hook payload exactly once; others at most once.
	hooks := map[string]int{}
	for _, recs := range byAgg {
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok && r.Type == "obs.claude.hook" {
				hooks[o.Key]++
			}
		}
	}
	for k := range s.keys {
		if hooks[k] == 0 {
			lost++
			t.Errorf("acknowledged hook %s is not in the log", k)
		}
	}
	for k, c := range hooks {
		if c > 1 {
			dup += c - 1
			t.Errorf("hook %s is in the log %d times", k, c)
		}
	}
	dd := dataDir(s.data)
	if left := s.spooled(); len(left) > 0 {
		t.Errorf("%d payloads left in the spool: %v", len(left), left)
	}
	if rej, _ := filepath.Glob(dd.path("spool", "rejected", "*.json")); len(rej) > 0 {
		t.Errorf("%d spooled payloads were rejected", len(rej))
	}
	// Every command started at most once and ended at most once; every
	// command whose exec saw it exit exactly once, with its output.
	cmdRuns := 0
	for _, recs := range byAgg {
		if len(recs) == 0 || recs[0].Agg.Kind != events.KindCommand {
			continue
		}
		id := recs[0].Agg.ID
		started, ended := 0, 0
		for _, r := range recs {
			switch r.Type {
			case "command.started":
				started++
			case "command.exited", "command.abandoned", "command.refused":
				ended++
			}
		}
		cmdRuns++
		if started > 1 || ended > 1 {
			dup++
			t.Errorf("command %s: started %d times, ended %d times", id, started, ended)
		}
		if s.cmds[id] && (started != 1 || ended != 1) {
			lost++
			t.Errorf("acknowledged command %s: started %d, ended %d", id, started, ended)
		}
	}
	// Every tree command ended; those whose worker was killed are
	// abandoned, and settleTrees found none of their processes left.
	treeEnds := map[string]int{}
	for _, id := range s.trees {
		status := "never requested"
		for _, r := range byAgg[id] {
			switch r.Type {
			case "command.exited", "command.abandoned", "command.refused":
				status = strings.TrimPrefix(r.Type, "command.")
			}
		}
		treeEnds[status]++
		if status == "never requested" && len(byAgg[id]) > 0 {
			t.Errorf("tree command %s has not ended", id)
		}
	}
	t.Logf("soak: tree commands (setsid grandchild, worker killed with its serve): %v", treeEnds)
	for id := range s.cmds {
		if len(byAgg[id]) == 0 {
			lost++
			t.Errorf("acknowledged command %s is not in the log", id)
		}
	}
	// No half decision.
	halves := 0
	for id, recs := range byAgg {
		if len(recs) > 0 && recs[0].Agg.Kind == events.KindKey {
			continue // the admin's key events decide on no observation
		}
		halves += halfDecisions(t, id, recs)
	}
	// The live projection equals a fresh replay.
	out, err := s.run(ctx, nil, "replay", "--verify", "--json")
	if err != nil {
		t.Fatalf("replay --verify: %v\n%s", err, out)
	}
	var rep replay.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("replay --verify --json: %v\n%s", err, out)
	}
	if !rep.Equal {
		t.Errorf("live projection differs from a fresh replay: %s", rep)
	}
	var last uint64
	for _, recs := range byAgg {
		last = max(last, recs[len(recs)-1].Seq)
	}
	// The replay covers at least the log read above. serve may append
	// after that read (its reconciler marks a command whose worker died
	// with a killed serve abandoned on its own schedule, which under
	// load comes after the projection caught up): the replay then covers
	// those too.
	if rep.Seq < last {
		t.Errorf("verified at seq %d, the log read before it ends at %d", rep.Seq, last)
	} else if rep.Seq > last {
		// Said, so that a run can tell what came after the read.
		if err := s.readLog(ctx, func(r events.Record) {
			if r.Seq > last {
				t.Logf("soak: appended after the log was read: seq %d %s on %s/%s", r.Seq, r.Type, r.Agg.Kind, r.Agg.ID)
			}
		}); err != nil {
			t.Errorf("read the log again: %v", err)
		}
	}
	for why, n := range s.why {
		t.Logf("soak: %d imports stopped: %s", n, why)
	}
	t.Logf("soak: commands requested %d, acknowledged %d (exec saw their exit)", cmdRuns, len(s.cmds))
	t.Logf("soak: cycles %d, kills mid-import %d, transcript lines %d, hooks acknowledged %d, not acknowledged %d, imports %d (%d stopped), events %d in %d sessions, half decisions %d, lost %d, duplicated %d, hashes equal %t (%s at seq %d)",
		cycles, s.midImport, lines, len(s.keys), s.hookFails.Load(), s.imports.Load(), s.importFails.Load(),
		total, len(byAgg), halves, lost, dup, rep.Equal, rep.LiveHash, rep.Seq)
}

// halfDecisions checks one aggregate's records and returns how many
// problems it found: versions not dense from 1, a decision that does not
// directly follow the observation its cause names, or an observation
// whose recorded decisions today's reducer does not re-derive.
func halfDecisions(t *testing.T, id string, recs []events.Record) int {
	bad := 0
	var obs string // id of the last observation
	for i, r := range recs {
		if r.Ver != uint64(i+1) {
			bad++
			t.Errorf("%s: event %d has ver %d", id, i+1, r.Ver)
		}
		if _, ok := events.Observed(r.Data); ok {
			obs = r.ID.String()
			continue
		}
		if r.Cause != nil && r.Cause.Kind != "hook" && r.Cause.Kind != "transcript" {
			continue // decided on a request (a worker's, the CLI's), not on an observation
		}
		if r.Cause == nil || r.Cause.Ref != obs {
			bad++
			t.Errorf("%s: %s at seq %d does not follow the observation it names (cause %+v, last observation %s)", id, r.Type, r.Seq, r.Cause, obs)
		}
	}
	if rd := replay.RederiveRecords(recs); !rd.Agree() {
		bad += rd.Diverged
		t.Errorf("%s: %d observations re-derive differently; first at seq %d", id, rd.Diverged, rd.First.ObsSeq)
	}
	return bad
}

// soakChild is a child process and its reaping.
type soakChild struct {
	cmd  *exec.Cmd
	gone chan struct{} // closed once the child has exited and been reaped
	err  error         // what Wait returned; set before gone is closed
}

// kill SIGKILLs the child's process group and waits until it is gone.
func (ch *soakChild) kill() {
	_ = syscall.Kill(-ch.cmd.Process.Pid, syscall.SIGKILL)
	<-ch.gone
}

// soakProcs tracks the children a soak started, so that none outlives it.
type soakProcs struct {
	mu   sync.Mutex
	live map[*soakChild]bool
}

// start starts c and reaps it on a goroutine of its own.
func (p *soakProcs) start(c *exec.Cmd) (*soakChild, error) {
	if err := sandboxtest.Start(c); err != nil {
		return nil, err
	}
	ch := &soakChild{cmd: c, gone: make(chan struct{})}
	p.mu.Lock()
	if p.live == nil {
		p.live = map[*soakChild]bool{}
	}
	p.live[ch] = true
	p.mu.Unlock()
	go func() {
		ch.err = c.Wait()
		p.mu.Lock()
		delete(p.live, ch)
		p.mu.Unlock()
		close(ch.gone)
	}()
	return ch, nil
}

// killAll kills every child still running and waits until they are gone.
func (p *soakProcs) killAll() {
	p.mu.Lock()
	live := maps.Clone(p.live)
	p.mu.Unlock()
	for ch := range live {
		ch.kill()
	}
}
