package main

import (
	"context"
	"testing"
)

// events tail --lines 0 --follow starts past every stored message: it
// prints only the events that come, never the last one stored.
func TestLastEventsStart_None(t *testing.T) {
	for _, last := range []uint64{0, 1, 41} {
		start, err := lastEventsStart(context.Background(), nil, last, 0)
		if err != nil || start != last+1 {
			t.Errorf("lastEventsStart(last %d, n 0) = %d, %v; want %d", last, start, err, last+1)
		}
	}
}
