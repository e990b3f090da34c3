package workspace

import (
	"fmt"
	"path/filepath"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// FindProject returns the project of projects that ref names: its id,
// storage key or folder (ref taken as a path, absolute and with its
// symlinks resolved), else its name when one project alone has it. No
// match is an error wrapping events.ErrNotFound; a name several projects
// have is an error asking for the id or key.
func FindProject(projects []project.State, ref string) (project.State, error) {
	abs, _ := filepath.Abs(ref)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	var found []project.State
	for _, p := range projects {
		if p.ID == ref || p.Key == ref || p.Path == abs {
			return p, nil
		}
		if p.Name == ref {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return project.State{}, fmt.Errorf("project %q: %w: add it with `logbook project add PATH`", ref, events.ErrNotFound)
	}
	return project.State{}, fmt.Errorf("project %q: %d projects have that name: give its id or key", ref, len(found))
}

// FindWorkspace returns the workspace of list that ref names: its id, or
// a storage key only one workspace has. No match is an error wrapping
// events.ErrNotFound; a key several workspaces have is an error asking
// for the id.
func FindWorkspace(list []workspace.State, ref string) (workspace.State, error) {
	var found []workspace.State
	for _, w := range list {
		if w.ID == ref {
			return w, nil
		}
		if w.Key == ref {
			found = append(found, w)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return workspace.State{}, fmt.Errorf("workspace %q: %w", ref, events.ErrNotFound)
	}
	return workspace.State{}, fmt.Errorf("workspace %q: %d workspaces have that key: give its id", ref, len(found))
}
