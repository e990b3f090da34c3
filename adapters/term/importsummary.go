package term

import (
	"fmt"
	"io"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// ImportSummary writes s as `logbook import` prints it without --json:
// each file's warnings, the files passed over and the errors (ImportErrors)
// on stderr, then its line (Summary.Line, counting noun files) on
// stdout. What comes from the files is made safe (Safe).
func ImportSummary(stdout, stderr io.Writer, s ingest.Summary, noun string) {
	for _, f := range s.Files {
		for _, w := range f.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", Field(w))
		}
	}
	for _, n := range s.NotTranscripts {
		fmt.Fprintf(stderr, "skipped: %s\n", Field(n))
	}
	ImportErrors(stderr, s.Errors)
	fmt.Fprintln(stdout, s.Line(noun+" file"))
}

// ImportErrors writes each of errs, an import's errors, as "error: …" on
// w, in the words a person reads (Message), made safe on one line each
// (Field).
func ImportErrors(w io.Writer, errs []string) {
	for _, e := range errs {
		fmt.Fprintf(w, "error: %s\n", Field(Message(e)))
	}
}
