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
// people (notification.sent), and what its reconciler saw
// (obs.reconciler.tick) and decided (ServeFinding). A writer appends observations, session
// decisions, workspaces and commands' requests; a worker the events of
// its commands and their sessions, as WorkerPermits narrows them.
// Causes and Actors bound every role further by an event's cause and
// actor. The README's "What the log proves"
// mirrors this table.
var Table = []Rule{
	{RoleAdmin, true, []string{"key.", "signing.began"}},
	{RoleServe, false, []string{"key.", "signing.began"}},
	{RoleServe, true, []string{"*"}},
	{RoleWriter, false, []string{"key.", "signing.began", "review.decided", "review.breaker_tripped", "review.breaker_reset", "notification.", TypeTick}},
	{RoleWriter, true, []string{"*"}},
	{RoleWorker, true, []string{"command.", "session."}},
}

// CauseRule is one row of Causes: the roles whose code appends events
// whose cause (events.Cause) has kind Kind and, when Event is not "",
// event Event. By names that code.
type CauseRule struct {
	Kind  string
	Event string
	Roles []Role
	By    string
}

// Causes says which roles may append an event with a given cause: each
// cause kind (and, for kind system, each event) is allowed only to the
// roles whose code appends it. Serve is in every row: besides its own
// gate, reconciler, notifier and workspace actor, it takes what hooks,
// importers and people send it, and runs workers of its own that sign
// with its key. A row with an Event is read before its kind's row
// without one; a cause no row matches is serve's alone, and the admin
// appends no cause at all (its key events carry none). An event without
// a cause (an observation) is any role's its type allows. Refusal reads
// this table; the README's "What the log proves" mirrors it.
var Causes = []CauseRule{
	{"hook", "", []Role{RoleServe, RoleWriter}, "a hook's observation decided (adapters/ingest, reducers/session): serve's intake, a hook writer"},
	{"transcript", "", []Role{RoleServe, RoleWriter}, "a transcript line decided, or an import's divergence (adapters/ingest): serve's intake, an importer"},
	{"cli", "", []Role{RoleServe, RoleWriter}, "a person's command: serve's API verbs (adapters/api, adapters/gate), the CLI's exec and workspaces (adapters/worker.Client, adapters/workspace)"},
	{"system", "command.requested", []Role{RoleServe, RoleWriter}, "the evictions an exec's request makes (reducers/command.DecideRequest in adapters/worker.Client)"},
	{"system", "reconcile", []Role{RoleServe}, "serve's reconciler ends a check run whose runner vanished (adapters/workspace.EndVanishedChecks)"},
	{"system", "recover", []Role{RoleServe}, "serve's workspace actor takes over a materialization whose runner is gone (adapters/workspace.Manager.Follow)"},
	{"system", "restart", []Role{RoleServe}, "serve's workspace actor interrupts a task after a restart (adapters/workspace.Manager.Follow)"},
	{"system", "session seen", []Role{RoleServe}, "serve's workspace actor moves a task along from its sessions (adapters/workspace.Manager.Follow)"},
	{events.CauseGate, "", []Role{RoleServe}, "serve's gate: reviews, verdicts and the breaker (adapters/gate)"},
	{CauseReconciler, "", []Role{RoleServe}, "serve's reconciler (reducers/session on its tick)"},
	{CauseNotify, "", []Role{RoleServe}, "serve's notifier (adapters/notify)"},
	{CauseWorker, "", []Role{RoleServe, RoleWorker}, "a worker: a worker process, or serve's own (adapters/worker)"},
	{CauseSession, "session.ended", []Role{RoleServe, RoleWorker}, "a worker stops its commands for their session's end (reducers/command.StopForSessionEnd in adapters/worker)"},
}

// Cause kinds of Causes that name no other package's constant.
const (
	// CauseWorker is the cause kind of what a sandbox worker decides.
	CauseWorker = "worker"
	// WorkerStopping is the cause event of the stop a worker asks of
	// each command it runs as it stops itself (by "worker <id>", reason
	// worker_stopping; adapters/worker).
	WorkerStopping = "worker stopping"
	// CauseNotify is the cause kind of what serve's notifier appends
	// (adapters/notify.CauseKind).
	CauseNotify = "notify"
	// CauseSession is the cause kind of a command's stop that its
	// session's end asks.
	CauseSession = "session"
)

// CauseRoles returns the roles that may append an event with cause c by
// Causes: the row of c's kind and event, else the row of its kind alone,
// else serve alone. It returns nil for a nil c: no cause bounds it.
func CauseRoles(c *events.Cause) []Role {
	if c == nil {
		return nil
	}
	var kind []Role
	for _, r := range Causes {
		if r.Kind != c.Kind {
			continue
		}
		if r.Event == c.Event {
			return r.Roles
		}
		if r.Event == "" {
			kind = r.Roles
		}
	}
	if kind == nil {
		return serveOnly
	}
	return kind
}

var serveOnly = []Role{RoleServe}

// Actors names the actors (events.Envelope.Actor) only some roles' code
// appends, and those roles: serve's reconciler and notifier, the
// workers (a worker process's, or serve's own), the admin's key events.
// Any other actor (an agent, a person, a harness) is any role's.
var Actors = map[string][]Role{
	ActorReconciler:   {RoleServe},
	"logbook-notify":  {RoleServe},
	"logbook-worker":  {RoleServe, RoleWorker},
	string(RoleAdmin): {RoleAdmin},
}

// ActorRefusal returns why role, the role of principal's key, may not
// append an event whose actor is actor, by Actors; "" when it may.
func ActorRefusal(role Role, principal, actor string) string {
	if roles, ok := Actors[actor]; ok && !slices.Contains(roles, role) {
		return fmt.Sprintf("role %s (%s) may not append an event by actor %s, which only %s appends", role, principal, actor, roleList(roles))
	}
	return ""
}

// roleList names roles in words: "serve", "serve or worker".
func roleList(roles []Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, " or ")
}

// What serve's reconciler appends, as adapters/ingest and
// reducers/session name it: its observation's type, the cause kind of
// the decisions that follow from one, and the actor of both.
const (
	TypeTick        = "obs.reconciler.tick"
	CauseReconciler = "reconciler"
	ActorReconciler = "logbook-reconciler"
)

// The reasons the reconciler's findings carry: reducers/session's
// ReasonAgentGone and ReasonStale, and the prefix of a check run's end
// whose runner vanished (reducers/check.VanishedPrefix).
const (
	reasonAgentGone = "agent_gone"
	reasonStale     = "stale"
	vanishedPrefix  = "runner vanished: "
)

// ServeFinding returns, in words, what rec claims that only serve finds,
// or "" when it claims nothing of the kind. Serve's reconciler alone
// decides that an agent's process is gone, that a session went quiet
// past --abandon-after, or that a check run's runner vanished: rec
// claims it when its cause is the reconciler's (kind reconciler, or
// system/reconcile, a vanished runner's), its actor is the
// reconciler's, or its data is such a finding under a cause that is not
// an observation's (hook or transcript: the agent's own word, such as a
// SessionEnd hook's reason): a session.ended or session.entry_abandoned
// with reason agent_gone or stale, a session.turn_ended with that
// outcome, a check.ended whose reason says its runner vanished. No role
// but serve may append what ServeFinding names (Refusal judges the cause
// kind; a Verifier, and an appender before it sends, the rest): so a writer's key cannot end a session as the
// reconciler would, nor leave a stale mark, and what every host projects
// of a session's end on the reconciler's word is serve's.
func ServeFinding(rec events.Envelope) string {
	if c := rec.Cause; c != nil {
		switch {
		case c.Kind == CauseReconciler:
			return fmt.Sprintf("%s caused by the reconciler (%s/%s)", rec.Type, c.Kind, c.Event)
		case c.Kind == "system" && c.Event == "reconcile":
			return fmt.Sprintf("%s caused by the reconciler (%s/%s, %s)", rec.Type, c.Kind, c.Event, c.Detail)
		}
	}
	if rec.Actor == ActorReconciler {
		return fmt.Sprintf("%s by actor %s", rec.Type, ActorReconciler)
	}
	if c := rec.Cause; c != nil && (c.Kind == "hook" || c.Kind == "transcript") {
		// What an observation says is the agent's word, decided
		// again from it by replay --rederive: a SessionEnd hook's
		// reason is its payload's, whatever it says.
		return ""
	}
	reason := ""
	switch d := rec.Data.(type) {
	case events.SessionEnded:
		reason = d.Reason
	case events.SessionEntryAbandoned:
		reason = d.Reason
	case events.SessionTurnEnded:
		reason = d.Outcome
	case events.CheckEnded:
		if strings.HasPrefix(d.Reason, vanishedPrefix) {
			return fmt.Sprintf("%s with reason %q, the reconciler's finding", rec.Type, d.Reason)
		}
	}
	if reason == reasonAgentGone || reason == reasonStale {
		return fmt.Sprintf("%s with reason %s, the reconciler's finding", rec.Type, reason)
	}
	return ""
}

// CausePermitted reports whether role may append an event with cause c
// (nil: an event with none, an observation), by Causes (CauseRoles).
func CausePermitted(role Role, c *events.Cause) bool {
	return c == nil || slices.Contains(CauseRoles(c), role)
}

// WorkerPermits returns why a worker's key (id key) may not append rec,
// the next event of its aggregate after st (AggState.Fold's state of the
// events folded before it), or "" when it may. A worker appends only its
// commands' starts and ends and its processes' sessions (README, "What
// the log proves"):
//
//   - command.started, cause worker/command.requested naming the command,
//     on a command no key has started: the worker's claim;
//   - command.running, command.exited and command.stdin_written, cause
//     kind worker, on a command the same key started (or one started
//     before signing, whose starter no key tells);
//   - command.refused, cause kind worker, on a command no key started or
//     the same key started; or cause session/session.ended (the refusal
//     a session's end decides beside its stop) on one no key started;
//   - command.abandoned, cause worker/worker.dead, on a command some key
//     started: another worker's, found dead;
//   - command.stop_requested for its session's end: cause
//     session/session.ended, by "session <the session its request
//     names>"; or, as the worker stops itself, cause worker/worker
//     stopping (WorkerStopping), by "worker <id>", on a command the same
//     key started;
//   - session.entry_opened of its command's entry ("cmd-<id>", lane
//     background), cause worker/command.started naming the command (Ref
//     and Detail), moving the phase from ready to working or not at all;
//   - session.entry_closed of a command's entry ("cmd-<id>"), cause kind
//     worker, moving the phase from working to ready or not at all;
//   - session.transitioned (one of those two moves) and
//     session.activity_changed only right after such an entry event of
//     the same cause: the move the entry's decision made.
//
// Whether the command an entry names belongs to the session, and
// whether a move agrees with the session's state, are not judged here:
// the session's AggState holds neither.
//
// Nothing else: no session's start, end, mode, turn or description, no
// request, eviction or backgrounding of a command.
func WorkerPermits(rec events.Envelope, key string, st AggState) string {
	c := rec.Cause
	sessionEnd := c != nil && c.Kind == CauseSession && c.Event == "session.ended"
	ownedBy := func() string {
		if st.Claim == "" {
			return fmt.Sprintf("command %s was not started", rec.Agg.ID)
		}
		if st.Claim != key && st.Claim != ClaimUnsigned {
			return fmt.Sprintf("command %s was started by key %s, not this one", rec.Agg.ID, st.Claim)
		}
		return ""
	}
	if d, ok := rec.Data.(events.CommandStopRequested); ok {
		if c != nil && c.Kind == CauseWorker && c.Event == WorkerStopping {
			// A worker shutting down stops the commands it runs: its
			// own, by "worker <id>".
			if !strings.HasPrefix(d.By, "worker ") {
				return fmt.Sprintf("a worker stopping stops command %s by \"worker <id>\", not by %q", rec.Agg.ID, d.By)
			}
			return ownedBy()
		}
		if !sessionEnd || st.Session == "" || d.By != "session "+st.Session {
			return fmt.Sprintf("a worker stops command %s only for its session's end (cause session/session.ended, by %q) or, its own, as it stops itself (cause %s/%s)", rec.Agg.ID, "session "+st.Session, CauseWorker, WorkerStopping)
		}
		return ""
	}
	if _, ok := rec.Data.(events.CommandRefused); ok && sessionEnd {
		// The refusal a session's end decides beside its stop, for a
		// command no worker started (command.StopForSessionEnd).
		if st.Claim != "" || st.Session == "" {
			return fmt.Sprintf("a worker refuses command %s for its session's end only before any key started it", rec.Agg.ID)
		}
		return ""
	}
	if c == nil || c.Kind != CauseWorker {
		kind := "nothing"
		if c != nil {
			kind = c.Kind
		}
		return fmt.Sprintf("a worker may append only what it caused itself, not an event caused by %s", kind)
	}
	// moves checks a phase move a worker's decision made: an attach
	// moves a ready session to working, a detach settles a working one
	// to ready (session.Attach, session.Detach).
	moves := func(m *events.SessionTransitioned, from, to string) string {
		if m != nil && (m.From != from || m.To != to) {
			return fmt.Sprintf("a worker's %s moves session %s from %s to %s, not from %s to %s", rec.Type, rec.Agg.ID, m.From, m.To, from, to)
		}
		return ""
	}
	switch d := rec.Data.(type) {
	case events.CommandStarted:
		if c.Event != "command.requested" || c.Ref != rec.Agg.ID {
			return fmt.Sprintf("a worker starts command %s only with cause worker/command.requested naming it", rec.Agg.ID)
		}
		if st.Claim != "" {
			return fmt.Sprintf("command %s was started already", rec.Agg.ID)
		}
	case events.CommandRunning, events.CommandExited, events.CommandStdinWritten:
		return ownedBy()
	case events.CommandRefused:
		if st.Claim != "" {
			return ownedBy()
		}
	case events.CommandAbandoned:
		if c.Event != "worker.dead" {
			return fmt.Sprintf("a worker abandons command %s only with cause worker/worker.dead", rec.Agg.ID)
		}
		if st.Claim == "" {
			return fmt.Sprintf("command %s was not started", rec.Agg.ID)
		}
	case events.SessionEntryOpened:
		if c.Event != "command.started" || c.Ref == "" || c.Detail != c.Ref || d.EntryID != EntryPrefix+c.Ref || d.Lane != events.LaneBackground {
			return fmt.Sprintf("a worker opens on session %s only its command's entry (%s<id>, background, cause worker/command.started naming the command), not %q", rec.Agg.ID, EntryPrefix, d.EntryID)
		}
		return moves(d.Moves, events.PhaseReady, events.PhaseWorking)
	case events.SessionEntryClosed:
		if len(d.EntryID) <= len(EntryPrefix) || !strings.HasPrefix(d.EntryID, EntryPrefix) {
			return fmt.Sprintf("a worker closes on session %s only a command's entry (%s<id>), not %q", rec.Agg.ID, EntryPrefix, d.EntryID)
		}
		return moves(d.Moves, events.PhaseWorking, events.PhaseReady)
	case events.SessionTransitioned, events.SessionActivityChanged:
		if st.Entry != *c {
			return fmt.Sprintf("a worker moves session %s only in the decision that opens or closes its command's entry", rec.Agg.ID)
		}
		if t, ok := d.(events.SessionTransitioned); ok {
			// Stored as an event of its own before entry events
			// carried their move.
			if t.From == events.PhaseReady {
				return moves(&t, events.PhaseReady, events.PhaseWorking)
			}
			return moves(&t, events.PhaseWorking, events.PhaseReady)
		}
	default:
		return fmt.Sprintf("a worker may not append %s", rec.Type)
	}
	return ""
}

// Refusal returns why role, the role of principal's key, may not append
// an event of type typ with cause c (nil: none), by Table (Permitted) and
// Causes (CausePermitted), in words naming the role, the principal
// and the type or the cause; "" when it may. It is the one rule both
// sides apply: a Verifier quarantines such an event as OutOfRole with
// this reason, and an appender (adapters/natslog) refuses to send it.
func Refusal(role Role, principal, typ string, c *events.Cause) string {
	if !Permitted(role, typ) {
		return fmt.Sprintf("role %s (%s) may not append %s", role, principal, typ)
	}
	// A worker stops its command for its session's end, a stop the
	// session caused: WorkerPermits judges it whole, with the command's
	// state.
	if role == RoleWorker && typ == (events.CommandStopRequested{}).EventType() {
		return ""
	}
	if !CausePermitted(role, c) {
		switch {
		case c.Kind == CauseReconciler || c.Kind == "system" && c.Event == "reconcile":
			return fmt.Sprintf("role %s (%s) may not append an event caused by the reconciler (%s/%s): serve's decision", role, principal, c.Kind, c.Event)
		case role == RoleWorker:
			return fmt.Sprintf("role %s (%s) may append only what it caused itself, not an event caused by %s/%s", role, principal, c.Kind, c.Event)
		}
		return fmt.Sprintf("role %s (%s) may not append an event caused by %s/%s, which only %s appends", role, principal, c.Kind, c.Event, roleList(CauseRoles(c)))
	}
	return ""
}

// FindingRefusal returns why role, the role of principal's key, may not
// append an event that claims finding (ServeFinding's words, "" for
// none): only serve may; "" when it may.
func FindingRefusal(role Role, principal, finding string) string {
	if finding == "" || role == RoleServe {
		return ""
	}
	return fmt.Sprintf("role %s (%s) may not append %s: only serve's reconciler decides it", role, principal, finding)
}

// EntryPrefix begins the id of the session entry a worker keeps open for
// a command it started: "cmd-<command id>" (adapters/worker.EntryID).
const EntryPrefix = "cmd-"

// ClaimUnsigned is AggState.Claim of a command whose command.started
// carries no key: stored before signing, its starter untold.
const ClaimUnsigned = "-"

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
