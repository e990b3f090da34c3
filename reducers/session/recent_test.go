package session

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestRecent_LikeABoundedSlice pushes onto lists taken at random from all
// the lists made so far (as an executor evolves a cached state again after
// a conflict) and checks each against a []string kept by copying, before
// and after every later push: same strings, same JSON, same Has, and the
// JSON read back is equal.
func TestRecent_LikeABoundedSlice(t *testing.T) {
	for _, n := range []int{1, 2, 15, 16, 17, 40, RecentKeys} {
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		lists := []Recent{{}}
		refs := [][]string{nil}
		for i := range 3000 {
			k := len(lists) - 1
			if rng.IntN(4) == 0 {
				k = rng.IntN(len(lists))
			}
			v := "k" + strconv.Itoa(i)
			lists = append(lists, lists[k].Push(v, n))
			refs = append(refs, pushBounded(refs[k], v, n))
		}
		for k, l := range lists {
			want := refs[k]
			if got := l.All(); !slices.Equal(got, want) || l.Len() != len(want) || l.IsZero() != (len(want) == 0) {
				t.Fatalf("n=%d list %d: %v (len %d), want %v", n, k, got, l.Len(), want)
			}
			gotJSON, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) > 0 {
				wantJSON, _ := json.Marshal(want)
				if string(gotJSON) != string(wantJSON) {
					t.Fatalf("n=%d list %d: JSON %s, want %s", n, k, gotJSON, wantJSON)
				}
			}
			var back Recent
			if err := json.Unmarshal(gotJSON, &back); err != nil || !back.Equal(l) {
				t.Fatalf("n=%d list %d: read back %v, %v", n, k, back.All(), err)
			}
			for _, v := range []string{"k0", "k" + strconv.Itoa(k-1), "k" + strconv.Itoa(rng.IntN(3000)), "x"} {
				if l.Has(v) != slices.Contains(want, v) {
					t.Fatalf("n=%d list %d: Has(%q) = %v", n, k, v, l.Has(v))
				}
			}
		}
	}
}

// TestState_RecentJSONAsBefore pins the JSON of a state's recent lists to
// that of the []string fields they replaced, absent when empty.
func TestState_RecentJSONAsBefore(t *testing.T) {
	var s State
	b, m := members(t, s)
	if _, ok := m["recent_keys"]; ok {
		t.Errorf("empty recent_keys written: %s", b)
	}
	s.RecentKeys = s.RecentKeys.Push("a<b>&\u2028", RecentKeys).Push("c", RecentKeys)
	s.RecentClosed = RecentOf("t1")
	b, m = members(t, s)
	if got, want := string(m["recent_keys"]), `["a\u003cb\u003e\u0026\u2028","c"]`; got != want {
		t.Errorf("recent_keys %s, want %s", got, want)
	}
	if got, want := string(m["recent_closed"]), `["t1"]`; got != want {
		t.Errorf("recent_closed %s, want %s", got, want)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !back.RecentKeys.Equal(s.RecentKeys) || !back.RecentClosed.Equal(s.RecentClosed) {
		t.Errorf("read back %v %v, %v", back.RecentKeys.All(), back.RecentClosed.All(), err)
	}
}

// BenchmarkRecentPush is a hook key pushed onto a full window.
func BenchmarkRecentPush(b *testing.B) {
	var r Recent
	for i := range RecentKeys {
		r = r.Push("hook-"+strconv.Itoa(i), RecentKeys)
	}
	b.ReportAllocs()
	for b.Loop() {
		r = r.Push("hook-x", RecentKeys)
	}
}
