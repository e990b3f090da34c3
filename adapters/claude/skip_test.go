package claude

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// loadCounting is the real log, counting the loads of aggregates.
type loadCounting struct {
	*natslog.Log
	loads atomic.Int64
}

func (c *loadCounting) Load(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	c.loads.Add(1)
	return c.Log.Load(ctx, agg)
}

func (c *loadCounting) LoadAfter(ctx context.Context, agg events.Aggregate, after uint64) ([]events.Record, uint64, error) {
	c.loads.Add(1)
	return c.Log.LoadAfter(ctx, agg, after)
}

// TestSkipIndex imports a transcript with an index: importing it again
// unchanged reads nothing of the log; a new line, a torn tail, a last
// line rewritten to the same size and time, another session or another
// stream are each imported (or refused) as without the index; the index
// survives Save and OpenSkipIndex.
func TestSkipIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := &loadCounting{Log: ingesttest.OpenLog(t)}
	dir := t.TempDir()
	ipath := filepath.Join(dir, "import-index.json")
	x, err := ingest.OpenSkipIndex(ipath, "one")
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Skip: x})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s-1.jsonl")
	agg, _ := SessionAggregate("s-1", "")
	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"), fxAssistant("a1", "u1", "ok"))
	importOnce := func(string) (ingest.FileResult, int64, error) {
		t.Helper()
		before := l.loads.Load()
		r, err := in.ImportFile(ctx, path, agg, nil)
		return r, l.loads.Load() - before, err
	}
	if r, _, err := importOnce("first"); err != nil || r.Appended != 2 {
		t.Fatalf("first import: %+v, %v", r, err)
	}
	if r, loads, err := importOnce("unchanged"); err != nil || r.Appended != 0 || r.Skipped != 2 || r.Lines != 2 || loads != 0 {
		t.Fatalf("unchanged: %+v, %v, %d loads; want skipped unread", r, err, loads)
	}
	// A new line is imported.
	ingesttest.AppendFile(t, path, fxUser("u2", "a1", "more"))
	if r, loads, err := importOnce("grown"); err != nil || r.Appended != 1 || loads == 0 {
		t.Fatalf("grown: %+v, %v, %d loads", r, err, loads)
	}
	// A torn tail is not remembered: the next import reads the file.
	ingesttest.AppendFile(t, path, `{"type":"assistant"`)
	if r, _, err := importOnce("torn"); err != nil || !r.Torn {
		t.Fatalf("torn: %+v, %v", r, err)
	}
	if _, loads, _ := importOnce("torn again"); loads == 0 {
		t.Fatal("a file with a torn tail was skipped")
	}
	// Complete it, import, then rewrite its last line to other bytes of
	// the same length with the same modification time: the tail's hash
	// differs, so the import reads the file and finds the divergence.
	b, _ := os.ReadFile(path)
	b = append(b[:len(b)-len(`{"type":"assistant"`)], []byte(fxAssistant("a2", "u2", "yes"))...)
	os.WriteFile(path, b, 0o644)
	if r, _, err := importOnce("completed"); err != nil || r.Appended != 1 {
		t.Fatalf("completed: %+v, %v", r, err)
	}
	st, _ := os.Stat(path)
	b, _ = os.ReadFile(path)
	b2 := append([]byte{}, b...)
	copy(b2[len(b2)-len(fxAssistant("a2", "u2", "yes")):], fxAssistant("a2", "u2", "no!"))
	os.WriteFile(path, b2, 0o644)
	os.Chtimes(path, st.ModTime(), st.ModTime())
	if _, _, err := importOnce("rewritten"); !errors.As(err, new(*ingest.DivergedError)) {
		t.Fatalf("rewritten last line: err = %v, want a ingest.DivergedError", err)
	}
	os.WriteFile(path, b, 0o644)
	os.Chtimes(path, st.ModTime(), st.ModTime())
	if r, _, err := importOnce("restored"); err != nil || r.Lines != 4 {
		t.Fatalf("restored: %+v, %v", r, err)
	}
	if _, loads, _ := importOnce("restored again"); loads != 0 {
		t.Fatalf("restored file read again (%d loads)", loads)
	}
	// Another session for the same file is not the one remembered.
	other, _ := SessionAggregate("s-other", "")
	before := l.loads.Load()
	if _, err := in.ImportFile(ctx, path, other, nil); err != nil || l.loads.Load() == before {
		t.Fatalf("another session: %v, %d loads", err, l.loads.Load()-before)
	}
	// Saved and opened again, it holds the file (now s-other's); for
	// another stream it is empty.
	if err := x.Save(); err != nil {
		t.Fatal(err)
	}
	if y, err := ingest.OpenSkipIndex(ipath, "one"); err != nil || y.Len() != 1 {
		t.Fatalf("reopened: %d files, %v; want 1", y.Len(), err)
	}
	if y, err := ingest.OpenSkipIndex(ipath, "two"); err != nil || y.Len() != 0 {
		t.Fatalf("another stream: %d files, %v; want none", y.Len(), err)
	}
	// An index of an older build (no version) may remember a file whose
	// lines every reader quarantined (appended out of the signing key's
	// role): it opens empty.
	saved, _ := os.ReadFile(ipath)
	var unversioned map[string]json.RawMessage
	if err := json.Unmarshal(saved, &unversioned); err != nil || unversioned["version"] == nil {
		t.Fatalf("saved index %s: %v; want a version", saved, err)
	}
	delete(unversioned, "version")
	saved, _ = json.Marshal(unversioned)
	os.WriteFile(ipath, saved, 0o600)
	if y, err := ingest.OpenSkipIndex(ipath, "one"); err != nil || y.Len() != 0 {
		t.Fatalf("an index without a version: %d files, %v; want none", y.Len(), err)
	}
	os.WriteFile(ipath, []byte("{"), 0o600)
	if y, err := ingest.OpenSkipIndex(ipath, "one"); err == nil || y == nil || y.Len() != 0 {
		t.Fatalf("malformed index: %v, %v; want an error and an empty index", y, err)
	}
}
