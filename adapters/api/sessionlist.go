package api

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// SessionRow is a session of a listing: its summary (a table of 10,000s
// of sessions reads summaries, not whole states) and, in a tree
// (SessionList.Tree), how deep a subagent it is (0: a root). Depth is
// never on the wire.
type SessionRow struct {
	session.Summary
	Depth int `json:"-"`
	// Card is the row's subagent card (session.CardOf) when TreeOrder
	// put it under its parent; Subagents counts the cards of the rows
	// TreeOrder put under it, nil when there are none.
	Card      *session.Card `json:"-"`
	Subagents *Subagents    `json:"-"`
}

// EndedHiddenAfter is how long after its last activity an ended session
// leaves a listing that does not ask for all (SessionList.All).
const EndedHiddenAfter = 24 * time.Hour

// SessionList is what a person asks of the session list: the server
// filters by Phase and staleness (Request), the client keeps the rest
// (Select). The zero value lists every session but ended ones last active
// over EndedHiddenAfter ago, the most recently active first.
type SessionList struct {
	Phase string        // events.Phase…; "": any
	Stale time.Duration // above 0: only sessions working or waiting with nothing observed for this long
	Since string        // as usage.ParseSince reads it, in UTC; "": no limit
	Limit int           // at most this many rows (0: all)
	Cwd   string        // absolute; only sessions whose working directory is it or under it ("": any)
	All   bool          // also ended sessions last active over EndedHiddenAfter ago
	Tree  bool          // subagents right after their parent (SessionRow.Depth set)
}

// Request returns the server's part of l.
func (l SessionList) Request() SessionsRequest {
	req := SessionsRequest{Phase: l.Phase}
	if l.Stale > 0 {
		req.StaleMS = max(l.Stale.Milliseconds(), 1)
	}
	return req
}

// From is the time Since reaches back to from now (a relative since
// moves with now, as a redrawn list does); zero when Since is "" or does
// not parse.
func (l SessionList) From(now time.Time) time.Time {
	if l.Since == "" {
		return time.Time{}
	}
	t, err := usage.ParseSince(l.Since, now, time.UTC)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Select keeps the rows of rs l asks for, the most recently active
// first (session.Summary.LastActivity; ties: by id), at most l.Limit of
// them; hidden counts the ended sessions left out for their age. rs is
// not modified.
func (l SessionList) Select(rs []SessionRow, now time.Time) (out []SessionRow, hidden int) {
	keys, hidden := l.order(rs, now)
	if len(keys) > 0 {
		out = make([]SessionRow, 0, len(keys))
	}
	for _, k := range keys {
		out = append(out, rs[k.i])
	}
	return l.tree(out), hidden
}

// SelectInPlace is Select that orders rs itself, by swaps along the
// cycles of the order, allocating no second slice of rows: out is a
// prefix of rs (its tree order's rows, with l.Tree), and the rows past
// it are left in no particular order. For a caller that owns rs (a
// list of 10,000s of rows decoded for it).
func (l SessionList) SelectInPlace(rs []SessionRow, now time.Time) (out []SessionRow, hidden int) {
	keys, hidden := l.order(rs, now)
	if len(keys) == 0 {
		return l.tree(nil), hidden // as Select's
	}
	// Row keys[j].i goes to place j. dst[i] is where row i goes: a
	// permutation of rs once the rows left out take the places after
	// the kept ones; each cycle of it is walked once, one row held aside.
	dst := make([]int32, len(rs))
	for i := range dst {
		dst[i] = -1
	}
	for j, k := range keys {
		dst[k.i] = int32(j)
	}
	next := int32(len(keys))
	for i := range dst {
		if dst[i] < 0 {
			dst[i] = next
			next++
		}
	}
	for i := range rs {
		for int(dst[i]) != i {
			j := dst[i]
			rs[i], rs[j] = rs[j], rs[i]
			dst[i], dst[j] = dst[j], j
		}
	}
	return l.tree(rs[:len(keys)]), hidden
}

// rowKey is a row's place in Select's order: the row's last activity and
// id, and its index in the rows given.
type rowKey struct {
	last time.Time
	id   string
	i    int
}

// order returns the keys of the rows of rs l keeps, in the list's order
// and cut to l.Limit (unless l.Tree, which cuts after TreeOrder), and
// how many ended sessions it left out for their age. The rows are
// ordered by their keys: a row is a few hundred bytes, too many to move
// at every step of a sort.
func (l SessionList) order(rs []SessionRow, now time.Time) (keys []rowKey, hidden int) {
	from := l.From(now)
	keys = make([]rowKey, 0, len(rs))
	for i, r := range rs {
		last := r.LastActivity()
		if !from.IsZero() && last.Before(from) {
			continue
		}
		if l.Cwd != "" && r.Cwd != l.Cwd && !strings.HasPrefix(r.Cwd, strings.TrimSuffix(l.Cwd, "/")+"/") {
			continue
		}
		if !l.All && l.Phase != events.PhaseEnded && r.Phase == events.PhaseEnded && now.Sub(last) > EndedHiddenAfter {
			hidden++
			continue
		}
		keys = append(keys, rowKey{last, r.ID, i})
	}
	slices.SortStableFunc(keys, func(a, b rowKey) int {
		if c := b.last.Compare(a.last); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if !l.Tree && l.Limit > 0 && len(keys) > l.Limit {
		keys = keys[:l.Limit]
	}
	return keys, hidden
}

// tree is out in tree order (TreeOrder) cut to l.Limit when l asks for
// the tree, else out.
func (l SessionList) tree(out []SessionRow) []SessionRow {
	if !l.Tree {
		return out
	}
	out = TreeOrder(out)
	if l.Limit > 0 && len(out) > l.Limit {
		out = out[:l.Limit]
	}
	return out
}

// MostRecent is Select for a list with a Limit (and no Tree) when one
// page of the sessions the most recently active first settles it: it
// asks for that page alone, so the answer costs the same at any number
// of sessions. settled is false when it does not (the limit reaches past
// the page, and the page's last row is not older than Since): out is
// then nil, and the caller reads the whole list (Rows does). A list read
// page after page in that order would lose a session that became active
// between two pages, moving from a page not yet read to before the
// cursor. Errors are call's.
func (l SessionList) MostRecent(ctx context.Context, call Caller, now time.Time) (out []SessionRow, hidden int, settled bool, err error) {
	req := l.Request()
	req.Summaries, req.Order = true, OrderActivity
	req.Limit = max(2*l.Limit, 100)
	var p struct {
		Next string `json:"next"`
		Stale
		Sessions []SessionRow `json:"sessions"`
	}
	if err := call(ctx, VerbSessions, req, &p); err != nil {
		return nil, 0, false, err
	}
	out, hidden = l.Select(p.Sessions, now)
	switch from := l.From(now); {
	case len(out) >= l.Limit, p.Next == "", len(p.Sessions) == 0:
	case !from.IsZero() && p.Sessions[len(p.Sessions)-1].LastActivity().Before(from):
		// every later page is older still
	default:
		return nil, 0, false, nil
	}
	if len(out) > l.Limit {
		out = out[:l.Limit]
	}
	return out, hidden, true, nil
}

// TreeOrder puts each session's subagents right after it (and theirs
// after them), keeping the order of rs otherwise; a subagent whose parent
// is not in rs stays where it is. Depth is set on each row returned, Card
// on each placed under its parent, Subagents on each with rows under it;
// rs is not modified.
func TreeOrder(rs []SessionRow) []SessionRow {
	in := make(map[string]bool, len(rs))
	for _, r := range rs {
		in[r.ID] = true
	}
	kids := map[string][]SessionRow{}
	var roots []SessionRow
	for _, r := range rs {
		if r.Parent != "" && in[r.Parent] && r.Parent != r.ID {
			kids[r.Parent] = append(kids[r.Parent], r)
		} else {
			roots = append(roots, r)
		}
	}
	out := make([]SessionRow, 0, len(rs))
	seen := map[string]bool{}
	var add func(r SessionRow, depth int, parent *session.Summary)
	add = func(r SessionRow, depth int, parent *session.Summary) {
		if seen[r.ID] {
			return
		}
		seen[r.ID] = true
		r.Depth = depth
		if parent != nil {
			c := session.CardOf(r.Summary, *parent)
			r.Card = &c
		}
		var cards []session.Card
		for _, k := range kids[r.ID] {
			cards = append(cards, session.CardOf(k.Summary, r.Summary))
		}
		r.Subagents = SubagentsOf(cards)
		out = append(out, r)
		for _, k := range kids[r.ID] {
			add(k, depth+1, &r.Summary)
		}
	}
	for _, r := range roots {
		add(r, 0, nil)
	}
	return out
}
