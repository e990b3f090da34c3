package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// API verbs of the workspace view.
const (
	VerbWorkspaces  = "workspaces"   // {} → WorkspacesReply
	VerbWorkspaceAt = "workspace.at" // WorkspaceAtRequest → WorkspaceAtReply
)

// WorkspaceSession is a session linked to a workspace (its cwd lies in
// the workspace's path): its id, phase and the time of its last event.
type WorkspaceSession struct {
	ID        string    `json:"id"`
	Phase     string    `json:"phase"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WorkspacesReply is the whole workspace view: every project, workspace
// (oldest first) and task (oldest first), the sessions of each
// workspace by workspace id, most recently active first, and the check
// runs of each workspace that has some, newest first. Stale, when set,
// says it was read while the log did not answer.
type WorkspacesReply struct {
	Projects   []project.State               `json:"projects"`
	Workspaces []workspace.State             `json:"workspaces"`
	Tasks      []task.State                  `json:"tasks"`
	Sessions   map[string][]WorkspaceSession `json:"sessions"`
	Checks     map[string][]check.State      `json:"checks,omitempty"`
	Stale
}

// Workspaces answers VerbWorkspaces from the projection, once it has
// caught up with the log, or, for a request that allows it (AllowStale)
// while the log does not answer, as it stands.
func (s *Service) Workspaces(ctx context.Context, _ []byte) (any, error) {
	stale, err := s.readCaughtUp(ctx)
	if err != nil {
		return nil, err
	}
	r := WorkspacesReply{Stale: stale}
	if r.Projects, err = s.Store.Projects(); err != nil {
		return nil, err
	}
	if r.Workspaces, err = s.Store.Workspaces(); err != nil {
		return nil, err
	}
	if r.Tasks, err = s.Store.Tasks(); err != nil {
		return nil, err
	}
	r.Sessions = map[string][]WorkspaceSession{}
	for _, w := range r.Workspaces {
		runs, err := s.Store.Checks(w.ID)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			if r.Checks == nil {
				r.Checks = map[string][]check.State{}
			}
			r.Checks[w.ID] = runs
		}
		ids, err := s.Store.WorkspaceSessions(w.ID)
		if err != nil {
			return nil, err
		}
		var list []WorkspaceSession
		for _, id := range ids {
			ss := WorkspaceSession{ID: id}
			if st, err := s.Store.Session(id); err == nil {
				ss.Phase, ss.UpdatedAt = st.Phase, st.UpdatedAt
			} else if !errors.Is(err, events.ErrNotFound) {
				return nil, err
			}
			list = append(list, ss)
		}
		slices.SortStableFunc(list, func(a, b WorkspaceSession) int {
			return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
		})
		if len(list) > 0 {
			r.Sessions[w.ID] = list
		}
	}
	return r, nil
}

// WorkspaceAtRequest asks which live workspace holds Path (absolute).
type WorkspaceAtRequest struct {
	Path string `json:"path"`
}

// WorkspaceAtReply answers it: Found, and the workspace.
type WorkspaceAtReply struct {
	Found     bool            `json:"found"`
	Workspace workspace.State `json:"workspace"`
}

// WorkspaceAt answers VerbWorkspaceAt.
func (s *Service) WorkspaceAt(ctx context.Context, data []byte) (any, error) {
	var req WorkspaceAtRequest
	if err := json.Unmarshal(data, &req); err != nil || !filepath.IsAbs(req.Path) {
		return nil, fmt.Errorf("workspace.at request: %w: want an absolute path (%v)", events.ErrMalformed, err)
	}
	if err := s.CaughtUp(ctx); err != nil {
		return nil, err
	}
	ws, ok, err := s.Store.WorkspaceAt(filepath.Clean(req.Path))
	if err != nil {
		return nil, err
	}
	return WorkspaceAtReply{Found: ok, Workspace: ws}, nil
}

// WorkspaceOpen returns nil unless dir lies in a workspace that cannot
// be worked in (initializing, failed, archiving or archived): then the
// error, wrapping events.ErrRejected, says so. dir is looked up with
// the symlinks of its longest existing prefix resolved (a workspace
// still initializing has no folder yet, but its root does). Other errors
// are call's.
func WorkspaceOpen(ctx context.Context, call Caller, dir string) error {
	dir = resolveExisting(dir)
	var r WorkspaceAtReply
	if err := call(ctx, VerbWorkspaceAt, WorkspaceAtRequest{Path: dir}, &r); err != nil {
		return err
	}
	if !r.Found {
		return nil
	}
	return r.Workspace.CanWork()
}

// resolveExisting returns the absolute path p with the symlinks of its
// longest existing prefix resolved: the whole of p when it exists, else
// its parents', the missing rest joined as given.
func resolveExisting(p string) string {
	rest := ""
	for dir := filepath.Clean(p); ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
