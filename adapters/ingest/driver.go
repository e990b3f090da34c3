package ingest

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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/internal/words"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Format is what an import of one agent's files knows beyond what the
// engine does alike for every agent. U is the unit one worker imports at
// a time: a Claude Code transcript with its subagents' files, a Codex CLI
// rollout. A Format holds no state and is safe for concurrent use.
type Format[U any] struct {
	// Noun names one file of the format in messages ("transcript").
	Noun string
	// What names the format ("a Claude Code transcript"), Ext is the
	// extension a named file must have ("" for any), Hint says where such
	// files are found (" (as under ~/.codex/sessions)"); Looks says
	// whether a file reads as one and why not. NotOne leads the note of a
	// found file Looks refuses ("" when Looks' reason says so itself).
	What, Ext, Hint, NotOne string
	Looks                   func(path string) (bool, string)
	// Discover returns the units under paths (files and directories,
	// each checked first), in order. Its error ends the import before
	// anything is read or appended.
	Discover func(paths []string) ([]U, error)
	// NoneFound, if set, returns the warning for paths under which
	// Discover found no unit.
	NoneFound func(paths []string) string
	// File returns the file of u judged before its import ("" for none)
	// and whether it is u's only file: only then may it be noted as
	// holding nothing to import yet.
	File func(u U) (path string, only bool)
	// Files, if set, returns every file u imports besides File's (a
	// Claude Code transcript's subagent transcripts): a directory that
	// holds only those is not noted as holding none (EmptyDirs).
	Files func(u U) []string
	// EmptyDirs, if set, names the files (plural) a named directory
	// should hold: one with none is noted as skipped.
	EmptyDirs string
	// Group orders units into groups, each imported in order by one
	// worker; nil: each unit is a group of its own.
	Group func(units []U) [][]U
}

// NamedError reports the named paths an import refused before reading
// anything: Paths holds one message per path ("x: no such file or
// directory").
type NamedError struct{ Paths []string }

// Error returns the one refusal, or how many there are.
func (e *NamedError) Error() string {
	if len(e.Paths) == 1 {
		return e.Paths[0] + "; nothing was imported"
	}
	return fmt.Sprintf("%d named paths cannot be imported (above); nothing was imported", len(e.Paths))
}

// UnreadableDirs is the error a Format's Discover returns beside the
// units it found when directories below the paths it walked could not
// be read (another user's folder, say): the walk goes on past each, and
// PlanImport notes each among the import's errors (the files in it were
// not looked for) and imports the rest. A path named itself that cannot
// be read is Discover's plain error.
type UnreadableDirs struct {
	Notes []string // "<dir>: <why>: …", one a directory
}

// Error returns the notes, one a line.
func (e *UnreadableDirs) Error() string { return strings.Join(e.Notes, "\n") }

// SkipUnreadable is the part of a filepath.WalkDir callback of a
// Discover walking root that decides on err, the walk's error at path:
// nil when err is nil (the callback goes on); filepath.SkipDir, with a
// note in *notes naming path as the caller names it (named), for a
// directory below root that cannot be read; err itself otherwise (root
// itself, or what is not a directory's read).
func SkipUnreadable(root, path, named string, d fs.DirEntry, err error, notes *[]string) error {
	if err == nil {
		return nil
	}
	if path == root || d == nil || !d.IsDir() {
		return err
	}
	cause := err
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		cause = pe.Err
	}
	*notes = append(*notes, fmt.Sprintf("%s: a folder that cannot be read (%v): the files in it were not looked for", PathName(named), cause))
	return filepath.SkipDir
}

// Plan is an import checked and discovered, not yet run: the units to
// import and the notes and errors found on the way. Make one with
// PlanImport.
type Plan[U any] struct {
	f       Format[U]
	units   []U
	skipped []string          // notes of files that are not the format's
	errs    []string          // found files whose first line cannot be read; folders Discover could not read
	unread  int               // of errs, the folders (UnreadableDirs)
	yet     map[string]string // files with nothing to import yet: what they hold
	given   map[string]string // of those, the named ones: the name given
	// Warning is what to print before the import runs (Format.NoneFound),
	// "" for nothing.
	Warning string
}

// PlanImport checks the paths an import names (each must exist; a named
// file must be a regular file with f's extension that f.Looks takes),
// discovers f's units under them and sets aside the found files f.Looks
// refuses. Files under private (the data dir) are kept in the plan: their
// import refuses them, naming where they lead. It returns a *NamedError
// when a named path cannot be imported, or Discover's error.
func PlanImport[U any](f Format[U], paths, private []string) (*Plan[U], error) {
	errs, skipped := namedPaths(f, paths, private)
	if len(errs) > 0 {
		return nil, &NamedError{Paths: errs}
	}
	units, err := f.Discover(paths)
	unreadable, partial := errors.AsType[*UnreadableDirs](err)
	if err != nil && !partial {
		return nil, err
	}
	p := &Plan[U]{f: f, skipped: skipped, yet: map[string]string{}, given: map[string]string{}}
	if partial {
		p.errs, p.unread = append(p.errs, unreadable.Notes...), len(unreadable.Notes)
	}
	if len(units) == 0 && f.NoneFound != nil {
		p.Warning = f.NoneFound(paths)
	}
	var found []string // the files found, paths
	// Files with no line to import yet (empty, or blank lines only),
	// and what they hold. Each is imported all the same: one that held
	// lines imported before was cut, and its import reports that as any
	// truncation; for the others the import appends nothing, and they are
	// noted as skipped.
	var looked []string // every file found, those set aside too
	p.units = slices.DeleteFunc(units, func(u U) bool {
		path, only := f.File(u)
		if f.Files != nil {
			// Taken with u unless u is set aside below, which notes it.
			found = append(found, f.Files(u)...)
		}
		if path == "" {
			return false
		}
		looked = append(looked, path)
		// A found file that is not a regular file (a FIFO, a device, or
		// a link to one) is no transcript, and opening it could block
		// or never end: skipped, never opened. A named one was refused
		// above (namedPaths).
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
			p.skipped = append(p.skipped, fmt.Sprintf("%s: %s%s, not a regular file: never read", PathName(path), f.NotOne, hookspool.FileKind(st.Mode())))
			return true
		}
		if st, err := os.Stat(path); err == nil && only {
			if what, none := nothingYet(path, st.Size()); none {
				p.yet[path] = what
				found = append(found, path)
				return false
			}
		}
		if privatePath(path, private) {
			found = append(found, path)
			return false // the import refuses it, naming where it leads
		}
		if ok, why := f.Looks(path); !ok {
			if err := unreadableFirst(path); err != nil {
				p.errs, found = append(p.errs, err.Error()), append(found, path)
			} else {
				p.skipped = append(p.skipped, fmt.Sprintf("%s: %s%s", PathName(path), f.NotOne, why))
			}
			return true
		}
		found = append(found, path)
		return false
	})
	// Named ones are noted after their import, under the name given.
	for _, n := range paths {
		if _, ok := p.yet[filepath.Clean(n)]; ok {
			p.given[filepath.Clean(n)] = n
			p.skipped = slices.DeleteFunc(p.skipped, func(s string) bool { return strings.HasPrefix(s, PathName(n)+": ") })
		}
	}
	if f.EmptyDirs != "" {
		p.skipped = append(p.skipped, emptyDirs(paths, found, looked, f.EmptyDirs)...)
	}
	return p, nil
}

// Units returns how many units the plan imports.
func (p *Plan[U]) Units() int { return len(p.units) }

// Runner is one import's ingester for Plan.Run.
type Runner[U any] struct {
	// Workers is how many units are under way at once; below 1 means 1.
	Workers int
	// Import imports one unit, calling line after each line appended.
	Import func(ctx context.Context, u U, line func()) ([]FileResult, error)
	// Lost reports whether an import's error says the log's server went
	// away; nil: never.
	Lost func(error) bool
	// Begin, if not nil, is called with every unit of the plan before
	// the first is imported (Ingester.KnowNew: which sessions are new).
	Begin func(ctx context.Context, units []U)
	// AsNew says Import imports files that changed under Logbook as new
	// histories (--as-new, Config.AsNew): the notes of files with nothing
	// to import say so in its terms.
	AsNew bool
}

// Summary is what an import did, as `logbook import <agent> --json`
// prints it.
type Summary struct {
	Files    []SummaryFile `json:"files"`
	Appended int           `json:"appended"`
	Skipped  int           `json:"skipped"`
	Errors   []string      `json:"errors,omitempty"`
	// NotTranscripts notes the files that are not transcripts or hold
	// nothing to import yet.
	NotTranscripts []string `json:"skipped_files,omitempty"`
	// Interrupted counts the Files the import's interrupt (its context
	// ending) stopped part way, between two appends: not among Errors.
	// Their lines before the stop are in the log and counted. NotStarted
	// counts the units (files, with a transcript's subagents) it kept
	// from starting: neither among Files nor among Errors.
	Interrupted int `json:"interrupted,omitempty"`
	NotStarted  int `json:"not_started,omitempty"`
	// unknown reports an interrupted file whose last append's answer
	// was lost (natslog.ErrUnknownOutcome): it may be in the log.
	unknown bool
	// Diverged counts the files that changed under Logbook, Lost those
	// stopped because the server went away; both are among Errors.
	Diverged int `json:"-"`
	Lost     int `json:"-"`
	// truncated counts the Diverged files shorter now than what was
	// imported (the others were rewritten); kept is how many lines the
	// Diverged files' sessions imported from them before they changed,
	// which stay in the log and are counted neither as appended nor as
	// already in the log: the files no longer hold them as imported.
	truncated, kept int
	// refused counts the Errors no later import gets past as the file
	// stands: a path that is not a regular file or leads into the data
	// dir, and the paths the plan refused; invalid those at a line that
	// does not parse.
	refused, invalid int
	// unread counts the Errors that are folders a Discover could not
	// read (UnreadableDirs), among refused: no file of theirs.
	unread int
	// stopped counts the Files that stopped at an error: not read to
	// their end.
	stopped int
	// inPart counts those of the stopped Files whose lines before the
	// error are in the log (appended now or before).
	inPart int
}

// SummaryFile is one file of a Summary: a FileResult with the JSON
// names of every other command.
type SummaryFile struct {
	Path     string   `json:"path"`
	Session  string   `json:"session"`
	Appended int      `json:"appended"`
	Skipped  int      `json:"skipped"`
	Lines    int      `json:"lines"`
	Torn     bool     `json:"torn"`
	Warnings []string `json:"warnings"`
	// Changed and Kept are FileResult's: how a file that stopped the
	// import, or that an import --as-new started a new history of, had
	// changed under Logbook ("truncated", "rewritten"), and the lines
	// imported from it before, which the log keeps; absent for any
	// other file.
	Changed string `json:"changed,omitempty"`
	Kept    int    `json:"kept,omitempty"`
}

// Line returns the summary's last line, files counted as kind
// ("transcript file"): how many were read to their end, and how many
// in part (a file that stopped at an error after lines that are in the
// log: "imported 0 transcript files and 1 in part"), lines appended,
// lines the log had already, and how many files stopped at an error
// (only the lines before it are in the log) or could not be read; of
// those, the ones that changed under Logbook (truncated or rewritten:
// none of their lines counted as in the log) and the lines imported
// from them before, which the log keeps.
func (s Summary) Line(kind string) string {
	l := "imported " + words.Plural(len(s.Files)-s.stopped, kind)
	if s.inPart > 0 {
		// The lines before a stop are in the log: such a file is
		// imported in part, not not at all.
		l += fmt.Sprintf(" and %d in part", s.inPart)
	}
	l += fmt.Sprintf(": %s appended", words.Plural(s.Appended, "line"))
	if s.Lost > 0 {
		// The appends under way when the server went away lost their
		// answers, not necessarily their lines.
		l += " (perhaps more: the answers to appends under way were lost with the server)"
	} else if s.unknown {
		l += " (perhaps more: the answer to an append under way at the interrupt was lost)"
	}
	l += fmt.Sprintf(", %d already in the log", s.Skipped)
	if n := len(s.Errors) - s.unread; n > 0 {
		l += fmt.Sprintf("; %d stopped at an error", n)
		if s.Diverged > 0 {
			l += " (" + s.changed() + ")"
		}
	}
	if s.unread > 0 {
		l += fmt.Sprintf("; %s not read", words.Plural(s.unread, "folder"))
	}
	switch {
	case s.Interrupted > 0 && s.NotStarted > 0:
		l += fmt.Sprintf("; %d stopped part way and %d not started: the import was interrupted (importing again resumes)", s.Interrupted, s.NotStarted)
	case s.Interrupted > 0:
		l += fmt.Sprintf("; %d stopped part way: the import was interrupted (importing again resumes)", s.Interrupted)
	case s.NotStarted > 0:
		l += fmt.Sprintf("; %s not started: the import was interrupted (importing again resumes)", words.Plural(s.NotStarted, kind))
	}
	return l
}

// nothingNote is the note of the file named name that held nothing to
// import (what: "empty file", "only blank lines") and whose import gave
// r: "<name>: empty file, nothing to import yet", or, imported asNew,
// nothing to import as new; and, when the import found the file changed
// under Logbook, what the old history keeps and that the new one begins
// once an import --as-new finds a line in the file (a plain import
// stops at it, DivergedError, until then).
func nothingNote(name, what string, asNew bool, r FileResult) string {
	if !asNew {
		return fmt.Sprintf("%s: %s, nothing to import yet", name, what)
	}
	if r.Changed == "" {
		return fmt.Sprintf("%s: %s, nothing to import as new", name, what)
	}
	return fmt.Sprintf("%s: %s, nothing to import as new: it was %s under Logbook; session %s keeps the %s imported from it before, and its new history, session %s, begins once an import --as-new finds a line in it", name, what, r.Changed, r.From, words.Plural(r.Kept, "line"), r.Session)
}

// changed says the Diverged files of the summary: how many were
// truncated and how many rewritten under Logbook, and the lines imported
// from them before, which the log keeps: "1 truncated under Logbook: the
// log keeps the 4 lines imported from it before".
func (s Summary) changed() string {
	var what []string
	if s.truncated > 0 {
		what = append(what, fmt.Sprintf("%d truncated", s.truncated))
	}
	if r := s.Diverged - s.truncated; r > 0 {
		what = append(what, fmt.Sprintf("%d rewritten", r))
	}
	them := "it"
	if s.Diverged > 1 {
		them = "them"
	}
	return fmt.Sprintf("%s under Logbook: the log keeps the %s imported from %s before", strings.Join(what, " and "), words.Plural(s.kept, "line"), them)
}

// Err returns why the import ends non-zero, nil when no file stopped
// early: files that changed under Logbook, files stopped because the
// server went away, or files stopped at an error. paused, if not "", is
// why the server takes no appends (its disk is full) and is named.
func (s Summary) Err(noun, paused string) error {
	if s.Diverged > 0 && s.Diverged == len(s.Errors) {
		return fmt.Errorf("%s changed under Logbook (errors above); the log keeps what was imported; import with --as-new to record them as new histories", words.Plural(s.Diverged, noun))
	}
	if len(s.Errors) == 0 {
		return nil
	}
	why := ""
	if paused != "" {
		why = "; serve says " + paused + ": free space there and import again"
	}
	if s.Lost == len(s.Errors) {
		return fmt.Errorf("%s stopped early: the server went away (did `logbook serve` stop?); the lines before each error are imported, and so may be the ones whose append was under way (their answers were lost): importing again finds them and resumes after them", words.Plural(s.Lost, noun))
	}
	if s.Lost > 0 {
		why += fmt.Sprintf("; %d because the server went away (did `logbook serve` stop?; the lines whose append was under way may be in the log)", s.Lost)
	}
	if s.Diverged > 0 {
		why += fmt.Sprintf("; %d changed under Logbook (import with --as-new to record them as new histories)", s.Diverged)
	}
	files := len(s.Errors) - s.unread // the errors of files, not of folders
	if s.unread > 0 && files == 0 {
		return fmt.Errorf("%s not read (errors above): the files in %s were not looked for%s", words.Plural(s.unread, "folder"), itOrThem(s.unread), why)
	}
	if s.unread > 0 {
		why += fmt.Sprintf("; %s not read, the files in %s not looked for", words.Plural(s.unread, "folder"), itOrThem(s.unread))
	}
	if len(s.Errors)-s.refused-s.Diverged == 0 {
		// Nothing a second run would resume: files never read, or
		// changed under Logbook.
		return fmt.Errorf("%s not imported (errors above)%s", words.Plural(files, noun), why)
	}
	again := "importing again resumes at the line that stopped it"
	if s.invalid > 0 {
		again += " (a line that does not parse, or that reuses an earlier line's uuid with other content, must be fixed first, or passed with --skip-invalid)"
	}
	return fmt.Errorf("%s stopped early (errors above)%s; the lines before each error are imported, and %s", words.Plural(files, noun), why, again)
}

// Run imports the plan's units with r on r.Workers goroutines, a group
// (Format.Group) in order on one, and returns the summary. On a terminal
// progress it shows a one-line counter. It stops handing out units when
// ctx is done (counting those not handed out, Summary.NotStarted), and
// returns once every worker has.
func (p *Plan[U]) Run(ctx context.Context, r Runner[U], progress io.Writer) Summary {
	prog := newProgress(progress, len(p.units))
	var (
		mu      sync.Mutex
		sum     Summary
		nothing []string // notes of files with nothing to import yet
		wg      sync.WaitGroup
	)
	groups := [][]U{}
	if p.f.Group != nil {
		groups = p.f.Group(p.units)
	} else {
		for _, u := range p.units {
			groups = append(groups, []U{u})
		}
	}
	if r.Begin != nil {
		r.Begin(ctx, p.units)
	}
	work := make(chan []U)
	for range max(r.Workers, 1) {
		wg.Go(func() {
			for grp := range work {
				for _, u := range grp {
					rs, err := r.Import(ctx, u, prog.line)
					path, _ := p.f.File(u)
					// An error the interrupt caused stops the file part way;
					// it is said once, by the caller, not file by file.
					interrupted := err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
					mu.Lock()
					if what, ok := p.yet[path]; ok && err == nil && len(rs) == 1 && rs[0].Appended == 0 && rs[0].Lines == 0 && len(rs[0].Warnings) == 0 {
						nothing = append(nothing, nothingNote(cmp.Or(p.given[path], path), what, r.AsNew, rs[0]))
						rs = nil
					}
					if err != nil {
						sum.stopped += len(rs)
						if _, diverged := errors.AsType[*DivergedError](err); !diverged {
							for _, r := range rs {
								if r.Appended+r.Skipped > 0 {
									sum.inPart++
								}
							}
						}
					}
					for _, r := range rs {
						sum.Files = append(sum.Files, summaryFile(r))
						sum.Appended += r.Appended
						sum.Skipped += r.Skipped
						if err != nil && r.Changed != "" {
							sum.kept += r.Kept
							if r.Changed == "truncated" {
								sum.truncated++
							}
						}
					}
					if interrupted {
						sum.Interrupted++
						sum.unknown = sum.unknown || errors.Is(err, natslog.ErrUnknownOutcome)
					} else if err != nil {
						sum.Errors = append(sum.Errors, err.Error())
						if _, ok := errors.AsType[*DivergedError](err); ok {
							sum.Diverged++
						}
						if r.Lost != nil && r.Lost(err) {
							sum.Lost++
						}
						if errors.Is(err, hookspool.ErrNotRegular) || errors.Is(err, ErrPrivate) {
							sum.refused++
						}
						if _, ok := errors.AsType[*LineError](err); ok {
							sum.invalid++
						}
					}
					mu.Unlock()
					prog.file()
				}
			}
		})
	}
	for _, grp := range groups {
		if ctx.Err() != nil {
			sum.NotStarted += len(grp)
			continue
		}
		select {
		case work <- grp:
		case <-ctx.Done():
			sum.NotStarted += len(grp)
		}
	}
	close(work)
	wg.Wait()
	prog.done()
	slices.Sort(nothing)
	sum.NotTranscripts = append(nothing, p.skipped...)
	sum.Errors = append(sum.Errors, p.errs...)
	sum.refused += len(p.errs)
	sum.unread = p.unread
	if sum.Files == nil {
		sum.Files = []SummaryFile{}
	}
	return sum
}

func summaryFile(r FileResult) SummaryFile {
	w := r.Warnings
	if w == nil {
		w = []string{}
	}
	return SummaryFile{Path: r.Path, Session: r.Session, Appended: r.Appended, Skipped: r.Skipped, Lines: r.Lines, Torn: r.Torn, Warnings: w, Changed: r.Changed, Kept: r.Kept}
}

// PathName returns path as an import's notes and errors name it: as it
// is, or, when it holds a control character (an escape sequence, a line
// break: a directory's name is anyone's to choose), quoted as a Go
// string ("/tmp/x\x1b[2J\ny.jsonl"), so that it reads as one name and
// as no other.
func PathName(path string) string {
	if strings.ContainsFunc(path, unicode.IsControl) {
		return strconv.Quote(path)
	}
	return path
}

// namedPaths checks the paths an import names before anything is read
// or appended. A path that does not exist, a named file that is not a
// regular file, a named file without f's extension and a named file
// f.Looks refuses are errors naming the path; a named file that is empty
// (nothing to import yet) is a note.
func namedPaths[U any](f Format[U], paths, private []string) (errs, notes []string) {
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Sprintf("%s: no such file or directory", PathName(p)))
			continue
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", PathName(p), errors.Unwrap(err)))
			continue
		case st.IsDir():
			continue
		case !st.Mode().IsRegular():
			errs = append(errs, fmt.Sprintf("%s: not a regular file; want %s%s", PathName(p), f.What, f.Hint))
			continue
		case f.Ext != "" && !strings.HasSuffix(p, f.Ext):
			errs = append(errs, fmt.Sprintf("%s: not a %s file; want %s%s", PathName(p), f.Ext, f.What, f.Hint))
			continue
		}
		if what, ok := nothingYet(p, st.Size()); ok {
			notes = append(notes, fmt.Sprintf("%s: %s, nothing to import yet", PathName(p), what))
			continue
		}
		if privatePath(p, private) {
			continue // the import refuses it, naming where it leads
		}
		if ok, why := f.Looks(p); !ok {
			if err := unreadableFirst(p); err != nil {
				errs = append(errs, err.Error())
			} else if strings.HasPrefix(why, "not "+f.What) {
				errs = append(errs, fmt.Sprintf("%s: %s", PathName(p), why))
			} else {
				errs = append(errs, fmt.Sprintf("%s: not %s: %s", PathName(p), f.What, why))
			}
		}
	}
	return errs, notes
}

// privatePath reports whether the file at path leads into one of dirs
// (the data dir), by a symlink or a hard link (CheckPrivate,
// CheckOpened): it is not judged as a transcript or not, so that the
// import refuses it with that reason, never reading it.
func privatePath(path string, dirs []string) bool {
	if len(dirs) == 0 {
		return false
	}
	if errors.Is(CheckPrivate(path, dirs), ErrPrivate) {
		return true
	}
	f, _, err := hookspool.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(CheckOpened(f, path, dirs), ErrPrivate)
}

// nothingYet reports whether the file at path, of size bytes, holds no
// line to import yet, and what it holds instead: "empty file", or "only
// blank lines".
func nothingYet(path string, size int64) (string, bool) {
	if size == 0 {
		return "empty file", true
	}
	if blank, err := BlankOnly(context.Background(), path); err == nil && blank {
		return "only blank lines", true
	}
	return "", false
}

// unreadableFirst returns the error of a file whose first line is longer
// than MaxLineBytes, naming the file and line 1 as an import names such
// a line anywhere in a file, or of one that cannot be opened (a link
// that loops or dangles, a file it may not read: an *fs.PathError naming
// it); nil for any other file. The formats' Looks functions refuse such
// a file at once (so a sparse file of a terabyte is not read through);
// this tells it from one of another format.
func unreadableFirst(path string) error {
	_, err := FirstLine(path)
	if _, open := errors.AsType[*fs.PathError](err); errors.Is(err, ErrLineTooLong) || open {
		return err
	}
	return nil
}

// emptyDirs returns a note for each directory of paths under which found
// (the files an import discovered and takes) has nothing; one where
// looked (every file it discovered) has files, all set aside, says they
// are skipped above.
func emptyDirs(paths, found, looked []string, what string) []string {
	var notes []string
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		dir := filepath.Clean(p)
		under := func(f string) bool {
			rel, err := filepath.Rel(dir, f) // "." holds every relative path but ../
			return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
		}
		switch {
		case slices.ContainsFunc(found, under):
		case slices.ContainsFunc(looked, under):
			notes = append(notes, fmt.Sprintf("%s: no %s under it but the files skipped above", PathName(p), what))
		default:
			notes = append(notes, fmt.Sprintf("%s: no %s under it", PathName(p), what))
		}
	}
	return notes
}

// itOrThem is "it" for one, else "them".
func itOrThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

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
