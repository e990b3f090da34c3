package natslog

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestAttest_WorkerRole appends, signed by worker keys straight to the
// stream as a worker host can, what a worker does for the commands it
// runs (their start, process, exit, their entries on the session, a stop
// for the session's end, a refusal, a dead worker's command abandoned),
// among what a worker's credentials and key let it forge: a session's
// end whose cause names no command, a phase move or a mode change of
// its own, an entry that is not a command's, a close that moves a
// session waiting on a person, another key's command started again or
// run, a command no key started abandoned, a stop for no end of its
// session. Every reader (a read from the start,
// from the middle, a load of each aggregate, a Judger) folds the first
// and quarantines the others as out of the worker's role.
func TestAttest_WorkerRole(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	w1 := mustKey(t, "worker@h1", attestation.RoleWorker)
	w2 := mustKey(t, "worker@h2", attestation.RoleWorker)
	s, admin, l := startSigning(t, serve, w1, w2)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	ctx := t.Context()
	sess := session("s")
	cmdAgg := func(id string) events.Aggregate { return events.Aggregate{Kind: events.KindCommand, ID: id} }

	last := map[events.Aggregate]uint64{}
	ver := map[events.Aggregate]uint64{}
	app := mustAppend(t, l, decision(reg, sess, 0, 1, 1))
	last[sess], ver[sess] = app.Last, 1
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		a := cmdAgg(id)
		e := envelope(reg, a, 1, events.CommandRequested{Session: "s", Argv: []string{"go", "test"}, Workspace: "/work", Mode: events.ModeReadOnly, RequestedBy: "claude-code"})
		app := mustAppend(t, l, events.Batch{Agg: a, Events: []events.Envelope{e}})
		last[a], ver[a] = app.Last, 1
	}

	want := map[uint64]bool{} // seq → quarantined
	var first uint64
	put := func(k *attestation.Key, agg events.Aggregate, c events.Cause, p events.Payload, out bool) {
		t.Helper()
		e := envelope(reg, agg, ver[agg]+1, p)
		e.Cause = &c
		seq := forge(t, s.Conn(), e, last[agg], k, nil)
		last[agg] = seq
		if !out {
			ver[agg]++
		}
		want[seq] = out
		if first == 0 {
			first = seq
		}
	}
	const in, out = false, true
	started := events.Cause{Kind: "worker", Event: "command.started", Detail: "c1", Ref: "c1"}
	exited := events.Cause{Kind: "worker", Event: "command.exited", Detail: "c1", Ref: "01M93P00000000000000000009"}

	put(w1, cmdAgg("c1"), events.Cause{Kind: "worker", Event: "command.requested", Detail: "w1", Ref: "c1"}, events.CommandStarted{Worker: "w1", Host: "h1"}, in)
	put(w2, cmdAgg("c1"), events.Cause{Kind: "worker", Event: "command.requested", Detail: "w2", Ref: "c1"}, events.CommandStarted{Worker: "w2", Host: "h2"}, out)
	put(w1, sess, started, events.SessionEntryOpened{EntryID: "cmd-c1", Activity: "command:go", Lane: events.LaneBackground,
		Moves: &events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "background", EntryID: "cmd-c1"}}, in)
	put(w1, cmdAgg("c1"), events.Cause{Kind: "worker", Event: "process.started", Detail: "pid 7", Ref: "01M93P00000000000000000008"}, events.CommandRunning{Pid: 7}, in)
	put(w2, cmdAgg("c1"), events.Cause{Kind: "worker", Event: "stdin", Detail: "w2", Ref: "c1"}, events.CommandStdinWritten{Bytes: 1}, out)
	put(w1, cmdAgg("c1"), events.Cause{Kind: "worker", Event: "process.exited", Detail: "exit 0", Ref: "01M93P00000000000000000008"}, events.CommandExited{}, in)
	put(w1, sess, exited, events.SessionEntryClosed{EntryID: "cmd-c1", Outcome: events.OutcomeOK}, in)
	put(w1, sess, exited, events.SessionActivityChanged{From: "background", To: "thinking"}, in)
	// The forgery the README's worker must not make: a session's end
	// caused by a command that is not there.
	put(w1, sess, events.Cause{Kind: "worker", Event: "command.exited", Ref: "01M93P00000000000000000002"},
		events.SessionEnded{From: events.PhaseWorking, Reason: "prompt_input_exit", Evidence: "the user closed the session"}, out)
	put(w1, sess, exited, events.SessionTransitioned{From: events.PhaseWorking, To: events.PhaseReady}, out)
	put(w1, sess, started, events.SessionModeChanged{From: "default", To: "bypassPermissions"}, out)
	put(w1, sess, events.Cause{Kind: "worker", Event: "command.started", Detail: "t1", Ref: "t1"}, events.SessionEntryOpened{EntryID: "toolu_1", Activity: "tool:Bash", Lane: events.LaneMain}, out)
	put(w1, sess, events.Cause{Kind: "hook", Event: "Stop", Ref: "h1"}, events.SessionEntryClosed{EntryID: "cmd-c1", Outcome: events.OutcomeOK}, out)
	put(w1, sess, exited, events.SessionEntryClosed{EntryID: "cmd-c1", Outcome: events.OutcomeOK,
		Moves: &events.SessionTransitioned{From: events.PhaseWaiting, To: events.PhaseReady}}, out)

	put(w1, cmdAgg("c2"), events.Cause{Kind: "worker", Event: "command.requested", Detail: "w1", Ref: "c2"}, events.CommandStarted{Worker: "w1", Host: "h1"}, in)
	put(w2, cmdAgg("c2"), events.Cause{Kind: "worker", Event: "process.started", Detail: "pid 8", Ref: "x"}, events.CommandRunning{Pid: 8}, out)
	put(w2, cmdAgg("c2"), events.Cause{Kind: "worker", Event: "command.stopped", Detail: "w2", Ref: "c2"}, events.CommandStopRequested{By: "w2", Reason: "user"}, out)
	put(w2, cmdAgg("c2"), events.Cause{Kind: "session", Event: "session.ended", Detail: "x", Ref: "e1"}, events.CommandStopRequested{By: "session other", Reason: "session_ended"}, out)
	put(w2, cmdAgg("c2"), events.Cause{Kind: "session", Event: "session.ended", Detail: "x", Ref: "e1"}, events.CommandStopRequested{By: "session s", Reason: "session_ended"}, in)
	put(w2, cmdAgg("c2"), events.Cause{Kind: "worker", Event: "worker.dead", Detail: "gone", Ref: "w1"}, events.CommandAbandoned{Reason: "gone", Worker: "w1"}, in)

	put(w2, cmdAgg("c3"), events.Cause{Kind: "worker", Event: "worker.dead", Detail: "gone", Ref: "w1"}, events.CommandAbandoned{Reason: "gone", Worker: "w1"}, out)
	put(w2, cmdAgg("c3"), events.Cause{Kind: "worker", Event: "sandbox.check", Detail: "w2", Ref: "c3"}, events.CommandRefused{Reason: "not found"}, in)

	// A session's end stops a command no worker took and refuses it,
	// both caused by the end: any worker's control feed appends them.
	// Once a key started a command, the end's refusal is not a worker's.
	ended := events.Cause{Kind: "session", Event: "session.ended", Detail: "x", Ref: "e1"}
	put(w2, cmdAgg("c4"), ended, events.CommandStopRequested{By: "session s", Reason: "session_ended"}, in)
	put(w2, cmdAgg("c4"), ended, events.CommandRefused{Reason: "stopped by session s before it started"}, in)
	put(w1, cmdAgg("c5"), events.Cause{Kind: "worker", Event: "command.requested", Detail: "w1", Ref: "c5"}, events.CommandStarted{Worker: "w1", Host: "h1"}, in)
	put(w2, cmdAgg("c5"), ended, events.CommandRefused{Reason: "stopped by session s"}, out)
	// A worker stopping itself stops the commands its own key started,
	// by "worker <id>"; not another key's, nor by another name.
	stopping := events.Cause{Kind: "worker", Event: attestation.WorkerStopping, Detail: "w1", Ref: "c5"}
	put(w2, cmdAgg("c5"), stopping, events.CommandStopRequested{By: "worker w2", Reason: "worker_stopping"}, out)
	put(w1, cmdAgg("c5"), stopping, events.CommandStopRequested{By: "person:root@h", Reason: "worker_stopping"}, out)
	put(w1, cmdAgg("c5"), stopping, events.CommandStopRequested{By: "worker w1", Reason: "worker_stopping"}, in)
	put(w1, cmdAgg("c5"), events.Cause{Kind: "worker", Event: "process.exited", Detail: "signal SIGTERM", Ref: "01M93P00000000000000000008"}, events.CommandExited{Signal: "SIGTERM", Stopped: true}, in)
	put(w1, cmdAgg("c6"), stopping, events.CommandStopRequested{By: "worker w1", Reason: "worker_stopping"}, out)

	check := func(name string, qs []Quarantined) {
		t.Helper()
		got := map[uint64]attestation.Status{}
		for _, q := range qs {
			got[q.Seq] = q.Verdict.Status
		}
		wantQ := map[uint64]attestation.Status{}
		for seq, q := range want {
			if q {
				wantQ[seq] = attestation.OutOfRole
			}
		}
		if diff := cmp.Diff(wantQ, got); diff != "" {
			t.Errorf("%s: quarantined (-want +got):\n%s", name, diff)
		}
	}
	for _, from := range []uint64{1, first + 3} {
		r := signedLog(t, s, admin)
		for rec := range r.Read(ctx, from) {
			if want[rec.Seq] {
				t.Errorf("Read(%d) folded seq %d (%s)", from, rec.Seq, rec.Type)
			}
		}
		qs, _ := r.Quarantined()
		var seen []Quarantined
		for _, q := range qs {
			if q.Seq >= from {
				seen = append(seen, q)
			}
		}
		if from == 1 {
			check("Read(1)", seen)
		}
		for _, q := range seen {
			if !want[q.Seq] {
				t.Errorf("Read(%d) quarantined seq %d: %s", from, q.Seq, q.Verdict.Why)
			}
		}
	}
	lo := signedLog(t, s, admin)
	for agg := range last {
		recs, _, err := lo.Load(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		if n := uint64(len(recs)); n != ver[agg] {
			t.Errorf("Load(%s) = %d events, want %d", agg, n, ver[agg])
		}
	}
	qs, _ := lo.Quarantined()
	check("Load", qs)
	j := l.NewJudger(admin.Public())
	if err := j.CatchUp(ctx, lastSeq(t, l)); err != nil {
		t.Fatal(err)
	}
	var jq []Quarantined
	for seq, vd := range j.Quarantined() {
		jq = append(jq, Quarantined{Seq: seq, Verdict: vd})
	}
	check("Judger", jq)
}
