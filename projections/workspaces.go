package projections

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// Keys of the workspace view.
const (
	// ProjectRowPrefix prefixes project rows: workspaces/project/<id> =
	// JSON of project.State.
	ProjectRowPrefix = "workspaces/project/"
	// WorkspaceRowPrefix prefixes workspace rows: workspaces/ws/<id> =
	// JSON of workspace.State.
	WorkspaceRowPrefix = "workspaces/ws/"
	// TaskRowPrefix prefixes task rows: workspaces/task/<id> = JSON of
	// task.State.
	TaskRowPrefix = "workspaces/task/"
	// SessionLinkPrefix prefixes session links:
	// workspaces/session/<session> = JSON of WorkspaceLink.
	SessionLinkPrefix = "workspaces/session/"
	// WorkspacePathPrefix prefixes the path index:
	// workspaces-path/<absolute path> = workspace id, for every
	// workspace not archived.
	WorkspacePathPrefix = "workspaces-path/"
	// WorkspaceSessionsPrefix prefixes the sessions of a workspace:
	// workspaces-sessions/<workspace>/<session>, empty value.
	WorkspaceSessionsPrefix = "workspaces-sessions/"
	// CheckRowPrefix prefixes check run rows: workspaces/check/<id> =
	// JSON of check.State.
	CheckRowPrefix = "workspaces/check/"
	// WorkspaceChecksPrefix prefixes the check runs of a workspace:
	// workspaces-checks/<workspace>/<run id>, empty value.
	WorkspaceChecksPrefix = "workspaces-checks/"
)

// WorkspaceLink is the workspace a session works in: the session's cwd
// as last reported and the workspace whose path holds it. Only sessions
// linked to a workspace have one.
type WorkspaceLink struct {
	Cwd       string `json:"cwd"`
	Workspace string `json:"workspace"`
}

// WorkspaceView is the "workspaces" view, schema version 2: one row per
// project, workspace, task and check run aggregate holding the JSON of its reducer's
// State, kept by folding each record with the reducer's Evolve; the path
// index of live workspaces; and the link of each session whose cwd lies
// in a workspace's path, from the cwd of session.started and
// session.described; and the index of each workspace's check runs. A session whose cwd was reported before its
// workspace was reserved is not linked. Rows hold facts only, so they
// take part in the state hash.
type WorkspaceView struct{}

var _ View = WorkspaceView{}

// Name implements View: "workspaces".
func (WorkspaceView) Name() string { return "workspaces" }

// Version implements View. Bump it when a row's JSON or the keys change.
func (WorkspaceView) Version() int { return 3 } // 2: check runs; 3: a check run row's spec fields before its status

// Apply implements View.
func (WorkspaceView) Apply(tx *Tx, r events.Record) error {
	switch r.Agg.Kind {
	case events.KindProject:
		return foldRow(tx, ProjectRowPrefix+r.Agg.ID, project.Init(r.Agg), func(s project.State) project.State { return project.Evolve(s, r.Envelope) })
	case events.KindTask:
		return foldRow(tx, TaskRowPrefix+r.Agg.ID, task.Init(r.Agg), func(s task.State) task.State { return task.Evolve(s, r.Envelope) })
	case events.KindCheck:
		if err := foldRow(tx, CheckRowPrefix+r.Agg.ID, check.Init(r.Agg), func(s check.State) check.State { return check.Evolve(s, r.Envelope) }); err != nil {
			return err
		}
		if d, ok := r.Data.(events.CheckStarted); ok {
			return tx.Set(WorkspaceChecksPrefix+d.Workspace+"/"+r.Agg.ID, nil)
		}
		return nil
	case events.KindWorkspace:
		var before, after workspace.State
		err := foldRow(tx, WorkspaceRowPrefix+r.Agg.ID, workspace.Init(r.Agg), func(s workspace.State) workspace.State {
			before, after = s, workspace.Evolve(s, r.Envelope)
			return after
		})
		if err != nil {
			return err
		}
		switch {
		case before.Path == "" && after.Path != "":
			return tx.Set(WorkspacePathPrefix+after.Path, []byte(after.ID))
		case !before.Gone() && after.Gone():
			return tx.Delete(WorkspacePathPrefix + after.Path)
		}
		return nil
	case events.KindSession:
		var cwd string
		switch d := r.Data.(type) {
		case events.SessionStarted:
			cwd = d.Cwd
		case events.SessionDescribed:
			cwd = d.Cwd
		}
		if cwd == "" || !path.IsAbs(cwd) {
			return nil
		}
		return linkSession(tx, r.Agg.ID, path.Clean(cwd))
	}
	return nil
}

// linkSession records session's cwd and links it to the workspace whose
// path holds cwd, found by looking up cwd and each of its parents in the
// path index.
func linkSession(tx *Tx, session, cwd string) error {
	var link WorkspaceLink
	key := SessionLinkPrefix + session
	if v, ok, err := tx.Get(key); err != nil {
		return err
	} else if ok {
		if err := json.Unmarshal(v, &link); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
	}
	if link.Cwd == cwd {
		return nil
	}
	ws := ""
	for p := cwd; ; p = path.Dir(p) {
		v, ok, err := tx.Get(WorkspacePathPrefix + p)
		if err != nil {
			return err
		}
		if ok {
			ws = string(v)
			break
		}
		if p == "/" {
			break
		}
	}
	if link.Workspace != "" && link.Workspace != ws {
		if err := tx.Delete(WorkspaceSessionsPrefix + link.Workspace + "/" + session); err != nil {
			return err
		}
	}
	if ws == "" {
		if link.Workspace == "" {
			return nil // no row for a session outside every workspace
		}
		return tx.Delete(key)
	}
	if err := tx.Set(WorkspaceSessionsPrefix+ws+"/"+session, nil); err != nil {
		return err
	}
	b, err := json.Marshal(WorkspaceLink{Cwd: cwd, Workspace: ws})
	if err != nil {
		return err
	}
	return tx.Set(key, b)
}

// foldRow loads key's row (init when absent), folds it with evolve and
// stores it.
func foldRow[S any](tx *Tx, key string, init S, evolve func(S) S) error {
	s := init
	if v, ok, err := tx.Get(key); err != nil {
		return err
	} else if ok {
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
	}
	b, err := json.Marshal(evolve(s))
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return tx.Set(key, b)
}

// rowOf reads and decodes the committed row prefix+id; what names the
// row in errors. On an error it returns the zero S; the error wraps
// events.ErrNotFound when there is no row, ErrClosed when the store is
// closed.
func rowOf[S any](s *Store, what, prefix, id string) (S, error) {
	var zero, st S
	v, ok, err := s.get(prefix + id)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, id, err)
	}
	if !ok {
		return zero, fmt.Errorf("%s %s: %w", what, id, events.ErrNotFound)
	}
	if err := json.Unmarshal(v, &st); err != nil {
		return zero, fmt.Errorf("%s %s: decode row: %w", what, id, err)
	}
	return st, nil
}

// rowsOf returns every committed row under prefix, decoded, in key order.
func rowsOf[S any](s *Store, what, prefix string) ([]S, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer sn.Close()
	var out []S
	err = sn.scan(prefix, func(key string, v []byte) error {
		var st S
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Project returns the committed row of project id; the error wraps
// events.ErrNotFound when there is none.
func (s *Store) Project(id string) (project.State, error) {
	return rowOf[project.State](s, "project", ProjectRowPrefix, id)
}

// Projects returns every project, in id order.
func (s *Store) Projects() ([]project.State, error) {
	return rowsOf[project.State](s, "projects", ProjectRowPrefix)
}

// Workspace returns the committed row of workspace id; the error wraps
// events.ErrNotFound when there is none.
func (s *Store) Workspace(id string) (workspace.State, error) {
	return rowOf[workspace.State](s, "workspace", WorkspaceRowPrefix, id)
}

// Workspaces returns every workspace, oldest first (by reservation time,
// then id).
func (s *Store) Workspaces() ([]workspace.State, error) {
	out, err := rowsOf[workspace.State](s, "workspaces", WorkspaceRowPrefix)
	slices.SortStableFunc(out, func(a, b workspace.State) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// WorkspaceAt returns the live (not archived) workspace whose path is p
// or holds it, and whether there is one. p must be absolute and clean.
func (s *Store) WorkspaceAt(p string) (workspace.State, bool, error) {
	for q := p; ; q = path.Dir(q) {
		v, ok, err := s.get(WorkspacePathPrefix + q)
		if err != nil {
			return workspace.State{}, false, fmt.Errorf("workspace at %s: %w", p, err)
		}
		if ok {
			st, err := s.Workspace(string(v))
			return st, err == nil, err
		}
		if q == "/" || q == "." {
			return workspace.State{}, false, nil
		}
	}
}

// WorkspaceSessions returns the ids of the sessions linked to workspace
// id, in id order.
func (s *Store) WorkspaceSessions(id string) ([]string, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("sessions of workspace %s: %w", id, err)
	}
	defer sn.Close()
	prefix := WorkspaceSessionsPrefix + id + "/"
	var out []string
	err = sn.scan(prefix, func(key string, _ []byte) error {
		out = append(out, strings.TrimPrefix(key, prefix))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sessions of workspace %s: %w", id, err)
	}
	return out, nil
}

// SessionWorkspace returns the link of session id; the error wraps
// events.ErrNotFound when it is linked to no workspace.
func (s *Store) SessionWorkspace(id string) (WorkspaceLink, error) {
	return rowOf[WorkspaceLink](s, "workspace link of session", SessionLinkPrefix, id)
}

// Task returns the committed row of task id; the error wraps
// events.ErrNotFound when there is none.
func (s *Store) Task(id string) (task.State, error) {
	return rowOf[task.State](s, "task", TaskRowPrefix, id)
}

// Tasks returns every task, oldest first (by delegation time, then id).
func (s *Store) Tasks() ([]task.State, error) {
	out, err := rowsOf[task.State](s, "tasks", TaskRowPrefix)
	slices.SortStableFunc(out, func(a, b task.State) int {
		if c := a.DelegatedAt.Compare(b.DelegatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// Check returns the committed row of check run id; the error wraps
// events.ErrNotFound when there is none.
func (s *Store) Check(id string) (check.State, error) {
	return rowOf[check.State](s, "check run", CheckRowPrefix, id)
}

// Checks returns the check runs of workspace ws, newest first (by start
// time, then id, descending).
func (s *Store) Checks(ws string) ([]check.State, error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("check runs of workspace %s: %w", ws, err)
	}
	prefix := WorkspaceChecksPrefix + ws + "/"
	var ids []string
	err = sn.scan(prefix, func(key string, _ []byte) error {
		ids = append(ids, strings.TrimPrefix(key, prefix))
		return nil
	})
	sn.Close()
	if err != nil {
		return nil, fmt.Errorf("check runs of workspace %s: %w", ws, err)
	}
	out := make([]check.State, 0, len(ids))
	for _, id := range ids {
		st, err := s.Check(id)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	slices.SortStableFunc(out, func(a, b check.State) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}
