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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
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
			return runImport(cmd.Context(), g, claudeImport(), args, importOptions{workers: workers, skipInvalid: skipInvalid, asNew: asNew})
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

// importSummary is what `import <agent> --json` prints.
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
func namedPaths(paths []string, ext, what, hint string, looks func(string) (bool, string), private []string) (errs, notes []string) {
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
		if privatePath(p, private) {
			continue // the import refuses it, naming where it leads
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

// privatePath reports whether the file at path leads into one of dirs
// (the data dir), by a symlink or a hard link (ingest.CheckPrivate,
// ingest.CheckOpened): it is not judged as a transcript or not, so that
// the import refuses it with that reason, never reading it.
func privatePath(path string, dirs []string) bool {
	if len(dirs) == 0 {
		return false
	}
	if errors.Is(ingest.CheckPrivate(path, dirs), ingest.ErrPrivate) {
		return true
	}
	f, _, err := hookspool.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(ingest.CheckOpened(f, path, dirs), ingest.ErrPrivate)
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
// than ingest.MaxLineBytes, naming the file and line 1 as an import names
// such a line anywhere in a file; nil for any other file. The importers'
// Looks functions refuse such a file at once (so a sparse file of a
// terabyte is not read through); this tells it from one of another
// format.
func unreadableFirst(path string) error {
	if _, err := ingest.FirstLine(path); errors.Is(err, ingest.ErrLineTooLong) {
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

// importOptions are the flags every `logbook import <agent>` takes.
type importOptions struct {
	workers     int  // --workers: files read and parsed at once, at least 1
	skipInvalid bool // --skip-invalid
	asNew       bool // --as-new
}

// importFormat is what `logbook import` knows of one agent's files,
// beyond what adapters/ingest does alike for every agent. U is the unit
// one worker imports at a time: a Claude Code transcript with its
// subagents' files, a Codex CLI rollout.
type importFormat[U any] struct {
	// noun names one file of the format in messages ("transcript").
	noun string
	// what names the format ("a Claude Code transcript"), ext is the
	// extension a named file must have ("" for any), hint says where such
	// files are found; looks says whether a file reads as one and why not
	// (namedPaths). notOne leads the note of a found file looks refuses
	// ("" when looks' reason says so itself).
	what, ext, hint, notOne string
	looks                   func(path string) (bool, string)
	// discover returns the units under paths (files and directories,
	// each checked by namedPaths), in order. Errors end the import
	// before anything is read or appended.
	discover func(g *globals, paths []string) ([]U, error)
	// file returns the file of u judged before its import ("" for none)
	// and whether it is u's only file: only then may it be noted as
	// holding nothing to import yet.
	file func(u U) (path string, only bool)
	// emptyDirs, if set, names the files (plural) a named directory
	// should hold: one with none is noted as skipped.
	emptyDirs string
	// group orders units into groups, each imported in order by one
	// worker; nil: each unit is a group of its own.
	group func(units []U) [][]U
	// open starts the import on b: the agent's ingester, how many units
	// may be under way at once, how to import one (calling line after
	// each line appended), and what to do at the end (nil: nothing).
	// Errors end the import before anything is appended.
	open func(ctx context.Context, g *globals, b *backend, o importOptions) (importRun[U], error)
}

// importRun is one import's ingester, as importFormat.open starts it.
type importRun[U any] struct {
	workers int // units under way at once, at least 1
	run     func(ctx context.Context, u U, line func()) ([]ingest.FileResult, error)
	end     func()
}

// runImport imports the files paths name in format f: it checks the
// named paths (namedPaths), finds the units, notes the files that are not
// the format's or hold nothing to import yet, imports the others on
// o.workers workers, and prints the summary (importSummary; --json: as
// JSON). It returns an *exitError when a named path cannot be imported or
// a file stopped early.
func runImport[U any](ctx context.Context, g *globals, f importFormat[U], paths []string, o importOptions) error {
	var private []string // the data dir, whose files the import refuses to read
	if dd, err := resolveDataDir(g.data); err == nil {
		private = []string{string(dd)}
	}
	errs, skipped := namedPaths(paths, f.ext, f.what, f.hint, f.looks, private)
	if len(errs) > 0 {
		return namedPathsError(g, errs)
	}
	units, err := f.discover(g, paths)
	if err != nil {
		return err
	}
	var unreadable, found []string // found files whose first line cannot be read: errors, paths
	// Files with no line to import yet (empty, or blank lines only),
	// and what they hold. Each is imported all the same: one that held
	// lines imported before was cut, and its import reports that as any
	// truncation; for the others the import appends nothing, and they are
	// noted as skipped.
	yet := map[string]string{}
	units = slices.DeleteFunc(units, func(u U) bool {
		path, only := f.file(u)
		if path == "" {
			return false
		}
		if st, err := os.Stat(path); err == nil && only {
			if what, none := nothingYet(path, st.Size()); none {
				yet[path] = what
				found = append(found, path)
				return false
			}
		}
		if privatePath(path, private) {
			found = append(found, path)
			return false // the import refuses it, naming where it leads
		}
		if ok, why := f.looks(path); !ok {
			if err := unreadableFirst(path); err != nil {
				unreadable, found = append(unreadable, err.Error()), append(found, path)
			} else {
				skipped = append(skipped, fmt.Sprintf("%s: %s%s", path, f.notOne, why))
			}
			return true
		}
		found = append(found, path)
		return false
	})
	// Named ones are noted after their import, under the name given.
	given := map[string]string{}
	for _, p := range paths {
		if _, ok := yet[filepath.Clean(p)]; ok {
			given[filepath.Clean(p)] = p
			skipped = slices.DeleteFunc(skipped, func(n string) bool { return strings.HasPrefix(n, p+": ") })
		}
	}
	if f.emptyDirs != "" {
		skipped = append(skipped, emptyDirs(paths, found, f.emptyDirs)...)
	}
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	o.workers = max(o.workers, 1)
	r, err := f.open(ctx, g, b, o)
	if err != nil {
		return err
	}
	prog := newProgress(g.stderr, len(units))
	var (
		mu       sync.Mutex
		sum      importSummary
		diverged int      // files that changed under Logbook
		lost     int      // files stopped because the server went away
		nothing  []string // notes of files with nothing to import yet
		wg       sync.WaitGroup
	)
	groups := [][]U{}
	if f.group != nil {
		groups = f.group(units)
	} else {
		for _, u := range units {
			groups = append(groups, []U{u})
		}
	}
	work := make(chan []U)
	for range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for grp := range work {
				for _, u := range grp {
					rs, err := r.run(ctx, u, prog.line)
					path, _ := f.file(u)
					mu.Lock()
					if what, ok := yet[path]; ok && err == nil && len(rs) == 1 && rs[0].Appended == 0 && rs[0].Lines == 0 && len(rs[0].Warnings) == 0 {
						nothing = append(nothing, fmt.Sprintf("%s: %s, nothing to import yet", cmp.Or(given[path], path), what))
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
						if serverGone(err) {
							lost++
						}
					}
					mu.Unlock()
					prog.file()
				}
			}
		}()
	}
	for _, grp := range groups {
		select {
		case work <- grp:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	prog.done()
	if r.end != nil {
		r.end()
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
		fmt.Fprintln(g.stdout, sum.line(f.noun+" file"))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if diverged > 0 && diverged == len(sum.Errors) {
		return &exitError{code: 1, err: fmt.Errorf("%s changed under Logbook (errors above); the log keeps what was imported; import with --as-new to record them as new histories", plural(diverged, f.noun))}
	}
	if len(sum.Errors) > 0 {
		why := ""
		if paused := b.diskPaused(ctx); paused != "" {
			why = "; serve says " + paused + ": free space there and import again"
		}
		if lost == len(sum.Errors) {
			return &exitError{code: 1, err: fmt.Errorf("%s stopped early: the server went away (did `logbook serve` stop?); the lines before each error are imported, and importing again resumes where it stopped", plural(lost, f.noun))}
		}
		if lost > 0 {
			why += fmt.Sprintf("; %d because the server went away (did `logbook serve` stop?)", lost)
		}
		return &exitError{code: 1, err: fmt.Errorf("%s stopped early (errors above)%s; the lines before each error are imported, and importing again resumes at the line that stopped it (a line that does not parse must be fixed first, or passed with --skip-invalid)", plural(len(sum.Errors), f.noun), why)}
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

// claudeImport is Claude Code's format for runImport: a unit is a
// session's transcript with its subagents' transcripts, imported into
// the session the transcript names; files unchanged since an import left
// nothing of them behind are skipped by the data dir's import index.
func claudeImport() importFormat[claude.Transcript] {
	return importFormat[claude.Transcript]{
		noun: "transcript", what: "a Claude Code transcript", ext: ".jsonl", hint: " (a .jsonl file, as under ~/.claude/projects)",
		notOne: "not a Claude Code transcript: ", looks: claude.LooksLikeTranscript,
		discover:  func(_ *globals, paths []string) ([]claude.Transcript, error) { return claude.Discover(paths...) },
		file:      func(t claude.Transcript) (string, bool) { return t.Path, len(t.Subagents) == 0 },
		emptyDirs: "Claude Code transcripts (.jsonl files)",
		open: func(ctx context.Context, g *globals, b *backend, o importOptions) (importRun[claude.Transcript], error) {
			var r importRun[claude.Transcript]
			host, _ := os.Hostname()
			parser, err := b.dd.parser()
			if err != nil {
				return r, err
			}
			// Files unchanged since an import left nothing of them behind are
			// skipped without reading their sessions from the log; the index
			// belongs to this incarnation of the stream, as it was when the
			// index was written: a stream that lost messages since (accepted
			// with serve --accept-stream-loss) has every file read again.
			id, err := b.log.Identity(ctx)
			if err != nil {
				return r, err
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
				return r, err
			}
			r.workers = o.workers * importWaiting
			r.run = func(ctx context.Context, t claude.Transcript, line func()) ([]ingest.FileResult, error) {
				return ing.ImportTranscript(ctx, t, func(string, int) { line() })
			}
			r.end = func() {
				if err := index.Save(); err != nil {
					fmt.Fprintf(g.stderr, "warning: %v; the next import reads every file's session again\n", err)
				}
			}
			return r, nil
		},
	}
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
