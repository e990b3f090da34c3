package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

func importCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import agent transcripts"}
	var (
		workers     int
		skipInvalid bool
		asNew       bool
	)
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
			return importClaude(cmd.Context(), g, args, workers, skipInvalid, asNew)
		},
	}
	claudeImport.Flags().IntVar(&workers, "workers", 4, "transcripts read and parsed at once (up to 4 times as many are under way, waiting for the log)")
	bound(claudeImport.Flags(), "workers", 1, maxWorkers)
	claudeImport.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "record a line that does not parse (without signals) and go on, instead of stopping that file there")
	claudeImport.Flags().BoolVar(&asNew, "as-new", false, "import a transcript that changed under Logbook (truncated or rewritten) as a new session linked to the one that imported it")
	cmd.AddCommand(claudeImport)
	cmd.AddCommand(importCodexCmd(g))
	return cmd
}

// importSummary is what `import claude --json` prints.
type importSummary struct {
	Files          []importFile `json:"files"`
	Appended       int          `json:"appended"`
	Skipped        int          `json:"skipped"`
	Errors         []string     `json:"errors,omitempty"`
	NotTranscripts []string     `json:"skipped_files,omitempty"` // files that are not transcripts
}

// line returns the summary's last line, files counted as kind ("transcript
// file"): how many were read, lines appended, lines the log had already,
// and how many files stopped at an error (only the lines before it are
// in the log) or could not be read.
func (s importSummary) line(kind string) string {
	l := fmt.Sprintf("imported %s: %s appended, %d already in the log", plural(len(s.Files), kind), plural(s.Appended, "line"), s.Skipped)
	if n := len(s.Errors); n > 0 {
		l += fmt.Sprintf("; %d stopped at an error", n)
	}
	return l
}

// importFile is one transcript file of importSummary: a
// ingest.FileResult with the JSON names of every other command.
type importFile struct {
	Path     string   `json:"path"`
	Session  string   `json:"session"`
	Appended int      `json:"appended"`
	Skipped  int      `json:"skipped"`
	Lines    int      `json:"lines"`
	Torn     bool     `json:"torn"`
	Warnings []string `json:"warnings"`
}

func newImportFile(r ingest.FileResult) importFile {
	w := r.Warnings
	if w == nil {
		w = []string{}
	}
	return importFile{Path: r.Path, Session: r.Session, Appended: r.Appended, Skipped: r.Skipped, Lines: r.Lines, Torn: r.Torn, Warnings: w}
}

// namedPaths checks the paths an import names before anything is read
// or appended. A path that does not exist, a named file that is not a
// regular file, a named file without the extension ext ("" for any) and
// a named file looks refuses are errors naming the path; a named file
// that is empty (nothing to import yet) is a note. what names the
// format ("a Claude Code transcript"), hint where such files are found.
func namedPaths(paths []string, ext, what, hint string, looks func(string) (bool, string)) (errs, notes []string) {
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Sprintf("%s: no such file or directory", p))
			continue
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", p, errors.Unwrap(err)))
			continue
		case st.IsDir():
			continue
		case !st.Mode().IsRegular():
			errs = append(errs, fmt.Sprintf("%s: not a regular file; want %s%s", p, what, hint))
			continue
		case ext != "" && !strings.HasSuffix(p, ext):
			errs = append(errs, fmt.Sprintf("%s: not a %s file; want %s%s", p, ext, what, hint))
			continue
		}
		if what, ok := nothingYet(p, st.Size()); ok {
			notes = append(notes, fmt.Sprintf("%s: %s, nothing to import yet", p, what))
			continue
		}
		if ok, why := looks(p); !ok {
			if err := unreadableFirst(p); err != nil {
				errs = append(errs, err.Error())
			} else if strings.HasPrefix(why, "not "+what) {
				errs = append(errs, fmt.Sprintf("%s: %s", p, why))
			} else {
				errs = append(errs, fmt.Sprintf("%s: not %s: %s", p, what, why))
			}
		}
	}
	return errs, notes
}

// nothingYet reports whether the file at path, of size bytes, holds no
// line to import yet, and what it holds instead: "empty file", or "only
// blank lines".
func nothingYet(path string, size int64) (string, bool) {
	if size == 0 {
		return "empty file", true
	}
	if blank, err := ingest.BlankOnly(context.Background(), path); err == nil && blank {
		return "only blank lines", true
	}
	return "", false
}

// unreadableFirst returns the error of a file whose first line is longer
// than claude.MaxLineBytes, naming the file and line 1 as an import names
// such a line anywhere in a file; nil for any other file. The importers'
// Looks functions refuse such a file at once (so a sparse file of a
// terabyte is not read through); this tells it from one of another
// format.
func unreadableFirst(path string) error {
	if _, err := ingest.FirstLine(path); errors.Is(err, claude.ErrLineTooLong) {
		return err
	}
	return nil
}

// emptyDirs returns a note for each directory of paths under which found
// (the files an import discovered) has nothing.
func emptyDirs(paths, found []string, what string) []string {
	var notes []string
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		dir := filepath.Clean(p)
		if !slices.ContainsFunc(found, func(f string) bool { return f == dir || strings.HasPrefix(f, dir+"/") || dir == "/" }) {
			notes = append(notes, fmt.Sprintf("%s: no %s under it", p, what))
		}
	}
	return notes
}

// namedPathsError reports the named paths an import refused: nothing
// was imported.
func namedPathsError(g *globals, errs []string) error {
	if g.json {
		_ = writeJSON(g.stdout, importSummary{Files: []importFile{}, Errors: errs})
	}
	if len(errs) == 1 {
		return &exitError{code: 1, err: fmt.Errorf("%s; nothing was imported", errs[0])}
	}
	if !g.json {
		for _, e := range errs {
			fmt.Fprintf(g.stderr, "error: %s\n", termSafe(userText(e)))
		}
	}
	return &exitError{code: 1, err: fmt.Errorf("%d named paths cannot be imported (above); nothing was imported", len(errs))}
}

func importClaude(ctx context.Context, g *globals, paths []string, workers int, skipInvalid, asNew bool) error {
	errs, skipped := namedPaths(paths, ".jsonl", "a Claude Code transcript", " (a .jsonl file, as under ~/.claude/projects)", claude.LooksLikeTranscript)
	if len(errs) > 0 {
		return namedPathsError(g, errs)
	}
	ts, err := claude.Discover(paths...)
	if err != nil {
		return err
	}
	var unreadable, found []string // found files whose first line cannot be read: errors, paths
	// Transcripts with no line to import yet (empty, or blank lines only),
	// and what they hold. Each is imported all the same: one that held
	// lines imported before was cut, and its import reports that as any
	// truncation; for the others the import appends nothing, and they are
	// noted as skipped.
	yet := map[string]string{}
	ts = slices.DeleteFunc(ts, func(t claude.Transcript) bool {
		if t.Path == "" {
			return false
		}
		if st, err := os.Stat(t.Path); err == nil && len(t.Subagents) == 0 {
			if what, none := nothingYet(t.Path, st.Size()); none {
				yet[t.Path] = what
				return false
			}
		}
		ok, why := claude.LooksLikeTranscript(t.Path)
		if err := unreadableFirst(t.Path); !ok && err != nil {
			unreadable, found = append(unreadable, err.Error()), append(found, t.Path)
		} else if !ok {
			skipped = append(skipped, fmt.Sprintf("%s: not a Claude Code transcript: %s", t.Path, why))
		}
		return !ok
	})
	for _, t := range ts {
		found = append(found, t.Path)
	}
	// Named ones are noted after their import, under the name given.
	given := map[string]string{}
	for _, p := range paths {
		if _, ok := yet[filepath.Clean(p)]; ok {
			given[filepath.Clean(p)] = p
			skipped = slices.DeleteFunc(skipped, func(n string) bool { return strings.HasPrefix(n, p+": ") })
		}
	}
	skipped = append(skipped, emptyDirs(paths, found, "Claude Code transcripts (.jsonl files)")...)
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	host, _ := os.Hostname()
	parser, err := b.dd.parser()
	if err != nil {
		return err
	}
	// Files unchanged since an import left nothing of them behind are
	// skipped without reading their sessions from the log; the index
	// belongs to this incarnation of the stream, as it was when the
	// index was written: a stream that lost messages since (accepted
	// with serve --accept-stream-loss) has every file read again.
	id, err := b.log.Identity(ctx)
	if err != nil {
		return err
	}
	incarnation := natslog.StreamName + "@" + id.Created.Format(time.RFC3339Nano)
	if gone := id.Gone(); gone > 0 {
		incarnation += fmt.Sprintf(" gone %d", gone)
	}
	index, err := ingest.OpenSkipIndex(b.dd.path("import-index.json"), incarnation)
	if err != nil {
		fmt.Fprintf(g.stderr, "warning: %v; every file's session is read from the log this time\n", err)
	}
	if workers < 1 {
		workers = 1
	}
	ing, err := claude.NewIngester(claude.IngestConfig{Log: b.log, Reg: b.reg, Parser: parser, Host: host, SkipInvalid: skipInvalid, AsNew: asNew, Skip: index, Parsers: workers, Private: []string{string(b.dd)}})
	if err != nil {
		return err
	}
	prog := newProgress(g.stderr, len(ts))
	var (
		mu       sync.Mutex
		sum      importSummary
		diverged int      // files that changed under Logbook
		nothing  []string // notes of transcripts with nothing to import yet
		wg       sync.WaitGroup
	)
	work := make(chan claude.Transcript)
	for range workers * importWaiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				rs, err := ing.ImportTranscript(ctx, t, func(string, int) { prog.line() })
				mu.Lock()
				if what, ok := yet[t.Path]; ok && err == nil && len(rs) == 1 && rs[0].Appended == 0 && rs[0].Lines == 0 && len(rs[0].Warnings) == 0 {
					nothing = append(nothing, fmt.Sprintf("%s: %s, nothing to import yet", cmp.Or(given[t.Path], t.Path), what))
					rs = nil
				}
				for _, r := range rs {
					sum.Files = append(sum.Files, newImportFile(r))
					sum.Appended += r.Appended
					sum.Skipped += r.Skipped
				}
				if err != nil {
					sum.Errors = append(sum.Errors, err.Error())
					if _, ok := errors.AsType[*ingest.DivergedError](err); ok {
						diverged++
					}
				}
				mu.Unlock()
				prog.file()
			}
		}()
	}
	for _, t := range ts {
		select {
		case work <- t:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	prog.done()
	if err := index.Save(); err != nil {
		fmt.Fprintf(g.stderr, "warning: %v; the next import reads every file's session again\n", err)
	}
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
		fmt.Fprintln(g.stdout, sum.line("transcript file"))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if diverged > 0 && diverged == len(sum.Errors) {
		return &exitError{code: 1, err: fmt.Errorf("%s changed under Logbook (errors above); the log keeps what was imported; import with --as-new to record them as new histories", plural(diverged, "transcript"))}
	}
	if len(sum.Errors) > 0 {
		why := ""
		if paused := b.diskPaused(ctx); paused != "" {
			why = "; serve says " + paused + ": free space there and import again"
		}
		return &exitError{code: 1, err: fmt.Errorf("%s stopped early (errors above)%s; the lines before each error are imported, and importing again resumes at the line that stopped it (a line that does not parse must be fixed first, or passed with --skip-invalid)", plural(len(sum.Errors), "transcript"), why)}
	}
	return nil
}

// importWaiting is how many transcripts an import has under way per
// --workers: --workers of them read and parse lines at once, the others
// wait for their batches to be appended, so the log's group commit finds
// several transcripts' runs to merge into each atomic batch.
const importWaiting = 4

// progress prints a one-line counter on a terminal, at most every 100 ms.
type progress struct {
	mu           sync.Mutex
	w            io.Writer
	tty          bool
	total, files int
	lines        int
	last         time.Time
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		p.tty = err == nil
	}
	return p
}

func (p *progress) line() { p.mu.Lock(); p.lines++; p.showLocked(false); p.mu.Unlock() }
func (p *progress) file() { p.mu.Lock(); p.files++; p.showLocked(false); p.mu.Unlock() }
func (p *progress) done() { p.mu.Lock(); p.showLocked(true); p.mu.Unlock() }

func (p *progress) showLocked(final bool) {
	if !p.tty || (!final && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\rimporting: %d/%d transcripts, %d lines", p.files, p.total, p.lines)
	if final {
		fmt.Fprintln(p.w)
	}
}
