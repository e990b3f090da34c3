package bench

import (
	"testing"
	"time"
)

// TestHookP50Delta: the median over the runs of each run's p50
// difference, signed minus unsigned, held to at most +1 ms, and a row
// with no runs fails.
func TestHookP50Delta(t *testing.T) {
	lat := func(ms ...float64) benchSample {
		var s benchSample
		for _, m := range ms {
			s.lat = append(s.lat, time.Duration(m*float64(time.Millisecond)))
		}
		return s
	}
	for _, tc := range []struct {
		name          string
		signed, plain []benchSample
		want          string
		ok            bool
	}{
		{"within", []benchSample{lat(5, 6, 7), lat(5, 6.5, 9), lat(4, 5, 6)}, []benchSample{lat(5, 5.5, 6), lat(6, 6, 6), lat(5, 5, 5)},
			"Δp50 +0.50ms ≤+1ms", true}, // differences +0.5, +0.5, 0
		{"one slow run does not decide", []benchSample{lat(20, 20, 20), lat(6), lat(6)}, []benchSample{lat(5), lat(5.5), lat(5.5)},
			"Δp50 +0.50ms ≤+1ms", true},
		{"missed", []benchSample{lat(8), lat(8), lat(8)}, []benchSample{lat(6), lat(6.5), lat(7.5)},
			"Δp50 +1.50ms ≤+1ms", false},
		{"faster signed", []benchSample{lat(5)}, []benchSample{lat(6)}, "Δp50 -1.00ms ≤+1ms", true},
		{"no runs", nil, nil, "Δp50 ≤+1ms: no runs", false},
	} {
		got := hookP50Delta(tc.signed, tc.plain)
		if got.Text != tc.want || got.OK != tc.ok {
			t.Errorf("%s: hookP50Delta = %q ok %v, want %q ok %v", tc.name, got.Text, got.OK, tc.want, tc.ok)
		}
	}
}
