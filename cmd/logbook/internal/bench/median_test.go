package bench

import (
	"math"
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

// TestBenchPairedRatio: the median of each run's ratio, not the ratio of
// the medians; 0 when a run has no rate.
func TestBenchPairedRatio(t *testing.T) {
	s := func(ops int, ms int) benchSample {
		return benchSample{ops: ops, elapsed: time.Duration(ms) * time.Millisecond}
	}
	for _, tc := range []struct {
		ls, bs []benchSample
		want   float64
	}{
		{[]benchSample{s(100, 10)}, []benchSample{s(100, 8)}, 0.8},
		// The machine slows down over the row: each run's ratio is 0.8,
		// the ratio of the median rates is not.
		{[]benchSample{s(100, 10), s(100, 20), s(100, 40)}, []benchSample{s(100, 8), s(100, 16), s(100, 32)}, 0.8},
		{[]benchSample{s(100, 10), s(100, 10), s(100, 10)}, []benchSample{s(100, 5), s(100, 10), s(100, 8)}, 0.8},
		{[]benchSample{s(100, 10), s(100, 10), s(100, 10), s(100, 10)}, []benchSample{s(100, 5), s(100, 10), s(100, 8), s(100, 9)}, 0.8},
		{[]benchSample{s(100, 10), s(100, 0)}, []benchSample{s(100, 8), s(100, 8)}, 0},
		{nil, nil, 0},
	} {
		if got := benchPairedRatio(tc.ls, tc.bs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("benchPairedRatio(%v, %v) = %v, want %v", tc.ls, tc.bs, got, tc.want)
		}
	}
}
