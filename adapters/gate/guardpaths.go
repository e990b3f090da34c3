package gate

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds the symbolic links kernelPath follows for one path,
// as the kernel's own limit (40 on Linux) does: past it the kernel fails
// the call with ELOOP.
const maxLinkHops = 40

// kernelPath returns absolute path p as the kernel resolves it now,
// component by component from the root: a symbolic link is followed
// where it stands (a ".." after it is taken from the link's target, not
// from the link's folder), a dangling link to the path it names, and
// from the first component that does not exist the rest is appended as
// written, cleaned. It returns "" when p is not absolute, or when its
// links loop or go on past maxLinkHops (the kernel resolves no such
// path).
func kernelPath(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	todo := strings.Split(p, "/")
	cur := "/"
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, todo...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return ""
		}
		to, err := os.Readlink(next)
		if err != nil {
			return ""
		}
		if filepath.IsAbs(to) {
			cur = "/"
		}
		todo = append(strings.Split(to, "/"), todo...)
	}
	return cur
}

// pathReadings returns the absolute paths path p (absolute, relative to
// dir, or starting with "~" or "~user") may stand for when a tool opens
// it: cleaned as written (as a tool that resolves a path by its letters
// does), and as the kernel resolves that and p as written (kernelPath);
// with a leading "~" both as the home directory and as a folder of that
// name in dir. Relative paths are read from dir only; none when dir is
// unknown.
func pathReadings(p, dir string) []string {
	if p == "" {
		return nil
	}
	var bases []string
	if h := tildeReading(p); h != "" {
		bases = append(bases, h)
	}
	if filepath.IsAbs(p) {
		bases = append(bases, p)
	} else if filepath.IsAbs(dir) {
		bases = append(bases, dir+"/"+p)
	}
	var out []string
	for _, b := range bases {
		clean := filepath.Clean(b)
		out = append(out, clean)
		for _, r := range []string{kernelPath(clean), kernelPath(b)} {
			if r != "" && r != clean {
				out = append(out, r)
			}
		}
	}
	return out
}

// tildeReading returns p with a leading "~" or "~/" as the home
// directory and "~user" as that user's home, as a shell expands it; ""
// when p starts with no tilde or the home is unknown.
func tildeReading(p string) string {
	if !strings.HasPrefix(p, "~") {
		return ""
	}
	if h := homeReading(p); h != "" {
		return h
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" {
		return ""
	}
	u, err := user.Lookup(name)
	if err != nil || u.HomeDir == "" {
		return ""
	}
	return filepath.Join(u.HomeDir, rest)
}

// dataDirPlaces tells whether a path that exists, or may be made, is the
// data dir, a path in it, or an ancestor of it: by its letters, the
// data dir read as written and as its links resolve. A nil
// *dataDirPlaces holds nothing.
type dataDirPlaces struct {
	dds  []string // the data dir as written and resolved, cleaned, lower case
	home string   // the home directory, cleaned, lower case; "" when unknown
}

// newDataDirPlaces returns the places of data dir dd (absolute; nil for
// "" or a relative dd) with home the home directory ("" when unknown).
func newDataDirPlaces(dd, home string) *dataDirPlaces {
	if !filepath.IsAbs(dd) {
		return nil
	}
	dd = filepath.Clean(dd)
	p := &dataDirPlaces{dds: []string{strings.ToLower(dd)}}
	if r, err := filepath.EvalSymlinks(dd); err == nil && r != dd {
		p.dds = append(p.dds, strings.ToLower(r))
	}
	if home != "" {
		p.home = strings.ToLower(filepath.Clean(home))
	}
	return p
}

// written returns the data dir's paths: as written, and as its links
// resolve when they differ; cleaned, lower case.
func (p *dataDirPlaces) written() []string {
	if p == nil {
		return nil
	}
	return p.dds
}

// holds reports whether absolute path f is the data dir or a path in it,
// letter case ignored (the safe side on a file system that ignores it).
// With tree (the caller reads or changes all f holds), an ancestor of
// the data dir counts too; without, only one between the home directory
// and the data dir (~/.local, ~/.local/share), which no command needs.
func (p *dataDirPlaces) holds(f string, tree bool) bool {
	if p == nil || !filepath.IsAbs(f) {
		return false
	}
	f = strings.ToLower(filepath.Clean(f))
	for _, d := range p.dds {
		if f == d || d == "/" || strings.HasPrefix(f, d+"/") {
			return true
		}
		if f == "/" || strings.HasPrefix(d, f+"/") {
			if tree || p.home != "" && p.home != "/" && strings.HasPrefix(d, p.home+"/") && strings.HasPrefix(f, p.home+"/") {
				return true
			}
		}
	}
	return false
}

// fileToolReaches reports whether a built-in file tool's call c (a tool
// of pathFields) may read or change the data dir places holds: the path
// of a tool that reads or writes one file (on any reading of
// pathReadings), the folder a search tool lists (LS) or the tree it
// searches (Grep, Glob: its path, or the working directory, and for Glob
// what its pattern up to a "**" matches on disk now), an ancestor of the
// data dir counting for a tree. A tree the gate cannot place (a relative path
// with no working directory) or list whole is taken for the data dir.
func fileToolReaches(c Call, places *dataDirPlaces) bool {
	if places == nil {
		return false
	}
	in := inputFields(c)
	switch c.Tool {
	case "Grep", "Glob", "LS":
		tree := c.Tool != "LS"
		root := or(in["path"], c.Dir)
		if root == "" {
			return true
		}
		for _, r := range pathReadings(root, c.Dir) {
			if places.holds(r, tree) {
				return true
			}
		}
		if c.Tool == "Glob" && in["pattern"] != "" {
			bases := pathReadings(root, c.Dir)
			if len(bases) == 0 {
				return true
			}
			base := bases[0]
			// Its pattern up to a "**" on disk now, each match a tree
			// the rest searches (Claude Code's Glob descends into no link
			// below the folders its pattern names, but takes those
			// through their links).
			head := in["pattern"]
			if i := strings.Index("/"+head+"/", "/**/"); i >= 0 {
				head = head[:max(i-1, 0)]
			}
			if head == "" {
				return false
			}
			budget := maxTreeEntries
			found, whole := globOnDisk(head, base, &budget)
			if !whole {
				return true
			}
			for _, f := range found {
				if places.holds(f, true) || places.holds(kernelPath(f), true) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range pathReadings(toolPath(c), c.Dir) {
		if places.holds(r, false) {
			return true
		}
	}
	return false
}

// inputFields returns the string fields of call c's input object.
func inputFields(c Call) map[string]string {
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in)
	out := make(map[string]string, len(in))
	for k, v := range in {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
