package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// TestImport_StoredDataAsJSONMarshal imports the generated bench tree
// (benchLine's turns) and the shared corpus's Claude transcripts (when
// present) into an embedded server, and holds the "data" member of every
// event stored, byte for byte, to json.Marshal of its decoded payload:
// observations' data, written by hand (events' appendObservation), and
// every other event's are what the reflection-based encoder writes.
func TestImport_StoredDataAsJSONMarshal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	if err := writeTree(root, 3, 61); err != nil {
		t.Fatal(err)
	}
	log, _ := natslogtest.Start(t, natslog.FsyncInterval)
	in, err := NewIngester(IngestConfig{Log: log, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if _, err := in.ImportTranscript(ctx, tr, nil); err != nil {
			t.Fatal(err)
		}
	}
	corpus := ingesttest.Corpus(t, "claude")
	files, _ := filepath.Glob(filepath.Join(corpus, "*", "transcript.jsonl"))
	for i, f := range files {
		agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("corpus-%d", i)}
		if _, err := in.ImportFile(ctx, f, agg, nil); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	stored := map[uint64][]byte{}
	for m, err := range log.ReadRaw(ctx, events.SubjectEvents+".>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		stored[m.Seq] = m.Data
	}
	n, obs := 0, 0
	for r, err := range log.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		body := stored[r.Seq]
		// The envelope's last member is its data; a quote inside a string
		// is escaped, so the first `,"data":` is the member's.
		at := bytes.Index(body, []byte(`,"data":`))
		if at < 0 || body[len(body)-1] != '}' {
			t.Fatalf("seq %d: no data member in %s", r.Seq, body)
		}
		got := body[at+len(`,"data":`) : len(body)-1]
		want, err := json.Marshal(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seq %d (%s): stored data differs from json.Marshal:\n got %s\nwant %s", r.Seq, r.Type, got, want)
		}
		n++
		if _, ok := events.Observed(r.Data); ok {
			obs++
		}
	}
	if n == 0 || obs == 0 || n == obs {
		t.Fatalf("%d events, %d of them observations; want both kinds", n, obs)
	}
	t.Logf("%d events stored (%d observations, %d corpus transcripts) as json.Marshal writes them", n, obs, len(files))
}
