package claude

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
	"github.com/logbook-dev/logbook/events"
)

// TestReadLines_NotRegular: a FIFO with no writer and a symlink to
// /dev/zero are refused at once with ErrNotRegular, by every reader of a
// transcript, without blocking on the open or reading without end.
func TestReadLines_NotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo, zero := filepath.Join(dir, "f.jsonl"), filepath.Join(dir, "z.jsonl")
	specialtest.Make(t, fifo, zero)
	for _, c := range []struct{ path, what string }{{fifo, "a FIFO"}, {zero, "a character device"}, {dir, "a directory"}} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, errs := ingesttest.Collect(ingest.ReadLines(c.path, 0))
			if len(errs) != 1 || !errors.Is(errs[0], ErrNotRegular) || !strings.Contains(errs[0].Error(), c.what) || !strings.Contains(errs[0].Error(), c.path) {
				t.Errorf("ingest.ReadLines(%s): errors %v, want one wrapping ErrNotRegular naming the path and %q", c.path, errs, c.what)
			}
			if ok, why := LooksLikeTranscript(c.path); ok || !strings.Contains(why, "not a regular file") {
				t.Errorf("LooksLikeTranscript(%s) = %v, %q; want false, not a regular file", c.path, ok, why)
			}
			if _, _, _, err := ingest.CheckFingerprint(c.path, events.Fingerprint{Line: 1, Offset: 0, End: 2}); !errors.Is(err, ErrNotRegular) {
				t.Errorf("ingest.CheckFingerprint(%s): %v, want ErrNotRegular", c.path, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("reading %s (%s) did not return in 10s", c.path, c.what)
		}
	}
}

// TestReadLines_BoundedPass: one pass over a file reads no further than
// its size when the pass opened it; what is written meanwhile is read by
// the next pass, the line cut at that size first as torn.
func TestReadLines_BoundedPass(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	ingesttest.WriteFile(t, path, "{\"a\":1}\n{\"a\":2}\n")
	var got []ingest.Line
	for l, err := range ingest.ReadLines(path, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
		if l.N == 1 {
			ingesttest.AppendFile(t, path, []byte("{\"a\":3}\n{\"a\":"))
		}
	}
	if len(got) != 2 || got[1].N != 2 || got[1].Torn {
		t.Fatalf("first pass: %+v, want lines 1 and 2 only", got)
	}
	got = got[:0]
	for l, err := range ingest.ReadFrom(path, ingest.Cursor{Line: 2, Offset: 16}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 2 || got[0].N != 3 || !got[1].Torn {
		t.Fatalf("second pass: %+v, want line 3 and a torn line 4", got)
	}
}

// TestWatch_SpecialFiles: with real inotify, a FIFO and a symlink to
// /dev/zero named like transcripts are each reported once and never
// opened; a transcript written after them is still imported, as is one
// written after the link is removed; stopping the watcher is prompt.
func TestWatch_SpecialFiles(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000001"
	fixture := readFixture(t, sid)
	lines := bytes.SplitAfter(fixture, []byte("\n"))
	log, in, root := watchRig(t)
	// Events only: a rescan an hour away proves inotify drives it.
	rep := startWatch(t, in, time.Hour, root)

	x := filepath.Join(root, "x")
	if err := os.Mkdir(x, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(x, "f1f00001-0000-4000-8000-000000000001.jsonl")
	zero := filepath.Join(x, "f1f00002-0000-4000-8000-000000000002.jsonl")
	specialtest.Make(t, fifo, zero)
	ingesttest.Eventually(t, "the FIFO reported", func() bool { return rep.has(fifo + ": not a regular file (a FIFO)") })
	ingesttest.Eventually(t, "the /dev/zero link reported", func() bool { return rep.has(zero + ": not a regular file (a character device)") })

	dir := filepath.Join(root, "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sid+".jsonl")
	ingesttest.AppendFile(t, path, bytes.Join(lines[:5], nil))
	ingesttest.Eventually(t, "the transcript beside them", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 5 })

	// Touched again (a writer on the FIFO side, a new event): no second report.
	ingesttest.AppendFile(t, path, lines[5])
	if err := os.Chmod(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ingesttest.Eventually(t, "line 6", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 6 })
	if err := os.Remove(zero); err != nil {
		t.Fatal(err)
	}
	ingesttest.AppendFile(t, path, lines[6])
	ingesttest.Eventually(t, "line 7 after the link is gone", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 7 })
	rep.mu.Lock()
	n := 0
	for _, m := range rep.msgs {
		if strings.Contains(m, "not a regular file") {
			n++
		}
	}
	rep.mu.Unlock()
	if n != 2 {
		t.Errorf("%d reports of a file that is not regular, want 2 (one each): %q", n, rep.msgs)
	}
}

// sparse makes a file at path holding head, then zeros (a hole) up to
// size bytes: a terabyte costs no disk.
func sparse(t *testing.T, path string, head []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
}

// TestFirstLine_Sparse: the first line of a terabyte file of zeros is
// refused as too long after reading one line's limit, not the terabyte.
func TestFirstLine_Sparse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	sparse(t, path, nil, 1<<40)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := ingest.FirstLine(path); !errors.Is(err, ErrLineTooLong) {
			t.Errorf("FirstLine: %v, want ErrLineTooLong", err)
		}
		if ok, why := LooksLikeTranscript(path); ok || !strings.Contains(why, "longer") && !strings.Contains(why, "too long") {
			t.Errorf("LooksLikeTranscript = %v, %q; want false, too long", ok, why)
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("ingest.FirstLine read on past one line's limit")
	}
	// Small files: a line, a torn line, nothing.
	for content, want := range map[string]ingest.Line{"{\"type\":\"x\"}\n{}": {N: 1, End: 13, Bytes: []byte(`{"type":"x"}`), Size: 12}, "{\"ty": {N: 1, Torn: true, Size: 4}, "": {N: 1, Torn: true}} {
		ingesttest.WriteFile(t, path, content)
		got, err := ingest.FirstLine(path)
		if err != nil || got.N != want.N || got.Torn != want.Torn || got.Size != want.Size || string(got.Bytes) != string(want.Bytes) {
			t.Errorf("ingest.FirstLine(%q) = %+v, %v; want %+v", content, got, err, want)
		}
	}
}

// TestImport_CancelledMidFile: an import of a transcript whose first line
// is fine and which then holds a terabyte of zeros stops soon after its
// context is cancelled, with the context's error.
func TestImport_CancelledMidFile(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000aa"
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	line := `{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"sessionId":"` + sid + `","timestamp":"2026-05-01T10:00:00.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	sparse(t, path, []byte(line), 1<<40)
	in := newTestIngester(t, ingesttest.OpenLog(t))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := in.ImportTranscript(ctx, Transcript{Path: path, SessionID: sid}, nil)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("import: %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the import went on reading 20s after its context was cancelled")
	}
}
