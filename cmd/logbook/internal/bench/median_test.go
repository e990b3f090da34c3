package bench

import (
	"testing"
	"time"
)

// TestBenchMedian: the sample of median rate, whatever the order, the
// lower middle one of an even number, and a lone sample as it is.
func TestBenchMedian(t *testing.T) {
	s := func(ops int, ms int) benchSample {
		return benchSample{ops: ops, elapsed: time.Duration(ms) * time.Millisecond}
	}
	for _, tc := range []struct {
		in   []benchSample
		want benchSample
	}{
		{[]benchSample{s(100, 10)}, s(100, 10)},
		{[]benchSample{s(100, 10), s(100, 40), s(300, 10)}, s(100, 10)}, // rates 10k, 2.5k, 30k
		{[]benchSample{s(300, 10), s(100, 10), s(100, 40)}, s(100, 10)},
		{[]benchSample{s(100, 40), s(100, 20), s(100, 10), s(100, 5)}, s(100, 20)},
	} {
		if got := benchMedian(tc.in); got.ops != tc.want.ops || got.elapsed != tc.want.elapsed {
			t.Errorf("benchMedian(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
