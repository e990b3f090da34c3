package bench

import (
	"strings"
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

// TestBoundaryCheck: the workspace_write row is held to the baseline's
// own figures plus 10 ms (p50) and 25 ms (p99), and a baseline that was
// not timed meets nothing.
func TestBoundaryCheck(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	base := Figures{P50ms: ms(30), P99ms: ms(50)}
	for _, c := range []struct {
		p50, p99 float64
		ok       bool
	}{{40, 75, true}, {40.1, 60, false}, {35, 75.1, false}, {10, 20, true}} {
		got := boundaryCheck(Figures{P50ms: ms(c.p50), P99ms: ms(c.p99)}, base)
		if got.OK != c.ok {
			t.Errorf("p50 %v p99 %v over bubblewrap 30/50: OK %v, want %v (%s)", c.p50, c.p99, got.OK, c.ok, got.Text)
		}
		if !strings.Contains(got.Text, "40.0ms") || !strings.Contains(got.Text, "75.0ms") {
			t.Errorf("check %q does not name the limits 40.0ms and 75.0ms", got.Text)
		}
	}
	if got := boundaryCheck(Figures{P50ms: ms(1), P99ms: ms(1)}, Figures{}); got.OK {
		t.Errorf("an untimed baseline met the check: %+v", got)
	}
}
