// Package worker runs the commands a session asks for: it adapts this
// host's processes (package sandbox) to the log. A Worker takes
// command.requested events off the log, runs each command in its mode's
// boundary, stores its output on lb.out.<command-id> and reports every
// step as an event. A Client is the other side: it appends requests,
// stops and backgrounding, writes stdin, and follows a command's events and
// output.
//
// # Taking a request: exactly one start
//
// Workers share one durable JetStream pull consumer (DurableName) on
// lb.ev.command.>, with explicit acks, so each request is delivered to one
// worker at a time; a request whose worker fails to answer within the ack
// wait is delivered again to another. A worker that gets a request:
//
//  1. claims it: it creates the key <command id> in the KV bucket
//     ClaimBucket. The create succeeds for one worker only; a worker that
//     finds the claim held by a live worker puts the request back for
//     later, and one that finds it held by a dead worker takes it over
//     with a compare-and-set on the key's revision;
//  2. loads the command (read while the claim is made, and with it the
//     session the request names, for admission: a read that a start
//     overtakes only makes step 3's check fail) and drops the request
//     unless it is still requested (a redelivery, a stop, an
//     eviction), and refuses it
//     (command.refused) when its argv or environment carries a secret
//     (CheckSecrets' rules, Config.Redactor's patterns): a request may
//     have been appended without the Client's check;
//  3. appends command.started, decided on the state it loaded and
//     appended with that state's last sequence as the expected one (a
//     conflict reloads and decides again, as events.Executor does), and
//     beside it, both in flight together, attaches the command to its
//     session; a worker whose start is rejected drops the request,
//     having started nothing, and closes the entry its attach opened
//     when no worker started the command (one that did closes it);
//  4. once both have landed, starts the process (sandbox.Start) and
//     appends command.running with the process id, its start time, the
//     boot id and its cgroup while the process runs. In a restricted
//     mode bubblewrap builds the boundary while command.started and the
//     attach are appended: it starts held (sandbox Spec.Hold), and the
//     command runs only once released, after both have landed and the
//     start won its check; a held sandbox that must not go on (the start
//     was lost or its fate is unknown, the session ended, a stop came)
//     is killed unreleased, its output dropped;
//  5. acks the request once command.started or command.refused is stored.
//
// Claims and heartbeats live in memory storage: each is worth only its
// TTL, and a server restart that loses them is harmless.
//
// The claim is a hint that spares a second worker the work of racing; it
// is not the guarantee. Heartbeats come late under load, so two workers
// may each judge the other's claim dead and both take it over. What
// guarantees one process is the order of step 3 and 4: a process starts
// only after its worker's command.started has won the optimistic check on
// the command's subject, so the loser has nothing to stop. The same check
// orders the start against a stop, an eviction or a refusal appended
// meanwhile. A winner that cannot start the process (no boundary, no such
// program, a stop that came first, a session that has ended) refuses its
// own command (command.refused after command.started, allowed until
// command.running); a winner that dies before command.running is
// abandoned like any other, and its process, if it had one, died with it
// (see below).
//
// Before the process starts the worker attaches the command to its
// session (reducers/session Attach, entry "cmd-<id>", activity
// "command:<base of argv[0]>"), so the session is working whenever the
// process runs; after the exit is recorded it detaches it. A restricted command that
// cannot get its boundary (no bubblewrap) is refused with the sandbox's
// reason; it never runs unconfined.
//
// # Output
//
// Each chunk the sandbox emits (at most 32 KiB, at most 50 ms after it was
// read) is stored on lb.out.<id>, in order, as one message with the
// headers HeaderStream (pty, stdout or stderr), HeaderOffset (the byte
// offset of the chunk in its stream) and HeaderPos (its offset in the
// command's whole output, streams interleaved as stored), and Nats-Msg-Id
// "<id>:<stream>:<offset>", so a store retried after a lost answer keeps
// one copy. A publisher per command stores a lone chunk at once with a
// plain publish, and whatever queued while the previous store was in
// flight (up to 128 chunks, 4 MiB) as one atomic batch: one fsync for all
// of it, which is what lets a chatty command's output reach the disk at
// the disk's pace. When 128 chunks wait, the sandbox stops reading and the
// command blocks on its full pipe. All output is stored before
// command.exited is appended, so a reader that has seen command.exited has
// seen all of the output.
//
// # Stop
//
// Requests are load-balanced, but a stop must reach the worker running
// the command. Each worker therefore also follows every command event
// with an ordered consumer (its control feed) and calls sandbox Stop when
// a command it runs gets command.stop_requested (which an eviction of a
// started command also appends) or command.abandoned. A feed whose
// consumer cannot be re-created (a stream without a leader for longer
// than the client's resets) is followed again from the message after the
// last one it delivered, after pauses growing to 5 s, for as long as the
// worker runs.
//
// # A session's end
//
// The control feed also reads every session.ended (the Lb-Type header
// picks them out; other session events are not decoded). For each of the
// session's commands that has not ended the worker appends the stop
// command.StopForSessionEnd decides: command.stop_requested by "session
// <id>", reason "session_ended", its cause a reference to the end event.
// The running worker then stops the whole tree like any stop. Every
// worker does this for every end, from the start of the log, so the
// decision is replayed rather than remembered: the first stop lands and
// the others are rejected, and after a crash between the end and the
// stops, the next worker to start appends them. A command requested after
// the end is refused when a worker takes it. Cancelling a turn is not an
// end and stops nothing.
//
// # Stdin
//
// Bytes for a command's stdin never enter the log (see
// events.CommandStdinWritten). A Client sends them by core NATS request to
// the subject StdinSubject(worker, command) of the worker that started the
// command; that worker writes them to the process and appends
// command.stdin_written with their length and, unless withheld, their
// SHA-256.
//
// # Heartbeat and abandonment
//
// A worker's identity is its host, process id and start ULID. While it
// runs it puts its Identity under its id in the KV bucket HeartbeatBucket
// every quarter of the bucket's TTL (DefaultLapse when the first worker
// creates it); a worker whose key has expired is dead. Its control feed
// also tracks every started command that has not ended and, once caught
// up and then every heartbeat, checks their workers: a command whose
// worker's key has lapsed (ReasonLost), or whose worker ran on this host
// and whose process is gone (ReasonGone) or whose host has rebooted since
// (ReasonRebooted), gets command.abandoned with the reason and its
// session entry is detached. The check on this host compares the boot id
// and the process's start time in /proc, so a restarted worker abandons
// its predecessor's commands at once, without waiting for the lapse, even
// when it got the same pid. Several workers may notice one death; the
// first abandonment lands and the others are rejected. Output stored
// before the death stays on lb.out; nothing is published again.
//
// A dead worker's processes die too. Every command's leader gets SIGKILL
// as its parent-death signal, so it dies with its worker's process (and
// bubblewrap takes a restricted command's namespace with it). What the
// leader started may outlive it; so a worker that abandons a command that
// ran on its own host first kills what is left of its tree — the cgroup
// recorded in command.running if there is one, else the leader's session
// and group and their descendants, found by the recorded pid and checked
// against the recorded start time and boot id, so a recycled pid is never
// signalled (sandbox.KillTree) — and only then appends command.abandoned.
// Where the sandbox could put the command in a cgroup v2 of its own
// (sandbox.Process.Cgroup, recorded in command.running), the cgroup is the
// handle and nothing escapes it, setsid or not; without one, a process
// that left the session and the group before its leader died is beyond
// reach. A worker on another
// host cannot kill anything: when it abandons a command, only the
// parent-death signal has acted on the command's own host.
//
// Package worker is Linux-only in practice: the boundary is bubblewrap
// and liveness reads /proc.
package worker
