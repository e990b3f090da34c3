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
//  2. loads the command and drops the request unless it is still
//     requested (a redelivery, a stop, an eviction);
//  3. starts the process (sandbox.Start) and appends command.started with
//     the process id, decided on the state it loaded and appended with
//     that state's last sequence as the expected one (a conflict reloads
//     and decides again, as events.Executor does);
//  4. acks the request once command.started or command.refused is stored.
//
// Claims and heartbeats live in memory storage: each is worth only its
// TTL, and a server restart that loses them is harmless (a claim matters
// only while its worker starts the command, and the liveness check waits
// out a missing heartbeat).
//
// The claim is what keeps a second worker from starting a process at all:
// command.started must carry the process id, which exists only once the
// process does, so the optimistic check alone would let two racing
// workers both start one and kill the loser's afterwards. The check still
// orders the start against a stop, an eviction or a refusal appended
// meanwhile: then the start is rejected, the process is stopped before any
// of its output is stored, and the request is dropped.
//
// On start the worker also attaches the command to its session
// (reducers/session Attach, entry "cmd-<id>", activity
// "command:<base of argv[0]>"), so a live background command keeps the
// session working; on the end it detaches it. A restricted command that
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
// started command also appends) or command.abandoned.
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
// Package worker is Linux-only in practice: the boundary is bubblewrap
// and liveness reads /proc.
package worker
