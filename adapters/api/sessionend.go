package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// SessionEndRequest asks to end session ID, or, with Entry set, to
// abandon one of its open entries. Ref is the request's id (a ULID, the
// cause's ref); Actor names the person, e.g. "person:alice@build-3".
// Reason and Actor are 1..200 bytes each.
type SessionEndRequest struct {
	ID     string `json:"id"`
	Entry  string `json:"entry,omitempty"`
	Reason string `json:"reason"`
	Actor  string `json:"actor"`
	Ref    string `json:"ref"`
}

// SessionEndReply says where the decision landed and the session after it.
type SessionEndReply struct {
	Seq     uint64        `json:"seq"`
	Session session.State `json:"session"`
}

// EndSession handles VerbSessionEnd and VerbSessionAbandon: a
// SessionEndRequest decided against the session under optimistic
// concurrency. A malformed request wraps events.ErrMalformed (an id,
// entry or actor a redaction rule matches among them, with a
// *redact.FieldError naming the field); an unknown
// session events.ErrNotFound; a decision the reducer refuses
// events.ErrRejected.
func (s *Service) EndSession(ctx context.Context, data []byte) (any, error) {
	var req SessionEndRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("session request: %w: %v", events.ErrMalformed, err)
	}
	red := s.red
	if red == nil {
		red = redact.Default()
	}
	// The ids and the actor name things on the log for good: one a rule
	// takes for a secret is refused, never rewritten (nor quoted back).
	for _, f := range []struct{ field, noun, v string }{{"id", "session id", req.ID}, {"entry", "entry id", req.Entry}, {"actor", "actor", req.Actor}} {
		if err := red.CheckField(f.field, f.noun, f.v); err != nil {
			return nil, fmt.Errorf("session request: %w: %w", events.ErrMalformed, err)
		}
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: req.ID}
	if err := agg.Validate(); err != nil {
		return nil, fmt.Errorf("session %q: %w", req.ID, err)
	}
	if _, err := ulid.ParseStrict(req.Ref); err != nil {
		return nil, fmt.Errorf("session request: %w: ref %q: %v", events.ErrMalformed, req.Ref, err)
	}
	if strings.TrimSpace(req.Reason) == "" || len(req.Reason) > 200 {
		return nil, fmt.Errorf("session request: %w: want a reason of 1..200 bytes, not blank", events.ErrMalformed)
	}
	// The reason goes onto the log for good: redacted by the data dir's
	// rules whichever client sent it (redacting redacted text changes
	// nothing), and kept within 200 bytes.
	req.Reason = redact.CutText(red.Redact(req.Reason), 200)
	if req.Actor == "" || len(req.Actor) > 200 {
		return nil, fmt.Errorf("session request: %w: want an actor of 1..200 bytes", events.ErrMalformed)
	}
	now := time.Now().UTC()
	ap, st, err := s.sx.Execute(ctx, agg, func(st session.State) (events.Decision, error) {
		if !st.Exists() {
			return nil, fmt.Errorf("session %s: %w", req.ID, events.ErrNotFound)
		}
		var cmd session.Command
		if req.Entry == "" {
			cmd = session.End{Reason: req.Reason, At: now, Cause: events.Cause{Kind: "cli", Event: "session.end", Ref: req.Ref}}
		} else {
			cmd = session.Abandon{EntryID: req.Entry, Reason: req.Reason, At: now, Cause: events.Cause{Kind: "cli", Event: "session.abandon", Ref: req.Ref}}
		}
		decs, err := session.Decide(st, cmd)
		for i := range decs {
			decs[i].Actor = req.Actor
		}
		return decs, err
	})
	if err != nil {
		return nil, err
	}
	return SessionEndReply{Seq: ap.Last, Session: st}, nil
}

// StaleSessions keeps the sessions of ss working or waiting with nothing
// observed of the agent for at least older at now.
func StaleSessions(ss []session.State, now time.Time, older time.Duration) []session.State {
	var out []session.State
	for _, s := range ss {
		if (s.Phase == events.PhaseWorking || s.Phase == events.PhaseWaiting) && now.Sub(LastSeen(s)) >= older {
			out = append(out, s)
		}
	}
	return out
}

// LastSeen is when the agent of s was last observed (its last event's
// time for a session that has no observation).
func LastSeen(s session.State) time.Time {
	if s.ObservedAt.IsZero() {
		return s.UpdatedAt
	}
	return s.ObservedAt
}
