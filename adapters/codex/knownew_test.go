package codex

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

func (l *readCounter) readsOf(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads[id]
}

// TestImportFile_KnownNew: a rollout whose session the import found new
// before it began (KnowNew, by its first line's id, which need not be
// the one its file name ends with) is imported without reading its
// session; one found new and then imported by another process before
// this import reached it is imported once, not twice (its first append
// conflicts and is decided again on the log's state); an import again
// appends nothing.
func TestImportFile_KnownNew(t *testing.T) {
	l := ingesttest.OpenLog(t)
	rc := &readCounter{Log: l, reads: map[string]int{}}
	const named = "019e55c2-1c15-7813-bbbe-9f699a6c0001" // the file's name only
	rollout := func(id, name string) string {
		path := rolloutPath(t, name)
		lines := []string{meta(id, "")}
		for i := range 10 {
			turn := "t" + string(rune('a'+i))
			lines = append(lines, turnStart(2*i+1, turn), turnDone(2*i+2, turn))
		}
		ingesttest.AppendFile(t, path, lines...)
		return path
	}
	paths := []string{rollout(tid, named), rollout(tid2, tid2)}
	const lines = 21
	in := newIngester(t, rc, false)
	in.KnowNew(t.Context(), paths)
	// Another process imports the second rollout meanwhile.
	if _, err := newIngester(t, l, false).ImportFile(t.Context(), paths[1], nil); err != nil {
		t.Fatal(err)
	}
	for i, path := range paths {
		r, err := in.ImportFile(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := lines
		if i == 1 {
			want = 0
		}
		if r.Appended != want || r.Lines != lines {
			t.Errorf("%s: appended %d of %d lines, want %d", filepath.Base(path), r.Appended, r.Lines, want)
		}
	}
	if n := rc.readsOf(tid); n != 0 {
		t.Errorf("session found new read %d times, want 0", n)
	}
	if n := rc.readsOf(named); n != 0 {
		t.Errorf("the session the file's name says, which is not its session, read %d times", n)
	}
	for _, id := range []string{tid, tid2} {
		recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok {
				seen[o.Line]++
			}
		}
		for n := 1; n <= lines; n++ {
			if seen[n] != 1 {
				t.Errorf("%s: line %d appended %d times", id, n, seen[n])
			}
		}
	}
	again := newIngester(t, rc, false)
	again.KnowNew(t.Context(), paths)
	for _, path := range paths {
		r, err := again.ImportFile(t.Context(), path, nil)
		if err != nil || r.Appended != 0 {
			t.Errorf("%s imported again: appended %d, %v; want 0", filepath.Base(path), r.Appended, err)
		}
	}
	if n := rc.readsOf(tid); n == 0 {
		t.Errorf("session imported before, found new again: never read")
	}
}

// TestImportFile_KnownNewCorpus imports the recorded rollouts (skipped
// when the shared corpus is absent) with their sessions found new first:
// none of them is read from the log, and each appends every line, as an
// import that reads them does.
func TestImportFile_KnownNewCorpus(t *testing.T) {
	dir := ingesttest.Corpus(t, "codex")
	all, _ := filepath.Glob(filepath.Join(dir, "*", "transcript.jsonl"))
	rollouts, err := Discover(all...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rollouts) == 0 {
		t.Skip("no rollouts in the corpus")
	}
	rc := &readCounter{Log: ingesttest.OpenLog(t), reads: map[string]int{}}
	in, err := NewIngester(IngestConfig{Log: rc, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	in.KnowNew(t.Context(), rollouts)
	sessions := map[string]bool{}
	for _, f := range rollouts {
		r, err := in.ImportFile(t.Context(), f, nil)
		if err != nil {
			t.Fatalf("import %s: %v", f, err)
		}
		if r.Appended != r.Lines {
			t.Errorf("%s: appended %d of %d lines", f, r.Appended, r.Lines)
		}
		if sessions[r.Session] {
			continue // a second rollout of a session reads what the first appended
		}
		sessions[r.Session] = true
		if n := rc.readsOf(r.Session); n != 0 {
			t.Errorf("%s: session %s, found new, read %d times", f, r.Session, n)
		}
	}
}
