package session

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
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
// never written again, so states derived from one another share them and
// adding an id copies at most one chunk.
const idChunk = 512

// IDSet is a compact, append-only set of ids (tool-use ids of a session's
// calls): each id is kept as the 64-bit FNV-1a hash of its bytes, 8 bytes
// an id, in the order added. Two distinct ids share a hash with
// probability about n²/2⁶⁵ (n = ids in the set), negligible for the
// calls of one session.
//
// Its zero value is empty. An IDSet is a value: Add returns a new set and
// never modifies the receiver's memory, so states stay independent. Its
// JSON form is one base64 string of the hashes, big-endian, oldest first
// ("" or absent when empty).
type IDSet struct {
	chunks [][]uint64 // every chunk but the last holds idChunk hashes
	n      int
}

// Len returns how many ids the set holds.
func (s IDSet) Len() int { return s.n }

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// Has reports whether id was added (or an id of the same hash). Cost:
// linear in the set's size, a few microseconds for thousands of ids.
func (s IDSet) Has(id string) bool {
	if s.n == 0 || id == "" {
		return false
	}
	h := hashID(id)
	for _, c := range s.chunks {
		if slices.Contains(c, h) {
			return true
		}
	}
	return false
}

// Add returns s with id added; s itself is unchanged, and "" returns s.
// It does not look for id first (that would make adding n ids cost n²):
// an id added twice takes two places. Cost: at most one chunk copied.
// Beyond MaxIDs the oldest chunk is dropped.
func (s IDSet) Add(id string) IDSet {
	if id == "" {
		return s
	}
	return s.add(hashID(id), MaxIDs)
}

// AddUpTo is Add with limit (≥ idChunk) in place of MaxIDs: past it the
// oldest chunk (idChunk ids) is dropped.
func (s IDSet) AddUpTo(id string, limit int) IDSet {
	if id == "" {
		return s
	}
	return s.add(hashID(id), max(limit, idChunk))
}

func (s IDSet) add(h uint64, limit int) IDSet {
	chunks := slices.Clone(s.chunks)
	if k := len(chunks); k > 0 && len(chunks[k-1]) < idChunk {
		last := make([]uint64, len(chunks[k-1]), len(chunks[k-1])+1)
		copy(last, chunks[k-1])
		chunks[k-1] = append(last, h)
	} else {
		chunks = append(chunks, []uint64{h})
	}
	n := s.n + 1
	if n > limit {
		n -= len(chunks[0])
		chunks = chunks[1:]
	}
	return IDSet{chunks: chunks, n: n}
}

// MarshalJSON implements json.Marshaler.
func (s IDSet) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*s.n)
	for _, c := range s.chunks {
		for _, h := range c {
			b = binary.BigEndian.AppendUint64(b, h)
		}
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
		if i%(8*idChunk) == 0 {
			out.chunks = append(out.chunks, make([]uint64, 0, idChunk))
		}
		k := len(out.chunks) - 1
		out.chunks[k] = append(out.chunks[k], binary.BigEndian.Uint64(b[i:]))
	}
	*s = out
	return nil
}

// IsZero reports whether the set is empty, for omitzero.
func (s IDSet) IsZero() bool { return s.n == 0 }

// Equal reports whether s and o hold the same hashes in the same order
// (go-cmp uses it to compare states).
func (s IDSet) Equal(o IDSet) bool {
	if s.n != o.n {
		return false
	}
	i, j, a, b := 0, 0, 0, 0
	for k := 0; k < s.n; k++ {
		for len(s.chunks[a]) == i {
			a, i = a+1, 0
		}
		for len(o.chunks[b]) == j {
			b, j = b+1, 0
		}
		if s.chunks[a][i] != o.chunks[b][j] {
			return false
		}
		i, j = i+1, j+1
	}
	return true
}
