package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Resolver resolves absolute paths through their symbolic links as
// filepath.EvalSymlinks does, for one check or one plan of a start: the
// paths it is given (the hidden list, the allowlist, a workspace) share
// most of their directories (the home, its .config), and each directory
// is looked at once a Resolver rather than once a path. It remembers
// nothing past the Resolver, so each check and each start sees the file
// system as it is then (a HiddenWatch seeds a start's Resolver with what
// it holds only while the kernel reports no change to it). The zero value is ready for use; it is not safe
// for concurrent use.
type Resolver struct {
	seen map[string]resolved // cleaned absolute path → what it resolved to
	// dirs holds, by real path, the names in the directories List read
	// (DirNames), so that a name not there costs no lstat(2), nor one
	// whose type the directory entry gave and is no symbolic link.
	dirs map[string]map[string]fs.FileMode
	// watch, when not nil, is told of each directory before the
	// Resolver reads it (name "") or looks name up in it (real paths);
	// its error is the watch's (see HiddenWatch). unwatched is set once an answer
	// depends on what no watch told of: a directory whose watch failed
	// where the lookup in it did not fail with EACCES too, a symbolic
	// link followed, or a path handed to filepath.EvalSymlinks.
	watch     func(dir, name string) error
	unwatched bool
}

// listAt is how many of the paths list is given must lie directly in a
// directory for it to be read whole: one getdents(2) pass costs about
// what a handful of lstat(2)s do, and most credential paths are not
// there, so reading a home once answers two dozen of them.
const listAt = 6

// List reads whole (DirNames) each directory at least listAt of paths
// (clean absolute paths, others skipped) lie directly in, so that
// EvalSymlinks knows a name it does not hold is not there, and one it
// holds that is no symbolic link resolves to itself, without an
// lstat(2). A directory that does not resolve, or cannot be read, is
// left to lstat(2) name by name.
func (r *Resolver) List(paths []string) {
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
		if r.watch != nil && r.watch(d.real, "") != nil {
			r.unwatched = true
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

// resolved is what one path resolved to: its real path and the file
// info of what lies there (never a symbolic link; nil when a listed
// directory's entry answered), or the error that stopped the
// resolution.
type resolved struct {
	real string
	fi   fs.FileInfo
	err  error
}

// EvalSymlinks returns the path p resolves to, as filepath.EvalSymlinks(p)
// would: p's directories resolved one by one from the root, each
// symbolic link followed, each directory looked at once a Resolver. A
// relative p, or one with a "." or ".." component (a ".." after a link
// goes up from where the link leads), is handed to
// filepath.EvalSymlinks. The error is non-nil where EvalSymlinks's
// would be (its text may differ).
func (r *Resolver) EvalSymlinks(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		r.unwatched = true
		return filepath.EvalSymlinks(p)
	}
	res := r.lookup(p)
	return res.real, res.err
}

// stat returns what os.Stat(p) returns for a path p that EvalSymlinks resolved
// to (a real path, no symbolic link in it), from what it saw of it
// where it can, else from os.Stat.
func (r *Resolver) stat(p string) (fs.FileInfo, error) {
	if res, ok := r.seen[p]; ok && res.err == nil && res.real == p && res.fi != nil {
		return res.fi, nil
	}
	return os.Stat(p)
}

// fill makes what r saw of real path p (EvalSymlinks resolved it to
// itself) hold its file info, for stat, where a listed directory's entry
// answered for it: an lstat(2) now, in a directory looked into already.
func (r *Resolver) fill(p string) {
	res, ok := r.seen[p]
	if !ok || res.err != nil || res.real != p || res.fi != nil {
		return
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		res.fi = fi
		r.seen[p] = res
	}
}

// lookup resolves clean absolute path p.
func (r *Resolver) lookup(p string) resolved {
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
		var werr error
		if r.watch != nil {
			werr = r.watch(parent.real, name)
		}
		var fi fs.FileInfo
		var err error
		known := false // the listed entry's type says it is no link
		if names := r.dirs[parent.real]; names != nil {
			t, there := names[name]
			if !there {
				// What lstat(2) would have said.
				err = &fs.PathError{Op: "lstat", Path: c, Err: syscall.ENOENT}
			}
			known = there && t != UnknownType && t&fs.ModeSymlink == 0
		}
		if err == nil && !known {
			fi, err = os.Lstat(c)
		}
		// A directory this process may not read cannot be watched; a
		// lookup in it that it may not search either depends only on
		// its mode and owner, which its parent's watch sees change.
		if werr != nil && !(errors.Is(werr, syscall.EACCES) && errors.Is(err, syscall.EACCES)) {
			r.unwatched = true
		}
		switch {
		case known:
			res.real = c
		case err != nil:
			res.err = err
		case fi.Mode()&fs.ModeSymlink != 0:
			// Rare among the paths planned: the parent is real, so
			// EvalSymlinks of c is p's resolution. Where it leads is not
			// watched.
			r.unwatched = true
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
