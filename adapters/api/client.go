package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

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
	type page struct {
		raw []byte
		out []T
		err error
		ok  chan struct{}
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
				p.err = json.Unmarshal(p.raw, &sp)
				p.out, p.raw = sp.Sessions, nil
				close(p.ok)
			}
		})
	}
	var (
		pages []*page
		err   error
		n     int
	)
	for {
		if limit > 0 {
			req.Limit = limit - n
		}
		p := &page{ok: make(chan struct{})}
		if err = call(ctx, VerbSessions, req, &p.raw); err != nil {
			break
		}
		var next string
		if next, n, err = pageNext(p.raw, n); err != nil {
			break
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
		return nil, err
	}
	out := make([]T, 0, n)
	for _, p := range pages {
		if p.err != nil {
			return nil, fmt.Errorf("sessions page: %w", p.err)
		}
		out = append(out, p.out...)
	}
	return out, nil
}

// pageNext reads the cursor and the row count at the head of a sessions
// page, without reading its rows, and adds the count to n.
func pageNext(raw []byte, n int) (string, int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", n, fmt.Errorf("sessions page: want an object, got %v (%v)", t, err)
	}
	var (
		next string
		rows = -1
	)
	for rows < 0 {
		t, err := dec.Token()
		if err != nil {
			return "", n, fmt.Errorf("sessions page: %w", err)
		}
		switch t {
		case "next":
			err = dec.Decode(&next)
		case "rows":
			err = dec.Decode(&rows)
		default:
			return "", n, fmt.Errorf("sessions page: field %v before next and rows", t)
		}
		if err != nil {
			return "", n, fmt.Errorf("sessions page: %w", err)
		}
	}
	if next != "" && rows == 0 {
		return "", n, fmt.Errorf("sessions page: empty, yet it names a next page %q", next)
	}
	return next, n + rows, nil
}

// ListCommands asks for the command list page after page and returns
// at most limit commands (0: all), oldest first.
func ListCommands(ctx context.Context, call Caller, req CommandsRequest, limit int) ([]command.State, error) {
	out := []command.State{}
	for {
		if limit > 0 {
			req.Limit = limit - len(out)
		}
		var p CommandsPage
		if err := call(ctx, VerbCommands, req, &p); err != nil {
			return nil, err
		}
		out = append(out, p.Commands...)
		if p.Next == "" || (limit > 0 && len(out) >= limit) || len(p.Commands) == 0 {
			return out, nil
		}
		req.After = p.Next
	}
}
