package hookspool

import (
	"math"
	"testing"
	"time"
)

// TestIDAt_SortsWithinAMillisecond: ids made at two times within one
// millisecond sort in time order whatever their random bits, so that
// hooks that follow one another within a millisecond (separate
// processes, each with its own randomness) are delivered in order.
func TestIDAt_SortsWithinAMillisecond(t *testing.T) {
	base := time.Date(2026, 12, 6, 10, 0, 0, 123_000_000, time.UTC)
	for _, gap := range []time.Duration{time.Nanosecond, time.Microsecond, 999 * time.Microsecond} {
		for _, r := range [][2]uint64{{0, math.MaxUint64}, {math.MaxUint64, 0}, {1 << 59, 1<<59 - 1}} {
			a, b := idAt(base, r[0]), idAt(base.Add(gap), r[1])
			if a.Compare(b) >= 0 {
				t.Errorf("gap %v, random %x then %x: %s does not sort before %s", gap, r[0], r[1], a, b)
			}
			if a.Time() != uint64(base.UnixMilli()) {
				t.Errorf("id time %d, want %d", a.Time(), base.UnixMilli())
			}
		}
	}
}

// TestNewID_InOrder: ids made one after another in this process sort in
// the order they were made, and none repeats.
func TestNewID_InOrder(t *testing.T) {
	last := ""
	for range 100_000 {
		id := NewID()
		if id <= last {
			t.Fatalf("%s after %s", id, last)
		}
		last = id
	}
}
