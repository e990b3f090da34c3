package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// openSpool opens the hook spool of data dir data.
func openSpool(t *testing.T, data string) *claude.Spool {
	t.Helper()
	sp, err := claude.Open(filepath.Join(data, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// observations returns the observations stored for Claude Code session
// sid in b's log, in order.
func observations(t *testing.T, ctx context.Context, b *backend, sid string) []*events.Observation {
	t.Helper()
	agg, _ := claude.SessionAggregate(sid, "")
	recs, _, err := b.log.Load(ctx, agg)
	if err != nil {
		t.Fatal(err)
	}
	var obs []*events.Observation
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok {
			obs = append(obs, o)
		}
	}
	return obs
}

// signalIDs returns the id of each observation's first signal (a hook's
// prompt id, say), in order.
func signalIDs(obs []*events.Observation) []string {
	var ids []string
	for _, o := range obs {
		ids = append(ids, o.Signals[0].ID)
	}
	return ids
}

// localService opens the data dir data as a command does with no server
// (its own embedded log, views and spool) and returns the backend and the
// API service over them, closed when the test ends.
func localService(t *testing.T, data string) (*backend, *api.Service) {
	t.Helper()
	return openService(t, &globals{data: data, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
}

// openService opens the backend g names, its views and the API service
// over them, as serve does, closed when the test ends.
func openService(t *testing.T, g *globals) (*backend, *api.Service) {
	t.Helper()
	b, err := openBackend(t.Context(), g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store, err := openViews(t.Context(), g, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := newService(b, store)
	if err != nil {
		t.Fatal(err)
	}
	return b, svc
}

// goBuild builds package pkg into the binary path and returns path
// (sandboxtest.Build: linked once for all test binaries and runs).
func goBuild(pkg, path string) (string, error) {
	if err := sandboxtest.Build(context.Background(), pkg, path); err != nil {
		return "", err
	}
	return path, nil
}

// goBinary is a binary built once per test binary, shared by the tests
// that run it.
type goBinary struct {
	once sync.Once
	path string
	err  error
}

// get returns the binary's path, building it with build on the first
// call; a failed build fails every test that asks.
func (b *goBinary) get(t *testing.T, build func() (string, error)) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = build() })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// runCmd runs c with stdin and returns its standard output, its standard
// error and its exit code; err is set only when c could not be run or
// waited for.
func runCmd(c *exec.Cmd, stdin string) (stdout, stderr string, code int, err error) {
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return out.String(), errb.String(), ee.ExitCode(), nil
	}
	return out.String(), errb.String(), 0, err
}

// waitServer waits until the data dir's server answers.
func waitServer(t *testing.T, dd dataDir) {
	t.Helper()
	if !serverUp(dd) {
		t.Fatalf("server did not come up in %s", dd)
	}
}

// serverUp waits up to 20 s until the data dir's server answers a
// command's connection, and says whether it did.
func serverUp(dd dataDir) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if si, ok := dd.readServeInfo(); ok && si.PID > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			b, err := openBackend(ctx, &globals{data: string(dd)})
			cancel()
			if err == nil {
				remote := b.remote
				b.Close()
				if remote {
					return true
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// verifyNames runs replay --verify until it exits 1 naming every want
// (serve's projector passes a new event soon, not at once; a want of
// "live projection at seq N:" waits for it to pass N), and returns its
// output.
func verifyNames(t *testing.T, data string, want ...string) (string, string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		out, errOut, code := cliExit(t, data, "replay", "--verify")
		all := code == 1
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all {
			return out, errOut
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay --verify exit %d does not name %q:\n%s%s", code, want, out, errOut)
		}
	}
}

// publish publishes m as it is on nc (no signature, no check of the
// log's), as any client with the credentials may, and returns its ack.
func publish(t *testing.T, nc *nats.Conn, m *nats.Msg) *jetstream.PubAck {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(t.Context(), m)
	if err != nil {
		t.Fatalf("publish on %s: %v", m.Subject, err)
	}
	return ack
}

// auditLine returns the line of audit's output out that shows the event
// at sequence seq, "" for none.
func auditLine(out string, seq uint64) string {
	prefix := fmt.Sprintf("#%d ", seq)
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, prefix) {
			line = l
		}
	}
	return line
}

// execRun is a command execPipeAndPTY ran: its id and what exec printed.
type execRun struct{ id, out string }

// execPipeAndPTY runs `logbook exec FLAGS --id ID --wait 30s [--tty] --
// ARGV` with run twice: as command name-pipe on pipes, then as name-pty
// on a PTY. It fails the test when either exec fails.
func execPipeAndPTY(t *testing.T, run func(args ...string) (string, error), name string, flags []string, argv ...string) []execRun {
	t.Helper()
	var runs []execRun
	for _, way := range []struct {
		suffix string
		flags  []string
	}{{"-pipe", nil}, {"-pty", []string{"--tty"}}} {
		id := name + way.suffix
		out, err := run(slices.Concat([]string{"exec"}, flags, []string{"--id", id, "--wait", "30s"}, way.flags, []string{"--"}, argv)...)
		if err != nil {
			t.Fatalf("exec %s: %v\n%s", id, err, out)
		}
		runs = append(runs, execRun{id, out})
	}
	return runs
}

// storedOutput returns what command id wrote to lb.out, read straight
// from the log of data dir data.
func storedOutput(t *testing.T, ctx context.Context, data, id string) []byte {
	t.Helper()
	var got bytes.Buffer
	for _, m := range storedMsgs(t, ctx, data, natslog.OutputSubject(id)) {
		got.Write(m.Data)
	}
	return got.Bytes()
}

// storedMsgs returns the messages on the subjects filter matches, read
// straight from the log of data dir data, in order.
func storedMsgs(t *testing.T, ctx context.Context, data, filter string) []natslog.Msg {
	t.Helper()
	b, err := openBackend(ctx, &globals{data: data})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var msgs []natslog.Msg
	for m, err := range b.log.ReadRaw(ctx, filter, 1) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// newEvent returns payload p as the event at version ver of aggregate
// agg, with an id of its own, at time at (zero: now, to the microsecond
// as the log keeps it), caused by event of kind, as a forger would write
// it.
func newEvent(agg events.Aggregate, ver uint64, at time.Time, kind, event string, p events.Payload) events.Envelope {
	if at.IsZero() {
		at = time.Now().UTC().Truncate(time.Microsecond)
	}
	e := events.NewRegistry().New(p)
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), agg, ver, at
	e.Cause = &events.Cause{Kind: kind, Event: event, Ref: ulid.Make().String()}
	return e
}

// eventMsg returns e as an unsigned message on its aggregate's subject
// that expects the subject's last sequence to be expect.
func eventMsg(t *testing.T, e events.Envelope, expect uint64) *nats.Msg {
	t.Helper()
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: e.Agg.Subject(), Header: nats.Header{}, Data: data}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	return m
}

// runCLIAgain is runCLI for a test that runs commands in its own
// process one after the other on one data dir, with stdin empty and the
// output in out and errb. A command that finds the data dir's lock held
// by this very process, after the one before it returned and closed the
// lock, meets a child that a parallel test forked meanwhile: until its
// exec, the child holds a copy of every descriptor, the lock's among
// them, so the flock outlives the close for a moment (in separate
// processes, as commands run outside tests, there is no such copy).
// That command is run again, its output reset, for up to 10 s; any other
// error, or the same one after that, is returned as runCLI gave it.
func runCLIAgain(ctx context.Context, args []string, out, errb *bytes.Buffer) error {
	self := fmt.Sprintf(" pid %d;", os.Getpid())
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := runCLI(ctx, args, bytes.NewReader(nil), out, errb)
		if !errors.Is(err, datadir.ErrBusy) || !strings.Contains(err.Error(), self) || time.Now().After(deadline) {
			return err
		}
		out.Reset()
		errb.Reset()
		time.Sleep(20 * time.Millisecond)
	}
}

// lockAgain takes data dir d's lock as role (datadir.Dir.Lock) for a
// test that closed this process's own hold on it just before: a lock
// found held by this very process is a child that a parallel test forked
// meanwhile, holding a copy of the closed descriptor until its exec (see
// runCLIAgain). It tries again for up to 10 s; any other error, or the
// same one after that, is returned as Lock gave it. The caller closes
// the file.
func lockAgain(d datadir.Dir, role string) (*os.File, error) {
	self := regexp.MustCompile(fmt.Sprintf(` pid %d\b`, os.Getpid()))
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := d.Lock(role)
		if !errors.Is(err, datadir.ErrBusy) || !self.MatchString(err.Error()) || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
