package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/logbook-dev/logbook/reducers/command"
)

// Caller sends one API request and decodes the answer into resp, or,
// when resp is a *[]byte, stores the answer's JSON there undecoded.
type Caller func(ctx context.Context, verb string, req, resp any) error

// Local returns a Caller that calls handlers in this process, as a
// server would on the connection: the request is encoded to JSON and the
// answer decoded from it, so both sides see the same shapes. A verb with
// no handler fails saying it needs a running server.
func Local(handlers map[string]func(context.Context, []byte) (any, error)) Caller {
	return func(ctx context.Context, verb string, req, resp any) error {
		h, ok := handlers[verb]
		if !ok {
			return fmt.Errorf("%s needs a running server", verb)
		}
		in, err := json.Marshal(req)
		if err != nil {
			return err
		}
		v, err := h(ctx, in)
		if err != nil {
			return err
		}
		out, err := encode(v)
		if err != nil {
			return err
		}
		if raw, ok := resp.(*[]byte); ok {
			*raw = out
			return nil
		}
		if resp == nil {
			return nil
		}
		return json.Unmarshal(out, resp)
	}
}

// ListSessions asks for the session list page after page and returns
// at most limit sessions (0: all), in id order, each decoded into a T: a
// session.State, a session.Summary for the table (with req.Summaries), or
// json.RawMessage to pass the stored JSON on. Pages are decoded by two goroutines while the next
// ones are asked for.
func ListSessions[T any](ctx context.Context, call Caller, req SessionsRequest, limit int) ([]T, error) {
	out, _, err := ListSessionsAsOf[T](ctx, call, req, limit)
	return out, err
}

// ListSessionsAsOf is ListSessions that also returns the Stale of the
// list's first page: set when the server answered from its projection as
// it stood while its log did not answer (a ctx from AllowStale).
func ListSessionsAsOf[T any](ctx context.Context, call Caller, req SessionsRequest, limit int) ([]T, Stale, error) {
	type page struct {
		raw  []byte
		rows int // as the page says: its rows decode into a slice made for them
		out  []T
		err  error
		ok   chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan *page, 64)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for p := range todo {
				var sp struct {
					Sessions []T `json:"sessions"`
				}
				// Made to size, rather than grown (and copied) as
				// the rows decode: a row is a few hundred bytes.
				sp.Sessions = make([]T, 0, p.rows)
				p.err = jsonv1.Unmarshal(p.raw, &sp)
				p.out, p.raw = sp.Sessions, nil
				close(p.ok)
			}
		})
	}
	var (
		pages []*page
		err   error
		n     int
		stale Stale
		first = true
	)
	for {
		if limit > 0 {
			req.Limit = limit - n
		}
		p := &page{ok: make(chan struct{})}
		if err = call(ctx, VerbSessions, req, &p.raw); err != nil {
			break
		}
		var (
			next string
			st   Stale
		)
		before := n
		if next, n, st, err = pageNext(p.raw, n); err != nil {
			break
		}
		p.rows = max(n-before, 0)
		if first {
			stale, first = st, false
		}
		pages = append(pages, p)
		todo <- p
		if next == "" || (limit > 0 && n >= limit) {
			break
		}
		req.After = next
	}
	close(todo)
	wg.Wait()
	if err != nil {
		return nil, Stale{}, err
	}
	out := make([]T, 0, n)
	for _, p := range pages {
		if p.err != nil {
			return nil, Stale{}, fmt.Errorf("sessions page: %w", p.err)
		}
		out = append(out, p.out...)
	}
	return out, stale, nil
}

// PageStale returns the Stale at the head of a sessions page (raw, as
// the sessions verb answers it), reading no further than its rows; the
// zero Stale for a page that is not stale or does not parse.
func PageStale(raw []byte) Stale {
	_, _, st, _ := pageNext(raw, 0)
	return st
}

// pageNext reads the cursor, the row count and the Stale at the head of
// a sessions page, without reading its rows, and adds the count to n.
// Next and rows come first; after them it reads the Stale's fields and
// passes over any other field up to "sessions", so a server of a later
// version may add fields there.
func pageNext(raw []byte, n int) (string, int, Stale, error) {
	var stale Stale
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", n, stale, fmt.Errorf("sessions page: want an object, got %v (%v)", t, err)
	}
	var (
		next string
		rows = -1
	)
	for rows < 0 {
		t, err := dec.Token()
		if err != nil {
			return "", n, stale, fmt.Errorf("sessions page: %w", err)
		}
		switch t {
		case "next":
			err = dec.Decode(&next)
		case "rows":
			err = dec.Decode(&rows)
		default:
			return "", n, stale, fmt.Errorf("sessions page: field %v before next and rows", t)
		}
		if err != nil {
			return "", n, stale, fmt.Errorf("sessions page: %w", err)
		}
	}
	if next != "" && rows == 0 {
		return "", n, stale, fmt.Errorf("sessions page: empty, yet it names a next page %q", next)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil || t == "sessions" {
			break
		}
		switch t {
		case "log_unavailable_since":
			err = dec.Decode(&stale.LogUnavailableSince)
		case "as_of_seq":
			err = dec.Decode(&stale.AsOfSeq)
		case "log_error":
			err = dec.Decode(&stale.LogError)
		case "appends_paused_since":
			err = dec.Decode(&stale.AppendsPausedSince)
		case "hooks_waiting":
			err = dec.Decode(&stale.HooksWaiting)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return "", n, stale, fmt.Errorf("sessions page: %v: %w", t, err)
		}
	}
	return next, n + rows, stale, nil
}

// ListCommands asks for the command list page after page and returns
// at most limit commands (0: all), oldest first.
func ListCommands(ctx context.Context, call Caller, req CommandsRequest, limit int) ([]command.State, error) {
	out, _, err := ListCommandsAsOf(ctx, call, req, limit)
	return out, err
}

// ListCommandsAsOf is ListCommands that also returns the Stale of the
// list's first page: set when the server answered from its projection as
// it stood while its log did not answer (a ctx from AllowStale).
func ListCommandsAsOf(ctx context.Context, call Caller, req CommandsRequest, limit int) ([]command.State, Stale, error) {
	out := []command.State{}
	var stale Stale
	for first := true; ; first = false {
		if limit > 0 {
			req.Limit = limit - len(out)
		}
		var p CommandsPage
		if err := call(ctx, VerbCommands, req, &p); err != nil {
			return nil, Stale{}, err
		}
		if first {
			stale = p.Stale
		}
		out = append(out, p.Commands...)
		if p.Next == "" || (limit > 0 && len(out) >= limit) || len(p.Commands) == 0 {
			return out, stale, nil
		}
		req.After = p.Next
	}
}
