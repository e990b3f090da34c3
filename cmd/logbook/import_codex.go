package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/ingest"
)

func importCodexCmd(g *globals) *cobra.Command {
	var (
		workers     int
		skipInvalid bool
		asNew       bool
	)
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
			return importCodex(cmd.Context(), g, args, workers, skipInvalid, asNew)
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 4, "rollouts imported at once")
	bound(cmd.Flags(), "workers", 1, maxWorkers)
	cmd.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "record a line that does not parse (without signals) and go on, instead of stopping that file there")
	cmd.Flags().BoolVar(&asNew, "as-new", false, "import a rollout that changed under Logbook (truncated or rewritten) as a new session linked to the one that imported it")
	return cmd
}

func importCodex(ctx context.Context, g *globals, paths []string, workers int, skipInvalid, asNew bool) error {
	errs, skipped := namedPaths(paths, "", "a Codex CLI rollout", " (as under ~/.codex/sessions)", codex.LooksLikeRollout)
	if len(errs) > 0 {
		return namedPathsError(g, errs)
	}
	files, err := codex.Discover(paths...)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		fmt.Fprintf(g.stderr, "warning: no .jsonl files under %s (Codex CLI keeps its rollouts under ~/.codex/sessions)\n", strings.Join(paths, ", "))
	}
	var rollouts, unreadable []string
	// Rollouts with no line to import yet (empty, or blank lines only),
	// and what they hold, are imported all the same: one that held lines
	// imported before was cut, and its import reports that as any
	// truncation; the others append nothing and are noted as skipped
	// (a named one under the name given).
	yet := map[string]string{}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			if what, none := nothingYet(f, st.Size()); none {
				yet[f] = what
				rollouts = append(rollouts, f)
				continue
			}
		}
		if ok, why := codex.LooksLikeRollout(f); !ok {
			if err := unreadableFirst(f); err != nil {
				unreadable = append(unreadable, err.Error())
			} else {
				skipped = append(skipped, fmt.Sprintf("%s: %s", f, why))
			}
			continue
		}
		rollouts = append(rollouts, f)
	}
	given := map[string]string{}
	for _, p := range paths {
		if _, ok := yet[filepath.Clean(p)]; ok {
			given[filepath.Clean(p)] = p
			skipped = slices.DeleteFunc(skipped, func(n string) bool { return strings.HasPrefix(n, p+": ") })
		}
	}
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	host, _ := os.Hostname()
	cp, err := b.dd.parser()
	if err != nil {
		return err
	}
	ing, err := codex.NewIngester(codex.IngestConfig{Log: b.log, Reg: b.reg, Parser: codex.NewParserFrom(cp), Host: host, SkipInvalid: skipInvalid, AsNew: asNew, Private: []string{string(b.dd)}})
	if err != nil {
		return err
	}
	workers = max(workers, 1)
	prog := newProgress(g.stderr, len(rollouts))
	var (
		mu       sync.Mutex
		sum      importSummary
		nothing  []string // notes of rollouts with nothing to import yet
		diverged int      // rollouts stopped by a *ingest.DivergedError
		wg       sync.WaitGroup
	)
	// A thread's files (a resumed thread has several) go to one worker,
	// in order, so its session's log is the same whatever the scheduling.
	work := make(chan []string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for group := range work {
				for _, f := range group {
					r, err := ing.ImportFile(ctx, f, func(int) { prog.line() })
					mu.Lock()
					if what, ok := yet[f]; ok && err == nil && r.Appended == 0 && r.Lines == 0 && len(r.Warnings) == 0 {
						nothing = append(nothing, fmt.Sprintf("%s: %s, nothing to import yet", cmp.Or(given[f], f), what))
						mu.Unlock()
						prog.file()
						continue
					}
					sum.Files = append(sum.Files, newImportFile(r))
					sum.Appended += r.Appended
					sum.Skipped += r.Skipped
					if err != nil {
						sum.Errors = append(sum.Errors, err.Error())
						if _, ok := errors.AsType[*ingest.DivergedError](err); ok {
							diverged++
						}
					}
					mu.Unlock()
					prog.file()
				}
			}
		}()
	}
	for _, g := range codex.ByThread(rollouts) {
		select {
		case work <- g:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	prog.done()
	slices.Sort(nothing)
	sum.NotTranscripts = append(nothing, skipped...)
	sum.Errors = append(sum.Errors, unreadable...)
	if sum.Files == nil {
		sum.Files = []importFile{}
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
		fmt.Fprintln(g.stdout, sum.line("rollout file"))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if diverged > 0 && diverged == len(sum.Errors) {
		return &exitError{code: 1, err: fmt.Errorf("%s changed under Logbook (errors above); the log keeps what was imported; import with --as-new to record them as new histories", plural(diverged, "rollout"))}
	}
	if len(sum.Errors) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s stopped early (errors above); the lines before each error are imported, and importing again resumes at the line that stopped it (a line that does not parse must be fixed first, or passed with --skip-invalid)", plural(len(sum.Errors), "rollout"))}
	}
	return nil
}
