package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// CommandsRequest asks for a page of the command list: the commands of
// Session ("" every session), only the active ones when Active is set,
// oldest first (by request time, then id), after the command whose cursor
// is After ("": from the first), at most Limit of them (0: as many as fit
// one message).
type CommandsRequest struct {
	Session string `json:"session,omitempty"`
	Active  bool   `json:"active,omitempty"`
	After   string `json:"after,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// CommandsPage is one page of the command list. Next, when set, is the
// After of the next page; "" means the list ends with this page. Stale,
// when set, says the page was read while the log did not answer.
type CommandsPage struct {
	Commands []command.State `json:"commands"`
	Next     string          `json:"next,omitempty"`
	Stale
}

// commandCursor returns the place of c in the command list's order: its
// request time (nanoseconds since 1970, zero-padded to sort as text) and
// its id.
func commandCursor(c command.State) string {
	return fmt.Sprintf("%020d/%s", c.RequestedAt.UnixNano(), c.ID)
}

func (s *Service) Commands(ctx context.Context, data []byte) (any, error) {
	var req CommandsRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("commands request: %w: %v", events.ErrMalformed, err)
		}
	}
	if req.Limit < 0 {
		return nil, fmt.Errorf("commands: %w: limit %d (want 0 or more)", events.ErrRejected, req.Limit)
	}
	stale, err := s.readCaughtUp(ctx)
	if err != nil {
		return nil, err
	}
	all, err := s.Store.Commands(req.Session, req.Active)
	if err != nil {
		return nil, err
	}
	page := CommandsPage{Commands: []command.State{}, Stale: stale}
	size := 0
	for _, c := range all {
		if req.After != "" && commandCursor(c) <= req.After {
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		if len(page.Commands) > 0 && (size+len(b)+1 > s.pageBytes || len(page.Commands) == req.Limit) {
			page.Next = commandCursor(page.Commands[len(page.Commands)-1])
			break
		}
		page.Commands = append(page.Commands, c)
		size += len(b) + 1
	}
	return page, nil
}

// CommandRequest names one command.
type CommandRequest struct {
	ID string `json:"id"`
}

func (s *Service) Command(ctx context.Context, data []byte) (any, error) {
	var req CommandRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("command request: %w: %v", events.ErrMalformed, err)
	}
	if err := s.CaughtUp(ctx); err != nil {
		return nil, err
	}
	return s.Store.Command(req.ID)
}
