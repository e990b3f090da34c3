package attestation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/events"
)

// Role is what a signing key may append. It is not the NATS role of a
// connection (adapters/natslog.Role): the signature, not the connection,
// says who appended a stored event.
type Role string

// Signing roles.
const (
	// RoleAdmin signs key.registered, key.revoked and signing.began: the
	// key whose public part each host pins.
	RoleAdmin Role = "admin"
	// RoleServe is a host's serve (on its data dir's log an ephemeral
	// key made at each start, held in memory only; on a cluster a key
	// file the admin registered), or a command that opened the data dir
	// directly while no serve ran: the gate, the intake of hooks, the
	// API's verbs. It appends every event but the admin's.
	RoleServe Role = "serve"
	// RoleWriter is an importer, a hook writer or a person's CLI that
	// appends to a running serve's log: observations and the decisions
	// that follow from them, never a verdict.
	RoleWriter Role = "writer"
	// RoleWorker is a sandbox worker: the events of the commands it runs
	// and of their sessions.
	RoleWorker Role = "worker"
)

// Roles lists every signing role.
var Roles = []Role{RoleAdmin, RoleServe, RoleWriter, RoleWorker}

// ParseRole returns the Role named s, or an error wrapping ErrNoRole.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w %q: want admin, serve, writer or worker", ErrNoRole, s)
}

// Rule is one row of Table: Role may (Allow) or may not append the event
// types matching Types. A type matches an entry equal to it, or an entry
// ending in "." that prefixes it ("review." matches review.decided); "*"
// matches every type.
type Rule struct {
	Role  Role
	Allow bool
	Types []string
}

// Table says which role may append which event types. For each role the
// rows are read in order and the first whose Types match decides; a type
// no row of the role matches is refused. Only the admin key binds keys
// and begins signing; only serve (the gate, a decider) records a verdict
// (review.decided, with decided_by rule, reviewer, person, timeout or
// breaker) or trips and resets the breaker: a person's verdict reaches
// the log through serve, which names the person from the socket's peer
// credentials or the HTTP token. Only serve's notifier records what it told
// people (notification.sent). A writer appends observations, session
// decisions, workspaces and commands' requests; a worker the events of
// its commands and their sessions. The README's "What the log proves"
// mirrors this table.
var Table = []Rule{
	{RoleAdmin, true, []string{"key.", "signing.began"}},
	{RoleServe, false, []string{"key.", "signing.began"}},
	{RoleServe, true, []string{"*"}},
	{RoleWriter, false, []string{"key.", "signing.began", "review.decided", "review.breaker_tripped", "review.breaker_reset", "notification."}},
	{RoleWriter, true, []string{"*"}},
	{RoleWorker, true, []string{"command.", "session."}},
}

// CauseKinds bounds, for a role, the causes (events.Cause.Kind) of the
// events it may append: a worker appends only what a worker decided (its
// commands' starts and ends, its processes' sessions), never an event
// that claims a person, the gate or a hook caused it. A role not listed
// may append any cause its types allow.
var CauseKinds = map[Role][]string{
	RoleWorker: {"worker"},
}

// CausePermitted reports whether role may append an event with cause c
// (nil: an event with none, an observation), by CauseKinds.
func CausePermitted(role Role, c *events.Cause) bool {
	kinds, bounded := CauseKinds[role]
	return !bounded || c == nil || slices.Contains(kinds, c.Kind)
}

// Permitted reports whether role may append events of type typ, by Table.
// No role may append an event without a type ("": one whose envelope
// does not decode), "*" rows included.
func Permitted(role Role, typ string) bool {
	if typ == "" {
		return false
	}
	for _, r := range Table {
		if r.Role != role {
			continue
		}
		for _, t := range r.Types {
			if t == "*" || t == typ || strings.HasSuffix(t, ".") && strings.HasPrefix(typ, t) {
				return r.Allow
			}
		}
	}
	return false
}
