package gate

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
)

// maxGlobWords bounds the words of one call shellPathsOnDisk reads on
// disk, and maxGlobReadings the readings of one word (a brace list's
// words times its variables' values); past either the call is taken for
// naming the data dir.
const (
	maxGlobWords    = maxResolved
	maxGlobReadings = 64
)

// globOnDisk returns the paths shell glob pattern pat (absolute, relative
// to base, or starting with "~") matches on disk now, as bash expands it
// with every option that widens a match on (brace lists, dotglob,
// nocaseglob, globstar: "**" any folders, links to folders among them),
// and false when it cannot tell: a folder it must list cannot be listed
// (but for one that does not exist or is no folder, which holds no
// match), or the entries it lists pass *budget, which it spends. A
// component without a glob character is taken as written, whether or not
// it exists (so a new file under a matched folder is found too).
func globOnDisk(pat, base string, budget *int) ([]string, bool) {
	var out []string
	for _, alt := range braces(pat, maxGlobReadings) {
		if h := tildeReading(alt); h != "" {
			alt = h
		}
		cands := []string{"/"}
		if !filepath.IsAbs(alt) {
			if !filepath.IsAbs(base) {
				continue
			}
			cands = []string{base}
		}
		for _, comp := range strings.Split(alt, "/") {
			var next []string
			var ok bool
			switch {
			case comp == "" || comp == ".":
				continue
			case comp == "**":
				next, ok = globTree(cands, budget)
			case !strings.ContainsAny(comp, "*?["):
				for _, c := range cands {
					next = append(next, filepath.Join(c, comp))
				}
				ok = true
			default:
				next, ok = globComp(cands, comp, budget)
			}
			if !ok {
				return out, false
			}
			cands = next
			if len(cands) == 0 {
				break
			}
		}
		out = append(out, cands...)
	}
	return out, true
}

// globComp returns the entries of folders dirs whose names glob
// component comp matches (letter case ignored, a leading dot matched
// too, a malformed glob matching every name), and false when a folder
// cannot be listed or the entries pass *budget.
func globComp(dirs []string, comp string, budget *int) ([]string, bool) {
	comp = strings.ToLower(strings.ReplaceAll(comp, "[!", "[^"))
	var out []string
	for _, d := range dirs {
		ents, ok := listDir(d, budget)
		if !ok {
			return nil, false
		}
		for _, e := range ents {
			if m, err := path.Match(comp, strings.ToLower(e.Name())); m || err != nil {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out, true
}

// globTree returns what "**" matches below folders dirs: each of them
// and every folder below it, links to folders followed (each folder
// once), and false when a folder cannot be listed or the entries pass
// *budget.
func globTree(dirs []string, budget *int) ([]string, bool) {
	seen := map[string]bool{}
	out := append([]string(nil), dirs...)
	stack := append([]string(nil), dirs...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		ents, ok := listDir(d, budget)
		if !ok {
			return nil, false
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				out = append(out, p)
				stack = append(stack, p)
			}
		}
	}
	return out, true
}

// listDir returns folder d's entries, spending *budget on them: none
// when d does not exist or is no folder, false when it cannot be listed
// or the budget runs out.
func listDir(d string, budget *int) ([]fs.DirEntry, bool) {
	ents, err := os.ReadDir(d)
	if err != nil {
		fi, serr := os.Stat(d)
		if errors.Is(serr, fs.ErrNotExist) || errors.Is(serr, syscall.ENOTDIR) || serr == nil && !fi.IsDir() {
			return nil, true
		}
		return nil, false
	}
	*budget -= len(ents)
	return ents, *budget >= 0
}

// shellPathsOnDisk returns the paths the words of shell script sc, run
// in folder dir, name on disk now, where its words say more than their
// letters: a word with an unquoted glob is each path it matches
// (globOnDisk), a word with a tilde or a variable the line gives values
// ($HOME, $XDG_DATA_HOME, D=…, for D in …) each path it reads as with
// those values (globbed too when they hold a glob). Words with a part
// the gate cannot know at all are left to unknownArg; plain words, read
// as written, to aliasPaths. It returns false when it cannot tell: more
// than maxGlobWords such words or maxGlobReadings readings of one, a
// folder it must list that cannot be listed, or more than maxTreeEntries
// entries listed in all.
func shellPathsOnDisk(sc *shell.Script, dir, home string, xdg []string) ([]string, bool) {
	if sc == nil {
		return nil, true
	}
	values := map[string][]string{}
	for _, a := range sc.Given {
		if !sc.Unsure[a.Name] && len(values[a.Name]) <= maxGlobReadings {
			values[a.Name] = append(values[a.Name], a.Value.Glob)
		}
	}
	if home != "" {
		values["HOME"] = []string{home}
	}
	if len(xdg) > 0 {
		values["XDG_DATA_HOME"] = xdg
	}
	var words []string
	seen := map[string]bool{}
	add := func(w shell.Word) {
		g := w.Glob
		if seen[g] || w.Static && !strings.HasPrefix(g, "~") {
			return
		}
		seen[g] = true
		words = append(words, g)
	}
	for w := range sc.PathWords() {
		add(w)
	}
	for _, m := range sc.Mentions {
		// A loop's list, an array's element, a value alone: one word
		// each. A here-document's body, text no shell expands as a
		// path, is left to the guards that read text.
		if !strings.ContainsAny(m.Glob, " \t\n") {
			add(m)
		}
	}
	var out []string
	budget, n := maxTreeEntries, 0
	for _, w := range words {
		alts, known := withValues(w, values, 0)
		if !known {
			continue
		}
		if n++; n > maxGlobWords || len(alts) > maxGlobReadings {
			return out, false
		}
		for _, a := range alts {
			if !strings.ContainsAny(a, "*?[") {
				out = append(out, pathReadings(a, dir)...)
				continue
			}
			found, whole := globOnDisk(a, dir, &budget)
			if !whole {
				return out, false
			}
			for _, f := range found {
				out = append(out, f)
				if r := kernelPath(f); r != "" && r != f {
					out = append(out, r)
				}
			}
		}
	}
	return out, true
}

// withValues returns decoded word w (a Word's Glob) with each "${NAME}"
// in it replaced by each of values[NAME], every combination (the
// values themselves read the same way, to a depth of 4); false when it
// holds a part values does not know (left to unknownArg), more than
// maxGlobReadings+1 readings cut the list short.
func withValues(w string, values map[string][]string, depth int) ([]string, bool) {
	i := strings.Index(w, "${")
	if i < 0 {
		return []string{w}, true
	}
	j := strings.IndexByte(w[i:], '}')
	if j < 0 || depth > 4 {
		return nil, false
	}
	vs, ok := values[w[i+2:i+j]]
	if !ok {
		return nil, false
	}
	rest, ok := withValues(w[i+j+1:], values, depth)
	if !ok {
		return nil, false
	}
	var out []string
	for _, v := range vs {
		heads, ok := withValues(w[:i]+v, values, depth+1)
		if !ok {
			return nil, false
		}
		for _, h := range heads {
			for _, r := range rest {
				out = append(out, h+r)
				if len(out) > maxGlobReadings {
					return out, true
				}
			}
		}
	}
	return out, true
}
