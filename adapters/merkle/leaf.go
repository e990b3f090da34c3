package merkle

import (
	"crypto/sha256"
	"strconv"

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
// are the server's bookkeeping and are not covered. m's headers are its
// Header or, for a message a raw read left undecoded
// (natslog.Msg.HeaderBlock), those of its header block as the server
// sent it, parsed in place (natslog.RawHeader): the same leaf. The sequence is part
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
	if blk := m.HeaderBlock(); blk != nil {
		// A raw read's message, its header block undecoded: the Lb-
		// headers are taken from the block in one walk, with no map.
		var h natslog.RawHeader
		if h.Parse(blk) {
			return appendLeafHeadFields(b, m.Seq, m.Subject, h.Fields())
		}
		m = m.Decoded()
	}
	// One pass over the header map takes each Lb- header's name and
	// values, kept sorted by name as they come (insertion: a message has
	// a few): a sort of the names and a lookup of each name's values
	// after it took as long as hashing the leaf.
	var few [8]leafHeader
	hs := few[:0]
	for k, vs := range m.Header {
		if len(k) < len(HeaderPrefix) || k[:len(HeaderPrefix)] != HeaderPrefix {
			continue
		}
		i := len(hs)
		hs = append(hs, leafHeader{})
		for i > 0 && hs[i-1].name > k {
			hs[i] = hs[i-1]
			i--
		}
		hs[i] = leafHeader{k, vs}
	}
	b = append(b, LeafPrefix...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, '\n')
	b = append(b, m.Subject...)
	b = append(b, '\n')
	for _, h := range hs {
		for _, v := range h.values {
			b = append(b, h.name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, '\n')
		}
	}
	b = append(b, '\n')
	return b
}

// appendLeafHeadFields is appendLeafHead of the message at seq on
// subject whose headers are fs, in stored order (natslog.RawHeader):
// the Lb- ones sorted by name, stably, so that the values of one name
// keep their stored order, as a decoded Header's do.
func appendLeafHeadFields(b []byte, seq uint64, subject string, fs []natslog.HeaderField) []byte {
	var few [16]int // indices into fs: pointers would move fs's array to the heap
	hs := few[:0]
	for i := range fs {
		name := fs[i].Name
		if len(name) < len(HeaderPrefix) || name[:len(HeaderPrefix)] != HeaderPrefix {
			continue
		}
		k := len(hs)
		hs = append(hs, i)
		for k > 0 && leafNameLess(name, fs[hs[k-1]].Name) {
			hs[k] = hs[k-1]
			k--
		}
		hs[k] = i
	}
	b = append(b, LeafPrefix...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '\n')
	b = append(b, subject...)
	b = append(b, '\n')
	for _, i := range hs {
		b = append(b, fs[i].Name...)
		b = append(b, ": "...)
		b = append(b, fs[i].Value...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}

// leafNameLess reports whether a < b, for a and b both of HeaderPrefix:
// the byte after the prefix decides unless it is the same (Lb-Batch,
// Lb-Batch-Sig), without the string comparison's call that took half
// the time of making a leaf's head.
func leafNameLess(a, b string) bool {
	const p = len(HeaderPrefix)
	if len(a) > p && len(b) > p && a[p] != b[p] {
		return a[p] < b[p]
	}
	return a < b
}

// leafHeader is one Lb- header of a message: its name and its values in
// stored order.
type leafHeader struct {
	name   string
	values []string
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

// leafHashFields is LeafHash of the message at seq on subject with body
// data whose headers are fs, in stored order (natslog.RawHeader.Fields
// of its header block).
func leafHashFields(seq uint64, subject string, fs []natslog.HeaderField, data []byte) tlog.Hash {
	var buf [2048]byte
	b := appendLeafHeadFields(append(buf[:0], 0x00), seq, subject, fs)
	return sha256.Sum256(append(b, data...))
}
