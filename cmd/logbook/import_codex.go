package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/ingest"
)

func importCodexCmd(g *globals) *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "codex PATH...",
		Short: "Import Codex CLI rollouts (files, or directories such as ~/.codex/sessions)",
		Long: `import codex reads Codex CLI rollout files (rollout-*.jsonl under
~/.codex/sessions/YYYY/MM/DD, the envelope format of Codex CLI 0.40 and
later and the legacy format before it) and appends each line, with the
decisions it causes, as one atomic batch to the session's aggregate (the
thread id the rollout's session_meta names). Importing again appends only
lines that are new; a last line still being written waits for the next
import; a line that does not parse stops that file with its path and line
(--skip-invalid records it without signals and goes on). A forked
conversation is a session of its own that names the one it was forked
from. Directories are walked for .jsonl files, each taken if its first
line is a rollout's and listed as skipped if not; files are taken as named.

A rollout that no longer holds what was imported from it (truncated or
rewritten) stops with an error naming it, recorded on its session as
session.transcript_diverged; --as-new then imports the file as it is now
as a new session linked to the old one.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.Context(), g, codex.ImportFormat(), codexOpen, args, o)
		},
	}
	importFlags(cmd, &o, "rollouts imported at once", "rollout")
	return cmd
}

// codexOpen starts a Codex CLI import.
func codexOpen(_ context.Context, _ *globals, b *backend, o importOptions) (ingest.Runner[string], func(), error) {
	var r ingest.Runner[string]
	host, _ := os.Hostname()
	cp, err := b.dd.parser()
	if err != nil {
		return r, nil, err
	}
	ing, err := codex.NewIngester(codex.IngestConfig{Log: b.log, Reg: b.reg, Parser: codex.NewParserFrom(cp), Host: host, SkipInvalid: o.skipInvalid, AsNew: o.asNew, Private: []string{string(b.dd)}})
	if err != nil {
		return r, nil, err
	}
	r.Workers = o.workers
	r.Import = func(ctx context.Context, path string, line func()) ([]ingest.FileResult, error) {
		res, err := ing.ImportFile(ctx, path, func(int) { line() })
		return []ingest.FileResult{res}, err
	}
	return r, nil, nil
}
