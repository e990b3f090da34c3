package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Rederivation is what Rederive found for one session. JSON names:
// session, observations, diverged, first.
type Rederivation struct {
	Session string `json:"session"` // the session's aggregate id
	// Observations is how many stored observations were decided again.
	Observations int `json:"observations"`
	// Diverged counts the observations whose decisions, or usage
	// evidence (Divergence.Evidence), differ, and the events that
	// claim a decision of the reconciler no stored tick made
	// (Divergence.Undecided).
	Diverged int `json:"diverged"`
	// First is the earliest divergence; nil when every decision agrees.
	First *Divergence `json:"first,omitempty"`
}

// Agree reports whether today's reducer decided every observation as
// recorded.
func (r Rederivation) Agree() bool { return r.Diverged == 0 }

// Divergence is one observation whose decisions today differ from the
// recorded ones. JSON names: obs_seq, obs, index, recorded, rederived,
// refused.
type Divergence struct {
	// ObsSeq is the observation's stream sequence; Obs its envelope.
	ObsSeq uint64          `json:"obs_seq"`
	Obs    events.Envelope `json:"obs"`
	// Index is the position, in both decision lists, of the first event
	// that differs (the shorter list's length if one is a prefix of the
	// other).
	Index int `json:"index"`
	// Recorded are the decisions stored after the observation with a
	// cause naming it; Rederived are today's, with no ids or vers.
	Recorded  []events.Envelope `json:"recorded"`
	Rederived []events.Envelope `json:"rederived"`
	// Refused is today's Decide error when it refused the observation.
	Refused string `json:"refused,omitempty"`
	// Evidence, when set, says how the observation's recorded usage
	// evidence (events.Sig.Counted) differs from what the session's
	// index, folded from the events before it, gives today
	// (session.State.Evidence); the decisions may still agree.
	Evidence string `json:"evidence,omitempty"`
	// Undecided, when set, says why the event Recorded holds alone, at
	// stream sequence Seq, is a decision no stored observation made: its
	// cause names the reconciler (cause kind reconciler) but it does not
	// follow, in the batch the reconciler appends, the tick observation
	// its cause names. Obs is then the zero envelope, ObsSeq 0 and
	// Rederived empty.
	Undecided string `json:"undecided,omitempty"`
	Seq       uint64 `json:"seq,omitempty"`
}

// Rederive runs today's reducers/session.Decide over the stored
// observations of session id (read with Log.Load) and reports the first
// observation whose decisions differ from those recorded: by type, data
// and cause, not by id, ver or time; or whose recorded usage evidence
// (events.Sig.Counted) is not what the session's index folded from the
// events before it gives (Divergence.Evidence).
//
// Each observation is decided in the state folded from the events as
// recorded before it, not from re-decided ones: every observation is then
// judged on exactly the state it was judged on originally, so one
// divergence does not cascade into every later observation and Diverged
// counts the decisions that changed. Events that no observation caused
// (requests such as an end or a mode change from the CLI, and the gate's
// reviews and verdicts, events.CauseGate, even in an observation's batch)
// are folded as recorded; but an event whose cause names the reconciler
// that does not follow the tick observation its cause names is a
// divergence of its own (Divergence.Undecided): the reconciler decides
// only on a tick it stores first, in the same batch. The error wraps events.ErrNotFound for a session with no
// events; a divergence is not an error.
func Rederive(ctx context.Context, log events.Log, id string) (Rederivation, error) {
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	recs, _, err := log.Load(ctx, agg)
	if err != nil {
		return Rederivation{}, fmt.Errorf("rederive %s: %w", agg, err)
	}
	if len(recs) == 0 {
		return Rederivation{}, fmt.Errorf("rederive %s: %w", agg, events.ErrNotFound)
	}
	return RederiveRecords(recs), nil
}

// RederiveRecords is Rederive over recs, the records of one session in
// stream order.
func RederiveRecords(recs []events.Record) Rederivation {
	var (
		s   session.State
		rep Rederivation
	)
	for i := 0; i < len(recs); {
		r := recs[i]
		if rep.Session == "" {
			rep.Session = r.Agg.ID
		}
		if _, ok := events.Observed(r.Data); !ok {
			if c := r.Cause; c != nil && c.Kind == causeReconciler {
				// Left over by the runs of its observations: the
				// reconciler decided it on no tick stored before it.
				rep.Diverged++
				if rep.First == nil {
					rep.First = &Divergence{Seq: r.Seq, Recorded: []events.Envelope{r.Envelope},
						Undecided: fmt.Sprintf("its cause names the reconciler's tick %s, but no tick observation stored before it decided it", c.Ref)}
				}
			}
			s.Evolve(r.Envelope)
			i++
			continue
		}
		j := i + 1
		for j < len(recs) && causedBy(recs[j], r) {
			j++
		}
		recorded := make([]events.Envelope, 0, j-i-1)
		for _, d := range recs[i+1 : j] {
			recorded = append(recorded, d.Envelope)
		}
		rederived, err := session.Decide(s, session.Observe{Obs: r.Envelope})
		rep.Observations++
		evidence := s.Evidence(r.Envelope)
		if idx, same := sameDecisions(recorded, rederived); !same || evidence != "" {
			rep.Diverged++
			if rep.First == nil {
				d := &Divergence{ObsSeq: r.Seq, Obs: r.Envelope, Index: idx, Recorded: recorded, Rederived: rederived, Evidence: evidence}
				if err != nil {
					d.Refused = err.Error()
				}
				rep.First = d
			}
		}
		for _, e := range recs[i:j] {
			s.Evolve(e.Envelope)
		}
		i = j
	}
	return rep
}

// causeReconciler is the cause kind of the reconciler's decisions
// (reducers/session's tick).
const causeReconciler = "reconciler"

// causedBy reports whether d is a decision of observation o: not an
// observation itself, with a cause naming o, and not the gate's (a
// review the gate appends in the hook's own batch is folded as recorded,
// like a request: the session decider never produces it).
func causedBy(d, o events.Record) bool {
	if _, ok := events.Observed(d.Data); ok {
		return false
	}
	return d.Cause != nil && d.Cause.Ref == o.ID.String() && d.Cause.Kind != events.CauseGate
}

// sameDecisions compares two decision lists by type, data and cause and
// returns the index of the first difference.
func sameDecisions(a, b []events.Envelope) (int, bool) {
	for i := range min(len(a), len(b)) {
		if !sameDecision(a[i], b[i]) {
			return i, false
		}
	}
	return min(len(a), len(b)), len(a) == len(b)
}

func sameDecision(a, b events.Envelope) bool {
	if a.Type != b.Type || (a.Cause == nil) != (b.Cause == nil) || a.Cause != nil && *a.Cause != *b.Cause {
		return false
	}
	da, errA := json.Marshal(a.Data)
	db, errB := json.Marshal(b.Data)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// WriteText writes a readable report: a summary line and, for the first
// divergence, the observation and both decision lists, one event per
// line as "<type> <data JSON> cause=<kind>/<event>[/<detail>]"; text
// fields pass Escape (the JSON escapes its own controls).
func (r Rederivation) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "session %s: %d observations re-decided, %d diverged\n", Escape(r.Session), r.Observations, r.Diverged)
	if d := r.First; d != nil {
		if d.Undecided != "" {
			fmt.Fprintf(&b, "first at #%d, decided by no observation: %s\n", d.Seq, Escape(d.Undecided))
		} else {
			o, _ := events.Observed(d.Obs.Data)
			fmt.Fprintf(&b, "first at #%d %s %s (key %s), event %d\n", d.ObsSeq, Escape(d.Obs.Type), Escape(o.Kind), Escape(o.Key), d.Index)
		}
		if d.Refused != "" {
			fmt.Fprintf(&b, "today: refused: %s\n", Escape(d.Refused))
		}
		if d.Evidence != "" {
			fmt.Fprintf(&b, "usage evidence: %s\n", Escape(d.Evidence))
		}
		for _, part := range []struct {
			name string
			envs []events.Envelope
		}{{"recorded", d.Recorded}, {"today", d.Rederived}} {
			fmt.Fprintf(&b, "%s:\n", part.name)
			for _, e := range part.envs {
				data, _ := json.Marshal(e.Data)
				fmt.Fprintf(&b, "  %s %s", Escape(e.Type), Escape(string(data)))
				if c := e.Cause; c != nil {
					fmt.Fprintf(&b, " cause=%s/%s", Escape(c.Kind), Escape(c.Event))
					if c.Detail != "" {
						b.WriteString("/" + Escape(c.Detail))
					}
				}
				b.WriteByte('\n')
			}
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write rederivation: %w", err)
	}
	return nil
}
