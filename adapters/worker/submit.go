package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Submission is one command as `logbook exec` requests it of a running
// server: checked against its session, its workspace and the data dir's
// rules, elevated when asked, then appended (Submit).
type Submission struct {
	// Call calls the server's API; Client appends the request.
	Call   api.Caller
	Client *Client
	// ID is the command's id.
	ID string
	// Request is the command; its Mode "" takes the session's mode
	// (read_only or full_access), else workspace_write.
	Request command.Request
	// WorkspaceErr, when not nil, is why Request.Workspace cannot be run
	// in (it does not exist, is no directory): returned once the
	// server's workspace registry has had its say.
	WorkspaceErr error
	// Redactor holds the rules the workers redact the output with, by
	// which the request is checked for secrets (CheckRequest).
	Redactor *redact.Redactor
	// Elevate, when not nil, asks the gate to run the command
	// full_access and returns the review that grants it; Request's mode
	// is then full_access and its RequestedBy "elevation:" and the
	// person.
	Elevate func(ctx context.Context, req command.Request) (string, error)
	// CatchUp, when not nil, brings the server's projection up to the
	// log once, before the session, the workspace and the active
	// commands are asked for, and returns the context to ask them with,
	// under which the server does not catch up again
	// (api.Service.CatchUpOnce, in serve's own process). Nil: each
	// answer catches up on its own. Not used with Elevate.
	CatchUp func(ctx context.Context) (context.Context, error)
	// Grace is how long to wait for a live worker (AwaitWorker).
	Grace time.Duration
	// Evicted is told each command evicted to make room (the session
	// is over command.MaxActive active commands); nil: not told.
	Evicted func(id string)
}

// Submit checks s against the server and appends its request: the
// session must not have ended, the workspace is opened in the registry
// (api.WorkspaceOpen) and must then exist, the request must hold no
// secret by s.Redactor, an elevation must be granted, and some worker
// must be alive within s.Grace. The oldest active commands of the
// session over command.MaxActive are evicted (s.Evicted). Errors are
// prefixed "exec: "; a session that ended wraps events.ErrRejected; with
// no live worker the error says how to start one; ctx's error when it
// ends while waiting for one.
//
// The server's answers it needs (the session's row alone, the
// workspace, a live worker, the session's active commands) are asked
// for at once, each on a goroutine of its own that Submit waits for,
// and judged in that order: a command costs the slowest of them rather
// than their sum. With s.CatchUp the server catches up once, while the
// live worker is awaited, and answers the other three without waiting
// again.
// With an elevation, which may wait for a reviewer, the live worker and
// the active commands are asked for once it is granted. The consumer of
// the Client's next Watch of s.ID is made while the request is appended
// (Client.PrepareWatch).
func (s Submission) Submit(ctx context.Context) error {
	req := s.Request
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends an AwaitWorker still under way when a check fails
	type active struct {
		rows []command.State
		err  error
	}
	var (
		sr             api.SessionReply
		sessErr, wsErr error
		checks         sync.WaitGroup
		workers        = make(chan error, 1)
		commands       = make(chan active, 1)
	)
	ask := func(ctx context.Context) { // the session's active commands
		go func() {
			rows, err := api.ListCommands(ctx, s.Call, api.CommandsRequest{Session: req.Session, Active: true}, 0)
			commands <- active{rows, err}
		}()
	}
	awaitWorker := func() { go func() { workers <- s.Client.AwaitWorker(ctx, s.Grace) }() }
	qctx := ctx // the context the server's answers are asked with
	if s.Elevate == nil {
		awaitWorker() // needs no catch-up: it starts before it
		if s.CatchUp != nil {
			var err error
			if qctx, err = s.CatchUp(ctx); err != nil {
				return fmt.Errorf("exec: %w", err)
			}
		}
		ask(qctx)
	}
	checks.Go(func() {
		sessErr = s.Call(qctx, api.VerbSession, api.SessionRequest{ID: req.Session, RowOnly: true}, &sr)
	})
	checks.Go(func() { wsErr = api.WorkspaceOpen(qctx, s.Call, req.Workspace) })
	checks.Wait()
	if sessErr != nil {
		return fmt.Errorf("exec: %w", sessErr)
	}
	if sr.Session.Phase == events.PhaseEnded {
		return fmt.Errorf("exec: %w: session %s has ended", events.ErrRejected, req.Session)
	}
	if wsErr != nil {
		return fmt.Errorf("exec: %w", wsErr)
	}
	if s.WorkspaceErr != nil {
		return s.WorkspaceErr
	}
	if req.Mode == "" {
		req.Mode = events.ModeWorkspaceWrite
		switch sr.Session.Mode {
		case events.ModeReadOnly, events.ModeFullAccess:
			req.Mode = sr.Session.Mode
		}
	}
	if s.Elevate != nil {
		// Held to the gate's grant, not a person's own authority.
		req.Mode, req.RequestedBy = events.ModeFullAccess, "elevation:"+req.RequestedBy
	}
	// Secrets by the data dir's rules (redact.txt over the built-in
	// ones), the rules the workers redact the output with: rules that do
	// not compile are an error, not a check with fewer rules.
	if err := CheckRequest(req, s.Redactor); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	if s.Elevate != nil {
		var err error
		if req.Elevation, err = s.Elevate(ctx, req); err != nil {
			return err
		}
	}
	if s.Elevate != nil {
		awaitWorker()
		ask(ctx)
	}
	err := <-workers
	switch {
	case errors.Is(err, ErrNoWorker):
		return fmt.Errorf("exec: no live worker for %v: run `logbook serve` (--workers 2 by default) or `logbook worker`", s.Grace)
	case err != nil && err == ctx.Err(): // ended while it waited, as it was
		return err
	case err != nil:
		return fmt.Errorf("exec: %w", err)
	}
	act := <-commands
	if act.err != nil {
		return fmt.Errorf("exec: active commands of session %s: %w", req.Session, act.err)
	}
	// The watch that follows (Client.Wait) gets its consumer made while
	// the request is appended.
	s.Client.PrepareWatch(outer, s.ID)
	evicted, err := s.Client.Request(ctx, s.ID, req, command.ActiveIDs(act.rows))
	for _, id := range evicted {
		if s.Evicted != nil {
			s.Evicted(id)
		}
	}
	if err != nil {
		s.Client.DropWatch(outer, s.ID)
		return fmt.Errorf("exec: %w", err)
	}
	return nil
}

// StopIn asks every active command (api.ListCommands through call)
// whose workspace is path or lies inside it to stop, as by, for
// "workspace_archived": what a workspace's archive does first. A command
// that ended meanwhile (events.ErrRejected) is passed over; the other
// errors are joined.
func (c *Client) StopIn(ctx context.Context, call api.Caller, path, by string) error {
	active, err := api.ListCommands(ctx, call, api.CommandsRequest{Active: true}, 0)
	if err != nil {
		return err
	}
	var errs []error
	for _, cmd := range active {
		if cmd.Workspace == path || strings.HasPrefix(cmd.Workspace, path+"/") {
			if err := c.Stop(ctx, cmd.ID, by, "workspace_archived"); err != nil && !errors.Is(err, events.ErrRejected) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
