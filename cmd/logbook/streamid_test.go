package main

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Each way a log can lose events a projection has seen is named, with
// both sequences; a log that holds everything the projection saw is not.
func TestStreamLoss(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	dd := dataDir("/d")
	for _, c := range []struct {
		name string
		id   natslog.Identity
		rec  streamRecord
		have bool
		cp   uint64
		want string // "" for no loss
	}{
		{"fresh", natslog.Identity{Created: t0}, streamRecord{}, false, 0, ""},
		{"same stream, caught up", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9}, streamRecord{Created: t0}, true, 9, ""},
		{"same stream, behind", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9}, streamRecord{Created: t0}, true, 4, ""},
		{"data dir from before stream.json", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9}, streamRecord{}, false, 9, ""},
		{"re-created", natslog.Identity{Created: t1, FirstSeq: 0, LastSeq: 0}, streamRecord{Created: t0}, true, 9, "deleted and created again (it now holds seq 0 to 0)"},
		{"re-created and refilled", natslog.Identity{Created: t1, FirstSeq: 1, LastSeq: 20}, streamRecord{Created: t0}, true, 9, "checkpoint seq 9"},
		{"head cut", natslog.Identity{Created: t0, FirstSeq: 5, LastSeq: 9}, streamRecord{Created: t0}, true, 9, "starts at seq 5: seq 1 to 4 are gone"},
		{"tail lost", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 6}, streamRecord{Created: t0}, true, 9, "projection at seq 9 is past the log's end (stream LOGBOOK last seq 6)"},
		{"empty stream, old projection", natslog.Identity{Created: t0}, streamRecord{}, false, 9, "past the log's end"},
	} {
		got := streamLoss(dd, c.id, c.rec, c.have, c.cp)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: streamLoss = %q, want %q", c.name, got, c.want)
		}
	}
}
