package session

import (
	"hash/fnv"
	"reflect"
	"strconv"
	"sync"
	"testing"
)

// TestHashID: the set's hash is FNV-1a of the id's bytes, as stored rows
// hold it.
func TestHashID(t *testing.T) {
	for _, id := range []string{"", "a", "toolu_01ABC", "line:/p/s.jsonl:17", "é"} {
		h := fnv.New64a()
		h.Write([]byte(id))
		if got, want := hashID(id), h.Sum64(); got != want {
			t.Errorf("hashID(%q) = %x, want %x", id, got, want)
		}
	}
}

// TestIDSet_Branches: sets derived from one set, each added to in turn,
// in place or not, hold their own ids only, and the set they came from
// is unchanged: a copy taken before an add keeps its value.
func TestIDSet_Branches(t *testing.T) {
	for _, base := range []int{0, 1, 7, idChunk - 1, idChunk, idChunk + 3} {
		var a IDSet
		for i := range base {
			a = a.add1("a"+strconv.Itoa(i), true)
		}
		const branches, adds = 6, 2*idChunk + 5
		sets := make([]IDSet, branches)
		for i := range branches {
			sets[i] = a
		}
		for i := range adds { // in turn: each branch's add meets the others'
			for b := range sets {
				id := "b" + strconv.Itoa(b) + "-" + strconv.Itoa(i)
				if b%2 == 0 {
					sets[b] = sets[b].add1(id, true)
				} else {
					sets[b] = sets[b].Add(id)
				}
			}
		}
		if a.Len() != base || a.Has("b0-0") {
			t.Fatalf("base %d: the set added to changed: len %d", base, a.Len())
		}
		for b, s := range sets {
			for o := range branches {
				for _, i := range []int{0, adds - 1} {
					if got := s.Has("b" + strconv.Itoa(o) + "-" + strconv.Itoa(i)); got != (o == b) {
						t.Errorf("base %d: branch %d holding branch %d's id %d: %v", base, b, o, i, got)
					}
				}
			}
			var want IDSet
			for i := range base {
				want = want.Add("a" + strconv.Itoa(i))
			}
			for i := range adds {
				want = want.Add("b" + strconv.Itoa(b) + "-" + strconv.Itoa(i))
			}
			if s.Len() != want.Len() || !s.Equal(want) || !reflect.DeepEqual(s, want) {
				t.Errorf("base %d, branch %d: differs from the same adds made alone", base, b)
			}
		}
	}
}

// TestIDSet_Concurrent: sets derived from one, added to by value on
// goroutines of their own while the first is added to in place, stay
// independent (run with -race).
func TestIDSet_Concurrent(t *testing.T) {
	var a IDSet
	for i := range 5 {
		a = a.add1("a"+strconv.Itoa(i), true)
	}
	var wg sync.WaitGroup
	got := make([]IDSet, 4)
	for g := range got {
		wg.Go(func() {
			s := a
			for i := range idChunk {
				s = s.Add("g" + strconv.Itoa(g) + "-" + strconv.Itoa(i))
			}
			got[g] = s
		})
	}
	own := a
	for i := range idChunk {
		own = own.add1("own-"+strconv.Itoa(i), true)
	}
	wg.Wait()
	for g, s := range got {
		if s.Len() != 5+idChunk || s.Has("own-0") || !s.Has("a4") || !s.Has("g"+strconv.Itoa(g)+"-0") {
			t.Errorf("goroutine %d's set: len %d, holds the in-place adds %v", g, s.Len(), s.Has("own-0"))
		}
	}
	if a.Len() != 5 || own.Len() != 5+idChunk || !own.Has("own-0") || own.Has("g0-0") {
		t.Errorf("in-place set: len %d", own.Len())
	}
}

// TestIDSet_AddsInPlace: adding in place to a set no one else adds to
// copies nothing: one allocation per new chunk and growth of the tail at most.
func TestIDSet_AddsInPlace(t *testing.T) {
	var s IDSet
	ids := make([]string, 4*idChunk)
	for i := range ids {
		ids[i] = "toolu_" + strconv.Itoa(i)
	}
	allocs := testing.AllocsPerRun(5, func() {
		s = IDSet{}
		for _, id := range ids {
			s = s.add1(id, true)
		}
	})
	if per := allocs / float64(len(ids)); per > 0.05 {
		t.Errorf("%.0f allocations for %d adds (%.3f an add)", allocs, len(ids), per)
	}
}
