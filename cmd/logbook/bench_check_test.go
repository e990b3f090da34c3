package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
)

// TestBenchCheck: --check passes a report whose floors all hold and
// fails (exit 1) one that misses any, a ratio or a latency, naming each.
func TestBenchCheck(t *testing.T) {
	yes, no := true, false
	p50, p99 := 22.5, 31.0
	rep := bench.Report{Rows: []bench.Row{
		{Workload: "append 64 writers", Baselines: []bench.Compare{{Name: "atomic batch ×500", Ratio: 0.5, Floor: 0.4, Meets: &yes}}},
		{Workload: "replay fold", Baselines: []bench.Compare{{Name: "ordered consumer read", Ratio: 0.31, Floor: 0.6, Meets: &no}, {Name: "other"}}},
		{Workload: "logbook-hook claude", Logbook: bench.Figures{P50ms: &p50, P99ms: &p99}, Check: &bench.Check{Text: "p50 ≤15ms, p99 ≤40ms", OK: false}},
		{Workload: "sessions", Check: &bench.Check{Text: "p50 ≤300ms", OK: true}},
	}}
	err := checkFloors(rep)
	ee, ok := errors.AsType[*exitError](err)
	if !ok || ee.code != 1 {
		t.Fatalf("checkFloors = %v, want exit 1", err)
	}
	for _, want := range []string{"2 floors missed", "replay fold: ratio 0.31 to ordered consumer read, floor 0.60", "logbook-hook claude: p50 ≤15ms, p99 ≤40ms (p50 22.5ms, p99 31.0ms)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "append") || strings.Contains(err.Error(), "sessions") {
		t.Errorf("error %q names a floor that held", err)
	}
	rep.Rows = rep.Rows[:1]
	if err := checkFloors(rep); err != nil {
		t.Errorf("all floors met: %v", err)
	}
}
