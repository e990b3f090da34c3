package httpapi

import (
	"net/http"

	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// workspaceChecks is one workspace as GET /v1/workspaces answers it: its
// row (id, name, project, status, branch, path, …) and its check runs,
// newest first, each with its status, exit status, timed_out, the tree
// it judged (commit, tree, fingerprint, clean), when it started and
// ended, its reason and the pushes it allowed.
type workspaceChecks struct {
	workspace.State
	Checks []check.State `json:"checks"`
}

// workspaces serves GET /v1/workspaces: every workspace, oldest first,
// with its check runs, read from the projection once it has caught up
// (or, while the log does not answer, as it stands, marked stale).
func (s *Server) workspaces(w http.ResponseWriter, r *http.Request) {
	stale, err := s.readCaughtUp(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.store.Workspaces()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]workspaceChecks, 0, len(list))
	for _, ws := range list {
		runs, err := s.store.Checks(ws.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if runs == nil {
			runs = []check.State{}
		}
		out = append(out, workspaceChecks{State: ws, Checks: runs})
	}
	writeJSON(w, http.StatusOK, struct {
		Workspaces []workspaceChecks `json:"workspaces"`
		staleMark
	}{out, stale})
}
