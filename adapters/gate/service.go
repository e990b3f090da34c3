package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
)

// API verbs the gate answers (on the server's API prefix, beside
// adapters/api's).
const (
	VerbGate         = "gate"          // HookGateRequest → Verdict
	VerbGateRequest  = "gate.request"  // Request → Verdict
	VerbReviews      = "reviews"       // ReviewsRequest → ReviewsReply
	VerbReviewDecide = "review.decide" // DecideRequest → DecideReply
	VerbSessionMode  = "session.mode"  // ModeRequest → ModeReply
)

// Service puts a Gate on the API. Ingest records a hook payload first
// (adapters/api's hook verb: the same request, idempotent by its spool
// id), with then deciding the gate's review in the hook's own batch (one
// append for the observation and a rule's verdict), and returns the
// session's state after the batch; then is not called for a payload that
// is not a Claude Code hook. CaughtUp waits for the projection to hold
// what the log holds before a listing.
//
// Redactor redacts what a client types that goes onto the log for good
// (a review's reason, an elevation's justification), whichever client
// sent it: the data dir's rules over the built-in ones; nil: the
// built-in ones (redact.Default).
type Service struct {
	Gate     *Gate
	Store    *projections.Store
	Ingest   func(ctx context.Context, data []byte, then ingest.Then) (session.State, error)
	CaughtUp func(ctx context.Context) error
	Redactor *redact.Redactor
}

// redactTyped redacts text a client typed, keeping text of at most max
// bytes within max when a redaction marker would grow it past (text
// already over max is left for the check that refuses it). Redacting
// redacted text leaves it as it is, so a client that redacted first
// loses nothing.
func (s *Service) redactTyped(text string, max int) string {
	red := s.Redactor
	if red == nil {
		red = redact.Default()
	}
	out := red.Redact(text)
	if len(text) <= max {
		out = redact.CutText(out, max)
	}
	return out
}

// Handlers returns the gate's API handlers by verb.
func (s *Service) Handlers() map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		VerbGate: s.hookGate, VerbGateRequest: s.request, VerbReviews: s.reviews,
		VerbReviewDecide: s.decide, VerbSessionMode: s.mode,
	}
}

// HookGateRequest is a Claude Code hook payload to record and gate: the
// spool entry's ULID and the payload's exact text as prepared
// (claude.PrepareHook: adapters/api's HookRequest), the call's whole
// tool input when that text was cut, and the most the hook waits (ms).
type HookGateRequest struct {
	ID       string          `json:"id"`
	Text     string          `json:"text"`
	Process  *events.Process `json:"process,omitempty"`
	BudgetMS int64           `json:"budget_ms,omitempty"`
	// Input is the payload's tool_input exactly as the hook read it (its
	// JSON text, at most MaxJudgedInput bytes), sent when Text was cut
	// (it holds a claude.CutMember; HookInput): the gate judges Input,
	// and records Text. A cut Text without it is denied unjudged.
	Input string `json:"input,omitempty"`
}

// hookFields are the fields of a Claude Code hook payload the gate reads
// (hooks reference: PreToolUse and PermissionRequest input).
type hookFields struct {
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"`
	Event     string          `json:"hook_event_name"`
	Tool      string          `json:"tool_name"`
	Input     json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	Cwd       string          `json:"cwd"`
	// Cut is the claude.CutMember of a payload the hook cut: its
	// tool_input may be a cut copy.
	Cut json.RawMessage `json:"logbook_cut"`
}

func (s *Service) hookGate(ctx context.Context, data []byte) (any, error) {
	var req HookGateRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("gate request: %w: %v", events.ErrMalformed, err)
	}
	b, _ := json.Marshal(struct {
		ID      string          `json:"id"`
		Text    string          `json:"text"`
		Process *events.Process `json:"process,omitempty"`
	}{req.ID, req.Text, req.Process})
	var h hookFields
	herr := json.Unmarshal([]byte(req.Text), &h)
	gated := herr == nil && (h.Event == EventPreToolUse || h.Event == EventPermissionRequest)
	if !gated {
		if s.Ingest != nil {
			if _, err := s.Ingest(ctx, b, nil); err != nil {
				return nil, fmt.Errorf("gate: record the hook: %w", err)
			}
		}
		if herr != nil {
			return nil, fmt.Errorf("gate: %w: hook payload: %v", events.ErrMalformed, herr)
		}
		return Verdict{Decision: DecideNone}, nil // the gate speaks only to these
	}
	agg, err := claude.SessionAggregate(h.SessionID, h.AgentID)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	// Each event is judged on its own call: its tool, its whole input,
	// and its tool_use_id when it has one (a PermissionRequest may not).
	// The observation records Text, cut or not.
	in, unjudged, err := judged(req, h)
	if err != nil {
		return nil, err
	}
	gr := Request{
		Session: agg.ID, Event: h.Event, Tool: h.Tool, Input: in, ID: h.ToolUseID, Cwd: h.Cwd, Ref: req.ID, BudgetMS: req.BudgetMS,
		unjudged: unjudged,
	}
	if p, ok := api.PeerOf(ctx); ok {
		uid := p.UID
		gr.peer = &uid
	}
	if s.Ingest == nil {
		return s.Gate.Decide(ctx, gr)
	}
	if err := gr.check(); err != nil {
		return nil, err
	}
	if gr, err = s.Gate.redactRequest(gr); err != nil {
		return nil, err
	}
	if err := s.Gate.requireCheck(ctx, agg, &gr); err != nil {
		return nil, err
	}
	// The observation and the gate's review in one batch: a rule's
	// verdict costs the hook one append.
	budget := s.Gate.budget(gr)
	var (
		p       plan
		perr    error // the gate's refusal: the hook is recorded all the same
		after   session.State
		planned bool
	)
	_, err = s.Ingest(ctx, b, func(st session.State) (events.Decision, error) {
		p, perr = s.Gate.plan(st, gr, budget, s.Gate.now())
		planned = perr == nil
		if perr != nil {
			return nil, nil
		}
		after = st
		for i, e := range p.decs {
			e.Ver = st.Ver + uint64(i) + 1
			after = session.Evolve(after, e)
		}
		return p.decs, nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("gate: record the hook: %w", err)
	case perr != nil:
		return nil, perr
	case !planned:
		return s.Gate.Decide(ctx, gr)
	}
	return s.Gate.finish(ctx, agg, gr, p, after, budget)
}

func (s *Service) request(ctx context.Context, data []byte) (any, error) {
	var req Request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("gate request: %w: %v", events.ErrMalformed, err)
	}
	switch req.Event {
	case EventExec, EventStdin:
	default:
		return nil, fmt.Errorf("gate request: %w: event %q: want exec or stdin (hooks use the gate verb)", events.ErrMalformed, req.Event)
	}
	req.Reason = s.redactTyped(req.Reason, MaxReason)
	return s.Gate.Decide(ctx, req)
}

// ReviewsRequest asks for the open gate reviews of every session (of
// the peer's own, for a system socket peer api.OwnOnly limits).
type ReviewsRequest struct{}

// PendingRow is one open gate review with its session.
type PendingRow struct {
	Session string `json:"session"`
	session.PendingReview
}

// ReviewsReply lists the open gate reviews, oldest first.
type ReviewsReply struct {
	Reviews []PendingRow `json:"reviews"`
}

func (s *Service) reviews(ctx context.Context, _ []byte) (any, error) {
	if s.CaughtUp != nil {
		if err := s.CaughtUp(ctx); err != nil {
			return nil, err
		}
	}
	out := ReviewsReply{Reviews: []PendingRow{}}
	err := s.Store.SessionRows("", "", func(id string, row []byte) (bool, error) {
		if !strings.Contains(string(row), `"pending_reviews"`) {
			return true, nil
		}
		var st session.State
		if err := json.Unmarshal(row, &st); err != nil {
			return false, fmt.Errorf("session %s: decode row: %w", id, err)
		}
		if !api.MayRead(ctx, st.Owner) {
			return true, nil // another user's, to a system socket peer limited to its own
		}
		for _, p := range st.Pending {
			out.Reviews = append(out.Reviews, PendingRow{Session: id, PendingReview: p})
		}
		return true, nil
	})
	sort.SliceStable(out.Reviews, func(i, j int) bool { return out.Reviews[i].RequestedAt.Before(out.Reviews[j].RequestedAt) })
	return out, err
}

// DecideRequest is a person's verdict on review ID (of Session, or of
// whichever session holds it when ""): Verdict allow or deny, a Reason,
// the Actor ("person:<user>@<host>") and Ref (a ULID).
type DecideRequest struct {
	Session string `json:"session,omitempty"`
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Actor   string `json:"actor"`
	Ref     string `json:"ref"`
}

// DecideReply is the verdict recorded.
type DecideReply struct {
	Session string                `json:"session"`
	Review  session.DecidedReview `json:"review"`
	// Seq is the stream sequence of the verdict's event: a read that
	// waits for it (min_seq) sees the review decided.
	Seq uint64 `json:"seq,omitempty"`
}

func (s *Service) decide(ctx context.Context, data []byte) (any, error) {
	var req DecideRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("review request: %w: %v", events.ErrMalformed, err)
	}
	if req.Actor == "" || len(req.Actor) > 200 {
		return nil, fmt.Errorf("review request: %w: want an actor of 1..200 bytes", events.ErrMalformed)
	}
	sess, id, err := s.reviewOf(ctx, req.Session, req.ID)
	if err != nil {
		return nil, err
	}
	r, seq, err := s.Gate.Answer(ctx, sess, id, req.Verdict, s.redactTyped(req.Reason, MaxReason), req.Actor, req.Ref)
	if err != nil {
		return nil, err
	}
	return DecideReply{Session: sess, Review: r, Seq: seq}, nil
}

// reviewOf finds the session holding review id, open or decided, in
// session sess ("" for any), and the review's whole id: the review whose
// id is id, else the one review, open or decided, whose id begins with
// id (MatchReviews). Session sess is read alone (Store.Session); with
// none, the rows holding a review whose id begins with id. Errors:
// events.ErrNotFound when none is, events.ErrMalformed (the request
// names no one review) when several sessions hold the id or several
// reviews, open or decided, begin with it.
func (s *Service) reviewOf(ctx context.Context, sess, id string) (string, string, error) {
	if id == "" {
		return "", "", fmt.Errorf("review: %w: no review id", events.ErrMalformed)
	}
	if s.CaughtUp != nil {
		if err := s.CaughtUp(ctx); err != nil {
			return "", "", err
		}
	}
	var rows []PendingRow // every review, open or decided, of the sessions read
	add := func(st session.State) {
		seen := map[string]bool{}
		for _, p := range st.Pending {
			if !seen[p.ID] {
				seen[p.ID] = true
				rows = append(rows, PendingRow{Session: st.ID, PendingReview: p})
			}
		}
		for _, d := range st.Decided {
			if !seen[d.ID] {
				seen[d.ID] = true
				rows = append(rows, PendingRow{Session: st.ID, PendingReview: session.PendingReview{ID: d.ID}})
			}
		}
	}
	if sess != "" {
		st, err := s.Store.Session(sess)
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			return "", "", err
		}
		add(st)
	} else {
		// Every row holding a review whose id begins with id holds this.
		needle := strings.TrimSuffix(`"id":`+mustJSON(id), `"`)
		err := s.Store.SessionRows("", "", func(sid string, row []byte) (bool, error) {
			if !strings.Contains(string(row), needle) {
				return true, nil
			}
			var st session.State
			if err := json.Unmarshal(row, &st); err != nil {
				return false, fmt.Errorf("session %s: decode row: %w", sid, err)
			}
			add(st)
			return true, nil
		})
		if err != nil {
			return "", "", err
		}
	}
	found, exact := MatchReviews(rows, sess, id)
	switch {
	case len(found) == 0:
		return "", "", fmt.Errorf("review %s: %w: no gate review by that id (see `logbook review list`)", id, events.ErrNotFound)
	case len(found) > 1 && exact:
		var ss []string
		for _, h := range found {
			ss = append(ss, h.Session)
		}
		return "", "", fmt.Errorf("review %s: %w: held by sessions %s; name one with --session", id, events.ErrMalformed, strings.Join(ss, ", "))
	case len(found) > 1:
		var ids []string
		for _, h := range found {
			ids = append(ids, h.ID+" (session "+h.Session+")")
		}
		return "", "", fmt.Errorf("review %s: %w: a prefix of %d reviews: %s; give more of the id", id, events.ErrMalformed, len(found), strings.Join(ids, ", "))
	}
	return found[0].Session, found[0].ID, nil
}

// ModeRequest sets session ID's permission mode on a person's word.
type ModeRequest struct {
	ID    string `json:"id"`
	Mode  string `json:"mode"`
	Actor string `json:"actor"`
	Ref   string `json:"ref"`
}

// ModeReply is the session after the change.
type ModeReply struct {
	Mode     string `json:"mode"`
	Revision int    `json:"revision"`
	Changed  bool   `json:"changed"`
}

func (s *Service) mode(ctx context.Context, data []byte) (any, error) {
	var req ModeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("mode request: %w: %v", events.ErrMalformed, err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: req.ID}
	if err := agg.Validate(); err != nil {
		return nil, fmt.Errorf("session %q: %w", req.ID, err)
	}
	if _, err := ulid.ParseStrict(req.Ref); err != nil {
		return nil, fmt.Errorf("mode request: %w: ref %q: %v", events.ErrMalformed, req.Ref, err)
	}
	if req.Actor == "" || len(req.Actor) > 200 {
		return nil, fmt.Errorf("mode request: %w: want an actor of 1..200 bytes", events.ErrMalformed)
	}
	at := s.Gate.now()
	cause := events.Cause{Kind: "cli", Event: "session.mode", Detail: req.Mode, Ref: req.Ref}
	ap, st, err := s.Gate.Sessions.Execute(ctx, agg, func(st session.State) (events.Decision, error) {
		if !st.Exists() {
			return nil, fmt.Errorf("session %s: %w", req.ID, events.ErrNotFound)
		}
		decs, err := session.Decide(st, session.ChangeMode{Mode: req.Mode, At: at, Cause: cause})
		if err != nil {
			return nil, err
		}
		if st.BreakerTripped {
			// A person set the mode: the breaker closes on their word.
			more, err := session.Decide(st, session.ResetBreaker{Reason: "the session's mode set by " + req.Actor, At: at, Cause: cause})
			if err != nil {
				return nil, err
			}
			decs = append(decs, more...)
		}
		for i := range decs {
			decs[i].Actor = req.Actor
		}
		return s.Gate.scrub(decs), nil
	})
	if err != nil {
		return nil, err
	}
	return ModeReply{Mode: st.Mode, Revision: st.ModeRevision, Changed: ap.Last != 0}, nil
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// SweepAll decides the gate reviews a stopped server left open (Sweep)
// in every session of store.
func SweepAll(ctx context.Context, g *Gate, store *projections.Store, why string) (int, error) {
	n := 0
	var open []session.State
	err := store.SessionRows("", "", func(id string, row []byte) (bool, error) {
		if !strings.Contains(string(row), `"pending_reviews"`) {
			return true, nil
		}
		var st session.State
		if err := json.Unmarshal(row, &st); err != nil {
			return false, err
		}
		open = append(open, st)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	for _, st := range open {
		cur, err := g.Sessions.State(ctx, events.Aggregate{Kind: events.KindSession, ID: st.ID})
		if err != nil {
			return n, err
		}
		k, err := g.Sweep(ctx, cur, why)
		n += k
		if err != nil && !errors.Is(err, events.ErrRejected) {
			return n, err
		}
	}
	return n, nil
}

var _ = time.Second

// MatchReviews returns the reviews of rows that id names: a review
// whose whole id is id (exact is then true; the same id may be open in
// several sessions), else every review whose id begins with id. Reviews
// of a session other than sess ("" for any) are left out. rows is not
// modified; the result keeps its order.
func MatchReviews(rows []PendingRow, sess, id string) (cands []PendingRow, exact bool) {
	var whole, begins []PendingRow
	for _, r := range rows {
		if sess != "" && r.Session != sess {
			continue
		}
		switch {
		case r.ID == id:
			whole = append(whole, r)
		case strings.HasPrefix(r.ID, id):
			begins = append(begins, r)
		}
	}
	if len(whole) > 0 {
		return whole, true
	}
	return begins, false
}
