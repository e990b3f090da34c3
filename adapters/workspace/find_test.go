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

func TestFindProject(t *testing.T) {
	dir := t.TempDir()
	ps := []project.State{
		{ID: "p1", Key: "api", Name: "api", Path: dir},
		{ID: "p2", Key: "web", Name: "twin", Path: "/nowhere/web"},
		{ID: "p3", Key: "web-2", Name: "twin", Path: "/nowhere/web-2"},
	}
	for _, c := range []struct {
		ref, want, wantErr string
		notFound           bool
	}{
		{ref: "p2", want: "p2"},
		{ref: "web-2", want: "p3"},
		{ref: "api", want: "p1"},
		{ref: dir, want: "p1"},
		{ref: "twin", wantErr: "2 projects have that name"},
		{ref: "none", wantErr: "logbook project add PATH", notFound: true},
	} {
		got, err := FindProject(ps, c.ref)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.Is(err, events.ErrNotFound) != c.notFound {
				t.Errorf("FindProject(%q): %v, want an error saying %q (not found %v)", c.ref, err, c.wantErr, c.notFound)
			}
			continue
		}
		if err != nil || got.ID != c.want {
			t.Errorf("FindProject(%q) = %s, %v; want %s", c.ref, got.ID, err, c.want)
		}
	}
}

func TestFindWorkspace(t *testing.T) {
	ws := []workspace.State{{ID: "w1", Key: "fix"}, {ID: "w2", Key: "dup"}, {ID: "w3", Key: "dup"}}
	for _, c := range []struct {
		ref, want, wantErr string
		notFound           bool
	}{
		{ref: "w3", want: "w3"},
		{ref: "fix", want: "w1"},
		{ref: "dup", wantErr: "2 workspaces have that key"},
		{ref: "none", wantErr: `workspace "none"`, notFound: true},
	} {
		got, err := FindWorkspace(ws, c.ref)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.Is(err, events.ErrNotFound) != c.notFound {
				t.Errorf("FindWorkspace(%q): %v, want an error saying %q (not found %v)", c.ref, err, c.wantErr, c.notFound)
			}
			continue
		}
		if err != nil || got.ID != c.want {
			t.Errorf("FindWorkspace(%q) = %s, %v; want %s", c.ref, got.ID, err, c.want)
		}
	}
}
