package claude

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// readCounter is a real Log that counts the reads of each aggregate's
// events (Load, LoadAfter).
type readCounter struct {
	*natslog.Log
	mu    sync.Mutex
	reads map[string]int
}

func (l *readCounter) Load(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	l.count(agg)
	return l.Log.Load(ctx, agg)
}

func (l *readCounter) LoadAfter(ctx context.Context, agg events.Aggregate, after uint64) ([]events.Record, uint64, error) {
	l.count(agg)
	return l.Log.LoadAfter(ctx, agg, after)
}

func (l *readCounter) count(agg events.Aggregate) {
	l.mu.Lock()
	l.reads[agg.ID]++
	l.mu.Unlock()
}

// TestImportTranscript_KnownNew: a transcript whose session the import
// found new before it began (knowNew) is imported without reading its
// session; one found new and then imported by another process before
// this import reached it is imported once, not twice (its first append
// conflicts and is decided again on the log's state); an import again
// appends nothing.
func TestImportTranscript_KnownNew(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	rc := &readCounter{Log: l, reads: map[string]int{}}
	dir := t.TempDir()
	const sid = "5e551011-0000-4000-8000-00000000a001"
	const raced = "5e551011-0000-4000-8000-00000000a002"
	tr := func(id string) Transcript {
		path := filepath.Join(dir, id+".jsonl")
		ingesttest.AppendFile(t, path, fxChain(id[len(id)-4:], 30)...)
		return Transcript{Path: path, SessionID: id}
	}
	ts := []Transcript{tr(sid), tr(raced)}
	in := newTestIngester(t, rc)
	in.knowNew(t.Context(), ts)
	// Another process imports the second transcript meanwhile.
	if _, err := newTestIngester(t, l).ImportTranscript(t.Context(), ts[1], nil); err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		rs, err := in.ImportTranscript(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := 30
		if tr.SessionID == raced {
			want = 0
		}
		if rs[0].Appended != want || rs[0].Lines != 30 {
			t.Errorf("%s: appended %d of %d lines, want %d", tr.SessionID, rs[0].Appended, rs[0].Lines, want)
		}
	}
	if n := rc.reads[sid]; n != 0 {
		t.Errorf("session found new read %d times, want 0", n)
	}
	for _, id := range []string{sid, raced} {
		agg, err := SessionAggregate(id, "")
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := l.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok {
				seen[o.Line]++
			}
		}
		for n := 1; n <= 30; n++ {
			if seen[n] != 1 {
				t.Errorf("%s: line %d appended %d times", id, n, seen[n])
			}
		}
	}
	again := newTestIngester(t, l)
	again.knowNew(t.Context(), ts)
	for _, tr := range ts {
		rs, err := again.ImportTranscript(t.Context(), tr, nil)
		if err != nil || rs[0].Appended != 0 {
			t.Errorf("%s imported again: appended %d, %v; want 0", tr.SessionID, rs[0].Appended, err)
		}
	}
}
