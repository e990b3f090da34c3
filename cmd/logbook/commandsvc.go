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
	verbCommands = "commands" // commandsRequest → []command.State
	verbCommand  = "command"  // commandRequest → command.State
)

// commandsRequest filters the command list.
type commandsRequest struct {
	Session string `json:"session,omitempty"` // "" means every session
	Active  bool   `json:"active,omitempty"`  // only requested or started, not evicted
}

func (s *service) commands(ctx context.Context, data []byte) (any, error) {
	var req commandsRequest
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("commands request: %w: %v", events.ErrMalformed, err)
		}
	}
	if err := s.caughtUp(ctx); err != nil {
		return nil, err
	}
	out, err := s.store.Commands(req.Session, req.Active)
	if out == nil {
		out = []command.State{}
	}
	return out, err
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
