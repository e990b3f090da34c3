package workspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// The projection is what serve's Follow reads.
var _ Views = (*projections.Store)(nil)

// findCase is a reference, the id it names or the error it gets (and
// whether that wraps events.ErrNotFound).
type findCase struct {
	ref, want, wantErr string
	notFound           bool
}

// checkFind runs find (named name) on each case; id returns a found
// value's id.
func checkFind[S any](t *testing.T, name string, find func(string) (S, error), id func(S) string, cases []findCase) {
	t.Helper()
	for _, c := range cases {
		got, err := find(c.ref)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.Is(err, events.ErrNotFound) != c.notFound {
				t.Errorf("%s(%q): %v, want an error saying %q (not found %v)", name, c.ref, err, c.wantErr, c.notFound)
			}
		case err != nil || id(got) != c.want:
			t.Errorf("%s(%q) = %s, %v; want %s", name, c.ref, id(got), err, c.want)
		}
	}
}

func TestFindProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ps := []project.State{
		{ID: "p1", Key: "api", Name: "api", Path: dir},
		{ID: "p2", Key: "web", Name: "twin", Path: "/nowhere/web"},
		{ID: "p3", Key: "web-2", Name: "twin", Path: "/nowhere/web-2"},
	}
	checkFind(t, "FindProject", func(ref string) (project.State, error) { return FindProject(ps, ref) },
		func(p project.State) string { return p.ID }, []findCase{
			{ref: "p2", want: "p2"},
			{ref: "web-2", want: "p3"},
			{ref: "api", want: "p1"},
			{ref: dir, want: "p1"},
			{ref: "twin", wantErr: "2 projects have that name"},
			{ref: "none", wantErr: "logbook project add PATH", notFound: true},
		})
}

func TestFindWorkspace(t *testing.T) {
	t.Parallel()
	ws := []workspace.State{{ID: "w1", Key: "fix"}, {ID: "w2", Key: "dup"}, {ID: "w3", Key: "dup"}}
	checkFind(t, "FindWorkspace", func(ref string) (workspace.State, error) { return FindWorkspace(ws, ref) },
		func(w workspace.State) string { return w.ID }, []findCase{
			{ref: "w3", want: "w3"},
			{ref: "fix", want: "w1"},
			{ref: "dup", wantErr: "2 workspaces have that key"},
			{ref: "none", wantErr: `workspace "none"`, notFound: true},
		})
}
