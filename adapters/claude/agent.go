package claude

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sync/semaphore"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// Agent is the name Claude Code's ingester stamps as the actor of what
// it appends (its observations carry events.Meta.Agent "").
const Agent = "claude-code"

// importWaiting is how many transcripts an import has under way per
// --workers: --workers of them read and parse lines at once, the others
// wait for their batches to be appended, so the log's group commit finds
// several transcripts' runs to merge into each atomic batch. It counts
// transcripts of importShare bytes or more (their files together); a
// smaller one counts as its share of that, so that many small ones are
// under way at once, up to importSmall times as many: their runs are
// small, and a batch of 1,000 events takes a few dozen of them.
const importWaiting = 4

// importShare is the size, in bytes of a transcript's files, from which
// it counts as one whole transcript under way (importWaiting); a run of
// its lines can then reach 1,000 events, the most one run holds.
const importShare = 256 << 10

// importSmall bounds how many more transcripts than importWaiting per
// --workers are under way when they are small.
const importSmall = 4

// Descriptor returns Claude Code as cmd/logbook lists it: `logbook
// import claude`, and the folder serve --watch follows as Claude Code's
// when no other agent owns it (its Owns is nil).
func Descriptor() ingest.Agent {
	return ingest.Agent{
		Name: Agent, Verb: "claude",
		Short: "Import Claude Code transcripts (files or directories such as ~/.claude/projects)",
		Long: `import claude reads Claude Code session transcripts (.jsonl) and their
subagents' transcripts and appends each line's observation and the
decisions it causes to the session's aggregate, a run of lines (up to 1,000
events) as one atomic batch. Importing again appends only lines that are
new, and skips a file unchanged since an import took all of it (its size,
modification time and last line, kept in import-index.json in the data
dir); a last line still being written waits for the next import; a line
that does not parse stops that file with its path and line.

A file that no longer holds what was imported from it (truncated, or
rewritten with other lines) is reported and stopped: the log keeps what it
imported, the divergence is recorded on the session, and the command exits
non-zero naming the file and line. --as-new then imports the file as it is
now as a new history, session <id>-r<n>, linked to the old one; later
imports of the file go on there.`,
		Workers:  "transcripts read and parsed at once (up to 4 times as many are under way, waiting for the log)",
		File:     "transcript",
		Roots:    []string{".claude/projects"},
		DirEnv:   "CLAUDE_CONFIG_DIR",
		LineType: events.ClaudeLineObserved{}.EventType(),
		Import:   ingest.NewImport(ImportFormat(), openImport),
		Open: func(env ingest.Env) (ingest.Follower, error) {
			return NewIngester(IngestConfig{Log: env.Log, Reg: env.Reg, Parser: parserOf(env.Redaction), Host: env.Host, Private: env.Private})
		},
	}
}

// parserOf returns a Parser with r's rules and cap: r itself when it is
// one, nil (NewParser's defaults) when r is nil.
func parserOf(r ingest.Redaction) *Parser {
	switch p := r.(type) {
	case nil:
		return nil
	case *Parser:
		return p
	default:
		return &Parser{red: r.Redactor(), maxRaw: r.MaxRaw()}
	}
}

// openImport starts a Claude Code import: files unchanged since an
// import left nothing of them behind are skipped by the data dir's import
// index (env.IndexPath), saved at the end.
func openImport(ctx context.Context, env ingest.ImportEnv) (ingest.Runner[Transcript], func(), error) {
	var r ingest.Runner[Transcript]
	// Files unchanged since an import left nothing of them behind are
	// skipped without reading their sessions from the log; the index
	// belongs to this incarnation of the stream, as it was when the
	// index was written: a stream that lost messages since (accepted
	// with serve --accept-stream-loss) has every file read again.
	var index *ingest.SkipIndex
	if env.IndexPath != "" {
		incarnation, err := env.Incarnation(ctx)
		if err != nil {
			return r, nil, err
		}
		index, err = ingest.OpenSkipIndex(env.IndexPath, incarnation)
		if err != nil {
			env.Warn(fmt.Sprintf("%v; every file's session is read from the log this time", err))
		}
	}
	ing, err := NewIngester(IngestConfig{Log: env.Log, Reg: env.Reg, Parser: parserOf(env.Redaction), Host: env.Host, SkipInvalid: env.SkipInvalid, AsNew: env.AsNew, Skip: index, Parsers: env.Workers, Private: env.Private})
	if err != nil {
		return r, nil, err
	}
	r.Begin = ing.knowNew
	r.Workers = env.Workers * importWaiting * importSmall
	room := semaphore.NewWeighted(int64(env.Workers * importWaiting * importShare))
	r.Import = func(ctx context.Context, t Transcript, line func()) ([]ingest.FileResult, error) {
		w := min(transcriptBytes(t), importShare)
		if err := room.Acquire(ctx, w); err != nil {
			return nil, err
		}
		defer room.Release(w)
		return ing.ImportTranscript(ctx, t, func(string, int) { line() })
	}
	if index == nil {
		return r, nil, nil
	}
	return r, func() {
		if err := index.Save(); err != nil {
			env.Warn(fmt.Sprintf("%v; the next import reads every file's session again", err))
		}
	}, nil
}

// Follow follows the Claude Code transcripts under cfg.Roots: Watch with
// Claude Code's Accept and Import.
func (in *Ingester) Follow(ctx context.Context, cfg ingest.FollowConfig) error {
	return in.Watch(ctx, WatchConfig{Roots: cfg.Roots, Await: cfg.Await, Rescan: cfg.Rescan, Report: cfg.Report, Imported: cfg.Imported})
}

// transcriptBytes returns the size of t's files together, in bytes, at
// least 1: a file that cannot be read counts as empty (its import says
// why).
func transcriptBytes(t Transcript) int64 {
	n := int64(1)
	size := func(path string) {
		if st, err := os.Stat(path); err == nil && path != "" {
			n += st.Size()
		}
	}
	size(t.Path)
	for _, sa := range t.Subagents {
		size(sa.Path)
	}
	return n
}
