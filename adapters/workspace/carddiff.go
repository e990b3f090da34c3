package workspace

import (
	"context"
	"fmt"
	"os"

	"github.com/logbook-dev/logbook/reducers/project"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// Diff returns ch as a subagent card's diff (session.Diff): files
// changed, lines inserted and lines deleted (a binary file counts as a
// file only).
func (ch Changes) Diff() session.Diff {
	return session.Diff{Files: len(ch.Files), Insertions: ch.Added, Deletions: ch.Removed}
}

// MeasureCards sets the Diff of each card of cards that names a
// workspace of wss: what changed in its worktree against its merge base
// with its project's trunk (ChangesOf; the project from ps). A card whose
// workspace is not in wss, is archived or whose folder is gone keeps a
// nil Diff; the error of each measure that failed is returned, in card
// order, naming the workspace (the other cards are measured all the
// same). It runs git in each folder; cards is written in place.
func MeasureCards(ctx context.Context, cards []session.Card, wss []workspace.State, ps []project.State) []error {
	var errs []error
	for i := range cards {
		c := &cards[i]
		if c.Workspace == "" {
			continue
		}
		ws, ok := findByID(wss, c.Workspace)
		if !ok || ws.Gone() {
			continue
		}
		if _, err := os.Stat(ws.Path); err != nil {
			continue
		}
		trunk := ""
		for _, p := range ps {
			if p.ID == ws.Project {
				trunk = p.Trunk
			}
		}
		if trunk == "" {
			errs = append(errs, fmt.Errorf("diff of workspace %s: its project %s is not known", ws.ID, ws.Project))
			continue
		}
		ch, err := ChangesOf(ctx, ws.Path, trunk)
		if err != nil {
			errs = append(errs, fmt.Errorf("diff of workspace %s: %w", ws.ID, err))
			continue
		}
		d := ch.Diff()
		c.Diff = &d
	}
	return errs
}

func findByID(wss []workspace.State, id string) (workspace.State, bool) {
	for _, w := range wss {
		if w.ID == id {
			return w, true
		}
	}
	return workspace.State{}, false
}
