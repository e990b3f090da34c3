package session

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
)

// MaxIDs bounds an IDSet that Add fills: 16384 ids, 128 KiB of hashes
// (about 175 KB in the session row's JSON), so a row stays well under a
// message's maximum payload. A session with more entries than that
// forgets its oldest ones: a late copy of such a call is then taken for
// a new call. A set kept out of the row may take another bound
// (AddUpTo).
const MaxIDs = 1 << 14

// idChunk is how many hashes one chunk of an IDSet holds. Full chunks are
// never written again, so states derived from one another share them.
const idChunk = 512

// IDSet is a compact, append-only set of ids (tool-use ids of a session's
// calls): each id is kept as the 64-bit FNV-1a hash of its bytes, 8 bytes
// an id, in the order added. Two distinct ids share a hash with
// probability about n²/2⁶⁵ (n = ids in the set), negligible for the
// calls of one session.
//
// Its zero value is empty. An IDSet is a value: Add returns a new set and
// never changes what the receiver holds, so states stay independent. Its
// JSON form is one base64 string of the hashes, big-endian, oldest first
// ("" or absent when empty).
type IDSet struct {
	full [][]uint64 // chunks of idChunk hashes each, oldest first; nil when none
	tail []uint64   // the newest hashes, fewer than idChunk; nil when none
	n    int
}

// Len returns how many ids the set holds.
func (s IDSet) Len() int { return s.n }

// hashID returns the 64-bit FNV-1a hash of id's bytes (hash/fnv's
// New64a, without its allocations).
func hashID(id string) uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime64
	}
	return h
}

// Has reports whether id was added (or an id of the same hash). Cost:
// linear in the set's size, a few microseconds for thousands of ids.
func (s IDSet) Has(id string) bool {
	if s.n == 0 || id == "" {
		return false
	}
	h := hashID(id)
	if slices.Contains(s.tail, h) {
		return true
	}
	for _, c := range s.full {
		if slices.Contains(c, h) {
			return true
		}
	}
	return false
}

// Add returns s with id added; s itself is unchanged, and "" returns s.
// It does not look for id first (that would make adding n ids cost n²):
// an id added twice takes two places. Cost: a copy of the newest chunk
// (at most idChunk-1 hashes). Beyond MaxIDs the oldest chunk is dropped.
func (s IDSet) Add(id string) IDSet {
	if id == "" {
		return s
	}
	return s.add(hashID(id), MaxIDs, false)
}

// AddUpTo is Add with limit (≥ idChunk) in place of MaxIDs: past it the
// oldest chunk (idChunk ids) is dropped.
func (s IDSet) AddUpTo(id string, limit int) IDSet {
	if id == "" {
		return s
	}
	return s.add(hashID(id), max(limit, idChunk), false)
}

// add1 is Add, and with inPlace (a state evolved in place, State.Evolve)
// it appends to the newest chunk's backing array, without a copy, when
// that array has room and the slot past the set's last hash is free (see
// claim).
func (s IDSet) add1(id string, inPlace bool) IDSet {
	if id == "" {
		return s
	}
	return s.add(hashID(id), MaxIDs, inPlace)
}

func (s IDSet) add(h uint64, limit int, inPlace bool) IDSet {
	k := len(s.tail)
	if inPlace && claim(s.tail, h) {
		s.tail = s.tail[:k+1]
	} else {
		c := k + 1 // what a value gets: exactly its hashes, as before
		if inPlace {
			c = min(idChunk, max(16, 2*(k+1))) // room to add in place
		}
		t := make([]uint64, k+1, c)
		copy(t, s.tail)
		t[k] = h
		s.tail = t
	}
	s.n++
	if len(s.tail) == idChunk {
		s.full = append(slices.Clip(s.full), s.tail)
		s.tail = nil
	}
	if s.n > limit { // limit ≥ idChunk > len(s.tail): full holds a chunk
		s.n -= len(s.full[0])
		if s.full = s.full[1:]; len(s.full) == 0 {
			s.full = nil
		}
	}
	return s
}

// claim writes h to the slot past tail in tail's backing array and
// reports true when there is one and it is free (0): no set holds it,
// since every set sharing the array holds a prefix of it and a slot, once
// written, is never written again. A set that holds a shorter prefix
// than another made from it, and adds to it, finds the slot taken and
// copies. A hash of 0 cannot mark its slot taken, and is never claimed.
func claim(tail []uint64, h uint64) bool {
	k := len(tail)
	if h == 0 || k == cap(tail) || tail[:k+1][k] != 0 {
		return false
	}
	tail[:k+1][k] = h
	return true
}

// MarshalJSON implements json.Marshaler.
func (s IDSet) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*s.n)
	for _, c := range s.full {
		for _, h := range c {
			b = binary.BigEndian.AppendUint64(b, h)
		}
	}
	for _, h := range s.tail {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON implements json.Unmarshaler. It refuses a string that is
// not base64 of whole 8-byte hashes.
func (s *IDSet) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*s = IDSet{}
		return nil
	}
	var str string
	if err := json.Unmarshal(data, &str); err != nil {
		return fmt.Errorf("id set: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil || len(b)%8 != 0 {
		return fmt.Errorf("id set: not base64 of 8-byte hashes (%d bytes)", len(b))
	}
	out := IDSet{n: len(b) / 8}
	for i := 0; i < len(b); i += 8 {
		if out.tail == nil {
			out.tail = make([]uint64, 0, idChunk)
		}
		if out.tail = append(out.tail, binary.BigEndian.Uint64(b[i:])); len(out.tail) == idChunk {
			out.full, out.tail = append(out.full, out.tail), nil
		}
	}
	*s = out
	return nil
}

// IsZero reports whether the set is empty, for omitzero.
func (s IDSet) IsZero() bool { return s.n == 0 }

// Equal reports whether s and o hold the same hashes in the same order
// (go-cmp uses it to compare states).
func (s IDSet) Equal(o IDSet) bool {
	return s.n == o.n && slices.EqualFunc(s.full, o.full, slices.Equal) && slices.Equal(s.tail, o.tail)
}
