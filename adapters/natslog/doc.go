// Package natslog is events.Log on NATS JetStream, embedded in the
// process or on an external server or cluster.
//
// # The stream
//
// Everything lives in one stream, LOGBOOK, on subjects lb.>: events of an
// aggregate on lb.ev.<kind>.<id> (one subject per aggregate, so
// optimistic concurrency works per aggregate), command output on
// lb.out.<command-id>. The stream is append-only at the server:
// DenyDelete, DenyPurge, Discard new, no MaxAge, no rollup, default
// (synchronous) persist mode. Open creates it, or refuses an existing one
// that lost any of that with a *StreamConfigError.
//
// # Appending
//
// One decision (events.Batch) is one JetStream atomic batch: every event
// is stored or none. The first message carries
// Nats-Expected-Last-Subject-Sequence = Batch.Expect, so a decision made
// on stale state fails with events.ErrConflict; every message carries
// Nats-Msg-Id = event id, so re-sending a committed batch is recognised
// (Appended.Duplicate) instead of stored twice.
//
// Under fsync always a plain publish costs one fsync per message, while
// an atomic batch costs a fixed few (the server stages it in a store of
// its own) for all its messages. A Log therefore commits through one
// goroutine that merges the decisions queued at the same moment, for
// different aggregates, into one batch of at most events.MaxBatch
// messages and MaxMergeBytes of bodies (group commit). A lone decision goes out at once; a lone
// one-event decision as a plain publish with the same headers, which is
// just as atomic and cheaper. If the server refuses a merged batch, each
// member is retried alone so that only the offending decision fails.
// A single server commits a batch message by message: a disk that fills
// during the commit would cut it, so a Log on the store's host starts no
// commit while the disk there is below a reserve (Config.Room,
// adapters/diskfull.Room): each is refused whole (ErrAppendsHeld).
// events.Executor is the reload-and-decide loop callers run on top.
//
// # Reading
//
// Load reads one aggregate with batched direct gets. Read, Follow,
// ReadRaw and FollowRaw read through ordered consumers: up to a known end
// in pulls of 4000 messages (ReadPull), at the live end of the stream in
// pulls of 1000; Read and Follow decode with the events registry
// (Read on several goroutines) and skip command output. PublishOutput
// stores command output, read back with ReadRaw.
//
// # Hosts
//
// StartEmbedded runs a server in the process with fsync always (opt-in
// FsyncInterval), no TCP listener unless asked (loopback only, with a
// password), and an in-process connection. Connect dials an external
// server instead; both connections go through the same Open. The
// external server must itself run with sync_interval: always, which a
// client cannot check.
//
// Ownership: a Server owns its connection and is stopped by Shutdown; a
// Log owns its committer goroutine and is stopped by Close, before the
// connection it was opened on.
package natslog
