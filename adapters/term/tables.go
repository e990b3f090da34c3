package term

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/usage"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/reducers/check"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// Rows writes a table (NewTable) of head, then rows, every cell passed
// through Cell: a cell holding escape sequences, controls, tabs or wide
// characters keeps the columns in line. A row may have fewer cells than
// head. Errors are w's.
func Rows(w io.Writer, head []string, rows [][]string) error {
	tw := NewTable(w)
	for _, r := range append([][]string{head}, rows...) {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = Cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// KeyValues writes a table of two columns, a name and its value, each
// value passed through Dash and Cell. Errors are w's.
func KeyValues(w io.Writer, kvs [][2]string) error {
	tw := NewTable(w)
	for _, kv := range kvs {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], Cell(Dash(kv[1])))
	}
	return tw.Flush()
}

// Usage writes a usage report's text (usage.Report.WriteTextTables), its
// tables laid out by Rows. Write it through Print.
func Usage(w io.Writer, rep usage.Report, now time.Time) error {
	return rep.WriteTextTables(w, now, func(head []string, rows [][]string) error { return Rows(w, head, rows) })
}

// Reviews writes the open gate reviews, a row each, their age taken at
// now, each action's long runs of blanks marked (Blanks). Write it through
// Print.
func Reviews(w io.Writer, rs []gate.PendingRow, now time.Time) error {
	rows := make([][]string, len(rs))
	for i, r := range rs {
		rows[i] = []string{r.ID, r.Session, Dash(r.Event), r.Tool, Dash(r.Risk), usage.Age(now, r.RequestedAt), Blanks(r.Action)}
	}
	return Rows(w, []string{"REVIEW", "SESSION", "EVENT", "TOOL", "RISK", "AGE", "ACTION"}, rows)
}

// Projects writes the projects, a row each. Write it through Print.
func Projects(w io.Writer, ps []project.State) error {
	rows := make([][]string, len(ps))
	for i, p := range ps {
		rows[i] = []string{p.ID, p.Key, p.Name, p.Trunk, strconv.Itoa(len(p.Workspaces)), p.Path}
	}
	return Rows(w, []string{"ID", "KEY", "NAME", "TRUNK", "WORKSPACES", "PATH"}, rows)
}

// Workspaces writes the workspaces ws, a row each, with how many sessions
// work in each (sessions, by workspace id). Write it through Print.
func Workspaces(w io.Writer, ws []workspace.State, sessions map[string][]api.WorkspaceSession) error {
	rows := make([][]string, len(ws))
	for i, s := range ws {
		rows[i] = []string{s.ID, s.Key, s.Status, s.Branch, Dash(s.OwnedBy), strconv.Itoa(len(sessions[s.ID])), s.Name}
	}
	return Rows(w, []string{"ID", "KEY", "STATUS", "BRANCH", "OWNER", "SESSIONS", "NAME"}, rows)
}

// Tasks writes the tasks, a row each. Write it through Print.
func Tasks(w io.Writer, ts []task.State) error {
	rows := make([][]string, len(ts))
	for i, t := range ts {
		rows[i] = []string{t.ID, t.Status, t.Workspace, t.Parent, Dash(t.Session), t.Title}
	}
	return Rows(w, []string{"ID", "STATUS", "WORKSPACE", "PARENT", "SESSION", "TITLE"}, rows)
}

// Task writes one task's fields. Write it through Print.
func Task(w io.Writer, t task.State) error {
	return KeyValues(w, [][2]string{{"task", t.ID}, {"title", t.Title}, {"status", t.Status}, {"workspace", t.Workspace},
		{"parent", t.Parent}, {"session", t.Session}, {"reason", t.Reason}, {"delegated", t.DelegatedAt.Format(time.RFC3339)}})
}

// WorkspaceLine writes one line naming a workspace: id, key, status,
// branch and path. Errors are w's.
func WorkspaceLine(w io.Writer, ws workspace.State) error {
	_, err := fmt.Fprintf(w, "workspace %s %s: %s on %s at %s\n", Field(ws.ID), Field(ws.Key), Field(ws.Status), Field(ws.Branch), Field(ws.Path))
	return err
}

// WorkspaceShow is `workspace show`'s answer, as text (Workspace) and as
// JSON: the workspace, its sessions (most recently active first), its
// tasks and its changes against its base (or why they could not be
// measured).
type WorkspaceShow struct {
	Workspace    workspace.State        `json:"workspace"`
	Sessions     []api.WorkspaceSession `json:"sessions"`
	Tasks        []task.State           `json:"tasks"`
	Changes      *wsadapter.Changes     `json:"changes,omitempty"`
	LastCheck    *check.State           `json:"last_check,omitempty"` // the newest check run, if any
	ChangesError string                 `json:"changes_error,omitempty"`
}

// Workspace writes r as text, ages taken at now. Write it through Print.
func Workspace(w io.Writer, r WorkspaceShow, now time.Time) error {
	ws := r.Workspace
	status := ws.Status
	if ws.Status == workspace.StatusFailed {
		status += " at " + ws.FailStep + ": " + ws.FailReason
	}
	if ws.Cleanup != "" {
		status += " (cleanup " + ws.Cleanup
		if ws.CleanupErr != "" {
			status += ": " + ws.CleanupErr
		}
		status += ")"
	}
	rows := [][2]string{
		{"workspace", ws.ID}, {"name", ws.Name + " (named by " + ws.NamedBy + ")"}, {"key", ws.Key}, {"project", ws.Project},
		{"status", status}, {"branch", ws.Branch}, {"path", ws.Path},
		{"base", strings.TrimSpace(ws.BaseRef + " " + ws.BaseCommit)}, {"owner", Dash(ws.OwnedBy)},
	}
	if ws.Fallback != "" {
		rows = append(rows, [2]string{"fallback", ws.Fallback})
	}
	if ws.ArchivedAs != "" {
		rows = append(rows, [2]string{"archived by", strings.TrimSpace(ws.ArchivedAs + " " + ws.ArchivedBy)})
	}
	if r.LastCheck != nil {
		rows = append(rows, [2]string{"last check", checkVerdict(*r.LastCheck, func(s string) string { return s })})
	}
	if err := KeyValues(w, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "sessions: %d\n", len(r.Sessions))
	for _, s := range r.Sessions {
		fmt.Fprintf(w, "  %s  %s  %s ago\n", Field(s.ID), Field(Dash(s.Phase)), now.Sub(s.UpdatedAt).Round(time.Second))
	}
	if len(r.Tasks) > 0 {
		fmt.Fprintf(w, "tasks: %d\n", len(r.Tasks))
		for _, t := range r.Tasks {
			fmt.Fprintf(w, "  %s  %s  %s\n", Field(t.ID), Field(t.Status), Field(t.Title))
		}
	}
	switch {
	case r.Changes != nil:
		fmt.Fprintf(w, "changes against %s (merge base %.12s): %d files, +%d -%d\n", Field(r.Changes.Against), Field(r.Changes.MergeBase), len(r.Changes.Files), r.Changes.Added, r.Changes.Removed)
		for _, c := range r.Changes.Files {
			c.Path = Field(c.Path)
			switch {
			case c.Binary:
				fmt.Fprintf(w, "  %s  binary\n", c.Path)
			case c.New:
				fmt.Fprintf(w, "  %s  +%d (new)\n", c.Path, c.Added)
			default:
				fmt.Fprintf(w, "  %s  +%d -%d\n", c.Path, c.Added, c.Removed)
			}
		}
	case r.ChangesError != "":
		fmt.Fprintf(w, "changes: %s\n", Field(r.ChangesError))
	}
	return nil
}
