package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

func importCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import agent transcripts"}
	var o importOptions
	claudeImport := &cobra.Command{
		Use:   "claude PATH...",
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
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.Context(), g, claude.ImportFormat(), claudeOpen, args, o)
		},
	}
	importFlags(claudeImport, &o, "transcripts read and parsed at once (up to 4 times as many are under way, waiting for the log)", "transcript")
	cmd.AddCommand(claudeImport)
	cmd.AddCommand(importCodexCmd(g))
	return cmd
}

// importOptions are the flags every `logbook import <agent>` takes.
type importOptions struct {
	workers     int  // --workers: files read and parsed at once, at least 1
	skipInvalid bool // --skip-invalid
	asNew       bool // --as-new
}

// importFlags adds to cmd the flags every `logbook import <agent>` takes,
// set into o: workers says what --workers counts, file names one file of
// the agent's ("rollout").
func importFlags(cmd *cobra.Command, o *importOptions, workers, file string) {
	cmd.Flags().IntVar(&o.workers, "workers", 4, workers)
	bound(cmd.Flags(), "workers", 1, maxWorkers)
	cmd.Flags().BoolVar(&o.skipInvalid, "skip-invalid", false, "record a line that does not parse (without signals) and go on, instead of stopping that file there")
	cmd.Flags().BoolVar(&o.asNew, "as-new", false, "import a "+file+" that changed under Logbook (truncated or rewritten) as a new session linked to the one that imported it")
}

// importOpen starts an import on b: the agent's ingester as an
// ingest.Runner, and what to do at the end (nil: nothing). Errors end
// the import before anything is appended.
type importOpen[U any] func(ctx context.Context, g *globals, b *backend, o importOptions) (ingest.Runner[U], func(), error)

// runImport imports the files paths name in format f
// (ingest.PlanImport, ingest.Plan.Run) with the ingester open starts,
// and prints the summary (--json: as JSON) with each warning, note and
// error on stderr. It returns an *exitError when a named path cannot be
// imported or a file stopped early.
func runImport[U any](ctx context.Context, g *globals, f ingest.Format[U], open importOpen[U], paths []string, o importOptions) error {
	var private []string // the data dir, whose files the import refuses to read
	if dd, err := resolveDataDir(g.data); err == nil {
		private = []string{string(dd)}
	}
	plan, err := ingest.PlanImport(f, paths, private)
	if ne, ok := errors.AsType[*ingest.NamedError](err); ok {
		if g.json {
			_ = writeJSON(g.stdout, ingest.Summary{Files: []ingest.SummaryFile{}, Errors: ne.Paths})
		} else if len(ne.Paths) > 1 {
			for _, e := range ne.Paths {
				fmt.Fprintf(g.stderr, "error: %s\n", termSafe(userText(e)))
			}
		}
		return &exitError{code: 1, err: ne}
	} else if err != nil {
		return err
	}
	if plan.Warning != "" {
		fmt.Fprintf(g.stderr, "warning: %s\n", plan.Warning)
	}
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	o.workers = max(o.workers, 1)
	r, end, err := open(ctx, g, b, o)
	if err != nil {
		return err
	}
	r.Lost = serverGone
	sum := plan.Run(ctx, r, g.stderr)
	if end != nil {
		end()
	}
	if g.json {
		if err := writeJSON(g.stdout, sum); err != nil {
			return err
		}
	} else {
		for _, f := range sum.Files {
			for _, w := range f.Warnings {
				fmt.Fprintf(g.stderr, "warning: %s\n", termSafe(w))
			}
		}
		for _, s := range sum.NotTranscripts {
			fmt.Fprintf(g.stderr, "skipped: %s\n", termSafe(s))
		}
		for _, e := range sum.Errors {
			fmt.Fprintf(g.stderr, "error: %s\n", termSafe(userText(e)))
		}
		fmt.Fprintln(g.stdout, sum.Line(f.Noun+" file"))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	paused := ""
	if len(sum.Errors) > sum.Diverged {
		paused = b.diskPaused(ctx)
	}
	if err := sum.Err(f.Noun, paused); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// serverGone reports whether err, from an import, says the log's server
// went away (serve stopped, or no server takes appends any more): the
// import stopped there, and importing again resumes where it stopped.
func serverGone(err error) bool {
	return lostServer(err) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrDisconnected)
}

// claudeOpen starts a Claude Code import: files unchanged since an
// import left nothing of them behind are skipped by the data dir's import
// index, saved at the end.
func claudeOpen(ctx context.Context, g *globals, b *backend, o importOptions) (ingest.Runner[claude.Transcript], func(), error) {
	var r ingest.Runner[claude.Transcript]
	host, _ := os.Hostname()
	parser, err := b.dd.parser()
	if err != nil {
		return r, nil, err
	}
	// Files unchanged since an import left nothing of them behind are
	// skipped without reading their sessions from the log; the index
	// belongs to this incarnation of the stream, as it was when the
	// index was written: a stream that lost messages since (accepted
	// with serve --accept-stream-loss) has every file read again.
	id, err := b.log.Identity(ctx)
	if err != nil {
		return r, nil, err
	}
	incarnation := natslog.StreamName + "@" + id.Created.Format(time.RFC3339Nano)
	if gone := id.Gone(); gone > 0 {
		incarnation += fmt.Sprintf(" gone %d", gone)
	}
	index, err := ingest.OpenSkipIndex(b.dd.path("import-index.json"), incarnation)
	if err != nil {
		fmt.Fprintf(g.stderr, "warning: %v; every file's session is read from the log this time\n", err)
	}
	ing, err := claude.NewIngester(claude.IngestConfig{Log: b.log, Reg: b.reg, Parser: parser, Host: host, SkipInvalid: o.skipInvalid, AsNew: o.asNew, Skip: index, Parsers: o.workers, Private: []string{string(b.dd)}})
	if err != nil {
		return r, nil, err
	}
	r.Workers = o.workers * importWaiting
	r.Import = func(ctx context.Context, t claude.Transcript, line func()) ([]ingest.FileResult, error) {
		return ing.ImportTranscript(ctx, t, func(string, int) { line() })
	}
	return r, func() {
		if err := index.Save(); err != nil {
			fmt.Fprintf(g.stderr, "warning: %v; the next import reads every file's session again\n", err)
		}
	}, nil
}

// importWaiting is how many transcripts an import has under way per
// --workers: --workers of them read and parse lines at once, the others
// wait for their batches to be appended, so the log's group commit finds
// several transcripts' runs to merge into each atomic batch.
const importWaiting = 4
