package natslog

import (
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestLog_ReadStopsEarly breaks out of many reads partway: the parallel
// decoder must shut down cleanly every time, whatever chunk it was in.
func TestLog_ReadStopsEarly(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	for i := range 8 {
		mustAppend(t, l, decision(reg, session(fmt.Sprintf("s%d", i)), 0, 1, 500))
	}
	for i := range 60 {
		stop := 1 + i*97%3900
		n := 0
		for _, err := range l.Read(t.Context(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == stop {
				break
			}
		}
		if n != stop {
			t.Fatalf("read %d records, wanted to stop at %d", n, stop)
		}
	}
}

func TestLog_LastEventSeq(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	if got, err := l.LastEventSeq(t.Context()); err != nil || got != 0 {
		t.Fatalf("empty log: %d, %v", got, err)
	}
	ap := mustAppend(t, l, decision(events.NewRegistry(), session("s1"), 0, 1, 3))
	if _, err := l.PublishOutput(t.Context(), "c1", "c1:stdout:0", []byte("out")); err != nil {
		t.Fatal(err)
	}
	got, err := l.LastEventSeq(t.Context())
	if err != nil || got != ap.Last {
		t.Errorf("LastEventSeq = %d, %v; want %d (the output after it does not count)", got, err, ap.Last)
	}
}
