// Package merkle keeps an RFC 6962 Merkle tree over the LOGBOOK stream,
// publishes signed checkpoints of it, lets other hosts witness them and
// checks a stored log against them.
//
// Leaf i (0-based) of the tree is the message at stream sequence i+1,
// every message of the stream (events and command output), hashed as
// LeafData says. A checkpoint is a C2SP tlog-checkpoint signed note
// (origin, tree size, base64 root) signed with golang.org/x/mod/sumdb/note;
// a witness adds a C2SP tlog-cosignature/v1 line. Checkpoints and
// cosignatures live in their own stream (CheckpointStream), beside
// LOGBOOK and never in it: a checkpoint stored in the log would be a leaf
// of the tree it describes, and the writer credential, which may publish
// anything on the log's subjects, must not be able to publish one.
//
// Hashing follows golang.org/x/mod/sumdb/tlog (RFC 6962: a leaf hash is
// SHA-256(0x00‖data), an interior node SHA-256(0x01‖left‖right)).
package merkle
