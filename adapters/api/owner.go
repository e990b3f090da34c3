package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/events"
)

// ErrNotOwner is wrapped by the error that refuses a hook sent over the
// system socket for a session its sender does not own (see
// Service.checkOwner); it wraps events.ErrRejected too, so the hook is
// not retried. Its code on the wire is "refused".
var ErrNotOwner = errors.New("not the session's owner")

// maxOwners is how many sessions' owners a Service remembers; past it
// they are forgotten and read again from the log (session.State.Owner)
// and the intake queue.
const maxOwners = 1 << 16

// owners is what a Service knows of the owners of sessions hooks were
// sent for over the system socket: by session aggregate, the sender of
// its first observation, nil for a session opened any other way. An
// owner once known never changes (the first observation is for good).
type owners struct {
	mu sync.Mutex
	m  map[events.Aggregate]*events.Sender // made on first use
}

// checkOwner refuses hook entry e, sent over the system socket (e.Sender
// set), for session agg when agg belongs to another user: a session
// belongs to the sender of its first observation, and one whose first
// observation came another way (no sender) to serve's user, whose
// hooks, and root's, it takes. A subagent's hook is held to its parent
// session's owner too, when that is known. The first hook of a new
// session makes its sender the owner at once, so a second sender's hook
// that comes before the first is appended is refused too. pending, when
// not nil, returns the sender of the earliest hook of an aggregate taken
// and not yet appended (the intake queue). An entry with no sender passes
// unchecked; a Codex notify payload is judged by its thread's session. Refusals wrap ErrNotOwner and
// events.ErrRejected and name the session, its owner and the sender;
// other errors are the log's.
func (s *Service) checkOwner(ctx context.Context, e claude.Entry, agg events.Aggregate, pending func(events.Aggregate) (*events.Sender, bool)) error {
	if e.Sender == nil {
		return nil
	}
	o := &s.own
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, err := o.of(ctx, s, agg, pending, e.Sender)
	if err != nil {
		return err
	}
	if err := mayAdd(agg, owner, e.Sender); err != nil {
		return err
	}
	var h struct {
		SessionID string `json:"session_id"`
		AgentID   string `json:"agent_id"`
	}
	if json.Unmarshal(e.Payload, &h) != nil || h.AgentID == "" || h.SessionID == "" {
		return nil
	}
	parent, err := claude.SessionAggregate(h.SessionID, "")
	if err != nil || parent == agg {
		return nil
	}
	// The parent is judged when it exists; a subagent's hook does not
	// open its parent.
	powner, err := o.of(ctx, s, parent, pending, nil)
	if err != nil || powner == nil && !o.known(parent) {
		return err
	}
	return mayAdd(parent, powner, e.Sender)
}

// of returns agg's owner: remembered, else the log's
// (session.State.Owner of a session with observations), else the
// earliest pending hook's sender; a session with none is opened by opener (remembered as
// its owner) unless opener is nil. o.mu is held.
func (o *owners) of(ctx context.Context, s *Service, agg events.Aggregate, pending func(events.Aggregate) (*events.Sender, bool), opener *events.Sender) (*events.Sender, error) {
	if owner, ok := o.m[agg]; ok {
		return owner, nil
	}
	// The queue first, then the log: a hook appended in between is in
	// the log then.
	var owner *events.Sender
	found := false
	if pending != nil {
		owner, found = pending(agg)
	}
	st, err := s.Ing.Sessions().State(ctx, agg)
	if err != nil {
		return nil, fmt.Errorf("session %s: owner: %w", agg.ID, err)
	}
	if st.Observations > 0 {
		owner, found = st.Owner, true
	}
	if !found {
		if opener == nil {
			return nil, nil
		}
		c := *opener
		owner = &c
	}
	if o.m == nil {
		o.m = map[events.Aggregate]*events.Sender{}
	}
	if len(o.m) >= maxOwners {
		clear(o.m)
	}
	o.m[agg] = owner
	return owner, nil
}

// known reports whether o remembers agg's owner. o.mu is held.
func (o *owners) known(agg events.Aggregate) bool {
	_, ok := o.m[agg]
	return ok
}

// mayAdd refuses sender's hook for session agg owned by owner (nil: a
// session opened other than on the system socket, serve's user's).
func mayAdd(agg events.Aggregate, owner, sender *events.Sender) error {
	switch {
	case owner != nil && owner.UID == sender.UID:
		return nil
	case owner == nil && (sender.UID == 0 || int(sender.UID) == os.Geteuid()):
		return nil
	case owner == nil:
		return fmt.Errorf("%w: %w: session %s was not opened on this socket (it is serve's user's): %s may not add to it", ErrNotOwner, events.ErrRejected, agg.ID, senderName(sender))
	}
	return fmt.Errorf("%w: %w: session %s belongs to %s, who opened it: %s may not add to it", ErrNotOwner, events.ErrRejected, agg.ID, senderName(owner), senderName(sender))
}

// senderName names s as Peer.String does: "alice (uid 1000)".
func senderName(s *events.Sender) string {
	if s.User == "" {
		return "uid " + strconv.FormatUint(uint64(s.UID), 10)
	}
	return s.User + " (uid " + strconv.FormatUint(uint64(s.UID), 10) + ")"
}

// pendingSender returns the sender of the earliest record of session agg
// in in's queue (taken, not yet appended); false when it holds none.
func (in *Intake) pendingSender(agg events.Aggregate) (*events.Sender, bool) {
	key := agg.String()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, it := range in.queue {
		if it.key == key && !it.done && it.bad == nil {
			return it.entry.Sender, true
		}
	}
	return nil, false
}
