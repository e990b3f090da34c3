package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// resolver resolves absolute paths through their symbolic links as
// filepath.EvalSymlinks does, for one plan of a start: the paths it is
// given (the hidden list, the allowlist) share most of their
// directories (the home, its .config), and each directory is looked at
// once a plan rather than once a path. It remembers nothing past the
// plan that made it, so every start sees the file system as it is then.
// The zero value is ready for use; it is not safe for concurrent use.
type resolver struct {
	seen map[string]resolved // cleaned absolute path → what it resolved to
	// dirs holds, by real path, the names in the directories list read
	// (DirNames), so that a name not there costs no lstat(2).
	dirs map[string]map[string]fs.FileMode
}

// listAt is how many of the paths list is given must lie directly in a
// directory for it to be read whole: one getdents(2) pass costs about
// what a handful of lstat(2)s do, and most credential paths are not
// there, so reading a home once answers two dozen of them.
const listAt = 6

// list reads whole (DirNames) each directory at least listAt of paths
// (clean absolute paths, others skipped) lie directly in, so that lookup
// knows a name it does not hold is not there without an lstat(2). A
// directory that does not resolve, or cannot be read, is left to
// lstat(2) name by name.
func (r *resolver) list(paths []string) {
	n := make(map[string]int)
	for _, p := range paths {
		if filepath.IsAbs(p) && filepath.Clean(p) == p && p != "/" {
			n[filepath.Dir(p)]++
		}
	}
	for dir, k := range n {
		if k < listAt {
			continue
		}
		d := r.lookup(dir)
		if d.err != nil {
			continue
		}
		if _, done := r.dirs[d.real]; done {
			continue
		}
		names, err := DirNames(d.real)
		if err != nil {
			continue
		}
		if r.dirs == nil {
			r.dirs = make(map[string]map[string]fs.FileMode)
		}
		r.dirs[d.real] = names
	}
}

// resolved is what one path resolved to: its real path and the
// file info of what lies there (never a symbolic link), or the error
// that stopped the resolution.
type resolved struct {
	real string
	fi   fs.FileInfo
	err  error
}

// eval returns the path p resolves to, as filepath.EvalSymlinks(p)
// would: p's directories resolved one by one from the root, each
// symbolic link followed. A relative p is handed to EvalSymlinks. The
// error is non-nil where EvalSymlinks's would be (its text may differ).
func (r *resolver) eval(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return filepath.EvalSymlinks(p)
	}
	res := r.lookup(filepath.Clean(p))
	return res.real, res.err
}

// stat returns what os.Stat(p) returns for a path p that eval resolved
// to (a real path, no symbolic link in it), from what eval saw of it
// where it can, else from os.Stat.
func (r *resolver) stat(p string) (fs.FileInfo, error) {
	if res, ok := r.seen[p]; ok && res.err == nil && res.real == p && res.fi != nil {
		return res.fi, nil
	}
	return os.Stat(p)
}

// lookup resolves clean absolute path p.
func (r *resolver) lookup(p string) resolved {
	if p == "/" {
		return resolved{real: "/"}
	}
	if res, ok := r.seen[p]; ok {
		return res
	}
	var res resolved
	parent := r.lookup(filepath.Dir(p))
	if parent.err != nil {
		res.err = parent.err
	} else {
		name := filepath.Base(p)
		c := filepath.Join(parent.real, name)
		var fi fs.FileInfo
		var err error
		if names := r.dirs[parent.real]; names != nil {
			if _, there := names[name]; !there {
				// What lstat(2) would have said.
				err = &fs.PathError{Op: "lstat", Path: c, Err: syscall.ENOENT}
			}
		}
		if err == nil {
			fi, err = os.Lstat(c)
		}
		switch {
		case err != nil:
			res.err = err
		case fi.Mode()&fs.ModeSymlink != 0:
			// Rare among the paths planned: the parent is real, so
			// EvalSymlinks of c is p's resolution.
			res.real, res.err = filepath.EvalSymlinks(c)
		default:
			res.real, res.fi = c, fi
		}
	}
	if r.seen == nil {
		r.seen = map[string]resolved{}
	}
	r.seen[p] = res
	return res
}
