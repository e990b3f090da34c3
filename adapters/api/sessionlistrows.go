package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// RawRows returns the rows l selects as of now (Select) as the server
// stored them: the JSON of each session.State, its times in RFC 3339,
// in the list's order. Errors are call's, and a row that does not decode
// ("session row: …").
func (l SessionList) RawRows(ctx context.Context, call Caller, now time.Time) ([]json.RawMessage, error) {
	raw, err := ListSessions[json.RawMessage](ctx, call, l.Request(), 0)
	if err != nil {
		return nil, err
	}
	rows := make([]SessionRow, len(raw))
	byID := make(map[string]json.RawMessage, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &rows[i]); err != nil {
			return nil, fmt.Errorf("session row: %w", err)
		}
		byID[rows[i].ID] = r
	}
	sel, _ := l.Select(rows, now)
	out := make([]json.RawMessage, len(sel))
	for i, r := range sel {
		out[i] = byID[r.ID]
	}
	return out, nil
}

// Rows returns the rows l selects as of now with their summaries, and
// how many ended sessions it left out as too old: the most recent ones
// asked for alone (MostRecent) when l is a plain limited list that one
// page settles, else the whole list, read in id order (where a session
// updated meanwhile is read once, as it was or as it is) and selected
// here (Select). Errors are call's.
func (l SessionList) Rows(ctx context.Context, call Caller, now time.Time) (sel []SessionRow, hidden int, err error) {
	if l.Limit > 0 && !l.Tree && l.Stale <= 0 {
		sel, hidden, settled, err := l.MostRecent(ctx, call, now)
		if err != nil || settled {
			return sel, hidden, err
		}
	}
	req := l.Request()
	req.Summaries = true
	rows, err := ListSessions[SessionRow](ctx, call, req, 0)
	if err != nil {
		return nil, 0, err
	}
	sel, hidden = l.SelectInPlace(rows, now)
	return sel, hidden, nil
}
