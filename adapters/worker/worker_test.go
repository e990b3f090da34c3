package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

func TestWorker_RunsACommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	w, _ := e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo out; echo err >&2; exit 3"))
	st, out := e.follow(id, 10*time.Second)
	if st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("status %s, exit %v; want exited 3", st.Status, st.ExitCode)
	}
	if got := out.stream("stdout"); got != "out\n" {
		t.Errorf("stdout %q, want %q", got, "out\n")
	}
	if got := out.stream("stderr"); got != "err\n" {
		t.Errorf("stderr %q, want %q", got, "err\n")
	}
	if st.Worker != w.Identity().ID || st.OutputBytes != 8 {
		t.Errorf("worker %s, output %d bytes; want %s and 8", st.Worker, st.OutputBytes, w.Identity().ID)
	}
	want := []string{"command.requested", "command.started", "command.running", "command.exited"}
	if got := e.types(id); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	// The session was working while the command ran, and is ready again.
	e.waitFor("detach", func() bool { return len(e.sessionState().Entries) == 0 })
	ss := e.sessionState()
	if ss.Phase != events.PhaseReady || !ss.RecentClosed.Has(EntryID(id)) {
		t.Errorf("session phase %s, closed %v; want ready with %s closed", ss.Phase, ss.RecentClosed.All(), EntryID(id))
	}
}

func TestWorker_TTY(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	req := e.request(events.ModeFullAccess, "sh", "-c", `printf '%s %s' "$TERM" "$(stty size)"`)
	req.TTY = true
	st, out := e.follow(e.submit(req), 10*time.Second)
	if st.Status != command.StatusExited || *st.ExitCode != 0 {
		t.Fatalf("status %s exit %v", st.Status, st.ExitCode)
	}
	if got := out.stream("pty"); got != "dumb 24 80" {
		t.Errorf("pty output %q, want %q", got, "dumb 24 80")
	}
}

func TestWorker_CommandNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "no-such-command-xyz"))
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "not found") || !strings.Contains(st.EndReason, "no-such-command-xyz") {
		t.Fatalf("status %s reason %q; want refused, naming the command as not found", st.Status, st.EndReason)
	}
}

func TestClient_BadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	outside := t.TempDir()
	for _, tc := range []struct {
		name string
		req  command.Request
		want string
	}{
		{"EmptyArgv", e.request(events.ModeFullAccess), "empty argv"},
		{"EmptyArgv0", e.request(events.ModeFullAccess, ""), "argv[0]) is empty"},
		{"UnknownMode", e.request("yolo", "true"), `unknown mode "yolo"`},
		{"CwdOutside", func() command.Request {
			r := e.request(events.ModeFullAccess, "true")
			r.Cwd = outside
			return r
		}(), "is outside the workspace"},
		{"CwdEscapes", func() command.Request {
			r := e.request(events.ModeReadOnly, "true")
			r.Cwd = "../.."
			return r
		}(), "is outside the workspace"},
		{"RelativeWorkspace", func() command.Request {
			r := e.request(events.ModeReadOnly, "true")
			r.Workspace = "src"
			return r
		}(), "not an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := ulid.Make().String()
			_, err := e.client.Request(t.Context(), id, tc.req, nil)
			if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Request = %v; want ErrRejected saying %q", err, tc.want)
			}
			if _, err := e.client.Command(t.Context(), id); !errors.Is(err, events.ErrNotFound) {
				t.Errorf("the refused request reached the log: %v", err)
			}
		})
	}
}

func TestWorker_RefusesCwdOutsideWorkspace(t *testing.T) {
	t.Parallel()
	// A request that reached the log without the client's check (another
	// requester, a symbolic link) is refused by the worker, in every mode.
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	outside := t.TempDir()
	link := filepath.Join(e.ws, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	req := e.request(events.ModeFullAccess, "pwd")
	req.Cwd = "escape"
	st, _ := e.follow(e.submit(req), 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "outside the workspace") {
		t.Fatalf("status %s reason %q; want refused: outside the workspace", st.Status, st.EndReason)
	}
}

func TestWorker_LargeOutputWithoutNewline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	const n = 10 << 20
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n)))
	// Ten MB stored chunk by chunk, each on the log: how long it takes
	// follows the machine's load; the test holds it to going on.
	st, out := e.followMoving(id, 30*time.Second)
	if st.Status != command.StatusExited || *st.ExitCode != 0 {
		t.Fatalf("status %s exit %v", st.Status, st.ExitCode)
	}
	if out.all.Len() != n || st.OutputBytes != n {
		t.Fatalf("read %d bytes, exit reports %d; want %d", out.all.Len(), st.OutputBytes, n)
	}
	if bytes.Count(out.all.Bytes(), []byte("x")) != n {
		t.Errorf("output is not %d x's", n)
	}
	checkContiguous(t, out)
	// Reading from a position gives the rest, cut mid-chunk.
	rest := &output{}
	if _, err := e.client.Watch(t.Context(), id, WatchOptions{After: n - 1000}, rest.add); err != nil {
		t.Fatal(err)
	}
	if rest.all.Len() != 1000 || rest.chunks[0].Pos != n-1000 {
		t.Errorf("after %d: %d bytes from pos %d; want 1000 from %d", n-1000, rest.all.Len(), rest.chunks[0].Pos, n-1000)
	}
}

func TestWorker_BinaryOutputExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	want := make([]byte, 300<<10)
	for i := range 256 {
		want[i] = byte(i)
	}
	rand.Read(want[256:])
	if err := os.WriteFile(filepath.Join(e.ws, "blob"), want, 0o600); err != nil {
		t.Fatal(err)
	}
	st, out := e.follow(e.submit(e.request(events.ModeFullAccess, "cat", "blob")), 10*time.Second)
	if st.Status != command.StatusExited || *st.ExitCode != 0 {
		t.Fatalf("status %s exit %v", st.Status, st.ExitCode)
	}
	if !bytes.Equal(out.all.Bytes(), want) {
		t.Fatalf("output differs: %d bytes, want %d", out.all.Len(), len(want))
	}
	checkContiguous(t, out)
}

func TestWorker_StopsAChildIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`))
	e.waitFor("ready", func() bool { _, o := e.read(id); return strings.Contains(o.all.String(), "ready") })
	start := time.Now()
	if err := e.client.Stop(t.Context(), id, "tester", "test"); err != nil {
		t.Fatal(err)
	}
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusExited || !st.Stopped || st.Signal != "SIGKILL" {
		t.Fatalf("status %s stopped %v signal %q; want exited, stopped by SIGKILL", st.Status, st.Stopped, st.Signal)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v", d)
	}
	if err := e.client.Stop(t.Context(), id, "tester", "again"); !errors.As(err, new(*EndedError)) || !strings.Contains(err.Error(), "has exited") {
		t.Errorf("second stop: %v; want: has exited", err)
	}
}

func TestClient_StopUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	err := e.client.Stop(t.Context(), "01NOSUCHCOMMAND", "tester", "")
	if !errors.Is(err, events.ErrNotFound) {
		t.Fatalf("Stop = %v, want ErrNotFound", err)
	}
	if _, err := e.client.Stdin(t.Context(), "01NOSUCHCOMMAND", []byte("x"), StdinOptions{}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Stdin = %v, want ErrNotFound", err)
	}
	if _, err := e.client.Watch(t.Context(), "01NOSUCHCOMMAND", WatchOptions{}, func(Chunk) error { return nil }); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Watch = %v, want ErrNotFound", err)
	}
}

func TestWorker_StopBeforeStart(t *testing.T) {
	t.Parallel()
	// Stopping a request no worker took yet refuses it: it never runs.
	e := newEnv(t, false)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "touch ran"))
	if err := e.client.Stop(t.Context(), id, "tester", ""); err != nil {
		t.Fatal(err)
	}
	e.startWorker(e.workerConfig())
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusRefused {
		t.Fatalf("status %s, want refused", st.Status)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("the stopped request ran")
	}
}

// Two workspace_write commands in one workspace: the second stays
// requested while the first holds the workspace, holding no worker slot
// (a command elsewhere runs meanwhile), and a stop refuses it; the
// stopped command never runs, and the first is not disturbed.
func TestWorker_StopWhileWaitingForWorkspace(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.MaxRunning = 2
	e.startWorker(cfg)
	first := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", `echo ready; while [ ! -e go ]; do sleep 0.05; done`))
	e.waitFor("the first command", func() bool { _, o := e.read(first); return strings.Contains(o.all.String(), "ready") })
	second := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "touch ran"))
	third := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "touch ran3"))
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Fatal("the second command ran beside the first")
	}
	if st, _ := e.read(second); st.Status != command.StatusRequested {
		t.Errorf("second while the first runs: status %s, want requested", st.Status)
	}
	other := e.submit(e.request(events.ModeFullAccess, "echo", "elsewhere"))
	if st, _ := e.follow(other, 10*time.Second); st.Status != command.StatusExited {
		t.Errorf("a command beside the waiting ones: status %s, want exited", st.Status)
	}
	if err := e.client.Stop(t.Context(), second, "tester", "test"); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.follow(second, 10*time.Second); st.Status != command.StatusRefused {
		t.Errorf("second: status %s, want refused", st.Status)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.follow(first, 10*time.Second); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Errorf("first: status %s, exit %v", st.Status, st.ExitCode)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("the stopped command ran")
	}
	if st, _ := e.follow(third, 10*time.Second); st.Status != command.StatusExited {
		t.Errorf("third, once the workspace is free: status %s, want exited", st.Status)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran3")); err != nil {
		t.Errorf("third: %v", err)
	}
}

func TestWorker_Stdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `read a; echo "got $a"; cat`))
	e.waitFor("start", func() bool { st, _ := e.client.Command(t.Context(), id); return st.Status == command.StatusStarted })
	n, err := e.client.Stdin(t.Context(), id, []byte("hello\n"), StdinOptions{})
	if err != nil || n != 6 {
		t.Fatalf("Stdin = %d, %v", n, err)
	}
	if _, err := e.client.Stdin(t.Context(), id, []byte("s3cret\n"), StdinOptions{Withhold: true, EOF: true}); err != nil {
		t.Fatal(err)
	}
	st, out := e.follow(id, 10*time.Second)
	if got := out.all.String(); got != "got hello\ns3cret\n" {
		t.Errorf("output %q", got)
	}
	if st.StdinBytes != 13 {
		t.Errorf("stdin bytes %d, want 13", st.StdinBytes)
	}
	recs, _, _ := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
	var sums []string
	for _, r := range recs {
		if d, ok := r.Data.(events.CommandStdinWritten); ok {
			sums = append(sums, d.SHA256)
		}
	}
	if len(sums) != 2 || len(sums[0]) != 64 || sums[1] != "" {
		t.Errorf("stdin records %q: want a hash, then a withheld one", sums)
	}
	// The bytes are nowhere in the log.
	for r, err := range e.log.ReadRaw(t.Context(), "lb.ev.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(r.Data, []byte("s3cret")) || bytes.Contains(r.Data, []byte("hello")) {
			t.Errorf("stdin bytes stored at seq %d: %s", r.Seq, r.Data)
		}
	}
	// Stdin to a finished command is an error naming it.
	_, err = e.client.Stdin(t.Context(), id, []byte("late\n"), StdinOptions{})
	if !errors.As(err, new(*EndedError)) || !strings.Contains(err.Error(), "command "+id+" has exited") {
		t.Errorf("stdin after exit: %v; want: command %s has exited", err, id)
	}
}

func TestWorker_Restricted(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())

	t.Run("WritesOnlyInWorkspace", func(t *testing.T) {
		// Outside /tmp, which is private inside the boundary (the
		// checkout itself may lie under /tmp).
		dir, err := os.MkdirTemp("/var/tmp", "logbook-outside-")
		if err != nil {
			dir, _ = os.Getwd()
		} else {
			t.Cleanup(func() { os.RemoveAll(dir) })
		}
		outside := filepath.Join(dir, "outside-"+ulid.Make().String())
		t.Cleanup(func() { os.Remove(outside) })
		id := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo in > inside; echo out > "+outside))
		st, out := e.follow(id, 10*time.Second)
		if st.Status != command.StatusExited || *st.ExitCode == 0 {
			t.Fatalf("status %s exit %v: want a failed write", st.Status, st.ExitCode)
		}
		// Outside the workspace is absent (deny by default), or read-only
		// where the directory is one the boundary shows.
		if !strings.Contains(out.all.String(), "Read-only file system") && !strings.Contains(out.all.String(), "nonexistent") {
			t.Errorf("output %q: want the boundary's refusal", out.all.String())
		}
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("%s was written outside the workspace", outside)
		}
		if b, err := os.ReadFile(filepath.Join(e.ws, "inside")); err != nil || string(b) != "in\n" {
			t.Errorf("inside the workspace: %q, %v", b, err)
		}
	})

	t.Run("NoNetwork", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 4)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
		for _, mode := range []string{events.ModeReadOnly, events.ModeWorkspaceWrite} {
			st, out := e.follow(e.submit(e.request(mode, "bash", "-c", connect)), 10*time.Second)
			if st.Status != command.StatusExited || *st.ExitCode == 0 || strings.Contains(out.all.String(), "connected") {
				t.Errorf("%s: status %s exit %v output %q: want the connection refused", mode, st.Status, st.ExitCode, out.all.String())
			}
		}
		select {
		case <-accepted:
			t.Fatal("a restricted command reached the listener")
		default:
		}
		// The same command unconfined connects: the test can tell.
		st, out := e.follow(e.submit(e.request(events.ModeFullAccess, "bash", "-c", connect)), 10*time.Second)
		if *st.ExitCode != 0 || !strings.Contains(out.all.String(), "connected") {
			t.Errorf("full_access: exit %v output %q: want connected", st.ExitCode, out.all.String())
		}
	})

	t.Run("NotRunIsNoExit", func(t *testing.T) {
		// A script whose interpreter the boundary hides (/tmp is private
		// inside it): bubblewrap's exec fails and it exits 1 before
		// running anything. The record says the command never ran, not
		// that it exited 1.
		dir, err := os.MkdirTemp("/tmp", "logbook-interp-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Fatal(err)
		}
		interp := filepath.Join(dir, "interp")
		if err := os.Symlink(sh, interp); err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(e.ws, "hidden-interp.sh")
		if err := sandboxtest.WriteExecutable(script, []byte("#!"+interp+"\necho ran\n")); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{events.ModeReadOnly, events.ModeWorkspaceWrite} {
			id := e.submit(e.request(mode, "./hidden-interp.sh"))
			st, out := e.follow(id, 10*time.Second)
			if st.Status != command.StatusExited || !strings.Contains(st.NotRun, "bubblewrap exited with status 1 before running it") {
				t.Errorf("%s: status %s exit %v not_run %q: want exited, not run", mode, st.Status, st.ExitCode, st.NotRun)
			}
			if strings.Contains(out.all.String(), "ran") && !strings.Contains(out.all.String(), "execvp") {
				t.Errorf("%s: output %q: the script ran", mode, out.all.String())
			}
			code, err := ExitStatus(st)
			if code != 126 || err == nil || !strings.Contains(err.Error(), "did not run") {
				t.Errorf("%s: ExitStatus %d, %v: want 126, did not run", mode, code, err)
			}
		}
		// The same script run unconfined sees its interpreter.
		st, out := e.follow(e.submit(e.request(events.ModeFullAccess, "./hidden-interp.sh")), 10*time.Second)
		if st.NotRun != "" || st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(out.all.String(), "ran") {
			t.Errorf("full_access: exit %v not_run %q output %q: want it run", st.ExitCode, st.NotRun, out.all.String())
		}
	})

	t.Run("SetsidGrandchildDiesOnStop", func(t *testing.T) {
		// The grandchild leaves the group and ignores SIGTERM, and keeps
		// writing ticks into the workspace.
		id := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c",
			`setsid sh -c 'trap "" TERM HUP; while :; do echo t >> ticks; sleep 0.02; done' & echo started; wait`))
		ticks := filepath.Join(e.ws, "ticks")
		e.waitFor("ticks", func() bool { fi, err := os.Stat(ticks); return err == nil && fi.Size() > 0 })
		if err := e.client.Stop(t.Context(), id, "tester", ""); err != nil {
			t.Fatal(err)
		}
		st, _ := e.follow(id, 10*time.Second)
		if st.Status != command.StatusExited || !st.Stopped {
			t.Fatalf("status %s stopped %v", st.Status, st.Stopped)
		}
		fi1, _ := os.Stat(ticks)
		time.Sleep(300 * time.Millisecond)
		fi2, _ := os.Stat(ticks)
		if fi2.Size() != fi1.Size() {
			t.Errorf("ticks grew from %d to %d bytes after the stop: the grandchild lives", fi1.Size(), fi2.Size())
		}
	})
}

func TestWorker_RefusedWithoutBwrap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.Bwrap = "/nonexistent/bwrap"
	e.startWorker(cfg)
	id := e.submit(e.request(events.ModeReadOnly, "sh", "-c", "touch ran"))
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "bwrap") {
		t.Fatalf("status %s reason %q; want refused, naming bubblewrap", st.Status, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("the command ran unconfined")
	}
}

func TestWorker_RaceForOneRequest(t *testing.T) {
	t.Parallel()
	// Two workers take the same request at the same moment, bypassing the
	// durable consumer that normally hands it to one, and each finds the
	// other's heartbeat gone (as under load, when a beat comes late), so
	// each judges the other's claim dead and takes it over: the claim
	// decides nothing. Exactly one process runs, because a process starts
	// only after its worker's command.started has landed.
	e := newEnv(t, false)
	var ws [2]*Worker
	for i := range ws {
		w, err := New(e.workerConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.setup(t.Context()); err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		runs := filepath.Join(e.ws, fmt.Sprintf("runs-%d", round))
		id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo run >> "+runs))
		for _, w := range ws {
			if err := w.beats.Purge(t.Context(), w.id.ID); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var verdicts [2]verdict
		for i, w := range ws {
			wg.Go(func() {
				w.slots <- struct{}{}
				v, err := w.take(t.Context(), t.Context(), id)
				if err != nil {
					t.Errorf("take: %v", err)
				}
				if v != verdictStarted {
					<-w.slots
				}
				verdicts[i] = v
			})
		}
		wg.Wait()
		if verdicts[0] == verdictLater && verdicts[1] == verdictLater {
			t.Fatalf("round %d: both workers put the request back", round)
		}
		st, _ := e.follow(id, 20*time.Second)
		started := 0
		for _, ty := range e.types(id) {
			if ty == "command.started" {
				started++
			}
		}
		b, _ := os.ReadFile(runs)
		if started != 1 || string(b) != "run\n" || st.Status != command.StatusExited {
			t.Fatalf("round %d: verdicts %v, %d command.started, ran %q, status %s; want exactly one run", round, verdicts, started, b, st.Status)
		}
	}
}

func TestWorker_CompetingWorkersStartEachOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	e.startWorker(e.workerConfig())
	var ids []string
	for range 20 {
		ids = append(ids, e.submit(e.request(events.ModeFullAccess, "true")))
	}
	seen := map[string]int{}
	for _, id := range ids {
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusExited {
			t.Fatalf("%s: status %s", id, st.Status)
		}
		if n := strings.Count(strings.Join(e.types(id), " "), "command.started"); n != 1 {
			t.Fatalf("%s: %d starts", id, n)
		}
		seen[st.Worker]++
	}
	t.Logf("starts per worker: %v", seen)

	// The command view projects what happened.
	store, err := projections.OpenMem(projections.Options{Views: []projections.View{projections.SessionView{}, projections.CommandView{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Apply(t.Context(), e.log.Read(t.Context(), 1), 7); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Commands(e.session, false)
	if err != nil || len(rows) != len(ids) {
		t.Fatalf("Commands = %d rows, %v; want %d", len(rows), err, len(ids))
	}
	if active, _ := store.Commands(e.session, true); len(active) != 0 {
		t.Errorf("%d active commands, want 0", len(active))
	}
	if st, err := store.Command(ids[0]); err != nil || st.Status != command.StatusExited {
		t.Errorf("Command(%s) = %s, %v", ids[0], st.Status, err)
	}
	if _, err := store.Command("nope"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Command(nope) = %v, want ErrNotFound", err)
	}
}

func TestWorker_HeartbeatLapse(t *testing.T) {
	t.Parallel()
	// A worker on another host loses its connection while its command
	// runs: its heartbeat lapses and a live worker abandons the command.
	e := newEnv(t, false)
	nc, err := e.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	l, err := natslog.Open(t.Context(), nc, natslog.Config{Registry: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.workerConfig()
	cfg.Conn, cfg.Log, cfg.Host = nc, l, "elsewhere"
	lost, stopLost := e.startWorker(cfg)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo hi; sleep 30"))
	e.waitFor("hi", func() bool { _, o := e.read(id); return o.all.Len() > 0 })
	l.Close()
	nc.Close() // cut off: no more heartbeats, no more appends
	e.startWorker(e.workerConfig())
	st, out := e.follow(id, 15*time.Second)
	if st.Status != command.StatusAbandoned || st.EndReason != ReasonLost || st.Worker != lost.Identity().ID {
		t.Fatalf("status %s reason %q worker %s; want abandoned, %s, by %s", st.Status, st.EndReason, st.Worker, ReasonLost, lost.Identity().ID)
	}
	if out.all.String() != "hi\n" {
		t.Errorf("output %q, want the output before the loss", out.all.String())
	}
	stopLost()
	e.waitFor("detach", func() bool { return len(e.sessionState().Entries) == 0 })
}

func TestWorker_Backgrounded(t *testing.T) {
	t.Parallel()
	// The requester stops waiting and the command goes on in the
	// background; whenever its process runs, its session is working (the
	// worker attaches the command before it starts the process, and
	// detaches it only after the exit is recorded).
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo first; while [ ! -e go-on ]; do sleep 0.02; done; echo second"))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	out := &output{}
	st, err := e.client.Watch(ctx, id, WatchOptions{Follow: true}, out.add)
	if !errors.Is(err, context.DeadlineExceeded) || st.Ended() {
		t.Fatalf("Watch with a short wait = %s, %v; want the deadline", st.Status, err)
	}
	if err := e.client.Background(t.Context(), id, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the process", func() bool { st, _ := e.client.Command(t.Context(), id); return st.Pid > 0 })
	if ss := e.sessionState(); ss.Phase != events.PhaseWorking {
		t.Errorf("session phase %s while the command runs, want working", ss.Phase)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, all := e.follow(id, 10*time.Second)
	if !st.Background || all.all.String() != "first\nsecond\n" || *st.ExitCode != 0 {
		t.Errorf("background %v output %q exit %v", st.Background, all.all.String(), st.ExitCode)
	}
	e.waitFor("detach", func() bool { return e.sessionState().Phase == events.PhaseReady })
}

func TestClient_RequestRetryAndEviction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	old := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo up; while :; do sleep 0.05; done"))
	e.waitFor("up", func() bool { _, o := e.read(old); return o.all.Len() > 0 })

	// A retried request appends nothing and runs nothing more.
	id := ulid.Make().String()
	req := e.request(events.ModeFullAccess, "sh", "-c", "echo once >> once")
	for range 2 {
		if _, err := e.client.Request(t.Context(), id, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.follow(id, 10*time.Second)
	if got := strings.Count(strings.Join(e.types(id), " "), "command.requested"); got != 1 {
		t.Errorf("%d requests stored, want 1", got)
	}
	// The same id with another spec is refused.
	other := req
	other.Argv = []string{"true"}
	if _, err := e.client.Request(t.Context(), id, other, nil); !errors.Is(err, events.ErrRejected) {
		t.Errorf("same id, other spec: %v, want ErrRejected", err)
	}

	// A request that finds its session at the limit evicts the oldest
	// active command, which its worker then stops.
	active := []string{old}
	for i := range command.MaxActive - 1 {
		active = append(active, fmt.Sprintf("other-%02d", i))
	}
	evicted, err := e.client.Request(t.Context(), ulid.Make().String(), e.request(events.ModeFullAccess, "true"), active)
	if err != nil || !slices.Equal(evicted, []string{old}) {
		t.Fatalf("Request at the limit: evicted %v, %v; want [%s]", evicted, err, old)
	}
	st, _ := e.follow(old, 10*time.Second)
	if st.Status != command.StatusExited || !st.Evicted || !st.Stopped || st.StopReason != "evicted" {
		t.Errorf("evicted command: status %s evicted %v stopped %v reason %q", st.Status, st.Evicted, st.Stopped, st.StopReason)
	}
}

func TestWorker_TakesOverADeadWorkersClaim(t *testing.T) {
	t.Parallel()
	// A worker claimed the request and died before starting it: the
	// claim names a worker with no heartbeat, and the request is taken
	// over and run once.
	e := newEnv(t, false)
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	claims, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: ClaimBucket, History: 1, TTL: ClaimTTL, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	if _, err := claims.Create(t.Context(), id, []byte("ghost-1-01GHOST")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Request(t.Context(), id, e.request(events.ModeFullAccess, "echo", "ran"), nil); err != nil {
		t.Fatal(err)
	}
	w, _ := e.startWorker(e.workerConfig())
	st, out := e.follow(id, 10*time.Second)
	if st.Status != command.StatusExited || st.Worker != w.Identity().ID || out.all.String() != "ran\n" {
		t.Fatalf("status %s worker %s output %q; want run by %s", st.Status, st.Worker, out.all.String(), w.Identity().ID)
	}
	if e, err := claims.Get(t.Context(), id); err != nil || string(e.Value()) != w.Identity().ID {
		t.Errorf("claim %v, %v; want held by the live worker", e, err)
	}
}

// TestWorker_ProbesBwrapOnce: a worker probes bubblewrap before its first
// restricted command and not again: three restricted commands cost four
// bubblewrap starts (one probe, three boundaries), not six. bubblewrap is
// the real one, behind a script that counts its starts (the probe's inner
// start, inside the read-only boundary, cannot write its line).
func TestWorker_ProbesBwrapOnce(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	// Outside /tmp, which is private inside the boundary, where the probe
	// runs bubblewrap's own path.
	dir, err := os.MkdirTemp("/var/tmp", "logbook-bwrap-")
	if err != nil {
		t.Skipf("no /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	starts := filepath.Join(dir, "starts")
	script := filepath.Join(dir, "bwrap")
	if err := sandboxtest.WriteExecutable(script, []byte("#!/bin/sh\necho \"$*\" >> "+starts+"\nexec "+real+" \"$@\"\n")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.Bwrap = script
	e.startWorker(cfg)
	for i := range 3 {
		id := e.submit(e.request(events.ModeReadOnly, "sh", "-c", "echo run "+strconv.Itoa(i)))
		st, out := e.follow(id, 30*time.Second)
		if st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(out.stream("stdout"), "run "+strconv.Itoa(i)) {
			t.Fatalf("command %d: status %s, output %q", i, st.Status, tail(out.all.String()))
		}
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	probes := 0
	for _, l := range lines {
		if strings.HasSuffix(l, " --version") {
			probes++
		}
	}
	if probes != 1 || len(lines) != 4 {
		t.Errorf("bubblewrap started %d times, %d of them probes; want 4 and 1:\n%s", len(lines), probes, b)
	}
}

// command.exited records how the command ended the same in every mode: a
// command killed by a signal inside the boundary as killed by it, one
// that exits 137 as an exit, and a command that a stop's SIGTERM ended
// as killed by SIGTERM.
func TestWorker_ExitOrSignalInEveryMode(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	cases := []struct {
		script string
		code   int    // when signal is ""
		signal string // "" for an exit
	}{
		{"kill -9 $$", 0, "SIGKILL"},
		{"kill -SEGV $$", 0, "SIGSEGV"},
		{"exit 137", 137, ""},
		{"exit 0", 0, ""},
	}
	for _, mode := range []string{events.ModeFullAccess, events.ModeWorkspaceWrite, events.ModeReadOnly} {
		for _, c := range cases {
			st, out := e.follow(e.submit(e.request(mode, "sh", "-c", c.script)), 20*time.Second)
			code := -2
			if st.ExitCode != nil {
				code = *st.ExitCode
			}
			want := c.code
			if c.signal != "" {
				want = -1
			}
			if st.Status != command.StatusExited || st.Signal != c.signal || code != want || st.Stopped || st.NotRun != "" {
				t.Errorf("%s: %q: status %s code %d signal %q stopped %v not_run %q (output %q); want code %d signal %q",
					mode, c.script, st.Status, code, st.Signal, st.Stopped, st.NotRun, tail(out.all.String()), want, c.signal)
			}
		}
		id := e.submit(e.request(mode, "sh", "-c", "echo ready; exec sleep 600"))
		e.waitFor("ready", func() bool { _, o := e.read(id); return strings.Contains(o.all.String(), "ready") })
		if err := e.client.Stop(t.Context(), id, "tester", "test"); err != nil {
			t.Fatal(err)
		}
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusExited || !st.Stopped || st.Signal != "SIGTERM" {
			t.Errorf("%s: stopped: status %s stopped %v signal %q; want exited, stopped by SIGTERM", mode, st.Status, st.Stopped, st.Signal)
		}
	}
}

// A worker named a reporter that is not an executable file is refused:
// every restricted command would fail.
func TestNew_RefusesMissingReporter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.Reporter = filepath.Join(t.TempDir(), "logbook-reporter")
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), cfg.Reporter) {
		t.Errorf("New with Reporter %s: %v; want an error naming it", cfg.Reporter, err)
	}
}

// TestWorker_CwdRefusedAsExecRefusesIt: a request whose working
// directory is bad (through /proc, outside the workspace by a symbolic
// link, missing, a file) that reached the log without exec's check is
// refused by the worker in exec's words: CheckCwd's, which `logbook
// exec` refuses the same --cwd with.
func TestWorker_CwdRefusedAsExecRefusesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	outside := t.TempDir()
	for name, target := range map[string]string{"escape": outside, "here": "/proc/self/cwd"} {
		if err := os.Symlink(target, filepath.Join(e.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.ws, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cwd, want string }{
		{"here", "cwd " + filepath.Join(e.ws, "here") + " leads through " + filepath.Join(e.ws, "here") + " into /proc or /dev/fd"},
		{"escape", "cwd " + filepath.Join(e.ws, "escape") + " is outside the workspace " + e.ws},
		{"nosuch", "cwd " + filepath.Join(e.ws, "nosuch") + " does not exist"},
		{filepath.Join(e.ws, "file"), "cwd " + filepath.Join(e.ws, "file") + " is not a directory"},
	} {
		exec := CheckCwd(e.ws, tc.cwd, true)
		if exec == nil || !strings.HasPrefix(exec.Error(), tc.want) {
			t.Errorf("CheckCwd(%q) = %v, want %q…", tc.cwd, exec, tc.want)
			continue
		}
		req := e.request(events.ModeFullAccess, "touch", filepath.Join(e.ws, "ran"))
		req.RequestedBy, req.Cwd = "person:test@host", tc.cwd
		st, _ := e.follow(e.submit(req), 20*time.Second)
		if want := "refused: " + exec.Error(); st.Status != command.StatusRefused || st.EndReason != want {
			t.Errorf("cwd %q: status %s reason %q\nwant refused %q", tc.cwd, st.Status, st.EndReason, want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("a refused command ran")
	}
}
