package session

import (
	"slices"
	"strconv"
	"testing"
)

// TestRecent_PushInPlace: lists derived from one list, each pushed to in
// turn, in place or not, hold their own strings only, and the list they
// came from is unchanged; pushing in place to a list no one else pushes
// to copies no tail.
func TestRecent_PushInPlace(t *testing.T) {
	for _, bound := range []int{1, 3, recentChunk, 40} {
		for _, base := range []int{0, 1, recentChunk - 1, recentChunk + 2} {
			var a Recent
			var want []string
			for i := range base {
				a = a.push("a"+strconv.Itoa(i), bound, true)
				want = append(want, "a"+strconv.Itoa(i))
			}
			before := a.All()
			lists := make([]Recent, 4)
			wants := make([][]string, len(lists))
			for b := range lists {
				lists[b], wants[b] = a, slices.Clone(want)
			}
			for i := range 2*recentChunk + 3 {
				for b := range lists {
					v := "b" + strconv.Itoa(b) + "-" + strconv.Itoa(i)
					lists[b] = lists[b].push(v, bound, b%2 == 0)
					wants[b] = append(wants[b], v)
				}
			}
			if !slices.Equal(a.All(), before) {
				t.Fatalf("bound %d base %d: the list pushed to changed: %v, was %v", bound, base, a.All(), before)
			}
			for b, l := range lists {
				w := wants[b][max(0, len(wants[b])-bound):]
				if got := l.All(); !slices.Equal(got, w) {
					t.Errorf("bound %d base %d, list %d: %v, want %v", bound, base, b, got, w)
				}
			}
		}
	}
	var r Recent
	allocs := testing.AllocsPerRun(5, func() {
		r = Recent{}
		for range 10 * recentChunk {
			r = r.push("k", 1000, true)
		}
	})
	if allocs > 2*10+2 { // a tail and the list of chunks per chunk filled
		t.Errorf("%.0f allocations for %d pushes in place", allocs, 10*recentChunk)
	}
}
