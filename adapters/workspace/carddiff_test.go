package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// TestMeasureCards: a card of a subagent working in a workspace gets the
// workspace's diff against its base (what ChangesOf measures, a binary
// file a file only); a card without a workspace, of an unknown
// workspace, of an archived one or of one whose folder is gone keeps
// none; a workspace whose project is unknown is an error naming it, and
// the other cards are measured all the same.
func TestMeasureCards(t *testing.T) {
	t.Parallel()
	_, m, _, _, p := withProject(t, nil)
	ws, err := m.Create(t.Context(), CreateRequest{Project: p.ID, Name: "cards", ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws.Path, "README"), "one\n2\nthree\n")
	write(t, filepath.Join(ws.Path, "notes.txt"), "a\nb")
	write(t, filepath.Join(ws.Path, "blob.bin"), "\x00\x01\x02")
	ch, err := ChangesOf(t.Context(), ws.Path, p.Trunk)
	if err != nil {
		t.Fatal(err)
	}
	archived := ws
	archived.ID, archived.Status = "w-archived", workspace.StatusArchived
	gone := ws
	gone.ID, gone.Path = "w-gone", filepath.Join(t.TempDir(), "gone")
	orphan := ws
	orphan.ID, orphan.Project = "w-orphan", "p-nosuch"
	cards := []session.Card{
		{Session: "a", Workspace: "w1"},
		{Session: "b"},
		{Session: "c", Workspace: "w-nosuch"},
		{Session: "d", Workspace: "w-archived"},
		{Session: "e", Workspace: "w-gone"},
		{Session: "f", Workspace: "w-orphan"},
		{Task: "t1", Workspace: "w1"},
	}
	errs := MeasureCards(t.Context(), cards, []workspace.State{ws, archived, gone, orphan}, nil)
	if len(errs) != 3 {
		t.Fatalf("errors %v, want one for each card of a workspace without a known project", errs)
	}
	errs = MeasureCards(t.Context(), cards, []workspace.State{ws, archived, gone, orphan}, []projectState{p})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "diff of workspace w-orphan: its project p-nosuch is not known") {
		t.Errorf("errors %v, want one naming w-orphan and its project", errs)
	}
	want := session.Diff{Files: 3, Insertions: 4, Deletions: 1}
	if ch.Diff() != want {
		t.Errorf("ChangesOf's diff %+v, want %+v", ch.Diff(), want)
	}
	for _, i := range []int{0, 6} {
		if cards[i].Diff == nil || *cards[i].Diff != want {
			t.Errorf("card %d diff %+v, want %+v", i, cards[i].Diff, want)
		}
	}
	for _, i := range []int{1, 2, 3, 4, 5} {
		if cards[i].Diff != nil {
			t.Errorf("card %d (%s) diff %+v, want none", i, cards[i].Workspace, cards[i].Diff)
		}
	}
	if _, err := os.Stat(gone.Path); err == nil {
		t.Fatal("the gone folder exists")
	}
}
