package gate

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxGlobReadings bounds the words a brace list of a glob expands to.
const maxGlobReadings = 64

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
