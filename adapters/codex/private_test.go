package codex

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestImport_HardLinkIntoDataDir: a rollout that is a hard link to a
// file of the data dir (which holds a rollout's lines here, so a read of
// it would import them) is refused, naming the link and that file, and
// nothing of it is appended; a rollout with a second name elsewhere
// imports as any other.
func TestImport_HardLinkIntoDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(data, "creds.json")
	ingesttest.AppendFile(t, creds, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "hunter2"))
	l := ingesttest.OpenLog(t)
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Private: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	link := rolloutPath(t, tid)
	if err := os.Link(creds, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	_, err = in.ImportFile(t.Context(), link, nil)
	if !errors.Is(err, ingest.ErrPrivate) {
		t.Fatalf("ImportFile of a hard link to %s: %v, want ErrPrivate", creds, err)
	}
	for _, want := range []string{link + ": ", "hard link to " + creds} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: tid})
	if err != nil || len(recs) > 0 {
		t.Fatalf("session %s: %d events, %v; want none", tid, len(recs), err)
	}

	path := rolloutPath(t, tid2)
	ingesttest.AppendFile(t, path, meta(tid2, ""), turnStart(1, "t1"), userMsg(1, "hi"))
	if err := os.Link(path, filepath.Join(filepath.Dir(path), "copy.jsonl")); err != nil {
		t.Fatal(err)
	}
	r, err := in.ImportFile(t.Context(), path, nil)
	if err != nil || r.Session != tid2 || r.Appended != 3 {
		t.Fatalf("import of a rollout with two names: %+v, %v", r, err)
	}
}

// TestOpenTranscript_SymlinkIntoDataDir: a rollout path that is a symlink
// into the data dir by the time it is opened reads nothing: every open
// of it is checked where it leads.
func TestOpenTranscript_SymlinkIntoDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(data, "creds.json")
	ingesttest.AppendFile(t, creds, meta(tid, ""), userMsg(1, "hunter2"))
	path := rolloutPath(t, tid)
	if err := ingest.CheckPrivate(path, []string{data}); err != nil {
		t.Fatal(err) // no file yet: the path passes
	}
	if err := os.Symlink(creds, path); err != nil {
		t.Fatal(err)
	}
	f, _, err := ingest.OpenTranscript(path, []string{data})
	if !errors.Is(err, ingest.ErrPrivate) || f != nil {
		t.Fatalf("OpenTranscript of a link into the data dir: %v, want ErrPrivate", err)
	}
}
