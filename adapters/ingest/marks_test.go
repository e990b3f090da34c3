package ingest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestImportFileMarks: ImportFile run with WithMarks marks a file's
// stages, in order, with the path it was given, once each; run without
// marks (or again, with nothing new) it imports as before.
func TestImportFileMarks(t *testing.T) {
	l := ingesttest.OpenLog(t)
	in, err := New(Config{Log: l, Host: "test", Command: "logbook import toy", Actor: "toy", Parsers: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := `{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2025-01-01T00:00:00Z"}` + "\n" +
		`{"type":"assistant","uuid":"u2","sessionId":"s","timestamp":"2025-01-01T00:00:01Z"}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []string
		at  []time.Time
	)
	ctx := WithMarks(context.Background(), func(stage, p string, when time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if p != path {
			t.Errorf("stage %s marked for %q, want %q", stage, p, path)
		}
		got, at = append(got, stage), append(at, when)
	})
	agg := events.Aggregate{Kind: events.KindSession, ID: "s"}
	res, err := in.ImportFile(ctx, path, agg, toyLines(), nil)
	if err != nil || res.Appended != 2 {
		t.Fatalf("ImportFile = %+v, %v; want 2 lines appended", res, err)
	}
	want := []string{MarkFileStarted, MarkFileSession, MarkFileParsed, MarkFileDone}
	if !slices.Equal(got, want) {
		t.Errorf("marks = %v, want %v", got, want)
	}
	if !slices.IsSortedFunc(at, time.Time.Compare) {
		t.Errorf("marks out of order in time: %v", at)
	}
	// Without marks, and with nothing new to import: nothing is marked.
	got = nil
	if res, err := in.ImportFile(context.Background(), path, agg, toyLines(), nil); err != nil || res.Appended != 0 || res.Skipped != 2 {
		t.Fatalf("ImportFile again = %+v, %v; want 2 lines skipped", res, err)
	}
	if len(got) != 0 {
		t.Errorf("marks without WithMarks: %v", got)
	}
}
