package gate

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
)

// maxTreeEntries bounds the directory entries linkTargets reads for one
// call; past it the call is read as naming any path.
const maxTreeEntries = 20_000

// followsLinks reports whether a command running program name (a base
// name) with arguments args reads or changes a tree following the
// symbolic links inside it, not only those on its command line (GNU
// grep 3 -R, findutils 4.9 -L and -follow, coreutils 9 cp -L with -r|-R|-a,
// du -L, ls -L with -R, chmod|chown|chgrp -R with -L, rsync 3
// -L|-k|--copy-links|--copy-dirlinks|--copy-unsafe-links, GNU tar 1.35
// -h|--dereference, bsdtar -h|-L, ripgrep -L|--follow, ag -f|--follow, fd
// -L|--follow, ugrep -R|-S, Info-ZIP zip -r|-R without -y|--symlinks,
// diffutils diff -r without --no-dereference, OpenSSH scp -r, tree -l,
// setfacl -R -L). grep -r follows only the links its command line names,
// which the guards read as their targets already.
func followsLinks(name string, args []shell.Word) bool {
	short := map[byte]bool{}
	var long []string
	anyWord := func(vs ...string) bool {
		for _, a := range args {
			for _, v := range vs {
				if a.Value == v {
					return true
				}
			}
		}
		return false
	}
	for i, a := range args {
		v := a.Value
		switch {
		case strings.HasPrefix(v, "--"):
			n, _, _ := strings.Cut(v[2:], "=")
			long = append(long, n)
		case strings.HasPrefix(v, "-"):
			for k := 1; k < len(v); k++ {
				short[v[k]] = true
			}
		case i == 0 && (name == "tar" || name == "gtar" || name == "bsdtar"):
			for k := 0; k < len(v); k++ {
				short[v[k]] = true // an old-style cluster: tar chf A D
			}
		}
	}
	// hasLong reports whether a long option abbreviates one of names (at
	// least min letters).
	hasLong := func(min int, names ...string) bool {
		for _, n := range long {
			for _, name := range names {
				if len(n) >= min && strings.HasPrefix(name, n) {
					return true
				}
			}
		}
		return false
	}
	switch name {
	case "grep", "egrep", "fgrep", "rgrep":
		return short['R'] || hasLong(3, "dereference-recursive")
	case "ugrep", "ug":
		return short['R'] || short['S'] || hasLong(3, "dereference-recursive")
	case "find", "gfind":
		return anyWord("-L", "-follow")
	case "cp", "gcp":
		return (short['L'] || hasLong(3, "dereference")) && (short['r'] || short['R'] || short['a'] || hasLong(3, "recursive", "archive"))
	case "du":
		return short['L'] || hasLong(3, "dereference")
	case "ls":
		return (short['L'] || hasLong(3, "dereference")) && (short['R'] || hasLong(3, "recursive"))
	case "chmod", "chown", "chgrp", "setfacl":
		return short['L'] && (short['R'] || hasLong(3, "recursive"))
	case "rsync":
		return short['L'] || short['k'] || hasLong(6, "copy-links", "copy-dirlinks", "copy-unsafe-links")
	case "tar", "gtar":
		return short['h'] || hasLong(3, "dereference")
	case "bsdtar":
		return short['h'] || short['L'] || hasLong(3, "dereference")
	case "rg", "fd", "fdfind":
		return short['L'] || hasLong(2, "follow")
	case "ag":
		return short['f'] || hasLong(2, "follow")
	case "zip":
		return (short['r'] || short['R'] || hasLong(3, "recurse-paths", "recurse-patterns")) && !short['y'] && !hasLong(2, "symlinks")
	case "diff", "colordiff":
		return (short['r'] || hasLong(3, "recursive")) && !hasLong(4, "no-dereference")
	case "scp":
		return short['r']
	case "tree":
		return short['l']
	}
	return false
}

// linkTargets returns, for each command of sc that reads a tree
// following the links inside it (followsLinks), the places the links in
// its trees lead out of them, followed on into the trees they lead to;
// and whether there is such a command. A tree is an existing directory
// the command names (from dir), or dir when it names no existing path.
// "/" (any path) is returned when a tree cannot be placed or searched
// whole (more than maxTreeEntries entries, a directory the gate cannot
// list): the guards read the command as naming the root.
func linkTargets(sc *shell.Script, dir string) (out []string, follows bool) {
	budget := maxTreeEntries
	for _, cmd := range sc.Commands {
		if len(cmd.Args) == 0 || !cmd.Args[0].Static {
			continue
		}
		if !followsLinks(path.Base(cmd.Args[0].Value), cmd.Args[1:]) {
			continue
		}
		follows = true
		var roots []string
		named := false
		for _, w := range cmd.Args[1:] {
			if !w.Static || w.Value == "" || strings.HasPrefix(w.Value, "-") {
				continue
			}
			p := w.Value
			if h := homeReading(p); h != "" {
				p = h
			}
			if !filepath.IsAbs(p) {
				if dir == "" {
					continue
				}
				p = filepath.Join(dir, p)
			}
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			named = true
			if fi.IsDir() {
				roots = append(roots, p)
			}
		}
		if !named {
			if dir == "" {
				return append(out, "/"), true
			}
			roots = append(roots, dir)
		}
		var whole bool
		out, budget, whole = walkLinks(roots, out, budget)
		if !whole {
			return append(out, "/"), true
		}
	}
	return out, follows
}

// walkLinks searches the trees roots, appending to out the target of
// each link that leads out of the tree it is in and searching on in the
// tree a link to a directory leads to. It returns out, the budget of
// entries left, and false when it could not search them whole.
func walkLinks(roots, out []string, budget int) ([]string, int, bool) {
	type tree struct{ dir, root string }
	seen := map[string]bool{}
	var stack []tree
	for _, r := range roots {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		stack = append(stack, tree{rr, rr})
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[t.dir] {
			continue
		}
		seen[t.dir] = true
		ents, ok := listDir(t.dir, &budget)
		if !ok {
			return out, budget, false
		}
		for _, e := range ents {
			p := filepath.Join(t.dir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				to, err := filepath.EvalSymlinks(p)
				if err != nil {
					// Dangling, or a loop: the path it names, as the
					// kernel would resolve it once made.
					if r := resolvedPath(p, ""); r != "" {
						out = append(out, r)
					} else {
						return out, budget, false
					}
					continue
				}
				if to == t.root || strings.HasPrefix(to, t.root+"/") {
					continue // inside the tree: searched as the tree is
				}
				out = append(out, to)
				if fi, err := os.Stat(to); err == nil && fi.IsDir() {
					stack = append(stack, tree{to, to})
				}
			case e.IsDir():
				stack = append(stack, tree{p, t.root})
			}
		}
	}
	return out, budget, true
}
