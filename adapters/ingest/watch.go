package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// WatchConfig configures Ingester.Watch.
type WatchConfig struct {
	// Roots are the directories to follow, such as ~/.claude/projects,
	// each walked recursively: transcripts in new project directories and
	// new subagents/ directories are followed too.
	Roots []string
	// Await are directories to follow once they exist, such as an
	// agent's default folder before the agent first ran: each is looked
	// for at every rescan and followed like a root from the rescan that
	// finds it a directory (Report hears of it). One that is there at
	// the start is a root from the start.
	Await []string
	// Rescan is how often every root is walked again, so that a change
	// the file system did not notify (an overflowed event queue, a file
	// system without inotify support) is only delayed. 0 means 2 s.
	Rescan time.Duration
	// Report receives what a person should hear about, one sentence each:
	// a file truncated or replaced (never imported again as new lines), a
	// file that is not a transcript, a line that does not parse, what an
	// import warns of (FileResult.Warnings, "FILE:LINE: …", but for a torn
	// last line, which the next pass imports); a
	// sentence starting "INFO: " is news, not a fault (an awaited folder
	// that appeared). Called from Watch's goroutine; nil discards.
	Report func(msg string)
	// Imported, if set, is called after each file import that appended
	// lines, from Watch's goroutine.
	Imported func(FileResult)
	// Accept says whether the file at path is one of the agent's
	// transcripts, and why not (a sentence Report passes on, naming
	// neither the file nor the agent's format: the watcher names the
	// file). Required; called from Watch's goroutine.
	Accept func(path string) (ok bool, why string)
	// Import imports the file at path from its cursor and returns its
	// results, the file's own first. session is the aggregate id the
	// file's first import that appended went to ("" before one did): an
	// agent whose file names its session only by its name or first lines
	// imports it there again (a renamed or rewritten file stays in its
	// session). Required; called from Watch's goroutine, with a ctx that
	// marks a live read (lines read as the agent writes them). Watch
	// calls it for up to WatchImporters files at once, from goroutines of
	// its own: it must be safe for concurrent use.
	Import func(ctx context.Context, path, session string) ([]FileResult, error)
	// Group, if set, returns the key of the files to import in order, one
	// at a time (a Claude Code transcript and its subagents' files: their
	// session's path); files of different keys are imported at once. Nil:
	// every file is a key of its own. Called from Watch's goroutine.
	Group func(path string) string
}

// WatchImporters is how many files Watch imports at once when it finds
// several changed (at its start, every file under its roots): their runs
// reach the log together, where group commit merges them into fewer
// atomic batches, instead of each file waiting for the one before it.
const WatchImporters = 16

// watched is what Watch remembers of one transcript file.
type watched struct {
	dev, ino uint64
	size     int64 // the file's size when last imported
	diverged bool  // truncated or replaced: followed no more
	skip     bool  // not a transcript
	special  bool  // not a regular file (a FIFO, a device): never opened
	failed   string
	// live is set once the file's lines are read as the agent writes
	// them: after its first import, or from the start for a file that
	// appeared after Watch started (but for its lines dated more than
	// HistoryAge before their receipt: a copy, a restore). What a file
	// held when Watch started, or when the awaited directory it is in
	// appeared, is history (events.Observation.Live).
	live bool
	// appeared is set while the file, which appeared after Watch started,
	// has not been read whole yet: until a read appends lines and ends at
	// a complete line (a copy is written in chunks, the first may find it
	// empty), a line in it dated more than HistoryAge before its receipt
	// was there before the file appeared (a copy, a restore) and is
	// history.
	appeared bool
	// session is the aggregate id the file's first import went to: the
	// later ones are told it (WatchConfig.Import).
	session string
}

// watcher is one run of Ingester.Watch.
type watcher struct {
	in    *Ingester
	cfg   WatchConfig
	fsw   *fsnotify.Watcher
	roots map[string]string // resolved root → the root as the caller named it
	await []string          // WatchConfig.Await not yet found
	// held are the files an awaited directory held when it appeared:
	// like those under the roots at the start, what they hold then is
	// history, not lines read as the agent writes them.
	held  map[string]bool
	files map[string]*watched
	dirty map[string]bool
	// started is set after the first walk of the roots is imported:
	// files found later appeared while Watch ran.
	started bool
}

// Watch follows the agent's transcripts (*.jsonl files that cfg.Accept
// takes) under cfg.Roots as they are written, until ctx is done: new
// files, lines appended to them, and a torn last line once it is complete
// are imported by cfg.Import with the same per-file cursor as an import
// (so an import and Watch never append a line twice). It learns of changes through inotify (github.com/fsnotify/
// fsnotify) and walks every root again every cfg.Rescan. A file that no
// longer holds what was imported (ImportFile's fingerprint check: it
// shrank, or another file with other lines took its name) is reported and
// followed no more while Watch runs; its lines are never imported again as
// new ones, and the session records session.transcript_diverged. It returns nil when ctx is done, and an
// error only when it cannot start: a root that is missing or not a
// directory, or no inotify instance.
func (in *Ingester) Watch(ctx context.Context, cfg WatchConfig) error {
	if len(cfg.Roots)+len(cfg.Await) == 0 {
		return errors.New("watch transcripts: no directory")
	}
	if cfg.Accept == nil || cfg.Import == nil {
		return errors.New("watch transcripts: no Accept or Import")
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 2 * time.Second
	}
	if cfg.Report == nil {
		cfg.Report = func(string) {}
	}
	w := &watcher{in: in, cfg: cfg, roots: map[string]string{}, files: map[string]*watched{}, dirty: map[string]bool{}}
	for _, r := range cfg.Roots {
		st, err := os.Stat(r)
		if err != nil {
			return fmt.Errorf("watch transcripts: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("watch transcripts: %s is not a directory", r)
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return fmt.Errorf("watch transcripts: %w", err)
		}
		w.roots[filepath.Clean(real)] = filepath.Clean(r)
	}
	w.await = append(w.await, cfg.Await...)
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch transcripts: %w", err)
	}
	defer fsw.Close()
	w.fsw = fsw
	for real := range w.roots {
		w.addTree(real)
	}
	w.found(false)
	w.rescan()
	w.process(ctx)
	w.started = true
	t := time.NewTicker(cfg.Rescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return nil
			}
			w.handle(ev)
			// Take what else is queued, so a burst of writes to one file
			// costs one import.
			for more := true; more; {
				select {
				case ev, ok := <-fsw.Events:
					if !ok {
						return nil
					}
					w.handle(ev)
				default:
					more = false
				}
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return nil
			}
			w.cfg.Report(fmt.Sprintf("watch transcripts: %v (walking every directory again)", err))
			w.rescan()
		case <-t.C:
			w.rescan()
		}
		w.process(ctx)
	}
}

// name returns path, found under a resolved root, as the caller named
// that root.
func (w *watcher) name(path string) string {
	for real, named := range w.roots {
		if rel, err := filepath.Rel(real, path); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join(named, rel)
		}
	}
	return path
}

// addTree watches dir and every directory below it, and marks the
// transcripts found there dirty. Errors (a directory removed meanwhile,
// the inotify watch limit) are reported; the rescan covers what they hide.
func (w *watcher) addTree(dir string) {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if err := w.fsw.Add(p); err != nil {
				w.cfg.Report(fmt.Sprintf("watch %s: %v (found by rescans only)", w.name(p), err))
			}
			return nil
		}
		if strings.HasSuffix(p, ".jsonl") {
			w.dirty[w.name(p)] = true
		}
		return nil
	})
	if err != nil {
		w.cfg.Report(fmt.Sprintf("watch transcripts: %v", err))
	}
}

// handle notes what one event means.
func (w *watcher) handle(ev fsnotify.Event) {
	name := w.name(ev.Name)
	if ev.Has(fsnotify.Create) {
		if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
			w.addTree(ev.Name)
			return
		}
	}
	if !strings.HasSuffix(ev.Name, ".jsonl") {
		return
	}
	switch {
	case ev.Has(fsnotify.Create), ev.Has(fsnotify.Write):
		w.dirty[name] = true
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		// A file that comes back under this name is checked against
		// what was imported (process).
		w.dirty[name] = true
	}
}

// found makes roots of the awaited directories that now exist, and
// walks them; say tells Report of each (not at the start, when serve's
// first lines name them).
func (w *watcher) found(say bool) {
	left := w.await[:0]
	for _, d := range w.await {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			left = append(left, d)
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			left = append(left, d)
			continue
		}
		real = filepath.Clean(real)
		w.roots[real] = filepath.Clean(d)
		if say {
			w.cfg.Report(fmt.Sprintf("INFO: %s appeared: following the transcripts under it", d))
		}
		w.addTree(real)
		if w.started {
			_ = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
					if w.held == nil {
						w.held = map[string]bool{}
					}
					w.held[w.name(p)] = true
				}
				return nil
			})
		}
	}
	w.await = left
}

// rescan looks for the awaited directories, then walks every root and
// marks dirty each transcript whose size or identity changed since it
// was last imported.
func (w *watcher) rescan() {
	w.found(true)
	for real := range w.roots {
		_ = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
				return nil
			}
			name := w.name(p)
			f, ok := w.files[name]
			if !ok {
				w.dirty[name] = true
				return nil
			}
			if f.diverged || f.skip {
				return nil
			}
			if dev, ino, size, err := identity(p); err == nil && (dev != f.dev || ino != f.ino || size != f.size) {
				w.dirty[name] = true
			}
			return nil
		})
	}
}

// identity returns the device, inode and size of the file at p
// (symlinks followed).
func identity(p string) (dev, ino uint64, size int64, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return 0, 0, 0, err
	}
	dev, ino, size = identityOf(st)
	return dev, ino, size, nil
}

// identityOf returns the device, inode and size st describes.
func identityOf(st fs.FileInfo) (dev, ino uint64, size int64) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, st.Size()
	}
	return uint64(sys.Dev), sys.Ino, st.Size()
}

// process imports every dirty file: up to WatchImporters at once, the
// files of one WatchConfig.Group key one after another. What each import
// did is taken in (done) on Watch's goroutine, as each ends.
func (w *watcher) process(ctx context.Context) {
	groups := map[string][]*watchJob{}
	var keys []string
	for name := range w.dirty {
		delete(w.dirty, name)
		if ctx.Err() != nil {
			return
		}
		j := w.prepare(ctx, name)
		if j == nil {
			continue
		}
		key := name
		if w.cfg.Group != nil {
			key = w.cfg.Group(name)
		}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], j)
	}
	if len(keys) == 0 {
		return
	}
	work := make(chan []*watchJob)
	results := make(chan *watchJob)
	for range min(len(keys), WatchImporters) {
		go func() {
			for grp := range work {
				for _, j := range grp {
					j.res, j.err = w.cfg.Import(j.ctx, j.name, j.session)
					results <- j
				}
			}
		}()
	}
	pending := 0
	for _, k := range keys {
		pending += len(groups[k])
	}
	next := 0
	for pending > 0 {
		var send chan []*watchJob
		var grp []*watchJob
		if next < len(keys) {
			send, grp = work, groups[keys[next]]
		}
		select {
		case send <- grp:
			next++
		case j := <-results:
			pending--
			w.done(ctx, j)
		}
	}
	close(work)
}

// watchJob is one file's import that process hands to an importer: what
// prepare decided, then what the import returned.
type watchJob struct {
	name    string
	f       *watched
	ctx     context.Context
	session string
	changed string // what makes the file suspect, for the report
	dev     uint64
	ino     uint64
	size    int64
	res     []FileResult
	err     error
}

// prepare looks at the file name (its identity, whether it is one of
// the agent's transcripts, whether it changed under Logbook) and returns
// the import to run, or nil when there is none to run. It runs on
// Watch's goroutine.
func (w *watcher) prepare(ctx context.Context, name string) *watchJob {
	st, err := os.Stat(name)
	if err != nil {
		return nil // gone; if it comes back, its events bring it here again
	}
	dev, ino, size := identityOf(st)
	f, seen := w.files[name]
	if !st.Mode().IsRegular() {
		// A FIFO would block the open, a device such as /dev/zero never
		// ends: neither is opened. Reported once per file; a regular file
		// that takes the name later is followed as a new one.
		if seen && f.special && f.dev == dev && f.ino == ino {
			return nil
		}
		w.files[name] = &watched{dev: dev, ino: ino, size: size, special: true}
		w.cfg.Report(fmt.Sprintf("%v; it is not read, other transcripts are still followed", hookspool.NotRegular(name, st.Mode())))
		return nil
	}
	if err := w.private(name); err != nil {
		if seen && f.special && f.dev == dev && f.ino == ino {
			return nil
		}
		w.files[name] = &watched{dev: dev, ino: ino, size: size, special: true}
		w.cfg.Report(fmt.Sprintf("%v; it is not read, other transcripts are still followed", err))
		return nil
	}
	if seen && f.special {
		delete(w.files, name)
		f, seen = nil, false
	}
	changed := "" // what makes the file suspect, for the report
	switch {
	case !seen:
		f = &watched{live: w.started && !w.held[name]}
		f.appeared = f.live
		delete(w.held, name)
		w.files[name] = f
		if ok, why := w.cfg.Accept(name); !ok {
			f.skip = true
			w.cfg.Report(fmt.Sprintf("%s: %s", name, why))
			return nil
		}
	case f.skip || f.diverged:
		return nil
	case dev != f.dev || ino != f.ino:
		changed = "was replaced by another file"
	case size < f.size:
		changed = fmt.Sprintf("was truncated from %d to %d bytes", f.size, size)
	}
	// A suspect file is still handed to the import: it checks the file
	// against the fingerprint of the last line imported and, if they
	// differ, records session.transcript_diverged and appends nothing.
	ictx := ctx
	switch {
	case f.live && changed == "":
		ictx = withLiveRead(ctx, f.appeared)
	case !f.live && changed == "":
		ictx = withFoundRead(ctx)
	}
	return &watchJob{name: name, f: f, ctx: ictx, session: f.session, changed: changed, dev: dev, ino: ino, size: size}
}

// private returns an error wrapping ErrPrivate when the file name leads
// into the data dir: through symbolic links (CheckPrivate) or, opened,
// as a hard link to a file there (OpenTranscript's CheckOpened), so that
// not even its first line is read to tell whether it is a transcript.
// A file that cannot be opened passes: its import says why.
func (w *watcher) private(name string) error {
	if err := CheckPrivate(name, w.in.private); err != nil {
		return err
	}
	f, _, err := OpenTranscript(name, w.in.private)
	if errors.Is(err, ErrPrivate) {
		return err
	}
	if err == nil {
		f.Close()
	}
	return nil
}

// done takes in what the import of j did: the file's identity and size
// now, a divergence or an error reported, the session its first import
// went to. It runs on Watch's goroutine.
func (w *watcher) done(ctx context.Context, j *watchJob) {
	f, res, err, changed := j.f, j.res, j.err, j.changed
	f.dev, f.ino, f.size, f.live = j.dev, j.ino, j.size, true
	if _, ok := errors.AsType[*DivergedError](err); ok {
		f.diverged = true
		if changed == "" {
			changed = "changed"
		}
		w.cfg.Report(fmt.Sprintf("%s %s; its lines are not imported again as new ones, and it is followed no more: %v", j.name, changed, err))
		return
	}
	if err != nil {
		if ctx.Err() == nil && err.Error() != f.failed {
			f.failed = err.Error()
			w.cfg.Report(err.Error())
		}
		return
	}
	f.failed = ""
	if f.session == "" && len(res) > 0 && res[0].Appended > 0 {
		f.session = res[0].Session
	}
	for _, r := range res {
		if r.Path == j.name && r.Appended > 0 && !r.Torn {
			f.appeared = false // read whole once: what comes after is written live
		}
		// What an import warns of ("FILE:LINE: …": a line stored cut, a
		// timestamp past the clock, usage refused), serve's log tells
		// too; but for a torn last line (the last warning), which a live
		// transcript has between two writes and the next pass imports.
		ws := r.Warnings
		if r.Torn && len(ws) > 0 {
			ws = ws[:len(ws)-1]
		}
		for _, msg := range ws {
			w.cfg.Report(msg)
		}
		if r.Appended > 0 && w.cfg.Imported != nil {
			w.cfg.Imported(r)
		}
	}
}
