package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxLinkMounts bounds the read-only mounts a WorkspaceWrite command gets
// for files with hard links out of reach (see linkPlan). Each mount costs
// bubblewrap more than the one before (it reads the mount table for each),
// so past this many, whole directories are bound instead (linkPlan).
const maxLinkMounts = 64

// linkPlan is what a WorkspaceWrite command sees read-only because of hard
// links. A regular file of the workspace is linked when it has more links
// than the names the scan found for it in the workspace outside the
// protected paths: another name, outside the workspace (pnpm's store,
// uv's cache, another project) or in a protected path (a second name of
// .envrc), would change with it. Protected files are thereby checked by
// inode: every other name of one is read-only too. Linked files are bound
// read-only onto themselves; a directory is bound read-only as a whole
// when it holds linked files and at most t others at any depth, t the
// smallest of 0, 1, 4, 16, … that keeps the mounts within maxLinkMounts
// (a pnpm node_modules/.pnpm needs one mount: its lock.yaml is the only
// other file). The workspace itself is never bound as a whole.
type linkPlan struct {
	mounts []string // files and directories, bound read-only in this order
	files  int      // linked files
	others int      // files read-only because they share a directory bound whole
}

// inodeKey names a file: device and inode number.
type inodeKey struct{ dev, ino uint64 }

// linkDir is one directory of the workspace as the scan walked it, in
// pre-order: parent < index.
type linkDir struct {
	path   string
	parent int   // -1 for the workspace
	plain  int64 // regular files here that are not linked
	linked int64 // linked files here
}

// linkFile is a regular file with more than one link.
type linkFile struct {
	dir  int
	name string
	key  inodeKey
}

// linkWalk collects, during scanWorkspace's walk, what linkPlan needs.
type linkWalk struct {
	ws    string
	dirs  []linkDir
	multi []linkFile
	seen  map[inodeKey]uint64 // names found, by inode
	nlink map[inodeKey]uint64
}

func newLinkWalk(ws string) *linkWalk {
	return &linkWalk{ws: ws, seen: map[inodeKey]uint64{}, nlink: map[inodeKey]uint64{}}
}

// dir records directory path (child of dir parent) and returns its index.
func (w *linkWalk) dir(path string, parent int) int {
	w.dirs = append(w.dirs, linkDir{path: path, parent: parent})
	return len(w.dirs) - 1
}

// file records the regular file name in the open directory d, index dir.
func (w *linkWalk) file(d *os.File, dir int, name string) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Nlink <= 1 {
		w.dirs[dir].plain++ // a file the worker cannot stat, the command cannot open
		return
	}
	k := inodeKey{uint64(st.Dev), st.Ino}
	w.multi = append(w.multi, linkFile{dir, name, k})
	w.seen[k]++
	w.nlink[k] = uint64(st.Nlink)
}

// plan returns the linkPlan of what was walked, or an error if even whole
// directories would need more than maxLinkMounts mounts.
func (w *linkWalk) plan() (linkPlan, error) {
	var foreign []linkFile
	for _, f := range w.multi {
		if w.seen[f.key] < w.nlink[f.key] {
			foreign = append(foreign, f)
			w.dirs[f.dir].linked++
		} else {
			w.dirs[f.dir].plain++ // every name is in the workspace
		}
	}
	if len(foreign) == 0 {
		return linkPlan{}, nil
	}
	// Totals over each subtree: children come after their parents.
	plain := make([]int64, len(w.dirs))
	linked := make([]int64, len(w.dirs))
	for i := len(w.dirs) - 1; i >= 0; i-- {
		plain[i] += w.dirs[i].plain
		linked[i] += w.dirs[i].linked
		if p := w.dirs[i].parent; p >= 0 {
			plain[p] += plain[i]
			linked[p] += linked[i]
		}
	}
	covered := make([]bool, len(w.dirs)) // bound whole, or inside one that is
	whole := make([]bool, len(w.dirs))
	for t := int64(0); ; t = max(1, 4*t) {
		n, others := 0, int64(0)
		for i, d := range w.dirs {
			covered[i], whole[i] = false, false
			if d.parent >= 0 && covered[d.parent] {
				covered[i] = true
				continue
			}
			if d.parent >= 0 && linked[i] > 0 && plain[i] <= t {
				covered[i], whole[i] = true, true
				n++
				others += plain[i]
			}
		}
		for _, f := range foreign {
			if !covered[f.dir] {
				n++
			}
		}
		if n <= maxLinkMounts {
			p := linkPlan{files: len(foreign), others: int(others)}
			for i, d := range w.dirs {
				if whole[i] {
					p.mounts = append(p.mounts, d.path)
				}
			}
			for _, f := range foreign {
				if !covered[f.dir] {
					p.mounts = append(p.mounts, filepath.Join(w.dirs[f.dir].path, f.name))
				}
			}
			return p, nil
		}
		if t > plain[0] {
			return linkPlan{}, fmt.Errorf("%d files have hard links outside the workspace or into protected paths (a package store's?), in more than %d places to make read-only even as whole directories", len(foreign), maxLinkMounts)
		}
	}
}
