package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// followProcs runs the logbook binary on one data dir as separate
// processes, as a person and a service manager would.
type followProcs struct {
	t         *testing.T
	bin, data string
}

func (p followProcs) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, p.bin, append([]string{"--data", p.data}, args...)...)
	c.Env = append(os.Environ(), "LOGBOOK_DATA="+p.data)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sandboxtest.DieWithTest(c) // however the test ends
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs one command to its end and returns its combined output.
func (p followProcs) run(ctx context.Context, stdin string, args ...string) (string, error) {
	c := p.cmd(ctx, args...)
	c.Stdin = strings.NewReader(stdin)
	out, err := c.CombinedOutput()
	return string(out), err
}

// stdout is run with standard output alone in what it returns (for
// JSON to parse: a notice on stderr, say "waiting up to 10s for logbook
// serve", stays out of it); standard error goes in the error's text.
func (p followProcs) stdout(ctx context.Context, stdin string, args ...string) (string, error) {
	c := p.cmd(ctx, args...)
	c.Stdin = strings.NewReader(stdin)
	var errb bytes.Buffer
	c.Stderr = &errb
	out, err := c.Output()
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, errb.String())
	}
	return string(out), err
}

// hooks sends each line of the testdata file name as one hook payload.
func (p followProcs) hooks(ctx context.Context, name string) {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "follow", name))
	if err != nil {
		p.t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if out, err := p.run(ctx, strings.TrimSpace(line), "hook", "claude"); err != nil {
			p.t.Fatalf("hook: %v\n%s", err, out)
		}
	}
}

// served is a running serve and a channel closed when it has exited.
type served struct {
	c      *exec.Cmd
	exited chan struct{}
}

// serve starts serve, with the flags extra, and returns it once
// serve.json is written; its output goes to log.
func (p followProcs) serve(ctx context.Context, log *syncBuffer, extra ...string) served {
	p.t.Helper()
	c := p.cmd(ctx, append([]string{"serve", "--workers", "0"}, extra...)...)
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(p.data, "serve.json")); err == nil {
			c.Cancel = func() error { return nil } // stopped by stop
			p.t.Cleanup(func() { c.Process.Signal(syscall.SIGTERM); <-exited })
			return served{c, exited}
		}
		select {
		case <-exited:
			p.t.Fatalf("serve exited before it answered:\n%s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("serve did not answer within 15 s:\n%s", log)
		}
	}
}

// spoolEmpty waits until the data dir's spool holds no hook payload: a
// running serve has delivered them all.
func (p followProcs) spoolEmpty(log *syncBuffer) {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		spooled, _ := filepath.Glob(filepath.Join(p.data, "spool", "*.json"))
		if len(spooled) == 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d hook payloads still in the spool after 60 s:\n%s", len(spooled), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends serve with SIGTERM and waits until it has exited.
func (p followProcs) stop(s served) {
	p.t.Helper()
	s.c.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		p.t.Fatal("serve did not stop within 15 s")
	}
}

// lastSeq is the log's last event sequence, read by a one-shot tail.
func (p followProcs) lastSeq(ctx context.Context) uint64 {
	p.t.Helper()
	out, err := p.run(ctx, "", "events", "tail", "-n", "1")
	if err != nil {
		p.t.Fatalf("events tail: %v\n%s", err, out)
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		p.t.Fatalf("events tail printed nothing")
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		p.t.Fatalf("events tail: %q", out)
	}
	return n
}

// followerSeqs returns the sequences a follower printed so far, failing
// the test on one printed twice or out of order.
func followerSeqs(t *testing.T, out *syncBuffer) []uint64 {
	t.Helper()
	var seqs []uint64
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			t.Fatalf("follower printed %q", sc.Text())
		}
		if len(seqs) > 0 && n <= seqs[len(seqs)-1] {
			t.Fatalf("follower printed %d after %d:\n%s", n, seqs[len(seqs)-1], out)
		}
		seqs = append(seqs, n)
	}
	return seqs
}

// waitSeq waits until the follower has printed the event at seq.
func waitSeq(t *testing.T, out, errs *syncBuffer, seq uint64, what string) {
	t.Helper()
	for range 300 {
		if s := followerSeqs(t, out); len(s) > 0 && s[len(s)-1] >= seq {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: the follower did not print event %d:\n%s\nstderr:\n%s", what, seq, out, errs)
}

// waitSaid waits until the follower has said what n times on stderr.
func waitSaid(t *testing.T, errs *syncBuffer, what string, n int) {
	t.Helper()
	for range 300 {
		if strings.Count(errs.String(), what) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the follower did not say %q %d times:\n%s", what, n, errs)
}

// TestFollower_NeverLocksOutAWriter (case lifecycle/74 and its
// variants), with real processes: `events tail --follow` started while
// no server runs reads the data dir directly, yet serve started then
// comes up, and the follower goes on through it; when serve stops the
// follower goes on directly; a one-shot reader and a command that
// appends, run then, each get the data dir at once and the follower
// prints what they append. No event is printed twice or left out, and
// the follower ends with exit 0 on SIGINT.
func TestFollower_NeverLocksOutAWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p.hooks(ctx, "hooks-before.jsonl")
	var log syncBuffer
	// With no server the first hooks wait in the spool: serve delivers
	// them once it runs (not before it answers), so stop it only then.
	s0 := p.serve(ctx, &log)
	p.spoolEmpty(&log)
	p.stop(s0) // the first hooks are in the log; no server runs now
	first := p.lastSeq(ctx)

	var out, errs syncBuffer
	f := p.cmd(ctx, "events", "tail", "--follow", "-n", "100")
	f.Stdout, f.Stderr = &out, &errs
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	waitSeq(t, &out, &errs, first, "started directly")

	start := time.Now()
	s := p.serve(ctx, &log)
	t.Logf("serve answered %v after it started beside the follower", time.Since(start).Round(time.Millisecond))
	p.hooks(ctx, "hooks-after.jsonl")
	got, err := p.run(ctx, "", "--json", "session", "show", "5e551011-0000-4000-8000-000000000074")
	if err != nil || !strings.Contains(got, `"phase": "ready"`) && !strings.Contains(got, `"phase":"ready"`) {
		t.Fatalf("session show through serve: %v\n%s", err, got)
	}
	if spooled, _ := filepath.Glob(filepath.Join(p.data, "spool", "*.json")); len(spooled) > 0 {
		t.Errorf("%d hook payloads left in the spool", len(spooled))
	}
	waitSeq(t, &out, &errs, p.lastSeq(ctx), "through serve")

	p.stop(s)
	waitSaid(t, &errs, "following through the data dir directly", 1)
	if out, err := p.run(ctx, "", "sessions"); err != nil {
		t.Fatalf("sessions beside the follower, no server: %v\n%s", err, out)
	}
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	start = time.Now()
	if out, err := p.run(ctx, "", "project", "add", repo, "--name", "followed"); err != nil {
		t.Fatalf("project add beside the follower, no server: %v\n%s", err, out)
	}
	t.Logf("project add took %v beside the follower", time.Since(start).Round(time.Millisecond))
	waitSaid(t, &errs, "following through the data dir directly", 2)
	waitSeq(t, &out, &errs, p.lastSeq(ctx), "after project add")
	if !strings.Contains(out.String(), "project.added") {
		t.Errorf("the follower did not print project.added:\n%s", &out)
	}

	// Stopped, as every command a stop signal ends: 128 + 2.
	f.Process.Signal(syscall.SIGINT)
	if err := f.Wait(); exitStatus(err) != 130 || !strings.Contains(errs.String(), "events tail interrupted by SIGINT") {
		t.Errorf("follower on SIGINT: %v, want exit status 130 and a line saying so\n%s", err, &errs)
	}
	seqs := followerSeqs(t, &out)
	if seqs[0] != 1 {
		t.Errorf("follower began at %d, want 1", seqs[0])
	}
	for _, want := range []string{"gave the data dir up", "following through logbook serve pid", "the server stopped", "following through the data dir directly"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("follower's stderr does not say %q:\n%s", want, &errs)
		}
	}
	t.Logf("follower printed %d events; said:\n%s", len(seqs), &errs)
}

// TestLockOver_WriterHolderRefused: a process asking for a lock a
// command that appends holds is refused at once, naming the holder; one
// held by a reader that never gives it up (a one-shot read that hangs)
// is waited for, saying so, until ctx ends.
func TestLockOver_WriterHolderRefused(t *testing.T) {
	t.Parallel()
	d := dataDir(t.TempDir())
	held, err := d.lock("logbook import claude")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.dir().LockOver(t.Context(), "logbook serve", func(string) { t.Error("waited for a writer") })
	if err == nil || !strings.Contains(err.Error(), "held by logbook import claude pid") {
		t.Errorf("lock held by a writer: %v", err)
	}
	held.Close()
	held, err = lockAgain(d.dir(), "logbook sessions"+datadir.ReaderMark)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
	defer cancel()
	var said bytes.Buffer
	_, err = d.dir().LockOver(ctx, "logbook serve", func(h string) { fmt.Fprint(&said, h) })
	if err != context.DeadlineExceeded {
		t.Errorf("lock held by a reader that does not let go: %v, want the deadline", err)
	}
	if want := fmt.Sprintf("logbook sessions (reads) pid %d", os.Getpid()); said.String() != want {
		t.Errorf("waiting said %q, want %q", &said, want)
	}
}

// TestSessionsWatch_OutlivesServe: `sessions --watch` whose serve stops
// says so and waits, keeping its last drawing, rather than exiting; once
// serve runs again it says so and draws again, with what was appended
// meanwhile; it ends with exit 0 on SIGINT.
func TestSessionsWatch_OutlivesServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var log syncBuffer
	s := p.serve(ctx, &log)
	p.hooks(ctx, "hooks-before.jsonl")

	var out, errs syncBuffer
	w := p.cmd(ctx, "sessions", "--watch", "--all")
	w.Stdout, w.Stderr = &out, &errs
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.Wait() }()
	waitSaid(t, &out, "-- ", 1)

	p.stop(s)
	waitSaid(t, &errs, "the server stopped: waiting for one to answer for the data dir", 1)
	select {
	case err := <-exited:
		t.Fatalf("the watch exited when serve stopped: %v\nstdout:\n%s\nstderr:\n%s", err, &out, &errs)
	case <-time.After(2 * time.Second):
	}
	drawings := strings.Count(out.String(), "-- ")

	if !strings.Contains(out.String(), "working") {
		t.Fatalf("the drawing before serve stopped shows no working session:\n%s", &out)
	}
	s = p.serve(ctx, &log)
	waitSaid(t, &errs, "following through logbook serve pid", 1)
	p.hooks(ctx, "hooks-after.jsonl") // the turn ends: the session is ready
	waitFor(t, time.Minute, "a drawing with the session ready after serve came back", func() bool {
		d := strings.Split(out.String(), "-- ")
		return len(d) > drawings+1 && strings.Contains(d[len(d)-1], "ready")
	}, func() string { return fmt.Sprintf("stdout:\n%s\nstderr:\n%s", &out, &errs) })

	w.Process.Signal(syscall.SIGINT)
	if err := <-exited; exitStatus(err) != 130 || !strings.Contains(errs.String(), "sessions interrupted by SIGINT") {
		t.Errorf("watch on SIGINT: %v, want exit status 130 and a line saying so\nstderr:\n%s", err, &errs)
	}
	p.stop(s)
}

// exitStatus is the exit status a process's Wait error says: 0 for
// nil, -1 for an error that is no exit.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	return -1
}
