package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/internal/words"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
	"github.com/logbook-dev/logbook/sandbox"
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
// after. Unless force is set, a workspace whose worktree holds work not
// committed (Uncommitted) is refused first, with events.ErrRejected
// naming the paths, and nothing is recorded: the removal would lose it.
// A failed removal is recorded in the state (Cleanup is
// workspace.CleanupFailed), not returned; errors are Archive's,
// Cleanup's and Workspace's.
func (m *Manager) ArchiveAndClean(ctx context.Context, id, by, as string, force bool, archived func(workspace.State)) (workspace.State, error) {
	if !force {
		st, err := m.Workspace(ctx, id)
		if err != nil {
			return st, fmt.Errorf("workspace archive: %w", err)
		}
		// Who may archive it is said first: a session that does not
		// own it learns nothing of its work.
		probe := workspace.Archive{By: by, As: as, At: m.now()}
		if d, err := workspace.Decide(st, probe); err != nil {
			return st, fmt.Errorf("workspace archive: %w", err)
		} else if len(d) > 0 && st.Status != workspace.StatusArchiving {
			u, err := m.Uncommitted(ctx, st)
			if err != nil {
				return st, fmt.Errorf("workspace archive: %w: what workspace %s holds not committed is unknown (%v): pass --force to archive it and remove its worktree as it is", events.ErrRejected, id, err)
			}
			if len(u) > 0 {
				return st, fmt.Errorf("workspace archive: %w: workspace %s holds work not committed, which removing its worktree would lose (%s): commit it, or pass --force to archive it and remove that work with it", events.ErrRejected, id, uncommittedList(u))
			}
			n, head, err := m.OffBranch(ctx, st)
			if err != nil {
				return st, fmt.Errorf("workspace archive: %w: whether workspace %s holds commits on no branch is unknown (%v): pass --force to archive it and remove its worktree as it is", events.ErrRejected, id, err)
			}
			if n > 0 {
				return st, fmt.Errorf("workspace archive: %w: workspace %s holds %s on no branch (HEAD is detached at %s), which only its worktree's reflog keeps: put them on a branch (git branch NAME %s), or pass --force to archive it and lose them", events.ErrRejected, id, words.Plural(n, "commit"), head, head)
			}
		}
	}
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

// Uncommitted returns the paths of workspace st's worktree that hold
// work its branch does not: tracked files changed, staged, deleted or
// in conflict, and untracked files git does not ignore, each as
// `git status --porcelain` gives it (its two status letters, a space,
// the path: "M  a", "?? new"), in git's order. None when the folder is
// gone. Errors are git's.
func (m *Manager) Uncommitted(ctx context.Context, st workspace.State) ([]string, error) {
	if st.Path == "" {
		return nil, nil
	}
	if _, err := os.Stat(st.Path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out, err := git(ctx, st.Path, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range strings.Split(out, "\x00") {
		if e != "" && !placeholder(st.Path, e) {
			paths = append(paths, e)
		}
	}
	return paths, nil
}

// placeholder reports whether entry, a `git status --porcelain` line of
// the worktree at dir, is an untracked empty file at a top-level name
// the sandbox keeps (sandbox.ProtectedNames: .mcp.json, .envrc): the
// mount point a running restricted command's boundary made, gone when
// it ends, which holds no work.
func placeholder(dir, entry string) bool {
	name, ok := strings.CutPrefix(entry, "?? ")
	return ok && emptyPlaceholder(dir, name)
}

// emptyPlaceholder reports whether name, a path in the worktree at dir,
// is a top-level name the sandbox keeps (sandbox.ProtectedNames) that
// holds an empty regular file: what a running restricted command's
// boundary leaves there while it runs.
func emptyPlaceholder(dir, name string) bool {
	if !slices.Contains(sandbox.ProtectedNames(), name) {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// uncommittedList is how a refusal names Uncommitted's paths: their
// count and the first five, each quoted.
func uncommittedList(u []string) string {
	const shown = 5
	q := make([]string, 0, shown)
	for _, p := range u[:min(len(u), shown)] {
		q = append(q, strconv.Quote(p))
	}
	more := ""
	if len(u) > shown {
		more = fmt.Sprintf(", and %d more", len(u)-shown)
	}
	noun := "paths"
	if len(u) == 1 {
		noun = "path"
	}
	return fmt.Sprintf("%d %s: %s%s", len(u), noun, strings.Join(q, ", "), more)
}

// OffBranch returns how many commits workspace st's HEAD holds that no
// branch, tag or remote-tracking branch does (a detached HEAD's own
// commits, which removing the worktree and its reflog would lose), and
// HEAD's short id; 0 when the folder is gone or HEAD is on a branch.
// Errors are git's.
func (m *Manager) OffBranch(ctx context.Context, st workspace.State) (int, string, error) {
	if st.Path == "" {
		return 0, "", nil
	}
	if _, err := os.Stat(st.Path); errors.Is(err, os.ErrNotExist) {
		return 0, "", nil
	}
	if _, err := git(ctx, st.Path, "symbolic-ref", "-q", "HEAD"); err == nil {
		return 0, "", nil // on a branch: its commits stay with it
	}
	head, err := git(ctx, st.Path, "rev-parse", "--short", "HEAD")
	if err != nil {
		return 0, "", err
	}
	out, err := git(ctx, st.Path, "rev-list", "--count", "HEAD", "--not", "--branches", "--tags", "--remotes")
	if err != nil {
		return 0, "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, "", fmt.Errorf("git rev-list --count: %q", out)
	}
	return n, head, nil
}
