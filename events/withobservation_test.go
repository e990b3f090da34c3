package events_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestWithObservation: every observation payload, as a value and as a
// pointer, comes back of its own type holding the observation given,
// and the payload given is left as it was; another payload comes back
// as it is, with false.
func TestWithObservation(t *testing.T) {
	ps := []events.Payload{
		events.ClaudeLineObserved{}, events.ClaudeHookObserved{}, events.CodexLineObserved{}, events.CodexNotifyObserved{},
		events.AgentLineObserved{}, events.TickObserved{}, events.HarnessObserved{}, events.OTelObserved{},
	}
	obs := 0
	for _, name := range events.NewRegistry().Types() {
		if strings.HasPrefix(name, "obs.") {
			obs++
		}
	}
	if obs != len(ps) {
		t.Fatalf("%d observation types registered, %d tested", obs, len(ps))
	}
	for _, p := range ps {
		ptr := reflect.New(reflect.TypeOf(p))
		ptr.Elem().Set(reflect.ValueOf(p))
		for _, in := range []events.Payload{p, ptr.Interface().(events.Payload)} {
			o := events.Observation{Key: "k", Signals: []events.Sig{{Kind: events.SigUsage, Request: "req_1", Counted: events.CountedNew}}}
			out, ok := events.WithObservation(in, o)
			got, isObs := events.Observed(out)
			if !ok || !isObs || reflect.TypeOf(out) != reflect.TypeOf(in) || got.Key != "k" || got.Signals[0].Counted != events.CountedNew {
				t.Errorf("%T: got %T %+v, %v", in, out, got, ok)
			}
			if before, _ := events.Observed(in); before.Key != "" {
				t.Errorf("%T: the payload given was changed", in)
			}
		}
	}
	if out, ok := events.WithObservation(events.SessionEnded{Reason: "x"}, events.Observation{}); ok || out.(events.SessionEnded).Reason != "x" {
		t.Errorf("a decision: %v %+v", ok, out)
	}
}
