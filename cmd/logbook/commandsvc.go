package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// API verbs of the command view.
const (
	verbCommands = "commands" // commandsRequest → commandsPage
	verbCommand  = "command"  // commandRequest → command.State
)

// commandsRequest asks for a page of the command list: the commands of
// Session ("" every session), only the active ones when Active is set,
// oldest first (by request time, then id), after the command whose cursor
// is After ("": from the first), at most Limit of them (0: as many as fit
// one message).
type commandsRequest struct {
	Session string `json:"session,omitempty"`
	Active  bool   `json:"active,omitempty"`
	After   string `json:"after,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// commandsPage is one page of the command list. Next, when set, is the
// After of the next page; "" means the list ends with this page.
type commandsPage struct {
	Commands []command.State `json:"commands"`
	Next     string          `json:"next,omitempty"`
}

// commandCursor returns the place of c in the command list's order: its
// request time (nanoseconds since 1970, zero-padded to sort as text) and
// its id.
func commandCursor(c command.State) string {
	return fmt.Sprintf("%020d/%s", c.RequestedAt.UnixNano(), c.ID)
}

func (s *service) commands(ctx context.Context, data []byte) (any, error) {
	var req commandsRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("commands request: %w: %v", events.ErrMalformed, err)
		}
	}
	if req.Limit < 0 {
		return nil, fmt.Errorf("commands: %w: limit %d (want 0 or more)", events.ErrRejected, req.Limit)
	}
	if err := s.caughtUp(ctx); err != nil {
		return nil, err
	}
	all, err := s.store.Commands(req.Session, req.Active)
	if err != nil {
		return nil, err
	}
	page := commandsPage{Commands: []command.State{}}
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

// commandRequest names one command.
type commandRequest struct {
	ID string `json:"id"`
}

func (s *service) command(ctx context.Context, data []byte) (any, error) {
	var req commandRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("command request: %w: %v", events.ErrMalformed, err)
	}
	if err := s.caughtUp(ctx); err != nil {
		return nil, err
	}
	return s.store.Command(req.ID)
}

// commandHandlers returns the command view's API handlers, for serve and
// for the local fallback.
func (s *service) commandHandlers() map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		verbCommands: s.commands,
		verbCommand:  s.command,
	}
}

// sessionCommands returns the ids of the commands requested for session,
// in stream order, read from the log alone: every command event's type
// header is looked at, and only requests are decoded.
func sessionCommands(ctx context.Context, log *natslog.Log, session string) ([]string, error) {
	var ids []string
	for m, err := range log.ReadRaw(ctx, worker.CommandFilter, 1) {
		if err != nil {
			return nil, fmt.Errorf("commands of session %s: %w", session, err)
		}
		if m.Header.Get(natslog.HeaderType) != (events.CommandRequested{}).EventType() {
			continue
		}
		var req struct {
			Agg  events.Aggregate `json:"agg"`
			Data struct {
				Session string `json:"session"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.Data.Session == session {
			ids = append(ids, req.Agg.ID)
		}
	}
	return ids, nil
}
