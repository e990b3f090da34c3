// Package command decides and folds the lifecycle of one shell command that
// a sandbox worker runs for a session:
//
//	requested → started → running → exited | abandoned
//	requested → refused | evicted
//	started → refused | abandoned (its process never started, or its worker died first)
//
// with backgrounded, stdin_written and stop_requested along the way.
// "running" is not a status: command.running fills in the process
// (State.Pid) of a started command. The
// aggregate is lb.ev.command.<id>, kind events.KindCommand; the id is a
// ULID string chosen by the requester, so a retried request names the same
// command and is decided once (an identical second Request decides
// nothing).
//
// Decide and Evolve are pure: time, ids and every input arrive inside
// commands and envelopes; nothing here reads a clock, draws randomness or
// does I/O. Decide validates and returns events with Type, V, Data, At,
// Cause and Agg set; the caller (events.Executor) stamps ID and Ver and
// appends them as one batch with optimistic concurrency on the command's
// subject. Evolve only applies facts and never fails.
//
// # Exactly one start
//
// Workers compete for command.requested. Decide accepts Start only in
// status requested, and the start is appended with the command's last
// stream sequence as the expected one. Of two workers racing, one append
// lands; the other conflicts, reloads, and Decide rejects its Start with
// events.ErrRejected, so that worker drops the command. The same check
// orders a start against an eviction, a refusal or a stop of a command
// still queued: whichever lands first wins and the other is decided again
// against it. A worker starts the process only after its Start has
// landed, so the loser has started nothing; the process id follows in
// its own event (Run, command.running), which only the winner may
// append. A winner that cannot start the process refuses its own
// command (Refuse with its Worker), which is allowed until Run.
//
// # A session's end stops its commands
//
// StopForSessionEnd is the decision a session.ended causes for each of
// the session's commands that has not ended: a Stop with the end event
// as its cause. It is a function of the two states alone, so whoever
// follows the log (the workers do) reaches the same stops on every
// replay, and after a crash between the end and the stops a restarted
// follower decides them again; a stop already recorded is not repeated.
//
// # At most MaxActive commands per session
//
// The limit spans many command aggregates, and Decide sees one, so no
// single decision can enforce it under one optimistic check. DecideRequest
// therefore takes the session's active commands as the command projection
// lists them (ActiveIDs over the session's rows, oldest first) and returns
// the new command's events together with the evictions that bring the
// session back to MaxActive active commands. The caller
//
//  1. appends the new command's events (its subject must be empty, so a
//     concurrent request with the same id conflicts), then
//  2. runs each Eviction's Evict through Decide on the evicted command's
//     own aggregate. A requested command becomes evicted and never
//     starts; a started one is also asked to stop, and stays started until
//     its worker reports the exit. Either way its State stays readable. An
//     Evict rejected because that command ended meanwhile needs nothing
//     more.
//
// The limit is a bound the system returns to, not a lock: two requests
// decided against the same list of 63 both land, and the session has 65
// active commands until the next request; a lagging projection or a crash
// between the two steps does the same. DecideRequest evicts every command
// beyond the limit (len(active)-MaxActive+1, not just one), so the next
// request restores the bound whatever the overshoot. This is enough for a
// limit that exists to bound the processes a runaway agent leaves behind;
// an agent issues its requests one after another, so the overshoot is rare
// and small. A strict bound would need one optimistic check over the
// session's set of commands: the session aggregate would keep its active
// command ids and each request would append to the session's subject and
// the command's in one atomic batch.
package command
