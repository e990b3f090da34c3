package bench

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/worker"
)

// TestBreakdown: each stage is timed from the last earlier stage the
// command reached, a stage none reached is left out, and each is the
// median over the commands that reached it.
func TestBreakdown(t *testing.T) {
	at := func(base time.Time, ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			if m >= 0 {
				out[i] = base.Add(time.Duration(m) * time.Millisecond)
			}
		}
		return out
	}
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	times := map[string]*commandTimes{}
	for i, d := range []int{1, 2, 3} { // the middle command is the median of each stage
		b := base.Add(time.Duration(i) * time.Second)
		// begin, decided, appended, then the worker's stages (no output), end
		p := at(b, 0, 5*d, 6*d, 7*d, 8*d, 9*d, 10*d, -1, 12*d, 13*d, 14*d)
		ct := &commandTimes{begin: p[0], decided: p[1], appended: p[2], end: p[10]}
		copy(ct.marks[:], p[3:10])
		times[string(rune('a'+i))] = ct
	}
	got := breakdown(times)
	if len(got) != len(commandStages)-1 {
		t.Fatalf("breakdown has %d stages, want %d (all but first output): %+v", len(got), len(commandStages)-1, got)
	}
	for _, s := range got {
		if s.Stage == commandStages[int(worker.StageOutput)+2] {
			t.Errorf("stage %q reached by no command is shown", s.Stage)
		}
		want := 2.0 // every later stage is d ms after the one before, d's median 2
		switch s.Stage {
		case commandStages[0]:
			want = 10 // 5d
		case commandStages[int(worker.StageExit)+2]:
			want = 4 // from the process's start (10d), output skipped: 2d
		}
		if s.P50ms != want || s.N != 3 {
			t.Errorf("stage %q: p50 %vms over %d, want %vms over 3", s.Stage, s.P50ms, s.N, want)
		}
	}
}
