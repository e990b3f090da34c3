package redact

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A Live Redactor applies the rules its source names at each use, from
// many goroutines at once while the source changes, and a Stream takes
// the new rules from its next piece on (a running command's output).
func TestLive_FollowsSource(t *testing.T) {
	one, two := twoRules(t)
	var cur atomic.Pointer[Redactor]
	cur.Store(one)
	r := Live(cur.Load)
	if got := r.Redact("a mycorp-123456 acme-wxyz"); got != "a [REDACTED:custom-1] acme-wxyz" {
		t.Fatalf("first rules: %q", got)
	}
	st := r.NewStream()
	cur.Store(two)
	if got := r.JSON(`{"p":"mycorp-123456 acme-wxyz"}`); got != `{"p":"[REDACTED:custom-1] [REDACTED:custom-2]"}` {
		t.Fatalf("second rules: %q", got)
	}
	if got := string(st.Write([]byte("acme-wxyz mycorp-"))); got != "" {
		t.Fatalf("stream let a partial line go: %q", got)
	}
	if got := string(st.Write([]byte("123456\nacme-wxyz\n"))); got != "[REDACTED:custom-2] [REDACTED:custom-1]\n[REDACTED:custom-2]\n" {
		t.Fatalf("stream kept the old rules: %q", got)
	}
	if n := len(r.Rules()) - len(Default().Rules()); n != 2 {
		t.Fatalf("Rules: %d custom, want 2", n)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				if got := r.Redact("x mycorp-654321 y"); strings.Contains(got, "654321") {
					t.Errorf("not redacted: %q", got)
					return
				}
			}
		})
	}
	for i := range 500 {
		if i%2 == 0 {
			cur.Store(one)
		} else {
			cur.Store(two)
		}
	}
	wg.Wait()
}

// Pin takes a Live Redactor's rules as its source names them at the
// call, one look at the source for every use after it; a Redactor that
// is not Live pins to itself.
func TestPin(t *testing.T) {
	one, two := twoRules(t)
	if one.Pin() != one {
		t.Fatal("a Redactor that is not Live pins to another")
	}
	var cur atomic.Pointer[Redactor]
	cur.Store(one)
	var asked atomic.Int32
	r := Live(func() *Redactor { asked.Add(1); return cur.Load() })
	p := r.Pin()
	cur.Store(two)
	for range 3 {
		if got := p.Redact("acme-wxyz"); got != "acme-wxyz" {
			t.Fatalf("pinned to the first rules: %q", got)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the source was asked %d times, want once", n)
	}
	if got := r.Pin().Redact("acme-wxyz"); got != "[REDACTED:custom-2]" {
		t.Fatalf("the next Pin: %q, want the second rules", got)
	}
}

// twoRules returns a Redactor with one custom rule (mycorp-NNNNNN,
// custom-1) and one with that rule and a second (acme-xxxx, custom-2).
func twoRules(t *testing.T) (one, two *Redactor) {
	t.Helper()
	one, err := New([]string{`mycorp-[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	two, err = New([]string{`mycorp-[0-9]{6}`, `acme-[a-z]{4}`})
	if err != nil {
		t.Fatal(err)
	}
	return one, two
}
