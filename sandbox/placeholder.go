package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Placeholders. A WorkspaceWrite command keeps the protected names missing
// from the workspace's top level missing by mounting an empty read-only
// directory (or file) over each, inside its boundary. A mount needs a
// mount point, and the workspace is the host's own directory, shared live
// with it, so the mount point, the placeholder, is on the host: an empty
// directory or file of mode 0000. Removing it while another command has
// its mount there would detach that mount (the kernel does so for a mount
// point removed from another mount namespace) and let that command create
// the name. A WorkspaceWrite command holds its workspace's lock
// exclusively (see lock), from before it decides which names are missing
// until its boundary is gone, in every worker process on the host; so the
// placeholders it makes are its own, and it removes them at its end. A
// worker that dies drops its locks with its descriptors; what it left is
// taken as missing names by the next command there, and removed at its
// end. With Spec.Ledger each placeholder is recorded before it is made
// (see ledger.go), and SweepPlaceholders removes what a dead worker left
// without waiting for a next command.

// isPlaceholder reports whether fi describes a placeholder: an empty
// regular file, or a directory, of mode 0000 (a directory's emptiness is
// checked by rmdir). Neither git nor an agent makes such a file, and a
// restricted command cannot (the top-level protected names are mount
// points inside its boundary).
func isPlaceholder(fi fs.FileInfo) bool {
	if fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return false
	}
	return fi.IsDir() || fi.Mode().IsRegular() && fi.Size() == 0
}

// claim takes l's locks (see lock), waiting as long as ctx lets it, then
// plans the layout again (replan) and refuses if any path it mounts has
// come to resolve elsewhere meanwhile (a directory swapped for a link
// while it waited). In WorkspaceWrite it then searches the workspace
// (scan) and decides the top-level protected names: one that exists is
// bound read-only (l.protected), one that is missing or is a placeholder
// is kept missing (l.absentDirs, l.absentFiles), its placeholder made if
// need be. release ends it. Its errors wrap ErrRefused. A nil replan
// says l was planned under its locks, which it holds already
// (lockFirst): claim neither takes them nor plans again.
func (l *layout) claim(ctx context.Context, replan func() (layout, error)) error {
	if replan != nil {
		if err := l.lock(ctx); err != nil {
			return err
		}
	}
	// The names missing now are recorded (durably: one fdatasync) before any
	// placeholder is made, in one write for them all (one found missing
	// later is recorded on its own, their inodes once bubblewrap is
	// forked): the write runs while the layout is planned again and the
	// workspace searched, which it does not depend on. A start planned
	// under its locks (lockFirst) began it as soon as it held them.
	recorded := l.recorded
	l.recorded = nil
	if recorded == nil {
		recorded = l.record()
	}
	if replan != nil {
		fresh, err := replan()
		if err == nil {
			if d := l.differs(fresh); d != "" {
				err = errors.New(d)
			} else {
				// The same but for the places mounts show hidden paths
				// at: those of the mount table as it is now are covered.
				l.hideDirs, l.hideFiles, l.aliases = fresh.hideDirs, fresh.hideFiles, fresh.aliases
			}
		}
		if err != nil {
			<-recorded
			l.release()
			return fmt.Errorf("%w: workspace %s changed while the command waited for it: %v", ErrRefused, l.ws, err)
		}
	}
	if l.mode != WorkspaceWrite {
		return nil
	}
	err := l.scan(l.extra)
	if rerr := <-recorded; err == nil && rerr != nil {
		err = fmt.Errorf("%w: workspace %s: %v: run it in read_only or full_access", ErrRefused, l.ws, rerr)
	}
	if err != nil {
		l.release()
		return err
	}
	fail := func(err error) error {
		l.release()
		return fmt.Errorf("%w: workspace %s: %v: run it in read_only or full_access", ErrRefused, l.ws, err)
	}
	for _, name := range ProtectedNames() {
		p := filepath.Join(l.ws, name)
		if err := l.claimName(p, slices.Contains(absentDirNames(), name)); err != nil {
			return fail(err)
		}
	}
	for _, a := range l.absentNamed {
		if err := l.claimName(a.path, a.dir); err != nil {
			return fail(err)
		}
	}
	// The inodes of the placeholders made reach the record later (see
	// recordInodes): before they do, a sweep knows each by its Since.
	slices.Sort(l.protected)
	return nil
}

// record starts the ledger's record of the top-level protected names
// that are missing from the workspace now, or placeholders (one durable
// write, on its own goroutine), and returns the channel its error comes
// on, nil at once where nothing is recorded (no ledger, or not
// WorkspaceWrite). The caller reads the channel before it writes the
// ledger again or makes a placeholder.
//
// The caller need not hold l's locks yet (recordEarly). The record names
// what the start may make, each name with a time (Since: when it was
// found missing, or the placeholder's last change), and a sweep takes a
// recorded name's entry only while no command holds the workspace's
// lock, only if it is still a placeholder and only if it changed since
// that time. While no command holds the lock no live start has a
// placeholder there, so what a sweep takes is one a dead start left,
// which is what a sweep is for. A recorded name that a person's file
// holds by the time the start has its lock is bound as it is (no
// placeholder: a sweep leaves it); a name that was neither missing nor
// a placeholder here and is missing under the lock is recorded on its
// own before it is made (claimName).
func (l *layout) record() <-chan error {
	recorded := make(chan error, 1)
	if l.mode != WorkspaceWrite || l.ledger == nil {
		recorded <- nil
		return recorded
	}
	var missing []ledgerEntry
	for _, name := range ProtectedNames() {
		dir := slices.Contains(absentDirNames(), name)
		switch fi, err := os.Lstat(filepath.Join(l.ws, name)); {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, ledgerEntry{Name: name, Dir: dir, Since: time.Now().UnixNano()})
		case err == nil && isPlaceholder(fi) && fi.IsDir() == dir:
			// Another start's placeholder (one waited for, before the
			// locks: it goes at that start's end) or one a dead start
			// left: recorded as of its last change, so that the one
			// this start makes in its place, or takes over, is its own
			// to a sweep too.
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				missing = append(missing, ledgerEntry{Name: name, Dir: dir, Since: st.Ctim.Nano()})
			}
		}
	}
	go func() { recorded <- l.ledger.addAll(missing) }()
	return recorded
}

// earlyRecord is the ledger's record of the names missing from a
// WorkspaceWrite start's workspace, begun as the start began, before it
// waits for its locks and plans under them: the record's fdatasync
// overlaps them rather than the claim (see record for why the record may
// precede the locks).
type earlyRecord struct {
	ws       string // the workspace, resolved as validate resolves it
	ledger   *ledger
	recorded <-chan error
}

// recordEarly begins the record of spec's start: nil, recording
// nothing, unless spec is a WorkspaceWrite start with a Spec.Ledger and
// a workspace that resolves (validate reports one that does not).
func recordEarly(spec Spec) *earlyRecord {
	if spec.Mode != WorkspaceWrite || spec.Ledger == "" || !filepath.IsAbs(spec.Workspace) {
		return nil
	}
	ws, err := filepath.EvalSymlinks(filepath.Clean(spec.Workspace))
	if err != nil {
		return nil
	}
	l := layout{mode: WorkspaceWrite, ws: ws, ledger: newLedger(spec.Ledger, ws)}
	return &earlyRecord{ws: ws, ledger: l.ledger, recorded: l.record()}
}

// handTo gives the record to l, the start's plan, when l holds none and
// is of the record's workspace (the workspace's path could have come to
// resolve elsewhere since: the record is then dropped), and reports
// whether it did; *e is nil afterwards either way.
func handTo(e **earlyRecord, l *layout) bool {
	r := *e
	if r == nil || l.recorded != nil || l.mode != WorkspaceWrite {
		return false
	}
	if r.ws != l.ws {
		r.drop()
		*e = nil
		return false
	}
	l.ledger, l.recorded = r.ledger, r.recorded
	*e = nil
	return true
}

// drop waits for the record's write and empties it: its start ends
// without claiming the workspace. nil-safe.
func (r *earlyRecord) drop() {
	if r == nil {
		return
	}
	<-r.recorded
	r.ledger.remove()
}

// recordForked writes to the ledger, if any, bubblewrap's process (pid,
// started at start) and the device and inode of each placeholder claim
// made (one write, not waited on to reach the disk). Start calls it once
// bubblewrap is forked, so that the write overlaps bubblewrap's start
// rather than delaying it, and is made well before bubblewrap forks its
// own first child, the process a sweep must be able to find (and finds
// without it by its argv[0], should the worker die before the write:
// see SweepBoundaries). The
// placeholders are recorded by name (and Since) before they are made,
// which is what a sweep needs; the inodes only narrow what it takes for
// a placeholder. Should the write fail or be lost, the record made
// durable before stands.
func (l *layout) recordForked(pid int, start uint64) {
	if l.ledger != nil {
		l.ledger.forked(pid, start)
		_ = l.ledger.flush()
	}
}

// claimName decides top-level protected name p (a directory name if dir).
func (l *layout) claimName(p string, dir bool) error {
	for range 3 {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if l.ledger != nil && !l.ledger.has(filepath.Base(p)) {
				if err := l.ledger.add(ledgerEntry{Name: filepath.Base(p), Dir: dir, Since: time.Now().UnixNano()}); err != nil {
					return err
				}
			}
			if dir {
				err = unix.Mkdir(p, 0)
			} else {
				var fd int
				fd, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					unix.Close(fd)
				}
			}
			if l.ledger != nil {
				var fi fs.FileInfo
				var lerr error
				if err == nil {
					fi, lerr = os.Lstat(p)
				}
				switch {
				case err == nil && lerr == nil:
					lerr = l.ledger.made(filepath.Base(p), fi)
				case err != nil:
					l.ledger.drop(filepath.Base(p))
				}
				if lerr != nil {
					return lerr
				}
			}
			switch {
			case err == nil || errors.Is(err, unix.EEXIST):
				continue // look again: another command may have made it
			case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS):
				// The worker cannot create it, so its command cannot.
				return nil
			default:
				return fmt.Errorf("make placeholder %s: %w", p, err)
			}
		case err != nil:
			return fmt.Errorf("protected %s: %w", p, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", p)
		case isPlaceholder(fi) && fi.IsDir() == dir:
			if l.ledger != nil && !l.ledger.has(filepath.Base(p)) {
				// One a dead worker left, now this command's to remove.
				if err := l.ledger.add(ledgerEntry{Name: filepath.Base(p), Dir: dir}); err == nil {
					err = l.ledger.made(filepath.Base(p), fi)
				}
				if err != nil {
					return err
				}
			}
			if dir {
				l.absentDirs = append(l.absentDirs, p)
			} else {
				l.absentFiles = append(l.absentFiles, p)
			}
			return nil
		default:
			l.protected = append(l.protected, p)
			return nil
		}
	}
	return fmt.Errorf("protected %s keeps changing", p)
}

// release ends claim: it removes the placeholders of this command's
// missing names (those still placeholders: an empty file, or a directory
// rmdir can remove), then lets the locks go. Call it once the command's
// boundary is gone. Idempotent.
func (l *layout) release() {
	if l.held == nil {
		l.ledger.remove() // a start with no lock: its boundary's record alone
		return
	}
	l.removePlaceholders()
	l.ledger.remove()
	l.unlock()
}

// removePlaceholders removes the placeholders the layout made (those
// still placeholders: an entry put in their place is left), once; the
// ledger's record of them stays until release.
func (l *layout) removePlaceholders() {
	for _, p := range l.absentDirs {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && isPlaceholder(fi) {
			_ = unix.Rmdir(p)
		}
	}
	for _, p := range l.absentFiles {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && isPlaceholder(fi) {
			_ = unix.Unlink(p)
		}
	}
	l.absentDirs, l.absentFiles = nil, nil
}
