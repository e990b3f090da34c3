package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// recentChunk is how many strings one full chunk of a Recent holds.
const recentChunk = 16

// Recent is a bounded list of strings, oldest first, that keeps the newest
// ones (hook keys, closed entry ids). Its zero value is empty.
//
// A Recent is a value: Push returns a new list and never writes memory
// the receiver can reach, so two states derived from one state stay
// independent, however often each is evolved. Full chunks of recentChunk
// strings are shared between the lists derived from one another and
// never written again; a push copies only the newest, partial chunk (at
// most recentChunk-1 strings) and, once every recentChunk pushes, the
// list of chunks. Its JSON form is the array of its strings, oldest first,
// exactly as a []string's (absent with omitzero when empty).
type Recent struct {
	full [][]string // chunks of recentChunk strings, oldest first
	skip int        // the oldest strings of full[0] no longer in the list
	tail []string   // the newest strings, fewer than recentChunk
}

// Len returns how many strings the list holds.
func (r Recent) Len() int { return len(r.full)*recentChunk - r.skip + len(r.tail) }

// IsZero reports whether the list is empty, for omitzero.
func (r Recent) IsZero() bool { return r.Len() == 0 }

// Push returns r with v appended, keeping at most n (≥ 1) newest
// strings; r is unchanged.
func (r Recent) Push(v string, n int) Recent { return r.push(v, n, false) }

// push is Push, and with inPlace (a state evolved in place,
// State.Evolve) it appends v to the tail's backing array, without a
// copy, when that array has room and the slot past the tail is free
// (""): every list sharing the array holds a prefix of it, and a slot,
// once written, is never written again. An empty v, which cannot mark
// its slot taken, is copied.
func (r Recent) push(v string, n int, inPlace bool) Recent {
	var tail []string
	if k := len(r.tail); inPlace && v != "" && k < cap(r.tail) && r.tail[:k+1][k] == "" {
		tail = r.tail[:k+1]
		tail[k] = v
	} else {
		c := k + 1
		if inPlace {
			c = recentChunk // room to push in place
		}
		tail = make([]string, k+1, c)
		copy(tail, r.tail)
		tail[k] = v
	}
	out := Recent{full: r.full, skip: r.skip, tail: tail}
	if len(tail) == recentChunk {
		out.full = append(slices.Clip(r.full), tail)
		out.tail = nil
	}
	if drop := out.Len() - n; drop > 0 {
		out.skip += drop
		k := out.skip / recentChunk
		if k > len(out.full) { // n is smaller than the tail
			k = len(out.full)
		}
		out.full, out.skip = out.full[k:], out.skip-k*recentChunk
		if len(out.full) == 0 {
			out.tail, out.skip = out.tail[out.skip:], 0
		}
	}
	if len(out.full) == 0 {
		out.full = nil
	}
	return out
}

// All returns the strings, oldest first, in a new slice.
func (r Recent) All() []string {
	out := make([]string, 0, r.Len())
	for i, c := range r.full {
		if i == 0 {
			c = c[r.skip:]
		}
		out = append(out, c...)
	}
	return append(out, r.tail...)
}

// Has reports whether v is in the list.
func (r Recent) Has(v string) bool {
	if slices.Contains(r.tail, v) {
		return true
	}
	for i, c := range r.full {
		if i == 0 {
			c = c[r.skip:]
		}
		if slices.Contains(c, v) {
			return true
		}
	}
	return false
}

// Equal reports whether r and o hold the same strings in the same order
// (go-cmp uses it to compare states).
func (r Recent) Equal(o Recent) bool { return slices.Equal(r.All(), o.All()) }

// RecentOf returns a list of vs, oldest first (vs is not kept).
func RecentOf(vs ...string) Recent {
	var r Recent
	for len(vs) >= recentChunk {
		r.full = append(r.full, slices.Clone(vs[:recentChunk]))
		vs = vs[recentChunk:]
	}
	if len(vs) > 0 {
		r.tail = slices.Clone(vs)
	}
	return r
}

// MarshalJSON implements json.Marshaler: the strings as a JSON array,
// byte for byte what encoding/json writes for a []string.
func (r Recent) MarshalJSON() ([]byte, error) { return json.Marshal(r.All()) }

// UnmarshalJSON implements json.Unmarshaler: an array of strings, or null
// for an empty list.
func (r *Recent) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*r = Recent{}
		return nil
	}
	var vs []string
	if err := json.Unmarshal(data, &vs); err != nil {
		return fmt.Errorf("recent list: %w", err)
	}
	*r = RecentOf(vs...)
	return nil
}
