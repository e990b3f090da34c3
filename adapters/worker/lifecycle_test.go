package worker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// uniqueSleep returns a sleep argument no other process uses, to find the
// process in /proc; the processes left with it are killed at test end.
func uniqueSleep(t testing.TB) string {
	token := fmt.Sprintf("%d.%09d", 900+rand.IntN(90), rand.IntN(1e9))
	t.Cleanup(func() {
		for _, pid := range sandboxtest.ProcessesWith("sleep " + token) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return token
}

// endSession appends session.ended for the env's session, as SessionEnd,
// `session end` or the reconciler's agent_gone do, and returns the event.
func (e *testEnv) endSession(reason string) events.Envelope {
	e.t.Helper()
	ex := &events.Executor[session.State]{Log: e.log, Reg: e.reg, Init: session.Init, Evolve: session.Evolve, IDs: ulid.Make, Host: "test", Actor: "test"}
	agg := events.Aggregate{Kind: events.KindSession, ID: e.session}
	cause := events.Cause{Kind: "hook", Event: "SessionEnd", Detail: reason, Ref: ulid.Make().String()}
	_, _, err := ex.Execute(e.t.Context(), agg, func(s session.State) (events.Decision, error) {
		return session.Decide(s, session.End{Reason: reason, At: time.Now().UTC().Truncate(time.Microsecond), Cause: cause})
	})
	if err != nil {
		e.t.Fatalf("end session: %v", err)
	}
	recs, _, err := e.log.Load(e.t.Context(), agg)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == "session.ended" {
			return r.Envelope
		}
	}
	e.t.Fatal("no session.ended stored")
	return events.Envelope{}
}

func TestWorker_SessionEndStopsItsCommands(t *testing.T) {
	t.Parallel()
	// A session with a running full_access command whose tree holds a
	// setsid grandchild ends: its workers append stop_requested with the
	// end as cause, the command's worker stops the whole tree, and the
	// command is recorded exited and stopped. A command of another
	// session goes on.
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	token := uniqueSleep(t)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `setsid sleep "$0" >/dev/null 2>&1 </dev/null & echo up; sleep "$0"`, token))
	e.waitFor("the tree", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 2 })

	otherSession := "s-" + strings.ToLower(ulid.Make().String())
	e.startSession(otherSession)
	otherReq := e.request(events.ModeFullAccess, "sleep", "30")
	otherReq.Session = otherSession
	other := e.submit(otherReq)
	e.waitFor("the other command", func() bool { st, _ := e.client.Command(t.Context(), other); return st.Pid > 0 })

	end := e.endSession("prompt_input_exit")
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusExited || !st.Stopped || st.StopReason != command.StopReasonSessionEnded || st.StopBy != "session "+e.session {
		t.Fatalf("status %s stopped %v stop %q by %q; want exited, stopped for the session's end", st.Status, st.Stopped, st.StopReason, st.StopBy)
	}
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	stops := 0
	for _, r := range recs {
		if r.Type == "command.stop_requested" {
			stops++
			if c := r.Cause; c == nil || c.Ref != end.ID.String() || c.Event != "session.ended" || c.Detail != "prompt_input_exit" {
				t.Errorf("stop cause %+v, want a ref to the end %s", c, end.ID)
			}
		}
	}
	if stops != 1 {
		t.Errorf("%d stop requests, want 1", stops)
	}
	e.waitFor("the whole tree to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
	if st, _ := e.client.Command(t.Context(), other); st.Ended() || st.StopRequested {
		t.Errorf("the other session's command: status %s stop %v; want it running", st.Status, st.StopRequested)
	}

	// A command requested after the end never runs.
	late := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "touch ran"))
	st, _ = e.follow(late, 10*time.Second)
	if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "ended") {
		t.Errorf("a command after the end: status %s reason %q; want refused, the session ended", st.Status, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("a command requested after the session's end ran")
	}
	// In a boundary, which bubblewrap builds held while the worker
	// attaches the command: the held sandbox is killed unreleased.
	t.Run("boundary", func(t *testing.T) {
		needBwrap(t)
		late := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "touch ran-boxed"))
		st, _ := e.follow(late, 10*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "ended") {
			t.Errorf("status %s reason %q; want refused, the session ended", st.Status, st.EndReason)
		}
		if _, err := os.Stat(filepath.Join(e.ws, "ran-boxed")); err == nil {
			t.Error("a command requested after the session's end ran in its boundary")
		}
	})
}

func TestWorker_SessionEndWhileNoWorkerRuns(t *testing.T) {
	t.Parallel()
	// The end lands while no worker runs (they crashed, or the end came
	// from another host): the queued command never runs. Which of the
	// next worker's two readers meets the end first is a race: its
	// control feed appends the stop the end asks for (stop reason
	// session_ended, caused by the end), or its request feed takes the
	// command first and refuses it at attach, the session having ended.
	e := newEnv(t, false)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "touch ran"))
	end := e.endSession("agent_gone")
	e.startWorker(e.workerConfig())
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusRefused {
		t.Fatalf("status %s; want refused", st.Status)
	}
	switch {
	case st.StopReason == command.StopReasonSessionEnded:
		recs, _, _ := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
		var stop *events.Cause
		for _, r := range recs {
			if r.Type == "command.stop_requested" {
				stop = r.Cause
			}
		}
		if stop == nil || stop.Ref != end.ID.String() || stop.Detail != "agent_gone" {
			t.Errorf("stop cause %+v; want one caused by the end %s", stop, end.ID)
		}
	case st.StopReason == "" && strings.Contains(st.EndReason, "has ended"):
	default:
		t.Errorf("stop reason %q, end reason %q; want stopped for the session's end, or refused for it", st.StopReason, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("the command ran after its session ended")
	}
}

func TestWorker_LingeringRecorded(t *testing.T) {
	t.Parallel()
	// A full_access command leaves a setsid descendant holding its output
	// open. Where the command has a cgroup (command.running names it), the
	// descendant dies with the command; where it has none, it lingers and
	// the exit says so.
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	token := uniqueSleep(t)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `mkfifo f; setsid sh -c 'echo >f; exec sleep "$0"' "$0" & read x <f; echo started`, token))
	st, out := e.follow(id, 20*time.Second)
	if st.Status != command.StatusExited || out.all.String() != "started\n" {
		t.Fatalf("status %s output %q; want exited", st.Status, out.all.String())
	}
	if st.Cgroup != "" {
		t.Logf("the command ran in cgroup %s", st.Cgroup)
		e.waitFor("the descendant to die with the cgroup", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
		return
	}
	if !st.Lingering {
		t.Errorf("lingering %v; want the lingering descendant recorded", st.Lingering)
	}
}

func TestWorker_KilledWorkersTreeDies(t *testing.T) {
	t.Parallel()
	// A worker process is SIGKILLed while it runs a full_access command
	// whose shell has children in its process group and a setsid
	// grandchild: the leader dies of its parent-death signal, and the
	// worker that finds the dead worker on this host kills the rest (by
	// the recorded cgroup, else by the recorded pid, start time and boot
	// id) before it records the abandonment.
	e := newEnv(t, true)
	token := uniqueSleep(t)
	child := e.startHelperWorker(t)
	e.waitFor("helper worker registered", func() bool { ws, _ := e.client.Workers(t.Context()); return len(ws) == 1 })
	escaper := uniqueSleep(t)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `setsid sleep "$1" & sleep "$0" & sleep "$0" & wait`, token, escaper))
	e.waitFor("the tree", func() bool {
		st, _ := e.client.Command(t.Context(), id)
		return st.Pid > 0 && len(sandboxtest.ProcessesWith("sleep "+token)) == 2 && len(sandboxtest.ProcessesWith("sleep "+escaper)) == 1
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	e.startWorker(e.workerConfig())
	st, _ := e.follow(id, 10*time.Second)
	if st.Status != command.StatusAbandoned || st.EndReason != ReasonGone {
		t.Fatalf("status %s reason %q; want abandoned, %s", st.Status, st.EndReason, ReasonGone)
	}
	// The kill comes before the abandonment is appended.
	if left := sandboxtest.ProcessesWith("sleep " + token); len(left) != 0 {
		t.Errorf("processes %v of the abandoned command still run", left)
	}
	// The setsid grandchild left the session and the group: only the
	// command's cgroup holds it.
	if st.Cgroup == "" {
		t.Logf("no cgroup here: the setsid grandchild %v is out of reach", sandboxtest.ProcessesWith("sleep "+escaper))
	} else if left := sandboxtest.ProcessesWith("sleep " + escaper); len(left) != 0 {
		t.Errorf("the setsid grandchild %v of the abandoned command still runs (cgroup %s)", left, st.Cgroup)
	} else if _, err := os.Stat(st.Cgroup); err == nil {
		t.Errorf("the dead worker's cgroup %s is still there", st.Cgroup)
	}
}

// TestWorker_StoppingRecordsWhyItsCommandsStop: a worker told to stop
// (its process shutting down) while a command runs appends, before it
// stops the command, a stop request of its own (by "worker <id>",
// reason worker_stopping), so the exit that follows, stopped, names who
// stopped it and why; the command's tree dies.
func TestWorker_StoppingRecordsWhyItsCommandsStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	w, stop := e.startWorker(e.workerConfig())
	token := uniqueSleep(t)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", `echo up; sleep "$0"`, token))
	e.waitFor("the command", func() bool { st, _ := e.client.Command(t.Context(), id); return st.Pid > 0 })
	if err := stop(); err != nil {
		t.Fatalf("worker Run: %v", err)
	}
	st, err := e.client.Command(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != command.StatusExited || !st.Stopped || st.StopReason != command.StopReasonWorkerStopping || st.StopBy != "worker "+w.Identity().ID {
		t.Fatalf("status %s stopped %v stop %q by %q; want exited, stopped by worker %s as it stopped", st.Status, st.Stopped, st.StopReason, st.StopBy, w.Identity().ID)
	}
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		order = append(order, r.Type)
	}
	if i, j := slices.Index(order, "command.stop_requested"), slices.Index(order, "command.exited"); i < 0 || j < i {
		t.Errorf("events %v: want the stop request before the exit", order)
	}
	e.waitFor("the tree to die", func() bool { return len(sandboxtest.ProcessesWith("sleep "+token)) == 0 })
}
