package ingest

import (
	"context"
	"time"
)

// The stages an import marks (WithMarks) as each ends. The import's own
// are marked by its command (cmd/logbook); a file's by ImportFile, with
// the file's path.
const (
	MarkPlanned   = "planned"   // the named paths checked, the files found
	MarkConnected = "connected" // connected to the server, the log opened, the append checked
	MarkImported  = "imported"  // every file imported: each one's last append answered
	MarkSaved     = "saved"     // the import index saved
	MarkDone      = "done"      // the summary written, the log closed

	MarkFileStarted = "file-started" // a file's import began (before its session is read)
	MarkFileSession = "file-session" // its session read from the log (or found new: Ingester.KnowNew)
	MarkFileParsed  = "file-parsed"  // its first run of lines read and parsed, about to be decided and appended
	MarkFileDone    = "file-done"    // its last run appended (or its import stopped)
)

// Marks is told when each stage of an import ends (one of the Mark*
// stages; path is the file's, "" for the import's own stages), at time
// at. It must be safe for concurrent use: files are imported on several
// goroutines at once.
type Marks func(stage, path string, at time.Time)

// marksKey is the context key of WithMarks.
type marksKey struct{}

// WithMarks returns ctx carrying m: an import run with it (ImportFile
// and the command that runs the import) calls m as each stage ends, for
// a breakdown of where its time goes (logbook bench). Without it nothing
// is timed.
func WithMarks(ctx context.Context, m Marks) context.Context {
	return context.WithValue(ctx, marksKey{}, m)
}

// Mark calls the Marks ctx carries (WithMarks), if any, with stage and
// path, and the time now.
func Mark(ctx context.Context, stage, path string) {
	if m, ok := ctx.Value(marksKey{}).(Marks); ok && m != nil {
		m(stage, path, time.Now())
	}
}
