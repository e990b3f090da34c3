package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/adapters/worker"
)

// TestBreakdown: each stage is timed from the stage the command reached
// just before it, a stage none reached is left out, and each is the
// median over the commands that reached it. serve's stages of an exec
// on its socket come before the request's decision and after
// command.exited; without them (`logbook exec`) the decision is timed
// from exec's start.
func TestBreakdown(t *testing.T) {
	const n = int(worker.NumStages)
	pre := int(execsock.StageSeen) // serve's stages before the decision
	worker0 := pre + 2             // the worker's first stage in commandStages
	stage := func(s worker.Stage) string { return commandStages[worker0+int(s)] }
	ms := func(base time.Time, m int) time.Time { return base.Add(time.Duration(m) * time.Millisecond) }
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, served := range []bool{true, false} {
		times := map[string]*commandTimes{}
		for i, d := range []int{1, 2, 3} { // the middle command is the median of each stage
			b := base.Add(time.Duration(i) * time.Second)
			// Stage k of commandStages ends at (k+1)d: serve's first
			// stages, the decision, the append, the worker's, serve's
			// last two, the end; no settle, no output.
			at := func(k int) time.Time { return ms(b, (k+1)*d) }
			ct := &commandTimes{begin: b, decided: at(pre), appended: at(pre + 1), end: at(len(commandStages) - 1)}
			for k := range n {
				if worker.Stage(k) != worker.StageOutput {
					ct.marks[k] = at(worker0 + k)
				}
			}
			if served {
				for k := range int(execsock.NumStages) {
					switch {
					case execsock.Stage(k) == execsock.StageSettled:
					case k < pre:
						ct.served[k] = at(k)
					default:
						ct.served[k] = at(worker0 + n + k - pre)
					}
				}
			}
			times[string(rune('a'+i))] = ct
		}
		got := breakdown(times)
		want := len(commandStages) - 2 // all but the settle and the first output
		if !served {
			want -= pre - 1 + 2 // serve's stages
		}
		if len(got) != want {
			t.Fatalf("served %v: breakdown has %d stages, want %d: %+v", served, len(got), want, got)
		}
		for _, s := range got {
			if s.Stage == stage(worker.StageOutput) || s.Stage == commandStages[int(execsock.StageSettled)] {
				t.Errorf("served %v: stage %q reached by no command is shown", served, s.Stage)
			}
			want := 2.0 // every stage is d ms after the one before, d's median 2
			switch s.Stage {
			case commandStages[int(execsock.StageResolved)]:
				want = 4 // from the arguments' parse, settle skipped: 2d
			case commandStages[pre]:
				if !served {
					want = float64(pre+1) * 2 // from exec's start
				}
			case stage(worker.StageExitSeen):
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
	got := breakdown(map[string]*commandTimes{"r": ct})
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
