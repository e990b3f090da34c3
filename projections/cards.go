package projections

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/reducers/task"
)

// Cards returns the subagent cards of session parent, whose subagent
// sessions (Children) are kids: one card a kid (session.CardOf), in the
// order of kids, then one a task parent delegated (session.CardTask), in
// delegation order, its numbers those of the session that took it up (if
// any). A card's Workspace is the workspace its session is linked to, or
// its task's. Diff is left nil. Errors are the store's.
func (s *Store) Cards(parent session.State, kids []session.State) ([]session.Card, error) {
	ps := session.Summarize(parent)
	out := make([]session.Card, 0, len(kids))
	for _, k := range kids {
		c := session.CardOf(session.Summarize(k), ps)
		if err := s.linkCard(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	tasks, err := s.Tasks()
	if err != nil {
		return nil, fmt.Errorf("cards of session %s: %w", parent.ID, err)
	}
	for _, t := range tasks {
		if t.Parent != parent.ID || t.Parent == "" {
			continue
		}
		c, err := s.taskCard(t, ps)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// taskCard returns the card of task t of the session summarized by ps.
func (s *Store) taskCard(t task.State, ps session.Summary) (session.Card, error) {
	c := session.Card{Kind: session.CardTask, Status: session.CardDelegated, Depth: ps.Depth + 1, Background: true}
	if t.Session != "" {
		st, err := s.Session(t.Session)
		switch {
		case errors.Is(err, events.ErrNotFound):
		case err != nil:
			return c, fmt.Errorf("card of task %s: %w", t.ID, err)
		case st.Exists():
			c = session.CardOf(session.Summarize(st), ps)
			c.Kind, c.Background, c.Depth = session.CardTask, true, ps.Depth+1
		}
	}
	c.Task, c.Type, c.Workspace = t.ID, t.Title, t.Workspace
	switch t.Status {
	case task.StatusCompleted:
		c.Status = session.CardDone
	case task.StatusFailed:
		c.Status = session.CardFailed
	case task.StatusInterrupted:
		c.Status = session.CardInterrupted
	}
	return c, nil
}

// linkCard sets c's Workspace to the workspace its session is linked to.
func (s *Store) linkCard(c *session.Card) error {
	l, err := s.SessionWorkspace(c.Session)
	switch {
	case errors.Is(err, events.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("card of session %s: %w", c.Session, err)
	}
	c.Workspace = l.Workspace
	return nil
}
