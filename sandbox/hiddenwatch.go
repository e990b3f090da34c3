package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HiddenWatch keeps the hidden paths of restricted starts (Spec.Hidden
// and Spec.Keep) resolved for as long as nothing that decides their
// resolution has changed, so that neither a start nor a worker's check
// of a workspace against them (Resolved) resolves them each time. It is
// exact: what it holds is used only when, at that moment, the kernel has
// reported no change since the resolution that made it, and the paths
// are resolved again otherwise.
//
// What it watches (inotify, each watch set before the directory is read
// or a name looked up in it): every directory a name of a hidden path, of
// a directory above one, of one read on the way to a kept directory
// (Spec.Keep) or of one of their mount aliases was looked up in, for an
// entry made, removed or renamed in or out, a mode or owner change of an
// entry or of the directory (IN_ATTRIB), the directory itself removed
// or moved, and the watch queue overflowing; and any change to this
// process's mounts (/proc/self/mountinfo read again and compared), since
// a mount changes what lies under a path without an event. So a hidden
// path made, renamed into place or replaced by a symbolic link after a
// resolution is seen at the next start. A resolution that followed a
// symbolic link, or looked into a directory this process could not
// watch (other than one it may not search either, whose answer its
// parent's watch covers), is not kept: the next call resolves again, as
// without a watch. Where inotify or /proc cannot be had, every call
// resolves.
//
// It holds the resolution of one pair of lists, the last asked for: a
// worker asks for the same lists command after command. A HiddenWatch is
// safe for concurrent use; one per process (a worker's) is enough.
// Close releases its descriptor; the zero value is not usable (use
// NewHiddenWatch), but a nil *HiddenWatch in Spec.HiddenWatch means no
// watch: a resolution per start.
type HiddenWatch struct {
	mu sync.Mutex
	// Guarded by mu.
	ino     int                    // inotify descriptor of the current resolution; -1: none
	mounts  []byte                 // /proc/self/mountinfo as of the current resolution
	watched map[string]*watchedDir // the directories watched, by path
	wds     map[int]*watchedDir    // the same, by watch descriptor
	valid   bool                   // snap holds the resolution of hide and keep since which nothing changed
	closed  bool
	hide    []string
	keep    []string
	snap    *hiddenSnap
	// resolutions counts the resolutions made, for tests; remounts,
	// those made for a change of the mount table alone (another
	// process's mount anywhere).
	resolutions, remounts int
}

// watchedDir is what a resolution asked of one directory: whether it
// read it whole (all), else the names it looked up in it, and the
// error of its watch.
type watchedDir struct {
	all   bool
	names []string
	err   error
}

// matters reports whether an event on entry name of d may change an
// answer d gave: any entry of a directory read whole, else an entry
// whose name was looked up, compared as a case-folding directory (ext4
// and F2FS casefold) may compare it: without case, and any name
// beyond ASCII, where such a directory also folds Unicode forms.
func (d *watchedDir) matters(name string) bool {
	if d.all || !isASCII(name) {
		return true
	}
	for _, n := range d.names {
		if strings.EqualFold(n, name) || !isASCII(n) {
			return true
		}
	}
	return false
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// hiddenSnap is one resolution of hidden paths hide with kept
// directories keep. It is not changed once made: callers share it.
type hiddenSnap struct {
	seen map[string]resolved               // the Resolver's, seeded into a plan's
	dirs map[string]map[string]fs.FileMode // the Resolver's listed directories
	all  []string                          // hideAround(hide, keep), then their mount aliases
	// aliases are all's mount aliases alone (withMountAliasesIn).
	aliases []string
	// paths are hide each resolved where it resolves, else cleaned
	// ("" left out), and pathAliases the mount aliases of those that
	// resolve: what a check of a workspace compares it with.
	paths       []string
	pathAliases []string
}

// NewHiddenWatch returns a HiddenWatch. It resolves nothing until the
// first call asks.
func NewHiddenWatch() *HiddenWatch { return &HiddenWatch{ino: -1} }

// Close releases w's descriptor; w then resolves at every call, as a nil
// one does. It is safe to call more than once.
func (w *HiddenWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disarmLocked()
	w.closed = true
	return nil
}

// Resolved returns hidden paths hide (Spec.Hidden, absolute) as they
// resolve now, for a check of a workspace against them: paths holds each
// resolved through its symbolic links where it resolves, else cleaned
// (an empty one is left out), in hide's order; aliases the other places
// this process's mount table shows those that resolve at
// (MountAliases). keep is Spec.Keep: the lists a start of the same
// command gives, so that the check and the start share one resolution.
// A nil w resolves. The slices are shared: the caller must not change
// them.
func (w *HiddenWatch) Resolved(hide, keep []string) (paths, aliases []string) {
	s := w.current(hide, keep)
	return s.paths, s.pathAliases
}

// plan returns what a start plans to cover for hide and keep
// (Spec.Hidden and Spec.Keep): hideAround's paths, then their mount
// aliases, and those aliases alone (withMountAliasesIn), with r (new)
// seeded with what their resolution found, so that the plan looks up
// none of them again. The slices are shared: the caller must not change
// them.
func (w *HiddenWatch) plan(hide, keep []string, r *Resolver) (all, aliases []string) {
	s := w.current(hide, keep)
	r.seen = maps.Clone(s.seen)
	r.dirs = maps.Clone(s.dirs)
	return s.all, s.aliases
}

// current returns the resolution of hide and keep as of now: the one
// held when nothing changed since it was made, else a new one.
func (w *HiddenWatch) current(hide, keep []string) *hiddenSnap {
	if w == nil {
		s, _ := resolveHiddenSnap(hide, keep, nil, nil)
		return s
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.valid && slices.Equal(hide, w.hide) && slices.Equal(keep, w.keep) && !w.changedLocked() {
		return w.snap
	}
	w.disarmLocked()
	w.resolutions++
	if w.closed || !w.armLocked() {
		s, _ := resolveHiddenSnap(hide, keep, nil, nil)
		return s
	}
	watch := func(dir, name string) error {
		d, ok := w.watched[dir]
		if !ok {
			d = &watchedDir{}
			var wd int
			wd, d.err = unix.InotifyAddWatch(w.ino, dir, etcWatchMask)
			if d.err == nil {
				d.err = localFS(dir)
			}
			if d.err == nil {
				// The same directory by another path (a bind mount)
				// shares the watch.
				if other := w.wds[wd]; other != nil {
					d = other
				}
				w.wds[wd] = d
			}
			w.watched[dir] = d
		}
		if name == "" {
			d.all = true
		} else if !slices.Contains(d.names, name) {
			d.names = append(d.names, name)
		}
		return d.err
	}
	s, watched := resolveHiddenSnap(hide, keep, watch, w.mounts)
	if !watched {
		// Correct now, but something it depends on is not watched:
		// the next call resolves again.
		w.disarmLocked()
		return s
	}
	w.hide, w.keep, w.snap, w.valid = slices.Clone(hide), slices.Clone(keep), s, true
	return s
}

// resolveHiddenSnap resolves hide and keep now, mounts being
// /proc/self/mountinfo (nil: read it now). With watch not nil, each
// directory is watched before it is looked into (Resolver.watch), and
// watched reports whether every answer is covered by a watch.
func resolveHiddenSnap(hide, keep []string, watch func(dir, name string) error, mounts []byte) (_ *hiddenSnap, watched bool) {
	if mounts == nil {
		mounts, _ = os.ReadFile("/proc/self/mountinfo")
	}
	ms := parseMountinfo(mounts)
	r := Resolver{watch: watch}
	r.List(hide)
	around := hide
	if len(keep) > 0 {
		around = hideAround(hide, keep, &r)
	}
	s := &hiddenSnap{}
	s.all, s.aliases = withMountAliasesIn(around, &r, ms)
	// What the plan asks of each (planLayout): its resolution, and
	// whether a directory lies there.
	for _, h := range s.all {
		if filepath.IsAbs(h) {
			if real, err := r.EvalSymlinks(filepath.Clean(h)); err == nil {
				r.fill(real)
			}
		}
	}
	var reals []string
	s.paths, reals = resolvePaths(&r, hide)
	s.pathAliases = mountAliasesIn(ms, reals)
	s.seen, s.dirs = r.seen, r.dirs
	return s, watch != nil && !r.unwatched
}

// errRemoteFS says a directory lies on a file system whose changes
// inotify may not report: made on another host (NFS, SMB), or by a
// user-space server (FUSE).
var errRemoteFS = errors.New("not a local file system: inotify may miss its changes")

// localFS returns nil when dir lies on a file system every change to
// which this kernel makes (and so reports to inotify): ext2/3/4, XFS,
// Btrfs, ZFS, F2FS, tmpfs, ramfs or overlayfs; errRemoteFS for any other,
// or the error of statfs(2).
func localFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, 0x2fc12fc1, // ZFS
		unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.RAMFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
		return nil
	}
	return errRemoteFS
}

// armLocked opens the inotify descriptor and reads the mount table a
// resolution is watched by; false when either cannot be had.
func (w *HiddenWatch) armLocked() bool {
	fd, m, ok := armInotify()
	if !ok {
		return false
	}
	w.ino, w.mounts, w.watched, w.wds = fd, m, map[string]*watchedDir{}, map[int]*watchedDir{}
	return true
}

// disarmLocked drops the current resolution and its watches.
func (w *HiddenWatch) disarmLocked() {
	w.valid = false
	w.snap = nil
	if w.ino >= 0 {
		unix.Close(w.ino)
		w.ino = -1
	}
	w.mounts, w.watched, w.wds = nil, nil, nil
}

// changedLocked reports whether the kernel reported a change since the
// current resolution that may change it: an inotify event on the entry
// of a watched directory that the resolution looked up (or on any entry
// of one it read whole), on the directory itself, a watch ended, the
// queue's overflow; or a change of the mount table. The events waiting
// are read: those on entries the resolution never asked about (a file
// made beside a home) leave it standing.
func (w *HiddenWatch) changedLocked() bool {
	var buf [16 * (unix.SizeofInotifyEvent + unix.NAME_MAX + 1)]byte
	for {
		n, err := unix.Read(w.ino, buf[:])
		if err == unix.EAGAIN {
			break
		}
		if err != nil || n <= 0 {
			return true // a descriptor that no longer answers
		}
		for off := 0; off < n; {
			if n-off < unix.SizeofInotifyEvent {
				return true
			}
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				return true
			}
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"))
			off = end
			const always = unix.IN_Q_OVERFLOW | unix.IN_IGNORED | unix.IN_UNMOUNT | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
			d := w.wds[int(ev.Wd)]
			if ev.Mask&always != 0 || name == "" || d == nil || d.matters(name) {
				return true
			}
		}
	}
	m, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || !bytes.Equal(m, w.mounts) {
		w.remounts++
		return true
	}
	return false
}

// ResolveHidden resolves hidden paths hide (Spec.Hidden, absolute) as
// they are now, as HiddenWatch.Resolved does without a watch: paths holds
// each resolved through its symbolic links where it resolves, else
// cleaned (an empty one left out), in hide's order; aliases the other
// places this process's mount table shows those that resolve at
// (MountAliases). The directories most of them share are read once
// (Resolver.List).
func ResolveHidden(hide []string) (paths, aliases []string) {
	var r Resolver
	r.List(hide)
	paths, reals := resolvePaths(&r, hide)
	return paths, MountAliases(reals)
}

// resolvePaths resolves each of hide with r: paths as ResolveHidden
// gives them, reals those of them that resolved.
func resolvePaths(r *Resolver, hide []string) (paths, reals []string) {
	for _, p := range hide {
		if p == "" {
			continue
		}
		real, err := r.EvalSymlinks(p)
		if err != nil {
			real = filepath.Clean(p)
		} else {
			reals = append(reals, real)
		}
		paths = append(paths, real)
	}
	return paths, reals
}
