package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Events that ask the gate (Request.Event).
const (
	EventPreToolUse        = "PreToolUse"
	EventPermissionRequest = "PermissionRequest"
	EventExec              = "exec"  // an elevation asked by `logbook exec --elevate`
	EventStdin             = "stdin" // input for a running command
)

// Decisions the gate answers with (Verdict.Decision).
const (
	DecideAllow = "allow"
	DecideDeny  = "deny"
	DecideNone  = "" // no opinion: the agent's own permission flow applies
)

// Gate decides reviews for the sessions of one log. Its zero value is
// not usable: Sessions and Log are required. Safe for concurrent use.
type Gate struct {
	Sessions *events.Executor[session.State]
	Log      events.Log
	Policies *Policies
	Reviewer *Reviewer     // nil: reviews wait for a person
	Budget   time.Duration // 0: DefaultBudget
	Now      func() time.Time
	// Poll is how often a wait for a person's verdict looks at the
	// session (0: 20 ms).
	Poll time.Duration
	// Logf, when set, reports what the gate notices on the way (a
	// policy file that stopped parsing, and parses again), at most once
	// per fault. A fault's line says "refused" or "denied", which serve's
	// log (adapters/servelog) reads as a warning; a fix's line is news.
	Logf func(format string, args ...any)
	// Redactor redacts everything the gate appends that can carry the
	// agent's input (the action, the review and entry ids, the tool's
	// name, reasons that quote a reviewer or a policy file) and what it
	// logs: the data dir's rules over the built-in ones, the same the
	// observations of the same calls are redacted with; nil: the
	// built-in ones (redact.Default).
	Redactor *redact.Redactor
	// Checks answers, for a call a policy's require_check names, whether
	// a passed check run judged the tree of the workspace holding dir
	// (the call's working directory): "" when one did, else why not,
	// for the agent to read ("run the check first: …"). nil denies every
	// such call: nothing can show a pass.
	Checks func(ctx context.Context, dir string) string
	logged sync.Map
}

// redact redacts s by the gate's rules.
func (g *Gate) redact(s string) string {
	if s == "" {
		return s
	}
	red := g.Redactor
	if red == nil {
		red = redact.Default()
	}
	return red.Redact(s)
}

// redactCut redacts s, then cuts it to max bytes (and "…"): a secret is
// never cut in two before the rules see it whole.
func (g *Gate) redactCut(s string, max int) string {
	return cut(g.redact(s), max)
}

// staleAt reports whether one of stale (Policies.For's) is the error of
// the policy file at path.
func staleAt(stale []error, path string) bool {
	for _, e := range stale {
		if pe, ok := errors.AsType[*ProjectPolicyError](e); ok && pe.Path == path {
			return true
		}
		if pe, ok := errors.AsType[*PolicyError](e); ok && pe.Path == path {
			return true
		}
	}
	return false
}

// notePolicies reports through Logf, once per fault, each policy file
// for a call in project dir (and the data dir's) that does not parse now:
// one that parsed before (stale: the policy read before stays in force)
// or one that never has (broken: the calls it would speak for are
// denied); and a file reported so that parses again, or is gone. It reports too,
// once per version of a file, the warnings (Policy.Warnings: patterns
// that parse but may not mean what they seem to) of each policy of pols
// in force, as `logbook policy check` shows them.
func (g *Gate) notePolicies(dir string, pols []*Policy, broken, stale []error) {
	if g.Logf == nil || g.Policies == nil {
		return
	}
	seen := map[string]bool{}
	note := func(e error, then string) {
		p := ""
		if pe, ok := errors.AsType[*ProjectPolicyError](e); ok {
			p = pe.Path
		} else if pe, ok := errors.AsType[*PolicyError](e); ok {
			p = pe.Path
		}
		seen[p] = true
		msg := g.redact(fmt.Sprintf("%s (%s)", policyDetail(e), then))
		if old, ok := g.logged.Swap(p, msg); !ok || old != msg {
			g.Logf("%s", msg)
		}
	}
	for _, e := range stale {
		note(e, "this version is refused: the policy read before stays in force")
	}
	for _, e := range broken {
		note(e, "no version of it has parsed: every call is denied until it does")
	}
	warned := map[string]bool{}
	for _, pol := range pols {
		if pol.allowsOff {
			msg := g.redact(fmt.Sprintf("policy %s: its allow rules are not in force, only its deny, review and require_check rules: the data dir's %s does not set project_allows = true", pol.Path, PolicyFile))
			if old, ok := g.logged.Swap(allowsOffKey+pol.Path, msg); !ok || old != msg {
				g.Logf("%s", msg)
			}
		} else if pol.Path != "" {
			g.logged.Delete(allowsOffKey + pol.Path)
		}
		if len(pol.Warnings) == 0 {
			continue
		}
		p := pol.Warnings[0].Path
		warned[p] = true
		ws := make([]string, len(pol.Warnings))
		for i, w := range pol.Warnings {
			ws[i] = w.Error()
		}
		msg := "WARN: " + g.redact(strings.Join(ws, "; ")+" (a warning: the policy is in force)")
		if old, ok := g.logged.Swap(policyWarningKey+p, msg); !ok || old != msg {
			g.Logf("%s", msg)
		}
	}
	var paths []string
	if dir != "" {
		paths = append(paths, filepath.Join(dir, ProjectPolicyDir, PolicyFile))
	}
	if g.Policies.DataDir != "" {
		paths = append(paths, filepath.Join(g.Policies.DataDir, PolicyFile))
	}
	for _, p := range paths {
		if !warned[p] {
			g.logged.Delete(policyWarningKey + p)
		}
		if seen[p] {
			continue
		}
		if _, was := g.logged.LoadAndDelete(p); was {
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				g.Logf("%s", g.redact("INFO: policy "+p+": removed; nothing of it is in force"))
			} else {
				g.Logf("%s", g.redact("policy "+p+": parses again; in force"))
			}
		}
	}
}

// policyWarningKey begins the key of Gate.logged under which the
// warnings last reported of a policy file are kept (the file's path
// follows); a fault's key is the path alone.
const policyWarningKey = "warnings\x00"

// allowsOffKey prefixes, in Gate.logged, the path of a project's policy
// whose allow rules notePolicies said are not in force.
const allowsOffKey = "allowsoff\x00"

// PolicyEvery is how often WatchPolicies reads the policy file again.
const PolicyEvery = time.Second

// WatchPolicies runs CheckPolicies at once and then every PolicyEvery
// until ctx is done, so that a policy file that stops parsing (or parses
// again) is reported when it is saved. It blocks; run it on a goroutine
// the caller owns and stops through ctx.
func (g *Gate) WatchPolicies(ctx context.Context) {
	t := time.NewTicker(PolicyEvery)
	defer t.Stop()
	for {
		g.CheckPolicies()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CheckPolicies reads the data dir's policy file now, if it changed,
// and reports a fault or a fix through Logf (notePolicies); serve runs it
// every second, so a file that stops parsing is reported when it is
// saved, not only at the next call.
func (g *Gate) CheckPolicies() {
	if g.Policies == nil {
		return
	}
	pols, broken, stale := g.Policies.For("", nil)
	p := filepath.Join(g.Policies.DataDir, PolicyFile)
	_, faulted := g.logged.Load(p) // notePolicies says the removal of a file it said a fault of
	g.notePolicies("", pols, broken, stale)
	if g.Logf == nil || g.Policies.DataDir == "" {
		return
	}
	// A data dir's file in force that goes takes every rule of it
	// along: said when it goes.
	in := slices.ContainsFunc(pols, func(pol *Policy) bool { return pol.Path == p })
	_, was := g.logged.Load(inForceKey + p)
	switch {
	case in && !was:
		g.logged.Store(inForceKey+p, true)
	case !in && was && len(broken) == 0:
		g.logged.Delete(inForceKey + p)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && !faulted {
			g.Logf("%s", g.redact("WARN: policy "+p+": removed; nothing of it is in force, its deny and review rules neither"))
		}
	}
}

// inForceKey begins the key of Gate.logged under which CheckPolicies
// notes that the data dir's policy file (the path follows) is in force.
const inForceKey = "inforce\x00"

// Request asks for a verdict on one action of a session.
type Request struct {
	Session string          `json:"session"`          // session aggregate id
	Event   string          `json:"event"`            // Event* constant
	Tool    string          `json:"tool"`             // tool name ("exec", "stdin" for Logbook's own)
	Input   json.RawMessage `json:"input,omitempty"`  // the tool's input as sent
	ID      string          `json:"id,omitempty"`     // the tool_use id, the command id; "": "gate-" and Ref
	Cwd     string          `json:"cwd,omitempty"`    // the project directory
	Ref     string          `json:"ref"`              // a ULID: the observation or request that asks
	Grant   string          `json:"grant,omitempty"`  // the mode an allow grants this one action
	Reason  string          `json:"reason,omitempty"` // the requester's justification
	// BudgetMS caps the wait for a verdict (ms); 0 or more than the
	// gate's budget: the gate's budget.
	BudgetMS int64 `json:"budget_ms,omitempty"`
	// unjudged, when set, says why Input is not judged (a hook payload
	// cut without its whole tool input beside it, or one over
	// MaxJudgedInput): the call is denied unjudged. Only the hook verb
	// sets it.
	unjudged string
	// checkPattern and checkDeny, when checkDeny is set, say that a
	// require_check pattern names the call and no passed check run
	// judged its tree: the call is denied, saying why
	// (Gate.requireCheck).
	checkPattern, checkDeny string
	// peer is the uid of the system socket's peer that asked, nil for
	// any other request: a project's policy is then read only when it
	// is the peer's (Policies.For). Only the hook verb sets it.
	peer *uint32
	// limit, set by Decide, says what cut the budget below the gate's
	// (the request's deadline), for the timed_out reason.
	limit string
}

// Verdict is the gate's answer.
type Verdict struct {
	ReviewID string `json:"review_id,omitempty"`
	Decision string `json:"decision"`          // Decide* constant
	Outcome  string `json:"outcome,omitempty"` // approved, rejected, timed_out, unavailable
	Reason   string `json:"reason,omitempty"`
	// Told is what the agent is told the outcome means (review.Told).
	Told    string           `json:"told,omitempty"`
	By      events.DecidedBy `json:"decided_by,omitzero"`
	Breaker bool             `json:"breaker,omitempty"` // the refusal breaker is tripped: the agent must stop
	Grant   string           `json:"grant,omitempty"`
	// Revision is the mode revision the review was asked at (an
	// elevation's grant holds only at it).
	Revision int `json:"revision,omitempty"`
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now().UTC()
	}
	return time.Now().UTC()
}

func (g *Gate) budget(req Request) time.Duration {
	b := g.Budget
	if b <= 0 {
		b = DefaultBudget
	}
	if req.BudgetMS > 0 && time.Duration(req.BudgetMS)*time.Millisecond < b {
		b = time.Duration(req.BudgetMS) * time.Millisecond
	}
	return b
}

// writeTools change files: read_only denies them.
var writeTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true}

// Decide answers req: it records review.requested (and, when a rule
// decides, review.decided in the same decision), waits for a reviewer
// program or a person when the action is sent to review, and returns the
// verdict as recorded. An action no rule speaks of gets DecideNone
// without a review, except where the mode asks for one (a permission
// request in auto, an elevation, input to a command) or forbids it (a
// write tool in read_only; any call while the session's refusal breaker
// is tripped, a retried one allowed before among them). Errors: events.ErrNotFound for a session
// Logbook has never seen, events.ErrMalformed for a bad request, or the
// log's; the caller answers deny on any error.
func (g *Gate) Decide(ctx context.Context, req Request) (v Verdict, err error) {
	if err := req.check(); err != nil {
		return Verdict{}, err
	}
	if req, err = g.redactRequest(req); err != nil {
		return Verdict{}, err
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: req.Session}
	// The decision is bounded by the budget, when await decides the
	// review timed_out, and the budget by ctx's deadline (the API gives a
	// request at most 5 minutes, adapters/api, and a responder's reply
	// may be refused past 6, natslog's replyWindow): a review is decided
	// timed_out, saying why, requestMargin before the request would end
	// with no verdict, never left open behind a hook that failed closed.
	// So no deadline of ctx ends the decision; a cancellation of ctx
	// does: whoever asked is gone (the hook's connection closed, serve
	// stopping), and a review asked is decided unavailable, so that no
	// answer given later is recorded for a call that nobody waits for
	// and that the hook, failing closed, denied.
	asked := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(asked))
	defer cancel()
	defer context.AfterFunc(asked, func() {
		if !errors.Is(asked.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})()
	if err := g.requireCheck(ctx, agg, &req); err != nil {
		return Verdict{}, err
	}
	// One decision on the session's current state: the state is read
	// once, by the executor that appends.
	budget, limit := g.budget(req), ""
	if dl, ok := asked.Deadline(); ok {
		if left := time.Until(dl) - requestMargin; left < budget {
			budget = max(left, time.Millisecond)
			limit = "the server's limit on one request"
		}
	}
	req.limit = limit
	var p plan
	_, st, err := g.Sessions.Execute(ctx, agg, func(st session.State) (events.Decision, error) {
		var err error
		p, err = g.plan(st, req, budget, g.now())
		return p.decs, err
	})
	if err != nil {
		if ctx.Err() != nil && p.early == nil && !p.wait && p.rq.ReviewID != "" {
			// The review may have been appended (an append's outcome
			// unknown when ctx ended): nothing will wait for it.
			g.unwaited(agg, p.rq.ReviewID, p.rq.Risk, ctx.Err())
		}
		return Verdict{}, err
	}
	return g.finish(ctx, agg, req, p, st, budget)
}

// redactRequest redacts what of req the gate records as it is: the
// tool's name, the grant and the justification. The input is kept as
// sent: the policy and a reviewer program judge it, and only its digest
// is recorded. Ids are never redacted (a rewritten id names another
// review, or none): a session or review id a redaction rule matches is
// refused (events.ErrMalformed, wrapping claude.ErrSecretID), naming the
// rule, never the id.
func (g *Gate) redactRequest(req Request) (Request, error) {
	red := g.Redactor
	if red == nil {
		red = redact.Default()
	}
	o := events.Observation{Meta: events.Meta{SessionID: req.Session}, Signals: []events.Sig{{Kind: "review", ID: req.ID}}}
	if err := claude.SecretID(red, o); err != nil {
		return req, fmt.Errorf("gate: %w: %w", events.ErrMalformed, err)
	}
	req.Tool, req.Grant, req.Reason = g.redact(req.Tool), g.redact(req.Grant), g.redact(req.Reason)
	return req, nil
}

// scrub redacts, by the gate's rules, every field of decs that can carry
// what an agent, a reviewer program or a policy file wrote, before decs
// is appended: the cause's detail, the actor, a review's id, tool,
// action, grant, justification, reason, evidence and who decided it, a
// breaker reset's reason, the entry and activity of a move. Text is
// redacted whole, then cut (an action to 400 bytes, a reason to 1000),
// so no secret is cut in two before the rules see it. The ids were
// refused before when a rule matched them (redactRequest); one a rule
// changed since matches is redacted all the same: the review it names
// is then not found, and the call denied.
func (g *Gate) scrub(decs events.Decision) events.Decision {
	for i := range decs {
		e := &decs[i]
		if e.Cause != nil {
			c := *e.Cause
			c.Detail = g.redact(c.Detail)
			e.Cause = &c
		}
		e.Actor = g.redact(e.Actor)
		switch d := e.Data.(type) {
		case events.ReviewRequested:
			d.ReviewID, d.Tool, d.Grant = g.redact(d.ReviewID), g.redact(d.Tool), g.redact(d.Grant)
			d.Action, d.Justification = g.redactCut(d.Action, maxAction), g.redactCut(d.Justification, MaxReason)
			e.Data = d
		case events.ReviewDecided:
			d.ReviewID, d.Reason = g.redact(d.ReviewID), g.redactCut(d.Reason, MaxReason)
			if d.DecidedBy != nil {
				by := *d.DecidedBy
				by.Name = g.redact(by.Name)
				d.DecidedBy = &by
			}
			if d.Evidence != nil {
				ev := make([]string, len(d.Evidence))
				for j, id := range d.Evidence {
					ev[j] = g.redact(id)
				}
				d.Evidence = ev
			}
			e.Data = d
		case events.ReviewBreakerReset:
			d.Reason = g.redactCut(d.Reason, MaxReason)
			e.Data = d
		case events.SessionEntryClosed:
			d.EntryID = g.redact(d.EntryID)
			if d.Moves != nil {
				mv := *d.Moves
				mv.Activity, mv.EntryID = g.redact(mv.Activity), g.redact(mv.EntryID)
				d.Moves = &mv
			}
			e.Data = d
		case events.SessionTransitioned:
			d.Activity, d.EntryID = g.redact(d.Activity), g.redact(d.EntryID)
			e.Data = d
		case events.SessionActivityChanged:
			d.From, d.To = g.redact(d.From), g.redact(d.To)
			e.Data = d
		}
	}
	return decs
}

// The most bytes of an action and of a reason the gate records (and
// "…" past them); MaxReason is also the most a person's reason may hold
// (Answer).
const (
	maxAction = 400
	MaxReason = 1000
)

// check refuses a request that names no valid session, ref or tool.
func (req Request) check() error {
	agg := events.Aggregate{Kind: events.KindSession, ID: req.Session}
	if err := agg.Validate(); err != nil {
		return fmt.Errorf("gate: session %q: %w", req.Session, err)
	}
	if _, err := ulid.ParseStrict(req.Ref); err != nil {
		return fmt.Errorf("gate: %w: ref %q: %v", events.ErrMalformed, req.Ref, err)
	}
	if req.Tool == "" {
		return fmt.Errorf("gate: %w: no tool", events.ErrMalformed)
	}
	return nil
}

// plan is what the gate decides on a request in one state of its session.
type plan struct {
	early *Verdict               // an answer without an append
	wait  bool                   // a retried request whose review is still open
	rq    events.ReviewRequested // the review asked, if any
	decs  events.Decision        // review.requested, and review.decided when a rule or the breaker decides
}

// plan decides req on state st at time at: pure but for reading the
// policy files. Errors: events.ErrNotFound for a session Logbook has
// never seen, or the reducer's.
func (g *Gate) plan(st session.State, req Request, budget time.Duration, at time.Time) (plan, error) {
	var p plan
	cause := events.Cause{Kind: events.CauseGate, Event: req.Event, Detail: req.Tool, Ref: req.Ref}
	if !st.Exists() {
		return p, fmt.Errorf("gate: session %s: %w: Logbook has not seen it start", req.Session, events.ErrNotFound)
	}
	// The review is the call's own: its id, else one from the request's
	// ref. A review under that id for another tool or input is another
	// call's, never this one's verdict: the call is reviewed under its
	// ref instead.
	id, sum := req.ID, digest(req.Input)
	for _, cand := range []string{req.ID, claude.PermissionID(req.Ref)} {
		if cand == "" {
			continue
		}
		if r, ok := st.DecidedReview(cand); ok {
			if r.Tool == req.Tool && r.ArgsDigest == sum {
				// A retried request: answer with what was decided, but
				// never an allow once the breaker has tripped.
				v := verdictOf(r, st)
				if st.BreakerTripped && v.Decision != DecideDeny {
					v = Verdict{ReviewID: r.ID, Decision: DecideDeny, Outcome: events.ReviewRejected, Told: review.Told(events.ReviewRejected),
						By: events.DecidedBy{Kind: events.DecidedByBreaker}, Reason: "the refusal breaker is tripped: stop and ask the user", Breaker: true}
				}
				if req.unjudged != "" && v.Decision != DecideDeny {
					// What was allowed is bytes this request does not
					// hold whole: never an allow for a call not judged.
					v = Verdict{ReviewID: r.ID, Decision: DecideDeny, Outcome: events.ReviewUnavailable, Told: review.Told(events.ReviewUnavailable),
						By: events.DecidedBy{Kind: events.DecidedByRule, Name: judgeRule}, Reason: req.unjudged, Breaker: st.BreakerTripped}
				}
				p.early = &v
				return p, nil
			}
			id = ""
			continue
		}
		if r, ok := st.PendingReview(cand); ok {
			if r.Tool == req.Tool && r.ArgsDigest == sum {
				p.wait, p.rq.ReviewID = true, cand
				return p, nil
			}
			id = ""
			continue
		}
		id = cand
		break
	}
	if id == "" {
		return p, fmt.Errorf("gate: %w: review %s is held by another call (tool or input differ)", events.ErrRejected, claude.PermissionID(req.Ref))
	}
	call := Call{Tool: req.Tool, Input: req.Input, Dir: events.WorkDir(req.Cwd), Mode: st.Mode, Sessions: []string{req.Session}}
	if st.Parent != "" {
		call.Sessions = append(call.Sessions, st.Parent)
	}
	if call.Dir == "" {
		call.Dir = st.Cwd
	}
	pols, perrs := []*Policy{builtin()}, []error(nil)
	var stale []error
	if g.Policies != nil {
		pols, perrs, stale = g.Policies.For(call.Dir, req.peer)
		g.notePolicies(call.Dir, pols, perrs, stale)
	}
	// source names where a rule came from; a file that no longer
	// parses is in force as last read, and the verdict says so.
	source := func(path string) string {
		if path == "" {
			return "the built-in rules"
		}
		if staleAt(stale, path) {
			return path + " as last read (the file no longer parses: the version read before it is in force)"
		}
		return path
	}
	var m Match
	unusable := ""
	if req.unjudged == "" {
		unusable = unusableInput(req.Tool, req.Input)
	}
	if unusable == "" && req.unjudged == "" && (req.Event == EventPreToolUse || req.Event == EventPermissionRequest) {
		unusable = unplacedCall(req.Tool, req.Cwd)
	}
	if req.unjudged == "" && unusable == "" {
		m = Decide(pols, call)
	}
	if req.Grant != "" {
		// An elevation (exec --elevate) is a person's word, as a lever
		// is: only a person may allow it (critical risk), in the one
		// review the worker admits the command on. The shell command
		// that asks for it is therefore not a lever of its own
		// (execLever), which would have a person asked twice.
		m.Risk = review.MaxRisk(m.Risk, review.RiskCritical)
	}
	p.rq = events.ReviewRequested{
		ReviewID: id, Tool: req.Tool, Action: g.redactCut(call.action(), maxAction), Event: req.Event,
		ArgsDigest: sum, Grant: req.Grant, Justification: g.redactCut(req.Reason, MaxReason),
		Risk: m.Risk, BudgetMS: budget.Milliseconds(),
	}
	var answer *review.Answer
	rule := func(verdict, name, why string) *review.Answer {
		r := m.Risk
		if r == "" {
			r = review.RiskLow
		}
		return &review.Answer{Verdict: verdict, Risk: r, By: events.DecidedBy{Kind: events.DecidedByRule, Name: name}, Reason: why}
	}
	switch {
	case req.unjudged != "":
		// Never judged on a cut copy, nor on what is too large to read:
		// no judgement is made, so nothing is allowed.
		answer = rule(events.VerdictDeny, judgeRule, req.unjudged)
		answer.Outcome = events.ReviewUnavailable
	case unusable != "":
		// No rule can read it: nothing says it is allowed.
		answer = rule(events.VerdictDeny, inputRule, unusable)
		answer.Outcome = events.ReviewUnavailable
	case len(perrs) > 0 && m.Action != ActionDeny:
		// A broken policy with no good version before it: nothing
		// says what is allowed, so nothing is.
		answer = rule(events.VerdictDeny, "policy", errors.Join(perrs...).Error())
		answer.Outcome = events.ReviewUnavailable
	case m.Action == ActionDeny:
		why := "denied by policy rule " + m.Pattern + " in " + source(m.Path)
		if m.Through != "" {
			why += ": " + m.Through
		}
		answer = rule(events.VerdictDeny, m.Pattern, why)
	case req.checkDeny != "":
		answer = rule(events.VerdictDeny, "require_check "+req.checkPattern, req.checkDeny)
	case st.Mode == events.ModeReadOnly && writeTools[req.Tool]:
		answer = rule(events.VerdictDeny, "mode read_only", "the session's permission mode is read_only")
	case req.Grant != "" && st.Mode != events.ModeAuto:
		// Refused without a review: there is nothing to judge.
		p.early = &Verdict{Decision: DecideDeny, Outcome: events.ReviewRejected, Breaker: st.BreakerTripped,
			By:     events.DecidedBy{Kind: events.DecidedByRule, Name: "mode " + or(st.Mode, "unknown")},
			Reason: fmt.Sprintf("elevation is reviewed only in auto mode; session %s is in %s", req.Session, or(st.Mode, "an unknown mode"))}
		return p, nil
	case m.Action == ActionAllow && req.Grant == "":
		if rk, _ := review.RiskRank(or(m.Risk, review.RiskLow)); rk < 2 {
			answer = rule(events.VerdictAllow, m.Pattern, "allowed by policy rule "+m.Pattern+" in "+source(m.Path))
		}
		// high or critical: a rule alone cannot allow it; review.
	case m.Action == ActionReview, req.Grant != "", req.Event == EventStdin && st.Mode == events.ModeAuto:
	case req.Event == EventPermissionRequest && st.Mode == events.ModeAuto:
	case st.BreakerTripped:
		// Every call is denied while the breaker is tripped, those no
		// rule speaks of too: session.Decide denies it by the breaker.
	default:
		p.early = &Verdict{Decision: DecideNone}
		return p, nil
	}
	if answer == nil {
		// Why the gate asks, for the audit and a verdict's reader.
		named := m.Pattern
		if m.Path != "" {
			named += " in " + source(m.Path)
		}
		switch {
		case m.Action == ActionReview && m.Why != "":
			p.rq.Rule = "review: " + m.Why + " (" + named + ")"
		case m.Action == ActionReview:
			p.rq.Rule = "review: " + named
		case m.Action == ActionAllow && req.Grant == "":
			p.rq.Rule = "allowed by " + named + ", but a rule alone does not allow a " + m.Risk + " action"
		case req.Grant != "":
			p.rq.Rule = "an elevation to " + req.Grant + ", which only a person may allow"
		case req.Event == EventStdin:
			p.rq.Rule = "input to a running command, in auto mode"
		case req.Event == EventPermissionRequest:
			p.rq.Rule = "a permission request, in auto mode"
		case st.BreakerTripped:
			p.rq.Rule = "the refusal breaker is tripped"
		}
		p.rq.Rule = g.redactCut(p.rq.Rule, maxAction)
	}
	decs, err := session.Decide(st, session.RequestReview{Review: p.rq, Answer: answer, At: at, Cause: cause})
	p.decs = g.scrub(decs)
	return p, err
}

// finish answers req once plan p is appended and st is the session's
// state after it: at once when a rule decided, else after the reviewer
// program or a person (await). ctx is Decide's, which only a
// cancellation ends.
func (g *Gate) finish(ctx context.Context, agg events.Aggregate, req Request, p plan, st session.State, budget time.Duration) (Verdict, error) {
	switch {
	case p.early != nil:
		return *p.early, nil
	case p.wait:
		return g.await(ctx, agg, p.rq.ReviewID, budget, req.BudgetMS, req.limit, "")
	}
	id := p.rq.ReviewID
	if r, ok := st.DecidedReview(id); ok {
		return verdictOf(r, st), nil
	}
	if g.Reviewer != nil {
		if err := g.runReviewer(ctx, agg, id, req, p.rq, st, budget); err != nil {
			return Verdict{}, err
		}
	}
	return g.await(ctx, agg, id, budget, req.BudgetMS, req.limit, p.rq.Rule)
}

func (g *Gate) runReviewer(ctx context.Context, agg events.Aggregate, id string, req Request, rq events.ReviewRequested, st session.State, budget time.Duration) error {
	msgs, dropped, err := UserMessages(ctx, g.Log, agg, MaxEvidenceBytes)
	if err != nil {
		return err
	}
	p, _ := st.PendingReview(id)
	rr := ReviewerRequest{
		Version: 1, ReviewID: id, Session: agg.ID, Event: req.Event, Tool: req.Tool, Action: rq.Action,
		Input: req.Input, Cwd: or(req.Cwd, st.Cwd), Mode: st.Mode, Revision: p.Revision, Risk: rq.Risk,
		Grant: req.Grant, Justification: rq.Justification, UserMessages: msgs, EvidenceDropped: dropped,
		BudgetMS: budget.Milliseconds(),
	}
	a := g.Reviewer.Review(ctx, rr, budget)
	return g.answer(ctx, agg, id, a, "", req.Ref)
}

// answer decides review id with a; a review someone else decided first
// is left as it is.
func (g *Gate) answer(ctx context.Context, agg events.Aggregate, id string, a review.Answer, actor, ref string) error {
	at := g.now()
	cause := events.Cause{Kind: events.CauseGate, Event: "review." + a.By.Kind, Detail: id, Ref: ref}
	_, _, err := g.Sessions.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		decs, err := session.Decide(s, session.DecideReview{ReviewID: id, Answer: a, At: at, Cause: cause})
		for i := range decs {
			if actor != "" {
				decs[i].Actor = actor
			}
		}
		return g.scrub(decs), err
	})
	if err != nil && errors.Is(err, events.ErrRejected) {
		return nil // decided first by someone else: their verdict stands
	}
	return err
}

// await waits for review id's verdict until budget has passed since it
// was requested, then decides it timed_out (unless someone answered
// first) and returns the verdict recorded. askedMS is the budget the
// request asked for (Request.BudgetMS): when the gate's own was shorter,
// the timed_out reason says so, and why the call was reviewed (rule, the
// review's ReviewRequested.Rule; "" when not known here).
func (g *Gate) await(ctx context.Context, agg events.Aggregate, id string, budget time.Duration, askedMS int64, limit, rule string) (Verdict, error) {
	poll := g.Poll
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := g.Sessions.State(ctx, agg)
		if err != nil {
			if ctx.Err() != nil {
				g.unwaited(agg, id, "", ctx.Err())
			}
			return Verdict{}, err
		}
		if r, ok := st.DecidedReview(id); ok {
			return verdictOf(r, st), nil
		}
		p, ok := st.PendingReview(id)
		if !ok {
			return Verdict{}, fmt.Errorf("gate: review %s of session %s: %w: neither open nor among the recent verdicts", id, agg.ID, events.ErrNotFound)
		}
		if g.now().Sub(p.RequestedAt) >= budget {
			a := review.Answer{Outcome: events.ReviewTimedOut, Risk: p.Risk, By: events.DecidedBy{Kind: events.DecidedByTimeout, Name: "gate budget " + budget.String()},
				Reason: fmt.Sprintf("no verdict within %s", budget)}
			switch asked := time.Duration(askedMS) * time.Millisecond; {
			case limit != "":
				a.Reason += fmt.Sprintf(" (%s, %s)", limit, MaxWait)
			case asked > budget:
				a.Reason += fmt.Sprintf(" (the server's review budget, --review-budget; the hook asked for %s)", asked)
			}
			if rule != "" {
				// Why it was asked: the agent reads the reason only.
				a.Reason += " on " + rule
			}
			if err := g.answer(ctx, agg, id, a, "", ulid.Make().String()); err != nil {
				return Verdict{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			g.unwaited(agg, id, p.Risk, ctx.Err())
			return Verdict{}, ctx.Err()
		case <-t.C:
		}
	}
}

// requestMargin is how long before its request's deadline a review is
// decided timed_out (Decide), for the verdict to be answered in time.
const requestMargin = 2 * time.Second

// MaxWait is the API's limit on one request (api.HandleTimeout), which
// bounds every review's wait: a review is decided timed_out
// requestMargin before it, whatever its budget.
const MaxWait = api.HandleTimeout

// unwaitedTimeout bounds the append of unwaited, whose caller's context
// has ended.
const unwaitedTimeout = 10 * time.Second

// unwaited decides review id unavailable once nothing waits for its
// verdict any more (why: the waiter's context's error), unless someone
// decided it first. A failure to append is left to the next Sweep, which
// decides every review left open.
func (g *Gate) unwaited(agg events.Aggregate, id, risk string, why error) {
	ctx, cancel := context.WithTimeout(context.Background(), unwaitedTimeout)
	defer cancel()
	a := review.Answer{Outcome: events.ReviewUnavailable, Risk: risk, By: events.DecidedBy{Kind: events.DecidedByTimeout, Name: "request ended"},
		Reason: fmt.Sprintf("nothing waits for a verdict any more: the request that asked for it ended (%v)", why)}
	_ = g.answer(ctx, agg, id, a, "", ulid.Make().String())
}

func verdictOf(r session.DecidedReview, st session.State) Verdict {
	v := Verdict{ReviewID: r.ID, Decision: DecideDeny, Outcome: r.Outcome, Reason: r.Reason, By: r.DecidedBy, Grant: r.Grant, Revision: r.Revision}
	if r.Verdict == events.VerdictAllow {
		v.Decision = DecideAllow
	} else {
		v.Told = review.Told(r.Outcome)
	}
	v.Breaker = st.BreakerTripped && v.Decision == DecideDeny
	return v
}

// Answer records a person's verdict on review id of session sess:
// verdict allow or deny, reason 1..1000 bytes, actor the person. The
// first answer wins: a review decided before is refused
// (events.ErrRejected) naming who decided it. It returns the decided
// review and the stream sequence of the verdict's last event, for a
// reader that asks for a view that includes it.
func (g *Gate) Answer(ctx context.Context, sess, id, verdict, reason, actor, ref string) (session.DecidedReview, uint64, error) {
	agg := events.Aggregate{Kind: events.KindSession, ID: sess}
	if err := agg.Validate(); err != nil {
		return session.DecidedReview{}, 0, fmt.Errorf("review: session %q: %w", sess, err)
	}
	if verdict != events.VerdictAllow && verdict != events.VerdictDeny {
		return session.DecidedReview{}, 0, fmt.Errorf("review: %w: verdict %q: want allow or deny", events.ErrMalformed, verdict)
	}
	if strings.TrimSpace(reason) == "" || len(reason) > MaxReason {
		return session.DecidedReview{}, 0, fmt.Errorf("review: %w: want a reason of 1..1000 bytes, not blank", events.ErrMalformed)
	}
	if _, err := ulid.ParseStrict(ref); err != nil {
		return session.DecidedReview{}, 0, fmt.Errorf("review: %w: ref %q: %v", events.ErrMalformed, ref, err)
	}
	at := g.now()
	a := review.Answer{Verdict: verdict, By: events.DecidedBy{Kind: events.DecidedByUser, Name: actor}, Reason: reason}
	cause := events.Cause{Kind: "cli", Event: "review." + verdict, Detail: id, Ref: ref}
	app, st, err := g.Sessions.Execute(ctx, agg, func(s session.State) (events.Decision, error) {
		decs, err := session.Decide(s, session.DecideReview{ReviewID: id, Answer: a, At: at, Cause: cause})
		for i := range decs {
			decs[i].Actor = actor
		}
		return g.scrub(decs), err
	})
	if err != nil {
		return session.DecidedReview{}, 0, err
	}
	r, _ := st.DecidedReview(id)
	return r, app.Last, nil
}

// Sweep decides every gate review of st left open — what a server that
// stopped while one was pending leaves — as unavailable, whether or not
// its budget has run out since: the hook that asked was answered
// without a verdict when the server went away ("the gate gave no
// verdict: the Logbook server went away …", a deny), which is what
// unavailable tells an agent, not the "try once more" of timed_out. A
// review decided meanwhile by someone else is left as it is. It returns
// how many it decided.
func (g *Gate) Sweep(ctx context.Context, st session.State, why string) (int, error) {
	agg := events.Aggregate{Kind: events.KindSession, ID: st.ID}
	n := 0
	for _, p := range st.Pending {
		a := review.Answer{Outcome: events.ReviewUnavailable, Risk: p.Risk, By: events.DecidedBy{Kind: events.DecidedByTimeout, Name: "serve restart"}, Reason: why}
		if err := g.answer(ctx, agg, p.ID, a, "", ulid.Make().String()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// UserMessages returns the real user messages of a session, oldest first,
// keeping the newest that fit max bytes of text; dropped reports whether
// older ones were left out. They are its prompts, and its user's answers
// to the questions the agent asked (Claude Code's AskUserQuestion): an
// answer signal counts only when it names a question call this session's
// agent made (a question signal with its id) that the model did not send
// with answers already filled in, and only from the first observation
// that reports that call's answers. Assistant text,
// the question itself, tool input and output, file contents and
// summaries are never among them.
func UserMessages(ctx context.Context, log events.Log, agg events.Aggregate, max int) (msgs []UserMessage, dropped bool, err error) {
	recs, _, err := log.Load(ctx, agg)
	if err != nil {
		return nil, false, err
	}
	// The questions the agent asked the user, by call id: true when an
	// answer to it may count.
	asked := map[string]bool{}
	for _, r := range recs {
		o, ok := events.Observed(r.Envelope.Data)
		if !ok {
			continue
		}
		for _, s := range o.Signals {
			if s.Kind != events.SigQuestion || s.ID == "" {
				continue
			}
			if _, seen := asked[s.ID]; !seen {
				asked[s.ID] = true
			}
			if s.Status == events.QuestionPrefilled {
				asked[s.ID] = false // the model's own answers: never
			}
		}
	}
	answeredIn := map[string]string{} // question id → the event whose answers count
	var all []UserMessage
	for _, r := range recs {
		o, ok := events.Observed(r.Envelope.Data)
		if !ok {
			continue
		}
		id := r.Envelope.ID.String()
		for _, s := range o.Signals {
			if strings.TrimSpace(s.Text) == "" {
				continue
			}
			switch s.Kind {
			case events.SigPrompt:
				all = append(all, UserMessage{ID: id, At: r.Envelope.At, Kind: MessagePrompt, Text: s.Text})
			case events.SigAnswer:
				if !asked[s.ID] {
					continue
				}
				if first, ok := answeredIn[s.ID]; ok && first != id {
					continue // a second report of answers already given
				}
				answeredIn[s.ID] = id
				all = append(all, UserMessage{ID: id, At: r.Envelope.At, Kind: MessageAnswer, Text: s.Text})
			}
		}
	}
	size := 0
	i := len(all)
	for i > 0 && size+len(all[i-1].Text) <= max {
		size += len(all[i-1].Text)
		i--
	}
	return all[i:], i > 0, nil
}

func digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requireCheck sets req's checkPattern and checkDeny when a require_check
// pattern of the policies in force at the call's directory names it and
// g.Checks finds no passed run of its workspace's tree. The directory is
// req.Cwd, else the session's. Errors are the log's.
func (g *Gate) requireCheck(ctx context.Context, agg events.Aggregate, req *Request) error {
	if g.Policies == nil || req.unjudged != "" {
		return nil
	}
	dir := events.WorkDir(req.Cwd)
	if dir == "" {
		st, err := g.Sessions.State(ctx, agg)
		if err != nil {
			return err
		}
		dir = st.Cwd
	}
	pols, _, _ := g.Policies.For(dir, req.peer)
	pat, path := RequireCheck(pols, Call{Tool: req.Tool, Input: req.Input, Dir: dir})
	if pat == "" {
		return nil
	}
	why := "no check runs where this gate runs"
	if g.Checks != nil {
		why = g.Checks(ctx, dir)
	}
	if why != "" {
		req.checkPattern = pat
		req.checkDeny = "require_check " + pat + " in " + or(path, "the built-in rules") + ": " + why
	}
	return nil
}
