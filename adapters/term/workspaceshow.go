package term

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/api"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// ShowOf gathers what `workspace show` prints of ws from the whole
// workspace view v: its sessions (most recently active first), its
// tasks (oldest first) and, for a worktree that is not gone, its
// changes as changes reports them; an error of changes is kept as
// ChangesError, never returned. Lists are never nil.
func ShowOf(ctx context.Context, v api.WorkspacesReply, ws workspace.State, changes func(context.Context, workspace.State) (wsadapter.Changes, error)) WorkspaceShow {
	r := WorkspaceShow{Workspace: ws, Sessions: v.Sessions[ws.ID], Tasks: wsadapter.TasksIn(v.Tasks, ws.ID)}
	if r.Sessions == nil {
		r.Sessions = []api.WorkspaceSession{}
	}
	if runs := v.Checks[ws.ID]; len(runs) > 0 {
		r.LastCheck = &runs[0]
	}
	if !ws.Gone() && ws.Worktree {
		if ch, err := changes(ctx, ws); err == nil {
			r.Changes = &ch
		} else {
			r.ChangesError = err.Error()
		}
	}
	return r
}
