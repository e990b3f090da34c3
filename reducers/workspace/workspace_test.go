package workspace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
)

var (
	t0    = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cause = events.Cause{Kind: "cli", Event: "workspace", Ref: "r1"}
	reg   = events.NewRegistry()
)

// run decides each command in turn, folding what it decides, and
// returns the state and the event types; it fails on a refusal.
func run(t *testing.T, s State, cmds ...Command) (State, []string) {
	t.Helper()
	return reducertest.Aggregate[State, Command]{
		Kind: events.KindWorkspace, Reg: reg, Decide: Decide, Evolve: Evolve,
		Pos: func(s State) (string, uint64) { return s.ID, s.Ver },
	}.Run(t, s, cmds...)
}

func reserve(owner string) Reserve {
	named := events.ByPerson
	if owner != "" {
		named = events.ByChat
	}
	return Reserve{Project: "p1", Name: "Fix bug", Key: "fix-bug", Path: "/ws/repo/fix-bug", Branch: "worktree/fix-bug",
		OwnedBy: owner, NamedBy: named, Runner: "r1", At: t0, Cause: cause}
}

func step(runner string, p events.Payload) Step {
	return Step{Runner: runner, Event: p, At: t0, Cause: cause}
}

func TestDecide_Materialize(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w1"})
	s, types := run(t, s, reserve("s1"), reserve("s1"),
		step("r1", events.WorkspaceBaseResolved{Runner: "r1", Ref: "origin/main", Commit: "abc", Fetched: true}),
		step("r1", events.WorkspaceWorktreeAdded{Runner: "r1", Path: "/ws/repo/fix-bug", Branch: "worktree/fix-bug", Commit: "abc"}),
		step("r1", events.WorkspaceSynced{Runner: "r1", Files: []string{".env"}}),
		step("r1", events.WorkspaceSetupRan{Runner: "r1", Index: 0, Argv: []string{"make"}}),
		step("r1", events.WorkspaceReady{Runner: "r1"}))
	want := []string{"workspace.reserved", "workspace.base_resolved", "workspace.worktree_added", "workspace.synced", "workspace.setup_ran", "workspace.ready"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.Status != StatusReady || s.BaseCommit != "abc" || !s.Worktree || s.SetupRan != 1 || s.CanWork() != nil {
		t.Errorf("state %+v", s)
	}
	// No step after ready.
	if _, err := Decide(s, step("r1", events.WorkspaceFailed{Runner: "r1", Step: "x", Reason: "y"})); !errors.Is(err, events.ErrRejected) {
		t.Errorf("fail after ready: %v", err)
	}
	// Another project under the same id is refused.
	other := reserve("s1")
	other.Project = "p2"
	if _, err := Decide(s, other); !errors.Is(err, events.ErrRejected) {
		t.Errorf("same id, other project: %v", err)
	}
}

func TestDecide_Resume(t *testing.T) {
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w1"}), reserve(""))
	if err := s.CanWork(); !errors.Is(err, events.ErrRejected) {
		t.Errorf("initializing can work: %v", err)
	}
	s, types := run(t, s, Resume{Runner: "r2", At: t0, Cause: cause}, Resume{Runner: "r2", At: t0, Cause: cause})
	if diff := cmp.Diff([]string{"workspace.resumed"}, types); diff != "" {
		t.Errorf("resume (-want +got):\n%s", diff)
	}
	// The old runner's steps are refused; the new one's land.
	if _, err := Decide(s, step("r1", events.WorkspaceReady{Runner: "r1"})); !errors.Is(err, events.ErrRejected) {
		t.Errorf("old runner's step: %v", err)
	}
	if _, err := Decide(s, step("r2", events.WorkspaceReady{Runner: "r1"})); !errors.Is(err, events.ErrRejected) {
		t.Errorf("step naming another runner: %v", err)
	}
	s, _ = run(t, s, step("r2", events.WorkspaceFailed{Runner: "r2", Step: "recover", Reason: "gone"}))
	if s.Status != StatusFailed || s.FailStep != "recover" {
		t.Errorf("state %+v", s)
	}
}

func TestDecide_ArchiveOwnership(t *testing.T) {
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w1"}), reserve("s1"))
	if _, err := Decide(s, Archive{By: "s2", As: events.ByChat, At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("another session archives: %v", err)
	}
	// The owner archives while it is initializing: the rest of the
	// materialization is refused.
	s, types := run(t, s, Archive{By: "s1", As: events.ByChat, At: t0, Cause: cause}, Archive{By: "s1", As: events.ByChat, At: t0, Cause: cause})
	if diff := cmp.Diff([]string{"workspace.archiving"}, types); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
	if _, err := Decide(s, step("r1", events.WorkspaceReady{Runner: "r1"})); !errors.Is(err, events.ErrRejected) {
		t.Errorf("ready after archive: %v", err)
	}
	if _, err := Decide(s, Clean{At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("clean before archived: %v", err)
	}
	s, types = run(t, s, FinishArchive{At: t0, Cause: cause}, FinishArchive{At: t0, Cause: cause},
		Clean{Step: "worktree", Err: "busy", At: t0, Cause: cause})
	if diff := cmp.Diff([]string{"workspace.archived", "workspace.cleanup_failed"}, types); diff != "" {
		t.Errorf("finish (-want +got):\n%s", diff)
	}
	if s.Status != StatusArchived || s.Cleanup != CleanupFailed || s.ArchivedBy != "s1" {
		t.Errorf("a failed cleanup leaves it archived: %+v", s)
	}
	// A person may archive a workspace a session owns.
	p, _ := run(t, Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w2"}), reserve("s1"), Archive{By: "s9", As: events.ByPerson, At: t0, Cause: cause})
	if p.Status != StatusArchiving || p.ArchivedAs != events.ByPerson || p.ArchivedBy != "" {
		t.Errorf("person archive: %+v", p)
	}
	// A session may not archive one a person made.
	q, _ := run(t, Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w3"}), reserve(""))
	if _, err := Decide(q, Archive{By: "s1", As: events.ByChat, At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("session archives a person's workspace: %v", err)
	}
}

func TestDecide_Rename(t *testing.T) {
	ph := reserve("s1")
	ph.Placeholder = true
	s, _ := run(t, Init(events.Aggregate{Kind: events.KindWorkspace, ID: "w1"}), ph)
	// The first session that names itself names the workspace; the next does not.
	s, types := run(t, s,
		Rename{Name: "Login form", Branch: "worktree/login-form", NamedBy: events.ByChat, Session: "s1", At: t0, Cause: cause},
		Rename{Name: "Other", Branch: "worktree/other", NamedBy: events.ByChat, Session: "s2", At: t0, Cause: cause})
	if len(types) != 1 || s.Name != "Login form" || s.Branch != "worktree/login-form" || s.Key != "fix-bug" || s.Path != "/ws/repo/fix-bug" {
		t.Errorf("after renames %v: %+v", types, s)
	}
	// A person's name is never replaced by a session's.
	s, _ = run(t, s, Rename{Name: "Mine", Branch: "worktree/mine", NamedBy: events.ByPerson, At: t0, Cause: cause})
	s, types = run(t, s, Rename{Name: "Chat", Branch: "worktree/chat", NamedBy: events.ByChat, Session: "s1", At: t0, Cause: cause})
	if len(types) != 0 || s.Name != "Mine" || s.NamedBy != events.ByPerson {
		t.Errorf("chat replaced a person's name: %v %+v", types, s)
	}
}

func TestDecide_NotFound(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindWorkspace, ID: "nope"})
	for _, cmd := range []Command{Archive{As: events.ByPerson}, Rename{Name: "x", Branch: "y"}, Resume{Runner: "r"}} {
		if _, err := Decide(s, cmd); !errors.Is(err, events.ErrNotFound) {
			t.Errorf("%T on nothing: %v", cmd, err)
		}
	}
}

// TestDecide_ReserveArchivedID: reserving the id of a workspace that is
// archiving or archived is refused, never answered as done.
func TestDecide_ReserveArchivedID(t *testing.T) {
	for _, status := range []string{StatusArchiving, StatusArchived} {
		s := State{ID: "w1", Ver: 9, Project: "p1", Status: status}
		_, err := Decide(s, Reserve{Project: "p1", Name: "again", Key: "k", Path: "/x", Branch: "b", NamedBy: events.ByPerson, Runner: "r"})
		if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), status) {
			t.Errorf("%s: %v, want rejected naming it", status, err)
		}
	}
}
