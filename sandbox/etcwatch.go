package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// EtcWatch keeps what other users may not read in /etc (the directories
// and files a restricted command gets covered, see Spec.Etc) for as long
// as nothing that decides it has changed, so that a restricted start does
// not search /etc each time. It is exact: a start uses what it holds only
// when, at that moment, the kernel has reported no change since the
// search that made it, and searches again otherwise.
//
// What it watches (inotify, on /etc and each directory the search
// entered, set before the directory is read, and on each regular file it
// saw): a mode or owner change of an entry (IN_ATTRIB; a file's own
// watch sees one made through another hard link, and a new link), an
// entry made, removed or renamed in or out, a watched directory removed
// or moved, the watch queue overflowing; and
// any change to this process's mounts (/proc/self/mountinfo read again
// and compared), since a mount over a part of /etc changes what lies
// there without an event. A file's contents are not watched: they do not
// decide what is covered. Where inotify cannot watch every directory (the
// user's watch limit), or /proc cannot be read, it searches at every
// start, as without it.
//
// An EtcWatch is safe for concurrent use; one per process (a worker's)
// is enough. Close releases its descriptors; the zero value and nil are
// not usable (use NewEtcWatch), but a nil *EtcWatch in Spec.Etc means no
// watch: a search per start.
type EtcWatch struct {
	root string
	mu   sync.Mutex
	// Guarded by mu.
	ino    int    // inotify descriptor of the current search; -1: none
	mounts []byte // /proc/self/mountinfo as of the current search
	valid  bool   // dirs and files hold the search since which nothing changed
	closed bool
	dirs   []string
	files  []string
	// searches counts the searches made, for tests; remounts, those
	// made for a change of the mount table alone (another process's
	// mount anywhere).
	searches, remounts int
}

// NewEtcWatch returns an EtcWatch of /etc. It searches nothing until the
// first start asks.
func NewEtcWatch() *EtcWatch { return newEtcWatch("/etc") }

func newEtcWatch(root string) *EtcWatch { return &EtcWatch{root: root, ino: -1} }

// Close releases w's descriptors; w then searches at every call, as a
// nil one does. It is safe to call more than once.
func (w *EtcWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disarmLocked()
	w.closed = true
	return nil
}

// etcWatchMask is what, in a watched directory, may change what is
// covered.
const etcWatchMask = unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

// secrets returns what etcSecrets(root) returns now: the held result
// when nothing changed since it was searched, else a new search. A nil
// w searches. The caller owns the returned slices.
func (w *EtcWatch) secrets() (dirs, files []string) {
	if w == nil {
		return etcSecrets("/etc")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.valid && !w.changedLocked() {
		return slices.Clone(w.dirs), slices.Clone(w.files)
	}
	w.disarmLocked()
	w.searches++
	if w.closed || !w.armLocked() {
		return etcSecretsWatched(w.root, nil)
	}
	ok := true
	w.dirs, w.files = etcSecretsWatched(w.root, func(p string, dir bool) {
		mask := uint32(etcWatchMask)
		if !dir {
			mask = unix.IN_ATTRIB | unix.IN_DONT_FOLLOW
		}
		if ok {
			// A path this process may not read cannot be watched: the
			// watch of its directory sees what is done to it through
			// there. Through another hard link, it is a file this user
			// may not read, whose commands run as this user too.
			_, err := unix.InotifyAddWatch(w.ino, p, mask)
			if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EACCES) {
				ok = false // a path unwatched: searched again next time
			}
		}
	})
	w.valid = ok
	return slices.Clone(w.dirs), slices.Clone(w.files)
}

// armLocked opens the inotify descriptor and the mount table a search is
// watched by; false when either cannot be had.
func (w *EtcWatch) armLocked() bool {
	fd, m, ok := armInotify()
	if ok {
		w.ino, w.mounts = fd, m
	}
	return ok
}

// armInotify opens a non-blocking inotify descriptor and reads this
// process's mount table (/proc/self/mountinfo), which a watch compares
// again before trusting what it holds (a mount changes what lies under a
// path without an inotify event); ok is false, nothing left open, when
// either cannot be had.
func armInotify() (fd int, mounts []byte, ok bool) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return -1, nil, false
	}
	mounts, err = os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		unix.Close(fd)
		return -1, nil, false
	}
	return fd, mounts, true
}

// disarmLocked drops the current search and its watches.
func (w *EtcWatch) disarmLocked() {
	w.valid = false
	if w.ino >= 0 {
		unix.Close(w.ino)
		w.ino = -1
	}
	w.mounts = nil
}

// changedLocked reports whether the kernel reported a change since the
// current search: an inotify event waiting (or the queue's overflow), or
// a change of the mount table.
func (w *EtcWatch) changedLocked() bool {
	var buf [unix.SizeofInotifyEvent + unix.NAME_MAX + 1]byte
	n, err := unix.Read(w.ino, buf[:])
	if n > 0 || err != unix.EAGAIN {
		return true // an event, or a descriptor that no longer answers
	}
	// A mount made or removed changes the table. One removed and another
	// made in its place with the same id and device (both are reused)
	// leaves it as it was, but the removal also ended the watches inside
	// the removed file system (IN_UNMOUNT, IN_IGNORED): read above.
	m, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || !bytes.Equal(m, w.mounts) {
		w.remounts++
		return true
	}
	return false
}

// etcSecretsWatched is etcSecrets, calling watch (when not nil) with
// each directory it is about to read (dir true), root first, before it
// reads it, and with each regular file it looked at (dir false), before
// it looks.
func etcSecretsWatched(root string, watch func(p string, dir bool)) (dirs, files []string) {
	n := 0
	_ = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		n++
		if err != nil {
			if de != nil && de.IsDir() && p != root {
				dirs = append(dirs, p)
				return filepath.SkipDir
			}
			return nil
		}
		if n > etcScanEntries && de.IsDir() {
			dirs = append(dirs, p)
			return filepath.SkipDir
		}
		if !de.IsDir() && !de.Type().IsRegular() {
			return nil // links, sockets, fifos
		}
		if !de.IsDir() && watch != nil {
			watch(p, false)
		}
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case de.IsDir() && perm&0o005 != 0o005 && p != root:
			if watch != nil {
				watch(p, true) // not searched, but a mount there may go
			}
			dirs = append(dirs, p)
			return filepath.SkipDir
		case !de.IsDir() && perm&0o004 == 0:
			files = append(files, p)
		case de.IsDir() && watch != nil:
			watch(p, true) // WalkDir reads it once this returns
		}
		return nil
	})
	return dirs, files
}
