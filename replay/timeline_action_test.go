package replay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/projectionstest"
	"github.com/logbook-dev/logbook/replay"
)

// TestTimeline_ActionAndTick: a tool call's item carries the call's
// input (action), and an abandonment a reconciler tick decided carries
// the facts the tick stored (obs.tick), as the board's audit shows them.
func TestTimeline_ActionAndTick(t *testing.T) {
	t.Parallel()
	h := projectionstest.NewHistory(projectionstest.Epoch())
	meta := events.Meta{SessionID: "agent-s1", Cwd: "/w/app"}
	line := 0
	observe := func(kind string, sigs ...events.Sig) {
		t.Helper()
		line++
		o := events.Observation{Parser: "claude-test/1", Kind: kind, Meta: meta, Signals: sigs, Line: line, Key: fmt.Sprintf("line-%d", line), Path: "/t/s1.jsonl"}
		if recs, err := h.Observe("s1", events.ClaudeLineObserved{Observation: o}, "turn-1"); err != nil || recs == nil {
			t.Fatalf("observe %s: %v", kind, err)
		}
		h.Tick(time.Second)
	}
	observe("user", events.Sig{Kind: events.SigPrompt, ID: "p1"})
	observe("assistant", events.Sig{Kind: events.SigToolUse, ID: "toolu_1", Name: "Bash", Text: "make   test\n&& rm -rf build"})
	last := h.Now().Add(-time.Second)
	h.Tick(time.Hour)
	tick := &events.Tick{Now: h.Now(), LastObserved: last, AbandonAfter: (30 * time.Minute).Milliseconds(), QuietMS: 60000,
		Check: &events.ProcessCheck{Process: events.Process{PID: 4242, Comm: "claude", Host: "build-3"}, Result: events.ProcessUnknown, Detail: "another host"}}
	o := events.Observation{Parser: "logbook-reconciler/1", Kind: "tick", Key: "tick:1", Tick: tick}
	if recs, err := h.Observe("s1", events.TickObserved{Observation: o}, ""); err != nil || recs == nil {
		t.Fatalf("tick: %v", err)
	}
	items := replay.TimelineOf(h.Records)
	var opened, abandoned *replay.Item
	for i, it := range items {
		switch {
		case it.Type == "session.entry_opened" && it.Entry == "toolu_1":
			opened = &items[i]
		case it.Type == "session.entry_abandoned" && it.Entry == "toolu_1":
			abandoned = &items[i]
		}
	}
	if opened == nil || abandoned == nil {
		t.Fatalf("no opened or abandoned item for toolu_1 in %+v", items)
	}
	if opened.Action != "make test && rm -rf build" {
		t.Errorf("opened: action %q, want the call's input on one line", opened.Action)
	}
	if abandoned.Obs == nil || abandoned.Obs.Type != "obs.reconciler.tick" {
		t.Fatalf("abandoned: obs %+v, want the tick", abandoned.Obs)
	}
	if diff := cmp.Diff(tick, abandoned.Obs.Tick); diff != "" {
		t.Errorf("abandoned: the tick's facts differ (-stored +item):\n%s", diff)
	}
	if opened.Obs.Tick != nil {
		t.Errorf("opened: a transcript line's obs has tick %+v", opened.Obs.Tick)
	}
}
