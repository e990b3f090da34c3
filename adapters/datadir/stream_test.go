package datadir

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Each way a log can lose events a projection has seen is named, with
// both sequences; a log that holds everything the projection saw is not.
func TestStreamLoss(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	dd := Dir("/d")
	for _, c := range []struct {
		name string
		id   natslog.Identity
		end  uint64 // last message held; 0: id.LastSeq
		rec  StreamRecord
		have bool
		cp   uint64
		want string // "" for no loss
	}{
		{"fresh", natslog.Identity{Created: t0}, 0, StreamRecord{}, false, 0, ""},
		{"same stream, caught up", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9, Msgs: 9}, 0, StreamRecord{Created: t0}, true, 9, ""},
		{"same stream, behind", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9, Msgs: 9}, 0, StreamRecord{Created: t0}, true, 4, ""},
		{"data dir from before stream.json", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 9, Msgs: 9}, 0, StreamRecord{}, false, 9, ""},
		{"re-created", natslog.Identity{Created: t1, FirstSeq: 0, LastSeq: 0}, 0, StreamRecord{Created: t0}, true, 9, "deleted and created again (it now holds seq 0 to 0)"},
		{"re-created and refilled", natslog.Identity{Created: t1, FirstSeq: 1, LastSeq: 20, Msgs: 20}, 0, StreamRecord{Created: t0}, true, 9, "checkpoint seq 9"},
		{"head cut", natslog.Identity{Created: t0, FirstSeq: 5, LastSeq: 9, Msgs: 5}, 0, StreamRecord{Created: t0}, true, 9, "starts at seq 5: seq 1 to 4 are gone"},
		{"tail lost", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 6, Msgs: 6}, 0, StreamRecord{Created: t0}, true, 9, "projection at seq 9 is past the log's end (stream LOGBOOK last seq 6)"},
		{"empty stream, old projection", natslog.Identity{Created: t0}, 0, StreamRecord{}, false, 9, "past the log's end"},
		{"tail cut, last seq kept", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 7}, 7, StreamRecord{Created: t0}, true, 96, "ends at seq 7, before the projection's checkpoint seq 96 (in /d/views): seq 8 to 96 are gone"},
		{"tail cut, one message", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 95}, 95, StreamRecord{Created: t0}, true, 96, "seq 96 is gone"},
		{"tail cut behind the projection", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 7}, 7, StreamRecord{Created: t0}, true, 5, "ends at seq 7, though it had reached seq 96 (projection checkpoint seq 5): seq 8 to 96 are gone"},
		{"tail and middle cut", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 5}, 7, StreamRecord{Created: t0}, true, 96, "seq 8 to 96 are (and 2 more before seq 7) gone"},
		{"middle cut", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 90}, 0, StreamRecord{Created: t0}, true, 96, "holds 90 messages from seq 1 to 96: 6 of its sequences are gone"},
		{"cut before stream.json", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 96, Msgs: 7}, 7, StreamRecord{}, false, 0, "ends at seq 7, though it had reached seq 96"},
		{"cut, accepted", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 99, Msgs: 10}, 0, StreamRecord{Created: t0, Gone: 89}, true, 99, ""},
		{"cut again after one accepted", natslog.Identity{Created: t0, FirstSeq: 1, LastSeq: 99, Msgs: 9}, 8, StreamRecord{Created: t0, Gone: 89}, true, 99, "ends at seq 8, before the projection's checkpoint seq 99"},
	} {
		end := c.end
		if end == 0 {
			end = c.id.LastSeq
		}
		got := dd.StreamLoss(c.id, end, c.rec, c.have, c.cp)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: streamLoss = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestReadStreamRecord_NotARegularFile: a stream.json that is a FIFO, a
// link to a device or a directory is refused at once, naming the file,
// and never read (a FIFO would block every command that opens the data
// dir; /dev/zero would fill memory). So are the data dir's other small
// files read the same way (key pins, the import index).
func TestReadStreamRecord_NotARegularFile(t *testing.T) {
	t.Parallel()
	for _, tc := range specialtest.Kinds {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			d := Dir(t.TempDir())
			if err := tc.Make(d.Path("stream.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := d.ReadStreamRecord()
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), d.Path("stream.json")) || !strings.Contains(err.Error(), tc.Says) {
					t.Errorf("ReadStreamRecord of a %s: %v, want an error naming the file and %s", tc.Name, err, tc.Says)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadStreamRecord of a %s has not returned after 10 s", tc.Name)
			}
		})
	}
}
