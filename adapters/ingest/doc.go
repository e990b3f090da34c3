// Package ingest is the agent-neutral import and follow engine: it turns
// what a coding agent writes into observations on the log, and each
// observation and the session decisions it causes into one atomic batch.
// An agent's package (adapters/claude, adapters/codex, …) gives only its
// format: where its files live, how one line of them (a LineSource) or one
// spooled hook payload (ObserveEntry) becomes an events.Observation, and
// its hook settings; this package does the rest, alike for every agent:
//
//   - Reading: a transcript is a JSON Lines file the agent appends to.
//     ReadLines and ReadFrom yield its complete lines, a last line without
//     its newline once as Torn (imported when complete), a line over
//     MaxLineBytes as a *LineError with its head, size and SHA-256.
//     CheckPrivate and CheckOpened keep the data dir's files out.
//   - Cursors and fingerprints: the session keeps, per file, its last
//     imported line and that line's fingerprint (offsets and SHA-256).
//     Ingester.ImportFile reads on from there, and a file that no longer
//     holds that line is recorded as diverged (*DivergedError), never
//     imported again as new lines.
//   - Batching: runs of lines are decided in memory and appended as one
//     atomic batch each (at most events.MaxBatch events), with optimistic
//     concurrency on the session at the run's start.
//   - The skip index (SkipIndex): files unchanged since an import left
//     nothing behind are skipped without loading their session.
//   - Following: Ingester.Watch follows directories of transcripts through
//     inotify and rescans; Ingester.Reconcile ticks sessions whose agent
//     went quiet or away.
//
// The package decides nothing itself: the session reducer
// (reducers/session) decides from the observations' signals.
package ingest
