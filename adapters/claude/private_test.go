package claude

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// privateSetup returns a data dir holding creds.json (a transcript line,
// so a read of it would import something) and an Ingester that keeps out
// of it.
func privateSetup(t *testing.T) (data, creds string, in *Ingester, l events.Log) {
	t.Helper()
	data, creds = ingesttest.PrivateData(t)
	l = ingesttest.OpenLog(t)
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Private: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	return data, creds, in, l
}

// TestImportFile_HardLinkIntoDataDir: a hard link to a file of the data
// dir inside a transcript tree passes the path check but is refused once
// opened, naming the link and the file it links to; nothing is appended,
// by ImportFile, ImportTranscript or the watcher.
func TestImportFile_HardLinkIntoDataDir(t *testing.T) {
	t.Parallel()
	data, creds, in, l := privateSetup(t)
	const sid = "c0000001-0000-4000-8000-000000000001"
	root := t.TempDir()
	link := filepath.Join(root, "x", sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(creds, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := ingest.CheckPrivate(link, []string{data}); err != nil {
		t.Fatalf("the path check alone refuses the link (%v): the test proves nothing", err)
	}
	agg, _ := SessionAggregate(sid, "")
	_, err := in.ImportFile(t.Context(), link, agg, nil)
	if !errors.Is(err, ingest.ErrPrivate) {
		t.Fatalf("ImportFile of a hard link to %s: %v, want ingest.ErrPrivate", creds, err)
	}
	for _, want := range []string{link + ": ", "hard link to " + creds, "a file of the data dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	ts, err := Discover(root)
	if err != nil || len(ts) != 1 {
		t.Fatalf("discover: %+v, %v", ts, err)
	}
	if _, err := in.ImportTranscript(t.Context(), ts[0], nil); !errors.Is(err, ingest.ErrPrivate) {
		t.Fatalf("ImportTranscript: %v, want ingest.ErrPrivate", err)
	}
	ingesttest.NoneLogged(t, l, sid)
	ingesttest.NoneLogged(t, l, ingesttest.PrivateSession)

	// The watcher reports it and imports nothing of it.
	rep := startWatch(t, in, time.Hour, root)
	link2 := filepath.Join(root, "x", "c0000002-0000-4000-8000-000000000002.jsonl")
	if err := os.Link(creds, link2); err != nil {
		t.Fatal(err)
	}
	ingesttest.Eventually(t, "the watcher's report of the link", func() bool { return rep.has(link2+": ") && rep.has("hard link to "+creds) })
	ingesttest.NoneLogged(t, l, "c0000002-0000-4000-8000-000000000002")
}

// TestImportFile_HardLinkElsewhere: a transcript with a second name
// outside the data dir (Nlink 2) imports as any other.
func TestImportFile_HardLinkElsewhere(t *testing.T) {
	t.Parallel()
	_, _, in, l := privateSetup(t)
	const sid = "c0000003-0000-4000-8000-000000000003"
	dir := t.TempDir()
	path := filepath.Join(dir, sid+".jsonl")
	ingesttest.WriteFile(t, path, ingesttest.PrivateLine(sid, "u1")+ingesttest.PrivateLine(sid, "u2"))
	if err := os.Link(path, filepath.Join(dir, "copy.jsonl")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	agg, _ := SessionAggregate(sid, "")
	r, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || r.Appended != 2 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	if st := ingesttest.StateOf(t, l, sid); st.Lines != 2 {
		t.Fatalf("session holds %d lines, want 2", st.Lines)
	}
}

// TestImportFile_SwappedWhileImporting: a transcript path swapped back
// and forth between the transcript and a symlink to a file of the data
// dir while it is imported again and again: every import either goes
// through or is refused with ErrPrivate, and no line of the data dir's
// file ever reaches the log.
func TestImportFile_SwappedWhileImporting(t *testing.T) {
	t.Parallel()
	_, creds, in, l := privateSetup(t)
	const sid = "c0000005-0000-4000-8000-000000000005"
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.jsonl")
	ingesttest.WriteFile(t, orig, ingesttest.PrivateLine(sid, "u1"))
	path := filepath.Join(dir, sid+".jsonl")
	if err := os.Link(orig, path); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			ingesttest.SwapTo(t, path, creds)
			tmp := path + ".tmp"
			if err := os.Link(orig, tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	agg, _ := SessionAggregate(sid, "")
	refused, passed := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for refused < 20 || passed < 1 {
		if time.Now().After(deadline) {
			t.Errorf("after 20s, %d imports refused and %d through; want 20 and 1", refused, passed)
			break
		}
		_, err := in.ImportFile(t.Context(), path, agg, nil)
		if errors.Is(err, ingest.ErrPrivate) {
			refused++
		} else if err != nil {
			t.Errorf("import: %v, want nil or ingest.ErrPrivate", err)
		} else {
			passed++
		}
	}
	cancel()
	wg.Wait()
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok && o.UUID != "u1" {
			t.Fatalf("the log holds line %d uuid %q of %s", o.Line, o.UUID, o.Path)
		}
	}
	ingesttest.NoneLogged(t, l, ingesttest.PrivateSession)
}
