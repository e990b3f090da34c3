package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/reconcile"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// goneSession is the session of the reconciler's tests whose agent
// process exits.
const goneSession = "90e5e551-0000-4000-8000-00000000a9e0"

// goneHook returns the Claude Code payload of goneSession's hook event
// (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop or
// SessionEnd), its tool calls Bash call call.
func goneHook(event, call string) string {
	head := `{"session_id":"` + goneSession + `","transcript_path":"/home/u/.claude/projects/p/` + goneSession + `.jsonl","cwd":"/home/u/p","permission_mode":"default","hook_event_name":"` + event + `"`
	switch event {
	case "SessionStart":
		return head + `,"source":"startup","model":"claude-opus-4-7"}`
	case "UserPromptSubmit":
		return head + `,"prompt":"run the tests"}`
	case "PreToolUse":
		return head + `,"tool_name":"Bash","tool_use_id":"` + call + `","tool_input":{"command":"make test"}}`
	case "PostToolUse":
		return head + `,"tool_name":"Bash","tool_use_id":"` + call + `","tool_input":{"command":"make test"},"tool_response":{"stdout":"ok","stderr":"","interrupted":false}}`
	case "Stop":
		return head + `,"stop_hook_active":false}`
	case "SessionEnd":
		return head + `,"reason":"logout"}`
	}
	panic("goneHook: " + event)
}

// serveStoppable runs `logbook --data data serve ARGS...` in this process
// and returns, once it answers, serve's log and a stop that ends it as
// SIGTERM does and waits for it (also run when the test ends).
func serveStoppable(t *testing.T, data string, args ...string) (*syncBuffer, func()) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- runCLI(ctx, append([]string{"--data", data, "serve"}, args...), strings.NewReader(""), logs, logs)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v\n%s", err, logs.String())
		}
	}
	t.Cleanup(stop)
	waitServer(t, dataDir(data))
	return logs, stop
}

// dueNow returns goneSession as svc's projection shows it and whether a
// reconciler on this host that marks a session abandoned after
// abandonAfter would decide on it now.
func dueNow(t *testing.T, svc *api.Service, abandonAfter time.Duration) (session.State, bool, error) {
	t.Helper()
	st, err := svc.Store.Session(goneSession)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	check := func(p events.Process) events.ProcessCheck { return claude.CheckProcess(p, host, claude.BootID()) }
	due, err := svc.Ing.WouldReconcile(st, time.Now(), abandonAfter, check)
	return st, due, err
}

// goneRecords returns goneSession's records in b's log.
func goneRecords(t *testing.T, b *backend) []events.Record {
	t.Helper()
	agg, err := claude.SessionAggregate(goneSession, "")
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := b.log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// goneAgent is a real agent process of goneSession: this test binary as
// fakeagent, running logbook-hook (this test binary too) on a data dir
// through sh, as Claude Code runs its hooks. It sends SessionStart, a
// prompt and PreToolUse tu_1, then waits for then; it sends PostToolUse
// tu_1, Stop and SessionEnd (reason logout), and exits on SIGTERM.
type goneAgent struct {
	cmd  *exec.Cmd
	work string
	out  *syncBuffer
}

// startGoneAgent starts a goneAgent sending hooks to data dir data and
// returns once it has sent the first three (each answered exit 0).
func startGoneAgent(t *testing.T, data string) *goneAgent {
	t.Helper()
	bin := hookBin(t)
	if err := os.Symlink(filepath.Join(bin, "logbook-hook"), filepath.Join(bin, "fakeagent")); err != nil {
		t.Fatal(err)
	}
	a := &goneAgent{work: t.TempDir(), out: &syncBuffer{}}
	script := ""
	for i, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"} {
		name := filepath.Join(a.work, ev+".json")
		if err := os.WriteFile(name, []byte(goneHook(ev, "tu_1")), 0o600); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			script += "touch " + filepath.Join(a.work, "first") + " && while [ ! -e " + filepath.Join(a.work, "then") + " ]; do sleep 0.02; done && "
		}
		script += "logbook-hook --data " + data + " claude < " + name + " && "
	}
	script += "true"
	a.cmd = exec.Command(filepath.Join(bin, "fakeagent"), script)
	a.cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "FAKEAGENT_DONE=" + filepath.Join(a.work, "done")}
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	})
	a.waitFile(t, "first")
	return a
}

func (a *goneAgent) waitFile(t *testing.T, name string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(a.work, name)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not get to %s:\n%s", name, a.out.String())
		}
	}
}

// finish has the agent send its last three hooks, then ends its process
// (it exits 0) and reaps it: from then on it is gone.
func (a *goneAgent) finish(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(a.work, "then"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a.waitFile(t, "done")
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("agent: %v\n%s", err, a.out.String())
	}
}

// checkHooksDecided fails the test unless recs (goneSession's) show its
// hooks deciding alone: tu_1 closed, one end for logout, nothing by the
// reconciler.
func checkHooksDecided(t *testing.T, recs []events.Record) {
	t.Helper()
	var ends []events.SessionEnded
	closed := 0
	for _, r := range recs {
		if r.Actor == claude.ActorReconciler {
			t.Errorf("seq %d: %s by the reconciler, want nothing decided from the agent's absence", r.Seq, r.Type)
		}
		switch d := r.Data.(type) {
		case events.SessionEnded:
			ends = append(ends, d)
		case events.SessionEntryAbandoned:
			t.Errorf("seq %d: entry %s abandoned (%s), want it closed by its PostToolUse", r.Seq, d.EntryID, d.Reason)
		case events.SessionEntryClosed:
			closed++
		}
	}
	if len(ends) != 1 || ends[0].Reason != "logout" {
		t.Errorf("session ends %+v, want one, reason logout", ends)
	}
	if closed != 1 {
		t.Errorf("%d entries closed, want 1 (tu_1)", closed)
	}
	if t.Failed() {
		for _, r := range recs {
			t.Logf("seq %d: %s %s %+v", r.Seq, r.Actor, r.Type, r.Data)
		}
	}
}

// TestReconciler_SpooledHooksDecideFirst: an agent sends SessionStart, a
// prompt and PreToolUse tu_1 to a running serve; serve stops; the agent
// sends PostToolUse tu_1, Stop and SessionEnd (reason logout), all
// spooled, and its process exits; serve starts again. The spooled hooks
// decide: tu_1 closes, the session ends for logout, and the reconciler,
// which finds the agent process gone, decides nothing on it (no
// agent_gone end, nothing abandoned).
func TestReconciler_SpooledHooksDecideFirst(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	serveArgs := []string{"--workers", "0", "--fsync", "interval", "--reconcile-every", "100ms"}
	_, stop := serveStoppable(t, data, serveArgs...)
	agent := startGoneAgent(t, data)
	stop() // its intake's records go into the log as it stops
	agent.finish(t)
	if left := spooled(t, data); len(left) != 3 {
		t.Fatalf("spooled %d hook payloads, want 3 (PostToolUse, Stop, SessionEnd)\n%s", len(left), agent.out.String())
	}

	logs, _ := serveStoppable(t, data, serveArgs...)
	b, err := openBackend(t.Context(), &globals{data: data, cmdName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for deadline := time.Now().Add(20 * time.Second); len(spooled(t, data)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("spool not delivered:\n%s", logs.String())
		}
	}
	// The reconciler has passes after the spool is delivered: a few more
	// before the log is read.
	time.Sleep(300 * time.Millisecond)
	checkHooksDecided(t, goneRecords(t, b))
	if t.Failed() {
		t.Logf("serve's log:\n%s", logs.String())
	}
}

// hookSocketService opens data as serve does, with no server (this
// process's own log), runs its projector, and takes hooks on the data
// dir's hook socket into the intake as serve does, without the intake's
// Run: what the socket takes stays queued until the test flushes it. It
// returns the backend, the service and the intake; all stop at test end.
func hookSocketService(t *testing.T, data string) (*backend, *api.Service, *api.Intake) {
	t.Helper()
	b, svc := localService(t, data)
	runCtx, stopRun := context.WithCancel(context.Background())
	projected := make(chan error, 1)
	go func() { projected <- svc.Runner.Run(runCtx) }()
	t.Cleanup(func() {
		stopRun()
		<-projected
	})
	in, err := api.OpenIntake(svc, b.dd.path(host.IntakeJournal), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	sock, err := api.ListenSocket(b.dd.path(hooksock.Name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	sockDone := make(chan struct{})
	go func() {
		defer close(sockDone)
		api.ServeSocket(runCtx, sock.UnixListener, api.VerbHook, in.Accept, t.Logf)
	}()
	t.Cleanup(func() {
		stopRun()
		<-sockDone
	})
	return b, svc, in
}

// TestReconciler_HoldsOffForTheIntake: the agent's last hooks (PostToolUse
// tu_1, Stop, SessionEnd) are taken on the hook socket (answered, exit 0)
// but still queued in the intake when its process exits. A reconciler
// pass, which finds the process gone, decides nothing and says why, once
// however many passes are held off; once the intake has put them in the
// log, the hooks have decided and the next pass decides nothing either.
func TestReconciler_HoldsOffForTheIntake(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	ctx := t.Context()
	data := filepath.Join(t.TempDir(), "data")
	b, svc, in := hookSocketService(t, data)
	settle := func() {
		t.Helper()
		if _, err := in.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := svc.CaughtUp(ctx); err != nil {
			t.Fatal(err)
		}
	}

	agent := startGoneAgent(t, data)
	settle()
	agent.finish(t)
	if left := spooled(t, data); len(left) != 0 {
		t.Fatalf("spooled %v, want every hook taken on the socket\n%s", left, agent.out.String())
	}
	if n := in.Pending(); n != 3 {
		t.Fatalf("%d hooks queued in the intake, want 3 (PostToolUse, Stop, SessionEnd)", n)
	}
	// The projection says the session works on tu_1 with its agent
	// process gone: a pass finds it due.
	if st, due, err := dueNow(t, svc, 0); err != nil || !due {
		t.Fatalf("session %s (agent process %+v): due %v, %v; want due", st.Phase, st.AgentProcess, due, err)
	}

	var stderr syncBuffer
	host, _ := os.Hostname()
	r := reconcile.New(reconcile.Config{Service: svc, Interval: reconcile.MinInterval, Host: host, Boot: claude.BootID(),
		Report: func(msg string) { fmt.Fprintf(&stderr, "logbook serve: reconciler: %s\n", msg) }})
	n, err := r.Pass(ctx)
	if _, held := errors.AsType[*reconcile.UnsettledError](err); !held || n != 0 {
		t.Fatalf("pass with 3 hooks queued: %d marked, %v; want none, held off", n, err)
	}
	r.Tick(ctx)
	r.Tick(ctx)
	if got := strings.Count(stderr.String(), "\n"); got != 1 || !strings.Contains(stderr.String(), "deciding nothing on 1 session until the hooks taken before the pass are in the log") {
		t.Errorf("held off 3 times, said %q; want it said once", stderr.String())
	}
	for _, r := range goneRecords(t, b) {
		if r.Actor == claude.ActorReconciler {
			t.Fatalf("seq %d: %s by the reconciler held off", r.Seq, r.Type)
		}
	}
	settle()
	if n, err := r.Pass(ctx); err != nil || n != 0 {
		t.Errorf("pass with the hooks in the log: %d marked, %v; want none", n, err)
	}
	r.Tick(ctx)
	if !strings.Contains(stderr.String(), "deciding again") {
		t.Errorf("said %q, want that it decides again", stderr.String())
	}
	checkHooksDecided(t, goneRecords(t, b))
}

// TestReconciler_DispatcherIsNotTheAgent: an agent runs each of its hooks
// through a dispatcher, a program that is not a shell and exits once the
// hook has (here `dispatch`), so each hook finds a dispatcher before the
// agent. Once the hooks are in the log, every dispatcher is gone and the
// agent lives: the session's agent process is the agent, and a reconciler
// pass marks nothing. Once the agent is killed, a pass ends the session
// (agent_gone) and abandons its open entry.
func TestReconciler_DispatcherIsNotTheAgent(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	ctx := t.Context()
	data := filepath.Join(t.TempDir(), "data")
	b, svc, in := hookSocketService(t, data)

	bin := hookBin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fakeagent", "dispatch"} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	script := ""
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse"} {
		name := filepath.Join(work, ev+".json")
		if err := os.WriteFile(name, []byte(goneHook(ev, "tu_1")), 0o600); err != nil {
			t.Fatal(err)
		}
		script += "dispatch logbook-hook --data " + data + " claude < " + name + " && "
	}
	agent := exec.Command(filepath.Join(bin, "fakeagent"), script+"true")
	runHookAgent(t, agent, bin, work, data, in, svc)

	st, due, err := dueNow(t, svc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p := st.AgentProcess; p == nil || p.PID != agent.Process.Pid || p.Comm != "fakeagent" {
		t.Fatalf("agent process %+v, want the agent, pid %d (fakeagent)", p, agent.Process.Pid)
	}
	if st.Phase != events.PhaseWorking || due {
		t.Fatalf("session %s, due %v; want working, not due", st.Phase, due)
	}
	host, _ := os.Hostname()
	r := reconcile.New(reconcile.Config{Service: svc, Interval: reconcile.MinInterval, Host: host, Boot: claude.BootID(),
		Report: func(msg string) { t.Logf("reconciler: %s", msg) }})
	if n, err := r.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("pass with the agent alive: %d marked, %v; want none", n, err)
	}
	for _, rec := range goneRecords(t, b) {
		if rec.Actor == claude.ActorReconciler {
			t.Fatalf("seq %d: %s by the reconciler while the agent lives", rec.Seq, rec.Type)
		}
	}

	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	agent.Wait()
	if n, err := r.Pass(ctx); err != nil || n != 1 {
		t.Fatalf("pass with the agent killed: %d marked, %v; want 1", n, err)
	}
	if err := svc.CaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = svc.Store.Session(goneSession)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != events.PhaseEnded || st.EndReason != session.ReasonAgentGone {
		t.Errorf("after the agent was killed: %s (%s), want ended agent_gone", st.Phase, st.EndReason)
	}
}

// TestReconciler_AgentInPidNamespace: an agent in a PID namespace of its
// own that keeps this host's name and boot id (as bwrap --unshare-pid,
// unshare -p, a container on the host's network have it) sends its hooks
// from in there: the pids they record number the namespace's processes,
// not this one's, where the same pid is another process or none. Its
// hooks name that namespace, so the reconciler never looks its pid up
// here: a pass with the agent alive marks nothing, and neither does one
// after it was killed (no process check, as for an agent on another
// host), nor does any record claim it gone. Once with /proc mounted for
// the namespace, once with this host's /proc left in place, whose pids
// the hook cannot name a namespace for.
func TestReconciler_AgentInPidNamespace(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"mount-proc", []string{"--mount-proc"}},
		{"host-proc", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := append([]string{"--user", "--map-root-user", "--pid", "--fork", "--kill-child"}, tc.flags...)
			if out, err := exec.Command(unshare, append(ns, "true")...).CombinedOutput(); err != nil {
				t.Skipf("unshare %s: %v: %s", strings.Join(ns, " "), err, out)
			}
			testAgentInPidNamespace(t, unshare, ns, tc.name == "mount-proc")
		})
	}
}

func testAgentInPidNamespace(t *testing.T, unshare string, ns []string, ownProc bool) {
	ctx := t.Context()
	data := filepath.Join(t.TempDir(), "data")
	b, svc, in := hookSocketService(t, data)

	bin := hookBin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "fakeagent")); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	script := ""
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse"} {
		name := filepath.Join(work, ev+".json")
		if err := os.WriteFile(name, []byte(goneHook(ev, "tu_1")), 0o600); err != nil {
			t.Fatal(err)
		}
		script += "logbook-hook --data " + data + " claude < " + name + " && "
	}
	// The namespace's first process is a shell that does not exec the
	// agent: the agent is pid 2 in there, and pid 2 here is another
	// process (a kernel thread).
	agent := exec.Command(unshare, append(ns, "sh", "-c", `"$@"; exit $?`, "sh", filepath.Join(bin, "fakeagent"), script+"true")...)
	runHookAgent(t, agent, bin, work, data, in, svc)

	st, err := svc.Store.Session(goneSession)
	if err != nil {
		t.Fatal(err)
	}
	p := st.AgentProcess
	if p == nil || p.Comm != "fakeagent" {
		t.Fatalf("agent process %+v, want the agent (fakeagent)", p)
	}
	own := claude.PidNS()
	if own == "" {
		t.Fatal("this test's own PID namespace is unknown")
	}
	if ownProc {
		// The namespace the agent is in, as this host names it: the one
		// unshare made for its children.
		inner, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid_for_children", agent.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if p.PID != 2 || p.PidNS != inner || inner == "" || inner == own {
			t.Fatalf("agent process %+v, want pid 2 in the namespace %q (this one is %s)", p, inner, own)
		}
	} else if p.PidNS != events.PidNSUnknown {
		t.Fatalf("agent process %+v, want PID namespace %q: /proc is not the namespace's", p, events.PidNSUnknown)
	}

	host, _ := os.Hostname()
	r := reconcile.New(reconcile.Config{Service: svc, Interval: reconcile.MinInterval, Host: host, Boot: claude.BootID(),
		Report: func(msg string) { t.Logf("reconciler: %s", msg) }})
	if n, err := r.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("pass with the agent alive: %d marked, %v; want none", n, err)
	}
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	agent.Wait()
	if n, err := r.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("pass with the agent killed: %d marked, %v; want none: its pid cannot be looked up here", n, err)
	}
	for _, rec := range goneRecords(t, b) {
		if rec.Actor == claude.ActorReconciler {
			t.Fatalf("seq %d: %s by the reconciler about an agent it cannot see", rec.Seq, rec.Type)
		}
	}
	if st, err = svc.Store.Session(goneSession); err != nil {
		t.Fatal(err)
	}
	if st.Phase != events.PhaseWorking {
		t.Errorf("session %s (%s), want working", st.Phase, st.EndReason)
	}
}

// runHookAgent runs agent, a fakeagent (from bin) that sends its hooks
// and then writes work/done, waits for it, and checks that serve's
// intake took every hook on the socket (none left in data's spool), the
// service caught up with them.
func runHookAgent(t *testing.T, agent *exec.Cmd, bin, work, data string, in *api.Intake, svc *api.Service) {
	t.Helper()
	ctx := t.Context()
	out := &syncBuffer{}
	agent.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "FAKEAGENT_DONE=" + filepath.Join(work, "done")}
	agent.Stdout, agent.Stderr = out, out
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agent.Process.Kill()
		agent.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(work, "done")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not send its hooks:\n%s", out.String())
		}
	}
	if _, err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.CaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if left := spooled(t, data); len(left) != 0 {
		t.Fatalf("spooled %v, want every hook taken on the socket\n%s", left, out.String())
	}
}
