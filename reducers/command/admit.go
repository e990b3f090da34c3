package command

import (
	"fmt"

	"github.com/logbook-dev/logbook/events"
)

// Admission is DecideRequest's answer: the new command's events and the
// evictions that keep its session within MaxActive.
type Admission struct {
	// Events are the new command's events (command.requested), for its
	// own aggregate; none for a retried identical request.
	Events []events.Envelope
	// Evictions are the commands to evict, oldest first, each to be
	// decided on its own aggregate after Events are appended.
	Evictions []Eviction
}

// Eviction names one active command to evict and the command to decide on
// its aggregate: Decide(<its current state>, Evict).
type Eviction struct {
	Command string // the id of the command to evict
	Evict   Evict  // By is the new command's id; At and the cause follow the request
}

// DecideRequest decides req for the new command s (Init of its aggregate,
// or its current state for a retry) in a session whose active commands
// are active: their ids, oldest first, as ActiveIDs returns them from the
// session's rows in the command projection. When active holds MaxActive
// or more commands (the new one aside), it evicts the oldest
// len(active)-MaxActive+1, so the session has MaxActive active commands
// once the request lands, whatever overshoot earlier races left. The
// package documentation describes the protocol and its race.
//
// The cause of every Evict is the request: kind "system", event
// "command.requested", ref the new command's id, and a detail with the
// count. Errors are Decide's for
// req; a retried request that decides nothing evicts nothing. s and active
// are not modified.
func DecideRequest(s State, active []string, req Request) (Admission, error) {
	evs, err := Decide(s, req)
	if err != nil || len(evs) == 0 {
		return Admission{}, err
	}
	others := make([]string, 0, len(active))
	for _, id := range active {
		if id != s.ID {
			others = append(others, id)
		}
	}
	a := Admission{Events: evs}
	n := len(others) - MaxActive + 1
	if n <= 0 {
		return a, nil
	}
	cause := events.Cause{
		Kind: "system", Event: "command.requested",
		Detail: fmt.Sprintf("session %s: %d active commands, limit %d", req.Session, len(others)+1, MaxActive),
		Ref:    s.ID,
	}
	for _, id := range others[:n] {
		a.Evictions = append(a.Evictions, Eviction{Command: id, Evict: Evict{By: s.ID, At: req.At, Cause: cause}})
	}
	return a, nil
}
