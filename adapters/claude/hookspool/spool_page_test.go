package hookspool

import (
	"fmt"
	"testing"
)

// TestSpool_PendingFirst: PendingFirst reads the oldest n entries only,
// in order; n ≤ 0 reads all.
func TestSpool_PendingFirst(t *testing.T) {
	s := openSpool(t)
	ids := putN(t, s, 10)
	for _, n := range []int{1, 3, 10, 11, 0, -1} {
		got, err := s.PendingFirst(n)
		if err != nil {
			t.Fatal(err)
		}
		want := len(ids)
		if n > 0 && n < want {
			want = n
		}
		if len(got) != want {
			t.Fatalf("PendingFirst(%d): %d entries, want %d", n, len(got), want)
		}
		for i, e := range got {
			if e.ID != ids[i] || string(e.Payload) != fmt.Sprintf(`{"n":%d}`, i) {
				t.Errorf("PendingFirst(%d)[%d] = %s %s, want %s", n, i, e.ID, e.Payload, ids[i])
			}
		}
	}
}
