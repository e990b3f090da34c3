package projections_test

import (
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// workspaceLog is a small log of a project, two workspaces, a task and
// sessions working in and outside them.
func workspaceLog(t *testing.T) []events.Record {
	t.Helper()
	reg := events.NewRegistry()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cause := &events.Cause{Kind: "cli", Event: "test", Ref: "r"}
	vers := map[events.Aggregate]uint64{}
	var recs []events.Record
	add := func(kind, id string, p events.Payload) {
		agg := events.Aggregate{Kind: kind, ID: id}
		vers[agg]++
		e := reg.New(p)
		e.ID = ulid.Make()
		e.Agg, e.Ver, e.At, e.Cause = agg, vers[agg], at.Add(time.Duration(len(recs))*time.Second), cause
		if err := reg.Validate(e); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, events.Record{Seq: uint64(len(recs) + 1), Subject: agg.Subject(), Envelope: e})
	}
	add(events.KindProject, "p1", events.ProjectAdded{Name: "shop", Key: "shop", Path: "/src/shop", Trunk: "main"})
	add(events.KindProject, "p1", events.ProjectKeyReserved{Workspace: "w1", Key: "a"})
	add(events.KindWorkspace, "w1", events.WorkspaceReserved{Project: "p1", Name: "A", Key: "a", Path: "/ws/shop/a", Branch: "worktree/a", NamedBy: events.ByPerson, Runner: "r"})
	add(events.KindWorkspace, "w1", events.WorkspaceReady{Runner: "r"})
	add(events.KindWorkspace, "w2", events.WorkspaceReserved{Project: "p1", Name: "B", Key: "b", Path: "/ws/shop/b", Branch: "worktree/b", NamedBy: events.ByPerson, Runner: "r"})
	add(events.KindSession, "s1", events.SessionStarted{Agent: "claude-code", Cwd: "/ws/shop/a/src"})
	add(events.KindSession, "s2", events.SessionStarted{Agent: "claude-code", Cwd: "/elsewhere"})
	add(events.KindSession, "s3", events.SessionStarted{Agent: "claude-code", Cwd: "/ws/shop/b"})
	add(events.KindSession, "s3", events.SessionDescribed{Cwd: "/ws/shop/a"})
	add(events.KindTask, "t1", events.TaskDelegated{Workspace: "w1", Parent: "s0", Title: "fix"})
	add(events.KindTask, "t1", events.TaskRunning{Session: "s1"})
	add(events.KindWorkspace, "w2", events.WorkspaceArchiving{ByKind: events.ByPerson})
	add(events.KindWorkspace, "w2", events.WorkspaceArchived{})
	return recs
}

func TestWorkspaceView(t *testing.T) {
	t.Parallel()
	recs := workspaceLog(t)
	var hashes []string
	for _, size := range []int{1, 3, 0} {
		s := open(t, t.TempDir(), projections.Options{})
		apply(t, s, recs, size)
		hashes = append(hashes, hash(t, s, uint64(len(recs))))
		if size != 0 {
			continue
		}
		ws, err := s.Workspaces()
		if err != nil || len(ws) != 2 || ws[0].ID != "w1" || ws[0].Status != workspace.StatusReady || ws[1].Status != workspace.StatusArchived {
			t.Fatalf("workspaces = %+v, %v", ws, err)
		}
		ps, err := s.Projects()
		if err != nil || len(ps) != 1 || ps[0].Keys["a"] != "w1" {
			t.Fatalf("projects = %+v, %v", ps, err)
		}
		got, err := s.WorkspaceSessions("w1")
		if err != nil || len(got) != 2 || got[0] != "s1" || got[1] != "s3" {
			t.Errorf("sessions of w1 = %v, %v", got, err)
		}
		if got, _ := s.WorkspaceSessions("w2"); len(got) != 0 {
			t.Errorf("sessions of w2 = %v: s3 moved to w1", got)
		}
		if _, err := s.SessionWorkspace("s2"); err == nil {
			t.Errorf("s2 works outside every workspace, yet it has a link")
		}
		if w, ok, err := s.WorkspaceAt("/ws/shop/a/deep/dir"); err != nil || !ok || w.ID != "w1" {
			t.Errorf("WorkspaceAt = %v %v %v", w.ID, ok, err)
		}
		if _, ok, _ := s.WorkspaceAt("/ws/shop/b"); ok {
			t.Errorf("an archived workspace is still found by path")
		}
		tk, err := s.Task("t1")
		if err != nil || tk.Status != task.StatusRunning || tk.Session != "s1" {
			t.Errorf("task = %+v, %v", tk, err)
		}
	}
	if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
		t.Errorf("batch sizes 1, 3, all give hashes %v", hashes)
	}
}
