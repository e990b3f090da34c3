package bench

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// TestImportMarksStages: an import's marks become its own stages, each
// from the mark before it, with each file's stages (medians over the
// files) under "files imported", and the rest of the command last.
func TestImportMarksStages(t *testing.T) {
	start := time.Unix(1000, 0)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	var m importMarks
	m.add(ingest.MarkPlanned, "", ms(2))
	m.add(ingest.MarkConnected, "", ms(10))
	for i, f := range []string{"a", "b", "c"} {
		m.add(ingest.MarkFileStarted, f, ms(10+i))
		m.add(ingest.MarkFileSession, f, ms(12+2*i))
		m.add(ingest.MarkFileParsed, f, ms(20+3*i))
		m.add(ingest.MarkFileDone, f, ms(50))
	}
	m.add(ingest.MarkFileDone, "a", ms(70)) // marked again: the first time stays
	m.add(ingest.MarkImported, "", ms(51))
	m.add(ingest.MarkSaved, "", ms(53))
	m.add(ingest.MarkDone, "", ms(60))
	got := m.stages(start, ms(61))
	want := []StageTime{
		{Stage: "  paths checked, transcripts found (plan)", P50ms: 2, N: 1},
		{Stage: "  connected to serve, log opened, append checked", P50ms: 8, N: 1},
		{Stage: "  files imported: each one's last append answered (below: per file)", P50ms: 41, N: 1},
		{Stage: "    per file: waits for a worker", P50ms: 1, N: 3},
		{Stage: "    per file: its session read from the log", P50ms: 3, N: 3},
		{Stage: "    per file: its lines read and parsed (waiting for a parse slot too)", P50ms: 9, N: 3},
		{Stage: "    per file: its run decided and appended (waiting for its merged batch's answer)", P50ms: 27, N: 3},
		{Stage: "  import index saved", P50ms: 2, N: 1},
		{Stage: "  summary written, log closed", P50ms: 7, N: 1},
		{Stage: "  command returns", P50ms: 1, N: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("stages = %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stage %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var none importMarks
	if got := none.stages(start, ms(5)); len(got) != 0 {
		t.Errorf("no marks: stages = %+v, want none", got)
	}
}
