package session

import (
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
)

// RequestReview asks the gate for a verdict on one action of the
// session. Review holds what is reviewed (ReviewID, Tool, Action, Event,
// ArgsDigest, Grant, Justification, Risk, BudgetMS); Decide fills in Gate,
// Mode and Revision from the state. ReviewID "" takes "gate-" and
// Cause.Ref: a review is never matched to another call by its tool.
//
// Answer, when set, decides the review in the same decision (a policy
// rule): the verdict is review.Derive's. With the breaker tripped, the
// review is denied at once by the breaker. A review id already open or
// decided decides nothing (a retried request): the caller reads the state.
// A session that does not exist is ErrNotFound; an ended one ErrRejected.
type RequestReview struct {
	Review events.ReviewRequested
	Answer *review.Answer
	At     time.Time
	Cause  events.Cause
}

// DecideReview answers an open gate review. The first answer wins: a
// review already decided is refused (ErrRejected) naming who decided it
// and how; an unknown review is ErrNotFound; a review the agent's own
// dialog asks its user is refused (it is answered there).
type DecideReview struct {
	ReviewID string
	Answer   review.Answer
	At       time.Time
	Cause    events.Cause
}

// ResetBreaker closes a tripped refusal breaker on a person's word. A
// breaker that is not tripped decides nothing.
type ResetBreaker struct {
	Reason string
	At     time.Time
	Cause  events.Cause
}

func (RequestReview) command() {}
func (DecideReview) command()  {}
func (ResetBreaker) command()  {}

// Winner describes a decided review for a person: its verdict, outcome,
// who decided it and why.
func (r DecidedReview) Winner() string {
	by := r.DecidedBy.Kind
	if r.DecidedBy.Name != "" {
		by += " " + r.DecidedBy.Name
	}
	w := fmt.Sprintf("%s (%s) by %s", r.Verdict, r.Outcome, by)
	if r.Reason != "" {
		w += ": " + r.Reason
	}
	return w
}

func decideGate(s State, cmd Command) ([]events.Envelope, error) {
	switch c := cmd.(type) {
	case RequestReview:
		if !s.Exists() {
			return nil, fmt.Errorf("review: %w: no session %s", events.ErrNotFound, s.ID)
		}
		if s.Phase == events.PhaseEnded {
			return nil, fmt.Errorf("review: %w: session %s has ended", events.ErrRejected, s.ID)
		}
		rq := c.Review
		if rq.ReviewID == "" {
			rq.ReviewID = "gate-" + c.Cause.Ref
		}
		if _, ok := s.PendingReview(rq.ReviewID); ok {
			return nil, nil
		}
		if _, ok := s.DecidedReview(rq.ReviewID); ok {
			return nil, nil
		}
		rq.Gate, rq.Mode, rq.Revision = true, s.Mode, s.ModeRevision
		d := newDecider(s, c.At, c.Cause)
		d.emit(rq)
		switch {
		case s.BreakerTripped:
			d.gateVerdict(rq.ReviewID, review.Derive(rq.ReviewID, review.Answer{
				Verdict: events.VerdictDeny, Risk: rq.Risk,
				By:     events.DecidedBy{Kind: events.DecidedByBreaker},
				Reason: "the refusal breaker is tripped: stop and ask the user",
			}))
		case c.Answer != nil:
			d.gateVerdict(rq.ReviewID, review.Derive(rq.ReviewID, *c.Answer))
		default:
			if d.s.Phase != events.PhaseWaiting {
				d.phase(events.PhaseWaiting, "review", rq.ReviewID)
			}
		}
		return d.out, nil
	case DecideReview:
		if r, ok := s.DecidedReview(c.ReviewID); ok {
			return nil, fmt.Errorf("review %s: %w: already decided %s", c.ReviewID, events.ErrRejected, r.Winner())
		}
		p, ok := s.PendingReview(c.ReviewID)
		if !ok {
			if contains(s.OpenReviews, c.ReviewID) {
				return nil, fmt.Errorf("review %s: %w: the agent's own dialog asks its user; answer it there", c.ReviewID, events.ErrRejected)
			}
			return nil, fmt.Errorf("review %s: %w: no open review of session %s by that id", c.ReviewID, events.ErrNotFound, s.ID)
		}
		d := newDecider(s, c.At, c.Cause)
		a := c.Answer
		a.Risk = review.MaxRisk(p.Risk, a.Risk)
		d.gateVerdict(c.ReviewID, review.Derive(c.ReviewID, a))
		return d.out, nil
	case ResetBreaker:
		if !s.BreakerTripped {
			return nil, nil
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.ReviewBreakerReset{Reason: or(c.Reason, "requested")})
		return d.out, nil
	}
	return nil, fmt.Errorf("%w: unknown command %T", events.ErrRejected, cmd)
}

// gateVerdict records the verdict rd on gate review id and ends what the
// review held, whoever decided it (a rule, a reviewer, a person, the
// budget, the breaker). A denied call never runs: its entry closes with
// outcome rejected, so no result is awaited. A session waiting on the
// review goes on, unless it still waits on another review or on a
// question: into the allowed call; with the call denied, into the newest
// call still open, else to the model reading the denial (an open turn),
// else settled. A working session whose activity named the denied call
// moves off it the same way.
func (d *decider) gateVerdict(id string, rd events.ReviewDecided) {
	d.emit(rd)
	d.breaker()
	call := d.s.entry(id)
	if call >= 0 && d.s.Entries[call].Lane != events.LaneMain {
		call = -1 // only the agent's own calls are gated by their id
	}
	activity := ""
	if call >= 0 {
		activity = d.s.Entries[call].Activity
	}
	denied := rd.Verdict != events.VerdictAllow
	if denied && call >= 0 {
		d.emit(events.SessionEntryClosed{EntryID: id, Outcome: events.OutcomeRejected})
	}
	switch d.s.Phase {
	case events.PhaseWaiting:
		if d.s.Activity != "review" || len(d.s.OpenReviews) > 0 {
			return // another review, or a question, still waits
		}
	case events.PhaseWorking:
		if !denied || activity == "" || d.s.Activity != activity {
			return
		}
	default:
		return
	}
	switch other := d.newestEntry(events.LaneMain, "tool:"); {
	case !denied && call >= 0:
		d.phase(events.PhaseWorking, activity, id)
	case other != "":
		// Another call of the turn is still open: the agent is at it.
		d.phase(events.PhaseWorking, d.s.Entries[d.s.entry(other)].Activity, other)
	case d.s.TurnOpen:
		d.phase(events.PhaseWorking, "thinking", "")
	default:
		d.settle()
	}
}
