package reconcile

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestTickHead_Due: the reconciler's filter reads a session's row into
// tickHead and passes over exactly the sessions a tick cannot change:
// an agent process that lives (or another process answered for it), or
// no agent process and not stale.
func TestTickHead_Due(t *testing.T) {
	p := events.Process{PID: 4242, Start: 99, Boot: "b1", Host: "h"}
	other := p
	other.Start = 100
	answer := func(q events.Process, result string) func(events.Process) events.ProcessCheck {
		return func(events.Process) events.ProcessCheck { return events.ProcessCheck{Process: q, Result: result} }
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		agent *events.Process
		stale bool
		check func(events.Process) events.ProcessCheck
		want  bool
	}{
		{"agent alive", &p, true, answer(p, events.ProcessAlive), false},
		{"agent unknown", &p, true, answer(p, events.ProcessUnknown), false},
		{"another process gone", &p, false, answer(other, events.ProcessGone), false},
		{"agent gone", &p, false, answer(p, events.ProcessGone), true},
		{"no agent, not stale", nil, false, answer(p, events.ProcessGone), false},
		{"no agent, stale", nil, true, answer(p, events.ProcessAlive), true},
	} {
		row, err := json.Marshal(session.State{ID: "s", Phase: events.PhaseReady, ObservedAt: at, AgentProcess: c.agent})
		if err != nil {
			t.Fatal(err)
		}
		var h tickHead
		if err := json.Unmarshal(row, &h); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !h.ObservedAt.Equal(at) {
			t.Errorf("%s: ObservedAt %v, want %v", c.name, h.ObservedAt, at)
		}
		if got := h.due(c.stale, c.check); got != c.want {
			t.Errorf("%s: due = %v, want %v", c.name, got, c.want)
		}
	}
}
