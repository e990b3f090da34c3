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
	p, n := pick(projects,
		func(p project.State) bool { return p.ID == ref || p.Key == ref || p.Path == abs },
		func(p project.State) bool { return p.Name == ref })
	switch n {
	case 1:
		return p, nil
	case 0:
		return p, fmt.Errorf("project %q: %w: add it with `logbook project add PATH`", ref, events.ErrNotFound)
	}
	return p, fmt.Errorf("project %q: %d projects have that name: give its id or key", ref, n)
}

// FindWorkspace returns the workspace of list that ref names: its id, or
// a storage key only one workspace has. No match is an error wrapping
// events.ErrNotFound; a key several workspaces have is an error asking
// for the id.
func FindWorkspace(list []workspace.State, ref string) (workspace.State, error) {
	w, n := pick(list,
		func(w workspace.State) bool { return w.ID == ref },
		func(w workspace.State) bool { return w.Key == ref })
	switch n {
	case 1:
		return w, nil
	case 0:
		return w, fmt.Errorf("workspace %q: %w", ref, events.ErrNotFound)
	}
	return w, fmt.Errorf("workspace %q: %d workspaces have that key: give its id", ref, n)
}

// pick returns the first element of list that exact matches, with n 1;
// else, when loose matches one element alone, that one with n 1; else
// the zero S with n the number loose matches (0: none, more: ambiguous).
func pick[S any](list []S, exact, loose func(S) bool) (s S, n int) {
	var found []S
	for _, e := range list {
		if exact(e) {
			return e, 1
		}
		if loose(e) {
			found = append(found, e)
		}
	}
	if len(found) == 1 {
		return found[0], 1
	}
	return s, len(found)
}
