// Package attestation signs the events a principal appends and checks them
// when the log is read: which key signed each stored event, whether that
// key was registered and not revoked at the event's sequence, and whether
// the key's role may append the event's type.
//
// # Where the signature travels
//
// The signature rides in two NATS message headers, not in the envelope
// JSON, so an event's stored body, and the state hash of a log without a
// forgery, are what they were before signing:
//
//	Lb-Key  the key id: lowercase hex of the first 8 bytes of the
//	        SHA-256 of the 32-byte Ed25519 public key (16 characters)
//	Lb-Sig  the standard base64 (RFC 4648 §4, padded) Ed25519 signature
//	        (RFC 8032) of the signed form below
//
// # The signed form
//
// Ed25519 signs these bytes (Signed), one line each, each ended by '\n'
// except the data:
//
//	logbook event signature v1
//	<subject>                    e.g. lb.ev.session.3f2a…
//	<expect>                     Nats-Expected-Last-Subject-Sequence, or "-"
//	<data>                       the message body: the envelope JSON
//
// The envelope JSON holds the event's id, type, v, agg, ver, at, cause,
// corr, host, actor and data, so all of them are covered. <expect> is the
// aggregate's last stream sequence the append was decided against, as
// the message's Nats-Expected-Last-Subject-Sequence header says. JetStream
// (nats-server v2.12) stores that header with the message both for a
// plain publish and for the first member of an atomic batch, and a
// reader gets it back with the message; the other members of a batch
// carry none, and sign "-". Only what a reader can read back is signed:
// the stream sequence is assigned by the server after signing and is not
// covered (its order is what the Merkle checkpoints cover).
//
// # Batch signatures
//
// Messages that go out together (a commit of two or more messages: a
// decision of several events, merged decisions, an import's held batch)
// are signed once: leaf i is the RFC 6962 leaf hash (tlog.RecordHash,
// SHA-256 of 0x00 and the bytes) of message i's signed form above
// (BatchLeaf), the root is the RFC 6962 tree hash of the n leaves, and
// Ed25519 signs the batch statement (BatchStatement), one line each:
//
//	logbook batch signature v1
//	<n>                          decimal, 2 to MaxBatchLeaves
//	<root>                       standard base64 of the 32-byte root
//
// Its first line differs from the single form's, so neither signature
// is ever taken for the other. Each message carries Lb-Key and, instead
// of Lb-Sig:
//
//	Lb-Batch      "<index>/<n>", decimal, the index 0-based
//	Lb-Root       the root, standard base64
//	Lb-Batch-Sig  the statement's signature, standard base64
//	Lb-Proof      the message's inclusion proof (RFC 6962 audit path,
//	              tlog.RecordProof order): its 32-byte hashes
//	              concatenated, standard base64
//
// A reader judges each message alone from its own headers: it recomputes
// the leaf, checks the proof to the root (tlog.CheckRecord), and verifies
// the statement, once per key, root and signature (a Verifier and its
// siblings keep the verdicts of the last 2048 statements). A message of
// one commit that goes out alone is signed in the single form, as before
// batches were signed. A message that carries both forms, or batch
// headers that do not parse, is badly signed.
//
// # Keys and roles
//
// A key is bound to a principal ("serve@build-3", "worker@build-3",
// "alice@build-3") and a Role by a key.registered event on the key
// aggregate lb.ev.key.<key-id>, and unbound by key.revoked; both must be
// signed by the admin key whose public part the host pins (the data
// dir's keys/admin.pub). Which role may append which event type is the
// written table Table. The admin key itself signs only key events and
// signing.began.
//
// A Verifier folds the key events in stream order and judges each event
// (Status): attested, before signing (stored before the log's
// signing.began), or quarantined as unsigned, badly signed, signed by an
// unknown or revoked key, out of its key's role, or replayed: a signed
// event stored again as it was, which its signature does not tell (it
// covers no position), told by its aggregate's order (AggState): its id
// repeats the last folded event's, or its ver does not follow it. Verification runs
// before folding, in the log adapter; reducers never see a quarantined
// event.
package attestation
