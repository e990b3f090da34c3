package workspace

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// ProjectKeys returns the storage key of each of projects mapped to its
// id: what AddProject takes as the keys already taken.
func ProjectKeys(projects []project.State) map[string]string {
	taken := make(map[string]string, len(projects))
	for _, p := range projects {
		taken[p.Key] = p.ID
	}
	return taken
}

// Filter returns the workspaces of list, in its order, of project pid,
// owned by session owner and in status; an empty argument matches every
// workspace. The result is never nil.
func Filter(list []workspace.State, pid, owner, status string) []workspace.State {
	out := []workspace.State{}
	for _, w := range list {
		if (pid == "" || w.Project == pid) && (owner == "" || w.OwnedBy == owner) && (status == "" || w.Status == status) {
			out = append(out, w)
		}
	}
	return out
}

// TasksIn returns the tasks of list, in its order, delegated to
// workspace id. The result is never nil.
func TasksIn(list []task.State, id string) []task.State {
	out := []task.State{}
	for _, t := range list {
		if t.Workspace == id {
			out = append(out, t)
		}
	}
	return out
}

// FindTask returns the task of list whose id is id, or an error "task
// <id>: …" wrapping events.ErrNotFound.
func FindTask(list []task.State, id string) (task.State, error) {
	for _, t := range list {
		if t.ID == id {
			return t, nil
		}
	}
	return task.State{}, fmt.Errorf("task %s: %w", id, events.ErrNotFound)
}

// Acting returns who acts on a workspace and as what: session, as
// events.ByChat, when it is not ""; else person, as events.ByPerson.
func Acting(session, person string) (by, as string) {
	if session != "" {
		return session, events.ByChat
	}
	return person, events.ByPerson
}

// ArchiveAndClean archives workspace id for by (as: events.ByChat or
// events.ByPerson; see Archive), calls archived with the archived state
// (nil: none), removes its worktree (Cleanup) and returns its state
// after. A failed removal is recorded in the state (Cleanup is
// workspace.CleanupFailed), not returned; errors are Archive's,
// Cleanup's and Workspace's.
func (m *Manager) ArchiveAndClean(ctx context.Context, id, by, as string, archived func(workspace.State)) (workspace.State, error) {
	st, err := m.Archive(ctx, id, by, as)
	if err != nil {
		return st, err
	}
	if archived != nil {
		archived(st)
	}
	if err := m.Cleanup(ctx, st.ID); err != nil {
		return st, err
	}
	return m.Workspace(ctx, st.ID)
}
