package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/worker"
)

// TestBreakdown: each stage is timed from the stage the command reached
// just before it, a stage none reached is left out, and each is the
// median over the commands that reached it.
func TestBreakdown(t *testing.T) {
	const n = int(worker.NumStages)
	ms := func(base time.Time, m int) time.Time { return base.Add(time.Duration(m) * time.Millisecond) }
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	times := map[string]*commandTimes{}
	for i, d := range []int{1, 2, 3} { // the middle command is the median of each stage
		b := base.Add(time.Duration(i) * time.Second)
		// begin 0, decided 5d, appended 6d, then stage k of the worker's
		// at (7+k)d (no output), end after the last.
		ct := &commandTimes{begin: b, decided: ms(b, 5*d), appended: ms(b, 6*d), end: ms(b, (7+n)*d)}
		for k := range n {
			if worker.Stage(k) != worker.StageOutput {
				ct.marks[k] = ms(b, (7+k)*d)
			}
		}
		times[string(rune('a'+i))] = ct
	}
	got := breakdown(times)
	if len(got) != len(commandStages)-1 {
		t.Fatalf("breakdown has %d stages, want %d (all but first output): %+v", len(got), len(commandStages)-1, got)
	}
	stage := func(s worker.Stage) string { return commandStages[int(s)+2] }
	for _, s := range got {
		if s.Stage == stage(worker.StageOutput) {
			t.Errorf("stage %q reached by no command is shown", s.Stage)
		}
		want := 2.0 // every later stage is d ms after the one before, d's median 2
		switch s.Stage {
		case commandStages[0]:
			want = 10 // 5d
		case stage(worker.StageExitSeen):
			want = 4 // from the process's start, output skipped: 2d
		}
		if s.P50ms != want || s.N != 3 {
			t.Errorf("stage %q: p50 %vms over %d, want %vms over 3", s.Stage, s.P50ms, s.N, want)
		}
	}

	// In a restricted mode the attach is known after the fork: each is
	// timed from what came just before it in time.
	ct := &commandTimes{begin: base, end: ms(base, 100)}
	ct.marks[worker.StageStarted] = ms(base, 10)
	ct.marks[worker.StagePrepared] = ms(base, 13)
	ct.marks[worker.StageForked] = ms(base, 17)
	ct.marks[worker.StageAttached] = ms(base, 22)
	ct.marks[worker.StageProcess] = ms(base, 28)
	want := map[string]float64{
		stage(worker.StageStarted): 10, stage(worker.StagePrepared): 3, stage(worker.StageForked): 4,
		stage(worker.StageAttached): 5, stage(worker.StageProcess): 6, commandStages[len(commandStages)-1]: 72,
	}
	got = breakdown(map[string]*commandTimes{"r": ct})
	if len(got) != len(want) {
		t.Fatalf("restricted breakdown has %d stages, want %d: %+v", len(got), len(want), got)
	}
	for _, s := range got {
		if w, ok := want[s.Stage]; !ok || s.P50ms != w {
			t.Errorf("restricted stage %q: p50 %vms, want %vms", s.Stage, s.P50ms, w)
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
