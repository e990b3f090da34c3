package natslog

import (
	"errors"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestLog_AggregateExists: an aggregate with events exists, one without
// (another of its kind, or an id that begins another's) does not, and an
// id that is no single subject token (a wildcard) is refused, not looked
// up as a pattern.
func TestLog_AggregateExists(t *testing.T) {
	l, _ := newLog(t)
	mustAppend(t, l, decision(events.NewRegistry(), session("s12"), 0, 1, 2))
	for id, want := range map[string]bool{"s12": true, "s1": false, "s123": false, "s2": false} {
		got, err := l.AggregateExists(t.Context(), session(id))
		if err != nil || got != want {
			t.Errorf("AggregateExists(session %s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if got, err := l.AggregateExists(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: "s12"}); err != nil || got {
		t.Errorf("AggregateExists(command s12) = %v, %v; want false: only a session s12 has events", got, err)
	}
	for _, id := range []string{"s*", ">", "s1.>"} {
		if got, err := l.AggregateExists(t.Context(), session(id)); !errors.Is(err, events.ErrMalformed) || got {
			t.Errorf("AggregateExists(session %q) = %v, %v; want refused as malformed", id, got, err)
		}
	}
}
