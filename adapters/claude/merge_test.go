package claude

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// racingLog is a real Log on which, just before the first append to
// agg, another writer (race) appends to agg first: the append then
// conflicts. Appends to other aggregates wait until that race is run,
// so that they reach the committer together with agg's.
type racingLog struct {
	*natslog.Log
	agg   events.Aggregate
	once  sync.Once
	race  func()
	raced chan struct{}
}

func (l *racingLog) Append(ctx context.Context, b events.Batch) (events.Appended, error) {
	if b.Agg == l.agg {
		l.once.Do(func() {
			l.race()
			close(l.raced)
		})
	} else {
		<-l.raced
	}
	return l.Log.Append(ctx, b)
}

// TestImportFile_Merged imports eight transcripts at once through one
// Log that gathers their runs into merged atomic batches (Parsers 4: the
// Log is held while they parse): six good ones; one whose session
// another process imports first, between this import's reading of its
// state and its append (its run conflicts, is decided again, and adds
// nothing); and one whose line 30 does not parse. Every good file lands
// whole, once and in order; the racing one holds each line once; the bad
// one names its path and line 30 and holds lines 1–29 and nothing after.
// Importing everything again, as a new process, appends nothing.
func TestImportFile_Merged(t *testing.T) {
	t.Parallel()
	log, srv := natslogtest.Start(t, natslog.FsyncAlways)
	other := natslogtest.Open(t, srv.Conn())
	dir := t.TempDir()
	type file struct {
		path  string
		agg   events.Aggregate
		lines int // lines the log must hold
	}
	var files []file
	for i := range 8 {
		f := file{path: filepath.Join(dir, fmt.Sprintf("s-%d.jsonl", i)), lines: 60}
		lines := fxChain(fmt.Sprintf("f%d-", i), 60)
		if i == 7 {
			lines[29] = "{\"type\":\"user\",\"uuid\":\n" // line 30: not JSON
			f.lines = 29
		}
		ingesttest.AppendFile(t, f.path, lines...)
		f.agg, _ = SessionAggregate(fmt.Sprintf("s-%d", i), "")
		files = append(files, f)
	}
	racing := files[6]
	rl := &racingLog{Log: log, agg: racing.agg, raced: make(chan struct{})}
	rl.race = func() {
		if _, err := newTestIngester(t, other).ImportFile(t.Context(), racing.path, racing.agg, nil); err != nil {
			t.Errorf("the other process's import of %s: %v", racing.path, err)
		}
	}
	in, err := NewIngester(IngestConfig{Log: rl, Host: "test", Parsers: 4})
	if err != nil {
		t.Fatal(err)
	}
	before := log.Stats()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	results := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			r, err := in.ImportFile(ctx, f.path, f.agg, nil)
			if err == nil && i < 6 && r.Appended != f.lines {
				err = fmt.Errorf("%s: appended %d lines, want %d", f.path, r.Appended, f.lines)
			}
			results[i] = err
		})
	}
	wg.Wait()
	st := log.Stats()
	t.Logf("committer: %d decisions in %d sends, %d merged, %d split", st.Decisions-before.Decisions, st.Batches-before.Batches, st.Merged-before.Merged, st.Split-before.Split)
	for i, err := range results[:7] {
		if err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
	if err := results[7]; err == nil || !strings.Contains(err.Error(), "s-7.jsonl:30:") {
		t.Errorf("the bad file: %v, want an error naming s-7.jsonl:30", err)
	}
	holds := func() {
		t.Helper()
		for _, f := range files {
			recs, _, err := log.Load(t.Context(), f.agg)
			if err != nil {
				t.Fatal(err)
			}
			next := 1
			for _, r := range recs {
				if o, ok := events.Observed(r.Data); ok {
					if o.Line != next {
						t.Fatalf("%s: line %d where line %d belongs", f.path, o.Line, next)
					}
					next++
				}
			}
			if next != f.lines+1 {
				t.Errorf("%s: log holds %d lines, want %d", f.path, next-1, f.lines)
			}
		}
	}
	holds()
	if t.Failed() {
		return
	}

	last, err := log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewIngester(IngestConfig{Log: log, Host: "test", Parsers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		wg.Go(func() {
			r, err := again.ImportFile(ctx, f.path, f.agg, nil)
			switch {
			case i < 7 && (err != nil || r.Appended != 0):
				t.Errorf("import of %s again: %+v, %v; want nothing appended", f.path, r, err)
			case i == 7 && (err == nil || r.Appended != 0):
				t.Errorf("import of the bad file again: %+v, %v; want its error, nothing appended", r, err)
			}
		})
	}
	wg.Wait()
	if now, err := log.LastSeq(t.Context()); err != nil || now != last {
		t.Errorf("LastSeq after importing again = %d, %v; want %d", now, err, last)
	}
	holds()
}
