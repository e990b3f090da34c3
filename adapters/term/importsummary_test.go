package term

import (
	"bytes"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// TestImportSummary_OneLineEach: a path or a message holding a newline
// (a directory named "nl\ndir") takes one line of the summary, shown
// escaped, in the warnings, the files passed over and the errors alike:
// it can never pass for a line of its own.
func TestImportSummary_OneLineEach(t *testing.T) {
	var out, errb bytes.Buffer
	s := ingest.Summary{
		Files:          []ingest.SummaryFile{{Warnings: []string{"/tmp/nl\nwarning: forged"}}},
		NotTranscripts: []string{"/tmp/nl\nskipped: forged"},
		Errors:         []string{"/tmp/nl\nerror: forged/x.jsonl:2: malformed"},
	}
	ImportSummary(&out, &errb, s, "transcript")
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	want := []string{`warning: /tmp/nl\nwarning: forged`, `skipped: /tmp/nl\nskipped: forged`, `error: /tmp/nl\nerror: forged/x.jsonl:2: malformed`}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), errb.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i, lines[i], want[i])
		}
	}
}
