package check

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
)

var (
	t0     = time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	cause  = events.Cause{Kind: "cli", Event: "workspace check", Ref: "r1"}
	reg    = events.NewRegistry()
	commit = strings.Repeat("ab", 20)
	tree   = "sha256:" + strings.Repeat("cd", 32)
)

func run(t *testing.T, s State, cmds ...Command) (State, []string) {
	t.Helper()
	return reducertest.Aggregate[State, Command]{
		Kind: events.KindCheck, Reg: reg, Decide: Decide, Evolve: Evolve,
		Pos: func(s State) (string, uint64) { return s.ID, s.Ver },
	}.Run(t, s, cmds...)
}

func spec(clean bool) events.CheckStarted {
	return events.CheckStarted{CheckRunSpec: events.CheckRunSpec{Workspace: "wa", Project: "p1", Command: "make check", Argv: []string{"sh", "-c", "make check"},
		Mode: events.ModeWorkspaceWrite, TimeoutMS: 1000, Commit: commit, Tree: tree, Clean: clean, Fingerprint: commit + ":" + tree,
		Trigger: TriggerPush, By: "person:alice@h", Runner: "h/1/2/r"}}
}

func start(clean bool) Start { return Start{Spec: spec(clean), At: t0, Cause: cause} }

func end(v events.CheckEnded) End { return End{Verdict: v, At: t0.Add(time.Second), Cause: cause} }

func push(sha string) AllowPush {
	return AllowPush{Remote: "origin", Refs: []events.PushRef{{LocalRef: "refs/heads/x", LocalSHA: sha, RemoteRef: "refs/heads/x", RemoteSHA: strings.Repeat("0", 40)}}, At: t0, Cause: cause}
}

func TestDecide_PassAndPush(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindCheck, ID: "c1"})
	s, types := run(t, s, start(true), end(events.CheckEnded{Status: events.CheckPassed, DurationMS: 5, OutputTail: "ok\n"}), push(commit))
	if diff := cmp.Diff([]string{"check.started", "check.ended", "check.push_allowed"}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.Status != events.CheckPassed || !s.Judged("make check", "workspace_write", commit+":"+tree) || len(s.Pushes) != 1 || *s.ExitCode != 0 {
		t.Errorf("state %+v", s)
	}
	if s.Judged("make test", "workspace_write", commit+":"+tree) || s.Judged("make check", "workspace_write", commit+":sha256:"+strings.Repeat("0", 64)) {
		t.Error("judged another command or tree")
	}
	if s.Judged("make check", "read_only", commit+":"+tree) {
		t.Error("judged in another mode")
	}
}

func TestDecide_Refusals(t *testing.T) {
	running, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c1"}), start(true))
	dirty, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c2"}), start(false), end(events.CheckEnded{Status: events.CheckPassed}))
	passed, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c3"}), start(true), end(events.CheckEnded{Status: events.CheckPassed}))
	failed, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c4"}), start(true), end(events.CheckEnded{Status: events.CheckFailed, ExitCode: -1, TimedOut: true}))
	bad := func(f func(*events.CheckStarted)) Start {
		c := start(true)
		f(&c.Spec)
		return c
	}
	for _, tc := range []struct {
		name string
		s    State
		cmd  Command
		want string
	}{
		{"start twice", running, start(true), "it exists"},
		{"no command", Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), bad(func(s *events.CheckStarted) { s.Command = " " }), "no command"},
		{"full access", Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), bad(func(s *events.CheckStarted) { s.Mode = events.ModeFullAccess }), "mode"},
		{"no timeout", Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), bad(func(s *events.CheckStarted) { s.TimeoutMS = 0 }), "timeout"},
		{"bad commit", Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), bad(func(s *events.CheckStarted) { s.Commit = "HEAD" }), "commit"},
		{"bad fingerprint", Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), bad(func(s *events.CheckStarted) { s.Fingerprint = "x" }), "fingerprint"},
		{"timed out passes", running, end(events.CheckEnded{Status: events.CheckPassed, TimedOut: true}), "passed with"},
		{"timed out cancelled", running, end(events.CheckEnded{Status: events.CheckCancelled, TimedOut: true}), "timed out yet cancelled"},
		{"pass with exit 1", running, end(events.CheckEnded{Status: events.CheckPassed, ExitCode: 1}), "passed with exit status 1"},
		{"fail with exit 0", running, end(events.CheckEnded{Status: events.CheckFailed}), "failed with exit status 0"},
		{"error without reason", running, end(events.CheckEnded{Status: events.CheckError, ExitCode: -1}), "error without a reason"},
		{"unknown status", running, end(events.CheckEnded{Status: "ok"}), "status \"ok\""},
		{"end twice", passed, end(events.CheckEnded{Status: events.CheckFailed, ExitCode: 1}), "it has ended"},
		{"cancel ended", passed, Cancel{By: "p", At: t0, Cause: cause}, "it has ended"},
		{"push while running", running, push(commit), "it is running, not passed"},
		{"push on failed", failed, push(commit), "it is failed, not passed"},
		{"push of a dirty tree", dirty, push(commit), "uncommitted changes"},
		{"push of another commit", passed, push(strings.Repeat("12", 20)), "the run judged"},
		{"push of a deletion", passed, push(strings.Repeat("0", 40)), "the run judged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decide(tc.s, tc.cmd)
			if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrRejected saying %q", err, tc.want)
			}
		})
	}
	if _, err := Decide(Init(events.Aggregate{Kind: events.KindCheck, ID: "n"}), Cancel{By: "p"}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("cancel of nothing: %v", err)
	}
}

func TestDecide_CancelOnce(t *testing.T) {
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c1"}), start(true), Cancel{By: "person:bob@h", At: t0, Cause: cause})
	if s.CancelBy != "person:bob@h" || s.Status != events.CheckRunning {
		t.Errorf("state %+v", s)
	}
	if _, err := Decide(s, Cancel{By: "person:bob@h", At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("second cancel: %v", err)
	}
	s, _ = run(t, s, end(events.CheckEnded{Status: events.CheckCancelled, ExitCode: -1, Reason: "cancelled by person:bob@h"}))
	if s.Status != events.CheckCancelled {
		t.Errorf("status %s", s.Status)
	}
}

// TestEvolve_SpecIsTheEvents: a started run's spec is check.started's own
// (one type, events.CheckRunSpec), its argv a copy, and the row's JSON
// keeps the spec's fields flat, beside id, ver and status.
func TestEvolve_SpecIsTheEvents(t *testing.T) {
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c1"}), start(true))
	if diff := cmp.Diff(spec(true).CheckRunSpec, s.CheckRunSpec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var row map[string]any
	if err := json.Unmarshal(b, &row); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "ver", "workspace", "project", "command", "argv", "mode", "timeout_ms", "commit", "tree", "clean", "fingerprint", "trigger", "by", "runner", "status"} {
		if _, ok := row[k]; !ok {
			t.Errorf("row %s has no %q", b, k)
		}
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(s, back) {
		t.Errorf("round trip: %v\n%s", err, cmp.Diff(s, back))
	}
}

// TestDecide_Vanish: a run whose runner vanished ends error (never
// passed or failed) only once its start, timeout and grace have passed.
func TestDecide_Vanish(t *testing.T) {
	running, _ := run(t, Init(events.Aggregate{Kind: events.KindCheck, ID: "c1"}), start(true)) // timeout 1s
	vanish := func(at time.Duration, evidence string) Vanish {
		return Vanish{Grace: 2 * time.Second, Evidence: evidence, At: t0.Add(at), Cause: cause}
	}
	for _, tc := range []struct {
		name string
		cmd  Vanish
		want string
	}{
		{"before the deadline", vanish(2999*time.Millisecond, "runner gone"), "may still record a verdict until 2026-12-03T06:00:03Z"},
		{"no evidence", vanish(time.Hour, ""), "needs evidence"},
	} {
		if _, err := Decide(running, tc.cmd); !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	s, types := run(t, running, vanish(3*time.Second, "its runner h/1/2/r is gone"))
	if diff := cmp.Diff([]string{"check.ended"}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := "runner vanished: no verdict by 2026-12-03T06:00:03Z (start 2026-12-03T06:00:00Z, timeout 1s, grace 2s): its runner h/1/2/r is gone"
	if s.Status != events.CheckError || *s.ExitCode != -1 || s.TimedOut || s.Reason != want || s.DurationMS != 3000 {
		t.Errorf("state %+v, want error with reason %q", s, want)
	}
	if _, err := Decide(s, vanish(time.Hour, "gone")); !errors.Is(err, events.ErrRejected) {
		t.Errorf("vanish after the end: %v", err)
	}
}
