package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestImport_StateEvolvedInPlaceIsTheFold imports three transcripts of
// the bench's shape at once (Parsers 4), 700 lines each in two passes
// (the second from the state the first left cached), and holds the
// session state the importer keeps, which its decisions evolve in place,
// to the fold of the session's stored events, and the state the first
// pass returned to what it was when returned: a copy taken before keeps
// its value while the cached state grows past it.
func TestImport_StateEvolvedInPlaceIsTheFold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	log, _ := natslogtest.Start(t, natslog.FsyncInterval)
	in, err := NewIngester(IngestConfig{Log: log, Host: "test", Parsers: 4})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "-home-user-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	type file struct {
		path, sid string
		agg       events.Aggregate
	}
	files := make([]*file, 3)
	for i := range files {
		sid := fmt.Sprintf("5e551011-0000-4000-8000-%012d", i+1)
		agg, err := SessionAggregate(sid, "")
		if err != nil {
			t.Fatal(err)
		}
		files[i] = &file{path: filepath.Join(dir, sid+".jsonl"), sid: sid, agg: agg}
	}
	write := func(f *file, from, to int) {
		t.Helper()
		out, err := os.OpenFile(f.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(out)
		for n := from; n <= to; n++ {
			w.Write(benchLine(f.sid, n))
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	pass := func() []session.State {
		t.Helper()
		states := make([]session.State, len(files))
		var wg sync.WaitGroup
		for i, f := range files {
			wg.Go(func() {
				if _, err := in.ImportTranscript(ctx, Transcript{Path: f.path, SessionID: f.sid}, nil); err != nil {
					t.Error(err)
					return
				}
				st, err := in.Sessions().State(ctx, f.agg)
				if err != nil {
					t.Error(err)
				}
				states[i] = st
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return states
	}
	asJSON := func(st session.State) []byte {
		t.Helper()
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, f := range files {
		write(f, 1, 300)
	}
	first := pass()
	for _, f := range files {
		write(f, 301, 700)
	}
	kept := pass()
	for i, f := range files {
		recs, _, err := log.Load(ctx, f.agg)
		if err != nil {
			t.Fatal(err)
		}
		folded := session.Fold(session.Init(f.agg), recs)
		if folded.Lines != 700 {
			t.Fatalf("%s: the log holds %d lines, want 700", f.sid, folded.Lines)
		}
		if got, want := asJSON(kept[i]), asJSON(folded); !bytes.Equal(got, want) {
			t.Errorf("%s: the importer's state differs from the fold of the log:\n got %s\nwant %s", f.sid, got, want)
		}
		if folded, err := in.Sessions().State(ctx, f.agg); err != nil || !bytes.Equal(asJSON(folded), asJSON(kept[i])) {
			t.Errorf("%s: the cached state moved with nothing appended (%v)", f.sid, err)
		}
		var upTo []events.Record
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok && o.Line > 300 {
				break
			}
			upTo = append(upTo, r)
		}
		if got, want := asJSON(first[i]), asJSON(session.Fold(session.Init(f.agg), upTo)); !bytes.Equal(got, want) {
			t.Errorf("%s: the state the first pass returned changed:\n got %s\nwant %s", f.sid, got, want)
		}
	}
}
