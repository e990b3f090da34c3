package merkle

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// LeafPrefix starts every leaf's data; it names the format's version.
const LeafPrefix = "logbook-leaf/v1\n"

// HeaderPrefix is the prefix of the header names a leaf covers. Names
// are compared as stored, case included.
const HeaderPrefix = "Lb-"

// LeafData returns the bytes the tree hashes for m, format
// logbook-leaf/v1:
//
//	"logbook-leaf/v1\n"
//	<stream sequence, decimal>"\n"
//	<subject>"\n"
//	for each header whose name begins with "Lb-", sorted by name, each of
//	its values in stored order: <name>": "<value>"\n"
//	"\n"
//	<message data>
//
// Headers outside Lb- (Nats-Msg-Id, Nats-Expected-*, the batch headers)
// are the server's bookkeeping and are not covered. The sequence is part
// of the leaf, so a message moved to another sequence hashes differently
// even when its leaf index were the same.
func LeafData(m natslog.Msg) []byte {
	b := appendLeafHead(make([]byte, 0, len(LeafPrefix)+24+len(m.Subject)+64+len(m.Data)), m)
	return append(b, m.Data...)
}

// appendLeafHead appends to b LeafData(m) up to its message data: the
// format's line, the sequence, the subject, the Lb- headers and the
// blank line. LeafData and LeafHash share it, so the two never differ.
func appendLeafHead(b []byte, m natslog.Msg) []byte {
	var few [8]string // a message has a few Lb- headers
	names := few[:0]
	for k := range m.Header {
		if strings.HasPrefix(k, HeaderPrefix) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	b = append(b, LeafPrefix...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, '\n')
	b = append(b, m.Subject...)
	b = append(b, '\n')
	for _, k := range names {
		for _, v := range m.Header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, '\n')
		}
	}
	b = append(b, '\n')
	return b
}

// LeafHash returns the RFC 6962 leaf hash of m: tlog.RecordHash of
// LeafData(m), SHA-256 of 0x00 and the leaf data, written out in a
// buffer on the stack when it fits (the leaf of a message of up to about
// 1.5 KiB allocates nothing).
func LeafHash(m natslog.Msg) tlog.Hash {
	var buf [2048]byte
	b := appendLeafHead(append(buf[:0], 0x00), m)
	return sha256.Sum256(append(b, m.Data...))
}
