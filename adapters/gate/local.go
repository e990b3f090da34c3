package gate

import (
	"encoding/json"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
	"github.com/logbook-dev/logbook/reducers/session"
)

// LocalRule is the DecidedBy name of the verdict a gated hook gives on
// its own, with no server to ask: it fails closed (FailClosed).
const LocalRule = claude.LocalRule

// LocalVerdict is the spool's record of FailClosed(why) given at time at
// with the hook's budget: what `hook claude --gate` keeps beside a payload
// it spools when it answers without a server (claude.Spool.PutVerdict).
func LocalVerdict(why string, at time.Time, budget time.Duration) claude.LocalVerdict {
	return claude.FailClosedVerdict(why, at, budget)
}

// RecordLocal returns what records, in the batch of spooled hook entry
// e's own observation, the verdict the hook gave without a server
// (e.Verdict): the call's review asked and decided as the hook answered,
// decided by the hook (events.DecidedByHook), with the gate's cause (kind
// gate, the event, the tool, ref e.ID) at the hook's time, its text
// redacted as the gate's is, its ArgsDigest that of the whole tool input
// when the payload was cut and the verdict names one (LocalVerdict's
// ArgsDigest). The review is the one the server's gate would
// have used (the tool_use_id, else "gate-<e.ID>"). It returns nil, and so
// records nothing more, for an entry without a verdict or that is no
// PreToolUse or PermissionRequest. The function it returns records
// nothing when a review under that id is already open or decided (the
// server did take the call: its own verdict, or the sweep of a stopped
// server, stands), and nothing but the observation when the session
// cannot take a review (it has ended): it never fails, so the entry is
// still delivered.
func (g *Gate) RecordLocal(e claude.Entry) ingest.Then {
	if e.Verdict == nil {
		return nil
	}
	var h hookFields
	if json.Unmarshal(e.Payload, &h) != nil || (h.Event != EventPreToolUse && h.Event != EventPermissionRequest) || h.Tool == "" {
		return nil
	}
	v := *e.Verdict
	at := v.At
	if at.IsZero() {
		at = e.Time
	}
	return func(st session.State) (events.Decision, error) {
		if !st.Exists() {
			return nil, nil
		}
		sum := digest(h.Input)
		if len(h.Cut) > 0 && string(h.Cut) != "null" && v.ArgsDigest != "" {
			// The payload was cut: the hook had the whole input, and
			// its digest names the call as the server's gate would.
			sum = v.ArgsDigest
		}
		id := ""
		for _, cand := range []string{h.ToolUseID, claude.PermissionID(e.ID)} {
			if cand == "" {
				continue
			}
			if r, ok := st.DecidedReview(cand); ok {
				if r.Tool == h.Tool && r.ArgsDigest == sum {
					return nil, nil
				}
				continue
			}
			if r, ok := st.PendingReview(cand); ok {
				if r.Tool == h.Tool && r.ArgsDigest == sum {
					return nil, nil
				}
				continue
			}
			id = cand
			break
		}
		if id == "" {
			return nil, nil
		}
		call := Call{Tool: h.Tool, Input: h.Input, Dir: h.Cwd}
		rq := events.ReviewRequested{
			ReviewID: id, Tool: g.redact(h.Tool), Action: g.redactCut(call.action(), maxAction), Event: h.Event,
			ArgsDigest: sum, BudgetMS: v.Budget,
		}
		a := review.Answer{Verdict: v.Verdict, Outcome: v.Outcome, By: v.By, Reason: v.Reason}
		cause := events.Cause{Kind: events.CauseGate, Event: h.Event, Detail: h.Tool, Ref: e.ID}
		decs, err := session.Decide(st, session.RequestReview{Review: rq, Answer: &a, At: at, Cause: cause})
		if err != nil {
			if g.Logf != nil {
				g.Logf("the verdict hook %s gave without a server is not recorded: %v", e.ID, err)
			}
			return nil, nil
		}
		return g.scrub(decs), nil
	}
}
