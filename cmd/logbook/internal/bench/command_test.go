package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/worker"
)

// TestBreakdown: each stage is timed from the last earlier stage the
// command reached, a stage none reached is left out, and each is the
// median over the commands that reached it. serve's stages of an exec
// on its socket come before the request's decision and after
// command.exited; without them (`logbook exec`) the decision is timed
// from exec's start.
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
	pre := int(execsock.StageSeen) // serve's stages before the decision
	decided := pre                 // the decision's stage
	worker0 := decided + 2         // the worker's first stage
	for _, served := range []bool{true, false} {
		times := map[string]*commandTimes{}
		for i, d := range []int{1, 2, 3} { // the middle command is the median of each stage
			b := base.Add(time.Duration(i) * time.Second)
			// begin, serve's 6 stages (no settle), decided, appended,
			// the worker's 7 (no output), serve's 2, end: each d ms after
			// the one before.
			ms := []int{0}
			for k := 1; k <= 18; k++ {
				ms = append(ms, 5*d+k*d)
			}
			ms[1+int(execsock.StageSettled)] = -1
			ms[1+worker0+int(worker.StageOutput)] = -1
			p := at(b, ms...)
			ct := &commandTimes{begin: p[0], decided: p[1+pre], appended: p[2+pre], end: p[18]}
			copy(ct.marks[:], p[3+pre:10+pre])
			if served {
				copy(ct.served[:execsock.StageSeen], p[1:1+pre])
				copy(ct.served[execsock.StageSeen:], p[10+pre:18])
			}
			times[string(rune('a'+i))] = ct
		}
		got := breakdown(times)
		want := len(commandStages) - 2 // all but the settle and first output
		if !served {
			want -= pre - 1 + 2 // serve's stages
		}
		if len(got) != want {
			t.Fatalf("served %v: breakdown has %d stages, want %d: %+v", served, len(got), want, got)
		}
		for _, s := range got {
			if s.Stage == commandStages[worker0+int(worker.StageOutput)] || s.Stage == commandStages[int(execsock.StageSettled)] {
				t.Errorf("served %v: stage %q reached by no command is shown", served, s.Stage)
			}
			want := 2.0 // every later stage is d ms after the one before, d's median 2
			switch s.Stage {
			case commandStages[0]:
				want = 12 // 6d
			case commandStages[int(execsock.StageResolved)]:
				want = 4 // from the arguments' parse, settle skipped: 2d
			case commandStages[decided]:
				if !served {
					want = float64(5+1+decided) * 2 // from exec's start
				}
			case commandStages[worker0+int(worker.StageExit)]:
				want = 4 // from the process's start, output skipped: 2d
			case commandStages[len(commandStages)-1]:
				if !served {
					want = 6 // from command.exited, serve's two skipped: 3d
				}
			}
			if s.P50ms != want || s.N != 3 {
				t.Errorf("served %v: stage %q: p50 %vms over %d, want %vms over 3", served, s.Stage, s.P50ms, s.N, want)
			}
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
