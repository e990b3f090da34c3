package httpapi

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// SessionSummary is a session as the list, the board and the pending
// decisions show it: its phase and activity, who and where, and times (UTC,
// from the events). Full rows are at /v1/sessions/{id}.
type SessionSummary struct {
	ID        string `json:"id"`
	Ver       uint64 `json:"ver"`
	Phase     string `json:"phase"`
	Activity  string `json:"activity"`
	WaitingOn string `json:"waiting_on,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Parent    string `json:"parent,omitempty"`
	AgentType string `json:"agent_type,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	Model     string `json:"model,omitempty"`
	Title     string `json:"title,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Turns     int    `json:"turns"`
	ToolCalls int    `json:"tool_calls"`
	Abandoned int    `json:"abandoned"`
	// OpenEntries counts open entries; OldestOpenAt is when the oldest
	// of them opened (absent when none is open).
	OpenEntries  int       `json:"open_entries"`
	OldestOpenAt time.Time `json:"oldest_open_at,omitzero"`
	OpenReviews  []string  `json:"open_reviews,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Since        time.Time `json:"since"`
	// ObservedAt is when Logbook last heard from the agent, on the
	// server's clock (session.State.ObservedAt); absent when nothing was
	// observed of it (a session the command line made).
	ObservedAt time.Time `json:"observed_at,omitzero"`
	EndReason  string    `json:"end_reason,omitempty"`
	// Tokens is every token the session spent itself (a subagent's are
	// in its own summary, never its parent's). Cost is their price in
	// the price table's currency (USD), as `logbook session show` prices
	// them: nil when none of its models has a price, when it spent
	// nothing, or when no price table loads (the list's price_error
	// says why). Unpriced names its models with no price: their tokens
	// are in Tokens and not in Cost.
	Tokens   int64    `json:"tokens"`
	Cost     *float64 `json:"cost"`
	Unpriced []string `json:"unpriced,omitempty"`
}

// summaryRow is what a summary decodes of a stored session row.
type summaryRow struct {
	SessionSummary
	Entries []struct {
		EntryID  string    `json:"entry_id"`
		Activity string    `json:"activity"`
		OpenedAt time.Time `json:"opened_at"`
	} `json:"entries"`
	// Pending holds the gate's open reviews: the ones a person can
	// answer through Logbook.
	Pending []session.PendingReview `json:"pending_reviews"`
	Dialogs []session.Dialog        `json:"dialogs"`
	Usage   []session.UsageBucket   `json:"usage"`
}

// entryActivity returns the activity of open entry id ("" if none).
func (sr summaryRow) entryActivity(id string) string {
	for _, e := range sr.Entries {
		if e.EntryID == id {
			return e.Activity
		}
	}
	return ""
}

// decodeSummary decodes a stored session row into its summary, its
// spend priced with t (nil: tokens only).
func decodeSummary(row []byte, t *usage.Table) (SessionSummary, error) {
	var sr summaryRow
	if err := json.Unmarshal(row, &sr); err != nil {
		return SessionSummary{}, err
	}
	return finishSummary(sr, t), nil
}

func finishSummary(sr summaryRow, t *usage.Table) SessionSummary {
	s := sr.SessionSummary
	s.OpenEntries = len(sr.Entries)
	for _, e := range sr.Entries {
		if s.OldestOpenAt.IsZero() || e.OpenedAt.Before(s.OldestOpenAt) {
			s.OldestOpenAt = e.OpenedAt
		}
	}
	if len(sr.Usage) > 0 {
		sp := usage.SpendOf([]session.State{{ID: s.ID, Usage: sr.Usage}}, t)
		s.Tokens, s.Cost, s.Unpriced = sp.Tokens.Total(), sp.Cost, sp.Unpriced
	}
	return s
}

// Summary returns st's summary, its spend priced with the shipped price
// table (usage.Shipped).
func Summary(st session.State) SessionSummary {
	return summaryWith(st, usage.Shipped())
}

// summaryWith returns st's summary, its spend priced with t (nil:
// tokens only).
func summaryWith(st session.State, t *usage.Table) SessionSummary {
	b, _ := json.Marshal(st)
	s, _ := decodeSummary(b, t)
	return s
}

// summaryTableFor is how long summaries are priced with the same price
// table before Config.Prices is asked again: a board refreshes a row per
// event, and a table takes milliseconds to load.
const summaryTableFor = time.Second

// summaryPrices returns the price table summaries are priced with, at
// most summaryTableFor old, or nil and why none loads (then summaries
// carry tokens only). Safe for concurrent use; the table is only read.
func (s *Server) summaryPrices() (*usage.Table, string) {
	c := &s.summaryTable
	c.Lock()
	defer c.Unlock()
	if now := time.Now(); c.at.IsZero() || now.Sub(c.at) >= summaryTableFor || now.Before(c.at) {
		c.t, c.err = s.prices()
		c.at = now
	}
	if c.err != nil {
		return nil, "costs not shown: " + c.err.Error()
	}
	return c.t, ""
}

// lastSeen is when the agent of s was last observed.
func (s SessionSummary) lastSeen() time.Time {
	if s.ObservedAt.IsZero() {
		return s.UpdatedAt
	}
	return s.ObservedAt
}

// sessionQuery is GET /v1/sessions's query, parsed.
type sessionQuery struct {
	phase  string
	stale  time.Duration
	cwd    string
	parent string // "": any; "none": top-level only
	since  time.Time
	sort   string // id, started, -started, updated, -updated
	limit  int
	cursor string
}

// Limits of a page.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

func parseSessionQuery(r *http.Request, now time.Time) (sessionQuery, error) {
	v := r.URL.Query()
	q := sessionQuery{phase: v.Get("phase"), cwd: v.Get("cwd"), parent: v.Get("parent"), sort: cmp.Or(v.Get("sort"), "id"), cursor: v.Get("cursor")}
	switch q.phase {
	case "", events.PhaseReady, events.PhaseWorking, events.PhaseWaiting, events.PhaseEnded:
	default:
		return q, fmt.Errorf("%w: phase %q: want ready, working, waiting or ended", errBadRequest, q.phase)
	}
	switch q.sort {
	case "id", "started", "-started", "updated", "-updated":
	default:
		return q, fmt.Errorf("%w: sort %q: want id, started, -started, updated or -updated", errBadRequest, q.sort)
	}
	if s := v.Get("stale"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return q, fmt.Errorf("%w: stale %q: want a duration such as 10m", errBadRequest, s)
		}
		q.stale = d
	}
	if s := v.Get("since"); s != "" {
		// As the command line reads it: 7d, 12h, 30m, a day in UTC, or an
		// RFC 3339 time.
		t, err := usage.ParseSince(s, now, time.UTC)
		if err != nil {
			return q, fmt.Errorf("%w: since %v", errBadRequest, err)
		}
		q.since = t
	}
	limit, err := intParam(v.Get("limit"), defaultLimit, 1, maxLimit, "limit")
	if err != nil {
		return q, err
	}
	q.limit = int(limit)
	return q, nil
}

// intParam parses a query parameter within [lo, hi], def when empty.
func intParam(s string, def, lo, hi int64, name string) (int64, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s %q: want a whole number from %d to %d", errBadRequest, name, s, lo, hi)
	}
	return n, nil
}

// window reads the two query parameters of a paged read: from, where
// it starts (0 to 2^62, default 0), and count, how much it reads (1 to
// most, default def). An error wraps errBadRequest and names the
// parameter.
func window(v url.Values, from, count string, def, most int64) (start, n int64, err error) {
	if start, err = intParam(v.Get(from), 0, 0, 1<<62, from); err != nil {
		return 0, 0, err
	}
	if n, err = intParam(v.Get(count), def, 1, most, count); err != nil {
		return 0, 0, err
	}
	return start, n, nil
}

func (q sessionQuery) keep(s SessionSummary, now time.Time) bool {
	if q.stale > 0 && !((s.Phase == events.PhaseWorking || s.Phase == events.PhaseWaiting) && now.Sub(s.lastSeen()) >= q.stale) {
		return false
	}
	if q.cwd != "" && s.Cwd != q.cwd && !(strings.HasSuffix(q.cwd, "/") && strings.HasPrefix(s.Cwd, q.cwd)) {
		return false
	}
	switch q.parent {
	case "":
	case "none":
		if s.Parent != "" {
			return false
		}
	default:
		if s.Parent != q.parent {
			return false
		}
	}
	return q.since.IsZero() || !s.UpdatedAt.Before(q.since)
}

// sortKey returns s's place in the order q.sort names, as text that sorts
// ascending; the id breaks ties.
func (q sessionQuery) sortKey(s SessionSummary) string {
	switch strings.TrimPrefix(q.sort, "-") {
	case "started":
		return s.StartedAt.UTC().Format("2006-01-02T15:04:05.000000Z")
	case "updated":
		return s.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	return ""
}

// sessionsPage is GET /v1/sessions's answer. Next, when set, is the cursor
// of the next page.
// Now is the server's clock when it answered, against which a client
// measures how long ago the summaries' times were (their observed_at
// above all) whatever its own clock says. PriceError, when set, says
// why no summary has a cost (the price table does not load).
type sessionsPage struct {
	Sessions   []SessionSummary `json:"sessions"`
	Next       string           `json:"next,omitempty"`
	Checkpoint uint64           `json:"checkpoint"`
	Now        time.Time        `json:"now"`
	PriceError string           `json:"price_error,omitempty"`
	staleMark
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Clock()
	q, err := parseSessionQuery(r, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var stale staleMark
	if q.cursor == "" {
		// Read-your-writes for a list's first page, as the command line
		// has it: what was appended before the request is in it.
		if stale, err = s.readCaughtUp(w, r); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	prices, priceErr := s.summaryPrices()
	page := sessionsPage{Sessions: []SessionSummary{}, Checkpoint: s.store.Checkpoint(), Now: now.UTC(), PriceError: priceErr, staleMark: stale}
	if q.sort == "id" {
		// In id order the store pages for us: the cursor is the last id.
		after := ""
		if q.cursor != "" {
			k, err := decodeCursor(q.cursor)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			after = k[1]
		}
		err = s.store.SessionRows(q.phase, after, func(id string, row []byte) (bool, error) {
			sum, err := decodeSummary(row, prices)
			if err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", id, err)
			}
			if !q.keep(sum, now) {
				return true, nil
			}
			if len(page.Sessions) == q.limit {
				page.Next = encodeCursor("", page.Sessions[len(page.Sessions)-1].ID)
				return false, nil
			}
			page.Sessions = append(page.Sessions, sum)
			return true, nil
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, page)
		return
	}
	var all []SessionSummary
	err = s.store.SessionRows(q.phase, "", func(id string, row []byte) (bool, error) {
		sum, err := decodeSummary(row, prices)
		if err != nil {
			return false, fmt.Errorf("session %s: decode row: %w", id, err)
		}
		if q.keep(sum, now) {
			all = append(all, sum)
		}
		return true, nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	desc := strings.HasPrefix(q.sort, "-")
	less := func(a, b [2]string) int {
		c := cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
		if desc {
			return -c
		}
		return c
	}
	slices.SortFunc(all, func(a, b SessionSummary) int {
		return less([2]string{q.sortKey(a), a.ID}, [2]string{q.sortKey(b), b.ID})
	})
	start := 0
	if q.cursor != "" {
		k, err := decodeCursor(q.cursor)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		start, _ = slices.BinarySearchFunc(all, k, func(e SessionSummary, k [2]string) int {
			return less([2]string{q.sortKey(e), e.ID}, k)
		})
		if start < len(all) && all[start].ID == k[1] {
			start++
		}
	}
	end := min(start+q.limit, len(all))
	page.Sessions = append(page.Sessions, all[start:end]...)
	if end < len(all) {
		last := all[end-1]
		page.Next = encodeCursor(q.sortKey(last), last.ID)
	}
	writeJSON(w, http.StatusOK, page)
}

// encodeCursor returns the opaque cursor of a place in a sorted list.
func encodeCursor(key, id string) string {
	b, _ := json.Marshal([2]string{key, id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string) ([2]string, error) {
	var k [2]string
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return k, fmt.Errorf("%w: cursor %q: pass back the next of a previous page", errBadRequest, c)
	}
	return k, nil
}

// waitSeq waits, when the request asks with ?min_seq=N, until the
// projection has applied sequence N (while it moves; StillFor without
// progress is an error), so a client that saw
// an event on the stream reads a row that includes it; without min_seq,
// until it has applied every event the log holds now (readCaughtUp):
// read-your-writes, as the command line has it, or, while the log does
// not answer, the projection as it stands, marked stale.
func (s *Server) waitSeq(w http.ResponseWriter, r *http.Request) (staleMark, error) {
	v := r.URL.Query().Get("min_seq")
	if v == "" {
		return s.readCaughtUp(w, r)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return staleMark{}, fmt.Errorf("%w: min_seq %q: want a stream sequence", errBadRequest, v)
	}
	return staleMark{}, s.store.WaitMoving(r.Context(), n, projections.StillFor)
}

// sessionReply is GET /v1/sessions/{id}'s answer: the full row, its
// subagents' summaries, its commands (oldest first), what it and its
// subagents spent, and the checkpoint it was read at.
type sessionReply struct {
	Session  session.State    `json:"session"`
	Children []SessionSummary `json:"children"`
	// Cards are the subagent cards (projections.Store.Cards), never nil;
	// Subagents counts them, absent when the session delegated nothing.
	Cards      []session.Card  `json:"cards"`
	Subagents  *Subagents      `json:"subagents,omitempty"`
	Commands   []command.State `json:"commands"`
	Usage      SessionUsage    `json:"usage"`
	Checkpoint uint64          `json:"checkpoint"`
	staleMark
}

// Subagents is how many of a session's subagents are at work (running
// or waiting on a person) and how many it has (session.Delegation).
type Subagents struct {
	Running int `json:"running"`
	Total   int `json:"total"`
}

// subagentsOf counts cards; nil when there are none.
func subagentsOf(cards []session.Card) *Subagents {
	if len(cards) == 0 {
		return nil
	}
	r, n := session.Delegation(cards)
	return &Subagents{Running: r, Total: n}
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	stale, err := s.waitSeq(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.resolveSession(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cp := s.store.Checkpoint()
	st, err := s.store.Session(id)
	if err == nil && !st.Exists() {
		err = fmt.Errorf("session %s: %w: it has not started", id, events.ErrNotFound)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	prices, priceErr := s.summaryPrices()
	summary, err := boolParam(r.URL.Query(), "summary")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if summary {
		sum := summaryWith(st, prices)
		out := map[string]any{"session": sum, "checkpoint": cp, "now": s.cfg.Clock().UTC()}
		if priceErr != "" {
			out["price_error"] = priceErr
		}
		if stale.LogUnavailableSince != nil {
			out["log_unavailable_since"], out["as_of_seq"] = stale.LogUnavailableSince, stale.AsOfSeq
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	kids, err := s.store.Children(id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cmds, err := s.store.Commands(id, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cards, err := s.store.Cards(st, kids)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.cfg.MeasureCards != nil {
		s.cfg.MeasureCards(r.Context(), cards)
	}
	usage.PriceCards(cards, kids, prices)
	spend := s.sessionUsage(st, kids)
	rep := sessionReply{Session: st, Children: []SessionSummary{}, Cards: cards, Subagents: subagentsOf(cards), Commands: nonNil(cmds), Usage: spend, Checkpoint: cp, staleMark: stale}
	for _, k := range kids {
		rep.Children = append(rep.Children, summaryWith(k, prices))
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Timeline == nil {
		s.fail(w, r, fmt.Errorf("%w: this server has no audit timeline", errUnavailable))
		return
	}
	id, err := s.resolveSession(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cmds, err := s.store.Commands(id, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.ID
	}
	items, err := s.cfg.Timeline(r.Context(), id, ids)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "items": items})
}

func (s *Server) sessionCommands(w http.ResponseWriter, r *http.Request) {
	id, err := s.resolveSession(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cmds, err := s.store.Commands(id, r.URL.Query().Get("active") == "true")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"commands": nonNil(cmds)})
}

func (s *Server) command(w http.ResponseWriter, r *http.Request) {
	if _, err := s.waitSeq(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.resolveCommand(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.store.Command(id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// Output range limits, in bytes.
const (
	defaultOutputLength = 256 << 10
	maxOutputLength     = 4 << 20
)

// errEnough stops a Watch once the range is read.
var errEnough = errors.New("enough")

// output serves a byte range of a command's whole output: the exact bytes
// (escape sequences included) as application/octet-stream, with headers
// Logbook-Offset (where they start), Logbook-Next (the offset to ask for
// next), Logbook-Status and Logbook-Done ("true" once the command ended
// and nothing follows).
func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Output == nil {
		s.fail(w, r, fmt.Errorf("%w: this server reads no command output", errUnavailable))
		return
	}
	off, length, err := window(r.URL.Query(), "offset", "length", defaultOutputLength, maxOutputLength)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.resolveCommand(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf []byte
	more := false
	st, err := s.cfg.Output.Watch(r.Context(), id, worker.WatchOptions{After: off}, func(c worker.Chunk) error {
		room := int(length) - len(buf)
		if len(c.Data) > room {
			buf = append(buf, c.Data[:room]...)
			more = true
			return errEnough
		}
		buf = append(buf, c.Data...)
		if len(buf) == int(length) {
			more = true
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		s.fail(w, r, err)
		return
	}
	if errors.Is(err, errEnough) {
		if st, err = s.store.Command(id); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	next := off + int64(len(buf))
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Logbook-Offset", strconv.FormatInt(off, 10))
	h.Set("Logbook-Next", strconv.FormatInt(next, 10))
	h.Set("Logbook-Status", st.Status)
	h.Set("Logbook-Done", strconv.FormatBool(!more && !st.Active()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

// Decision is one pending decision: a session waiting on a person, or
// an open review. It carries no prompt text or output, only what the
// decision is about and where: the tool and a short, redacted action.
type Decision struct {
	Kind     string    `json:"kind"` // "waiting" (a permission prompt or a question) or "review"
	Session  string    `json:"session"`
	Review   string    `json:"review,omitempty"`
	Activity string    `json:"activity,omitempty"` // the session's activity, e.g. "review" or "question"
	Since    time.Time `json:"since"`
	Cwd      string    `json:"cwd,omitempty"`
	Model    string    `json:"model,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	Parent   string    `json:"parent,omitempty"`
	// Tool is the tool the decision is about: a review's, the newest
	// open permission dialog's, or that of the entry the session waits
	// on (a question's AskUserQuestion); "" when none is known.
	Tool string `json:"tool,omitempty"`
	// Action is what the tool would do as the gate or the agent's
	// dialog recorded it (e.g. the command), redacted again with the
	// server's Redactor, on one line and cut to ActionCut bytes (a cut
	// one ends in "…"); "" for a dialog known only from a notice, whose
	// text is not the action, and for a question.
	Action string `json:"action,omitempty"`
	Risk   string `json:"risk,omitempty"` // a review's risk class under the policy, "" if none
	// Deadline is when a review's budget runs out and the gate decides
	// it timed_out (its request's time plus its budget, on the server's
	// clock); absent for a review with no budget and a waiting row.
	Deadline time.Time `json:"deadline,omitzero"`
}

// ActionCut is the most bytes of a Decision's Action.
const ActionCut = 80

// shortAction returns a, redacted, its runs of white space one space,
// cut to ActionCut bytes.
func (s *Server) shortAction(a string) string {
	a = strings.Join(strings.Fields(s.cfg.Redactor.Redact(a)), " ")
	if len(a) <= ActionCut {
		return a
	}
	return redact.CutText(a, ActionCut-len("…")) + "…"
}

// Pending returns the pending decisions across all sessions, oldest
// first: each open review of the gate (answerable with POST
// /v1/reviews/{id} or `logbook review allow|deny`), and one "waiting"
// row for each session that has none of those yet waits on a person (a
// question, or a permission dialog on the agent's own screen that the
// gate does not review: it is answered there, not through Logbook).
func (s *Server) Pending() ([]Decision, error) {
	out := []Decision{}
	for _, phase := range []string{events.PhaseWaiting, events.PhaseWorking, events.PhaseReady} {
		err := s.store.SessionRows(phase, "", func(id string, row []byte) (bool, error) {
			var sr summaryRow
			if err := json.Unmarshal(row, &sr); err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", id, err)
			}
			sum := sr.SessionSummary
			d := Decision{Session: sum.ID, Activity: sum.Activity, Since: sum.Since, Cwd: sum.Cwd, Model: sum.Model, Agent: sum.Agent, Parent: sum.Parent}
			for _, rv := range sr.Pending {
				r := d
				r.Kind, r.Review, r.Tool, r.Action, r.Risk = "review", rv.ID, rv.Tool, s.shortAction(rv.Action), rv.Risk
				if rv.BudgetMS > 0 {
					r.Deadline = rv.RequestedAt.Add(time.Duration(rv.BudgetMS) * time.Millisecond)
				}
				out = append(out, r)
			}
			if len(sr.Pending) == 0 && (phase == events.PhaseWaiting || len(sum.OpenReviews) > 0) {
				d.Kind = "waiting"
				if n := len(sr.Dialogs); n > 0 {
					g := sr.Dialogs[n-1]
					d.Tool = g.Tool
					if !g.Notice {
						d.Action = s.shortAction(g.Action)
					}
				} else if a, ok := strings.CutPrefix(sr.entryActivity(sum.WaitingOn), "tool:"); ok {
					d.Tool = a
				}
				out = append(out, d)
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b Decision) int { return a.Since.Compare(b.Since) })
	return out, nil
}

func (s *Server) pending(w http.ResponseWriter, r *http.Request) {
	if _, err := s.waitSeq(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	cp := s.store.Checkpoint()
	ds, err := s.Pending()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"decisions": ds, "checkpoint": cp})
}

// events serves the raw events after ?after=SEQ (default 0), at most
// ?limit=N (default 100, most 1000), in sequence order; next is the
// sequence to pass as after for the following page.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after, limit, err := window(r.URL.Query(), "after", "limit", defaultLimit, maxLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	recs := []events.Record{}
	next := uint64(after)
	for rec, err := range s.log.Read(ctx, uint64(after)+1) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		recs = append(recs, rec)
		next = rec.Seq
		if len(recs) == int(limit) {
			break
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": recs, "next": next})
}

// statusReply is GET /v1/status's answer.
type statusReply struct {
	Checkpoint uint64 `json:"checkpoint"` // the projection's last applied sequence
	LastSeq    uint64 `json:"last_seq"`   // the log's last sequence
	Live       uint64 `json:"live"`       // the newest sequence the stream has
	Streams    int64  `json:"streams"`    // open SSE streams
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	last, err := s.log.LastSeq(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, statusReply{Checkpoint: s.store.Checkpoint(), LastSeq: last, Live: s.hub.Last(), Streams: s.clients.Load()})
}

// nonNil returns s, or an empty slice for nil, so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
