// Package projections folds the event log into queryable rows stored in
// Pebble: one key space per view, a checkpoint committed with the rows, and
// a state hash that is the projection's identity.
//
// # Keys
//
// A view named v owns the keys "v/<key>" (its rows, JSON values) and
// "v-<index>/<…>" (its indexes, usually with empty values). Keys under
// "meta/" belong to the store:
//
//	meta/checkpoint  last applied stream sequence, 8 bytes big-endian
//	meta/views       JSON object of view name → schema version
//
// The checkpoint is written in the same Pebble batch as the rows the batch
// applied, so after any crash the rows and the checkpoint agree: the store
// is always the projection of exactly the records with Seq ≤ checkpoint.
//
// # Layers
//
// Store.Apply is the core: it folds any sequence of records (a slice in
// tests, Log.Read in production) into the store in batches. Runner layers
// the log on top: RunOnce applies one batch after the checkpoint, RunToEnd
// repeats it until caught up, and Run follows the log live.
//
// # Schema changes
//
// When the view versions stored in meta/views differ from the code's, the
// store is stale: it still answers queries with its old rows, and a Runner
// rebuilds the projection from sequence 1 into the directory "<dir>.rebuild",
// then swaps it in when caught up (see Runner.RunOnce for the crash-safety of
// the swap).
//
// # Identity
//
// Hash is SHA-256 over every row and index key of every view, in key order,
// excluding meta/. Views must be deterministic functions of the records:
// nothing host-, clock- or projection-time-dependent may reach a row, so a
// live projection, a replay and another host's projection of the same log
// prefix have equal hashes.
package projections
