package gate

import (
	"path"
	"slices"
	"strings"
)

// dataDirGlobs tells whether a shell command may name a path in the data
// dir however it spells it: each word is read as the shell would expand
// it (a tilde, $HOME, $XDG_DATA_HOME, brace lists, globs), and a word
// that could expand to the data dir or a path inside it names it. A nil
// *dataDirGlobs names nothing.
type dataDirGlobs struct {
	dd   []string // the data dir's components, lower case: "/root/.local/share/logbook" → root, .local, share, logbook
	home string   // the home directory, lower case, cleaned; "" when unknown
	xdg  []string // what $XDG_DATA_HOME may be: the environment's value and the default, lower case
}

// wild stands in a word for a part the guard cannot know (a variable, a
// command substitution, another user's home): it may be any text,
// separators included.
const wild = "\x00"

// maxWordParts bounds the components of a word the guard matches; a
// longer word names the data dir (the safe side).
const maxWordParts = 256

// newDataDirGlobs returns the matcher for data dir dd (absolute), with
// home the home directory and xdg $XDG_DATA_HOME ("" for unknown or
// unset).
func newDataDirGlobs(dd, home, xdg string) *dataDirGlobs {
	dd = path.Clean(strings.ToLower(dd))
	if !strings.HasPrefix(dd, "/") {
		return nil
	}
	g := &dataDirGlobs{dd: strings.Split(strings.TrimPrefix(dd, "/"), "/")}
	if dd == "/" {
		g.dd = nil
	}
	if home != "" {
		g.home = path.Clean(strings.ToLower(home))
		g.xdg = append(g.xdg, path.Join(g.home, ".local", "share"))
	}
	if xdg != "" && strings.HasPrefix(xdg, "/") {
		if x := path.Clean(strings.ToLower(xdg)); len(g.xdg) == 0 || x != g.xdg[0] {
			g.xdg = append(g.xdg, x)
		}
	}
	return g
}

// wordKind says how a word is anchored.
type wordKind int

const (
	absWord  wordKind = iota // from the root: "/x", "~/x", "$HOME/x"
	wildWord                 // after a part the guard cannot know: "$D/x", "~bob/x"
	relWord                  // from the working directory: "x/y"
)

// shellWord is one word of a command, as a path the shell may expand it
// to: its components, wild ones among them.
type shellWord struct {
	kind  wordKind
	parts []string
}

// names reports whether shell text s, run in directory dir ("" when
// unknown), may name the data dir or a path in it. Quotes and
// backslashes are dropped and case ignored, so quoted or escaped globs
// count as globs (the safe side). Relative words are read from dir, from
// each ancestor of the data dir (or the data dir) another word of s may
// name (`cd ~/.local/share && rm -r logbook`), and, when s says cd,
// pushd or popd, from the home and root directories.
func (g *dataDirGlobs) names(s, dir string) bool {
	return g.namesAs(s, dir, removesTrees)
}

// namesAs is names with removes telling from the words of s whether
// the command may remove trees (removesTrees for raw text; the caller's
// own answer for decoded commands, where a word "rm" may be only an
// argument).
func (g *dataDirGlobs) namesAs(s, dir string, removes func([]string) bool) bool {
	if g == nil {
		return false
	}
	s = unquoteLower(s)
	var words []shellWord
	bases := map[string]bool{}
	if dir != "" && strings.HasPrefix(dir, "/") {
		bases[path.Clean(strings.ToLower(dir))] = true
	} else {
		// A directory the guard cannot know (no cwd, find -execdir): it
		// may be the data dir, or any of its ancestors.
		for k := 0; k <= len(g.dd); k++ {
			bases["/"+strings.Join(g.dd[:k], "/")] = true
		}
	}
	fields := shellFields(s)
	rm := removes(fields)
	for _, w := range distinct(fields) {
		switch w {
		case "cd", "pushd", "popd":
			if g.home != "" {
				bases[g.home] = true
			}
			bases["/"] = true
		}
		for _, alt := range braces(w, 64) {
			words = append(words, g.expand(alt)...)
		}
	}
	// Words that may name the data dir or one of its ancestors are places
	// a cd may lead to; relative words are read from those too.
	for _, w := range words {
		if w.kind == absWord {
			if len(w.parts) > maxWordParts {
				return true
			}
			if g.match(w.parts, false, 0) {
				return true
			}
			for k := range g.dd {
				if g.matchExactly(w.parts, k) {
					if rm || g.private(k) {
						// `rm -rf ~`, `tar c ~`: the data dir goes with it;
						// `ls ~/.local`: a way to it no command needs.
						return true
					}
					bases["/"+strings.Join(g.dd[:k], "/")] = true
				}
			}
		}
	}
	for _, w := range words {
		switch w.kind {
		case wildWord:
			if len(w.parts) > maxWordParts || g.match(w.parts, true, 0) {
				return true
			}
		case relWord:
			// A variable in a relative word is specific only by the
			// word's own letters: "v$x" from the home directory is not
			// the data dir, "lo$x/y" is.
			rel := strings.Join(w.parts, "/")
			wilds := strings.Contains(rel, wild)
			for b := range bases {
				parts := splitAbs(path.Join(b, rel))
				if len(parts) > maxWordParts || g.match(parts, wilds, len(splitAbs(b))) {
					return true
				}
				if k := g.ancestorDepth(parts); !wilds && k >= 0 && (rm || g.private(k)) {
					return true // `cd ~ && rm -rf .local`, `cd ~ && tar c .local`
				}
			}
			// A word that climbs (`../../data`) may be read from a
			// directory the guard cannot name: a relative symbolic
			// link's target is read from wherever the link ends up
			// (`ln -s ../../data a/b/l && mv a/b s && cat s/l/x`). What
			// follows its ".." is read from every ancestor of the data
			// dir.
			up := rel
			for {
				if r, ok := strings.CutPrefix(up, "../"); ok {
					up = r
				} else if r, ok := strings.CutPrefix(up, "./"); ok {
					up = r
				} else {
					break
				}
			}
			if up != rel && strings.HasPrefix(rel, "..") && up != "" && up != ".." {
				for k := 0; k < len(g.dd); k++ {
					parts := append(slices.Clone(g.dd[:k]), splitAbs("/"+up)...)
					if len(parts) > maxWordParts || g.match(parts, wilds, k) {
						return true
					}
				}
			}
		}
	}
	return false
}

// expand returns what word w may stand for as a path: a leading "~" or
// "~/" is the home directory, $HOME and ${HOME} are the home directory
// anywhere, $XDG_DATA_HOME each of its values, and any other variable,
// command substitution or "~user" a wild part.
func (g *dataDirGlobs) expand(w string) []shellWord {
	var alts []string
	switch {
	case w == "~" || strings.HasPrefix(w, "~/"):
		if g.home == "" {
			alts = []string{wild + w[1:]}
		} else {
			alts = []string{g.home + w[1:]}
		}
	case strings.HasPrefix(w, "~"):
		alts = []string{wild + w[strings.IndexByte(w+"/", '/'):]}
	default:
		alts = []string{w}
	}
	for _, v := range []struct {
		names []string
		as    []string
	}{
		{[]string{"${home}", "$home"}, []string{g.home}},
		{[]string{"${xdg_data_home}", "$xdg_data_home"}, g.xdg},
	} {
		var next []string
		for _, a := range alts {
			done := false
			for _, n := range v.names {
				if !strings.Contains(a, n) {
					continue
				}
				for _, as := range v.as {
					if as != "" {
						next = append(next, strings.ReplaceAll(a, n, as))
					}
				}
				next = append(next, strings.ReplaceAll(a, n, wild)) // the value may differ where the command runs
				done = true
				break
			}
			if !done {
				next = append(next, a)
			}
		}
		alts = next
	}
	out := make([]shellWord, 0, len(alts))
	for _, a := range alts {
		a = markVars(a)
		var sw shellWord
		switch {
		case strings.HasPrefix(a, "/"):
			sw = shellWord{kind: absWord, parts: splitAbs(a)}
		case strings.HasPrefix(a, wild):
			sw = shellWord{kind: wildWord, parts: strings.Split(path.Clean(a), "/")}
		default:
			sw = shellWord{kind: relWord, parts: strings.Split(path.Clean(a), "/")}
		}
		out = append(out, sw)
	}
	return out
}

// splitAbs returns the components of absolute path p, cleaned ("/" has
// none).
func splitAbs(p string) []string {
	p = strings.TrimPrefix(path.Clean(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// markVars returns s with each $name, ${…} and $(…) replaced by wild.
func markVars(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		switch {
		case j < len(s) && (s[j] == '{' || s[j] == '('):
			close := byte('}')
			if s[j] == '(' {
				close = ')'
			}
			k := strings.IndexByte(s[j:], close)
			if k < 0 {
				b.WriteString(wild)
				return b.String()
			}
			i = j + k
		case j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9' || strings.IndexByte("@*#?$!-", s[j]) >= 0):
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			if j == i+1 {
				j++ // a special parameter: $@, $1…
			}
			i = j - 1
		default:
			b.WriteByte('$')
			continue
		}
		b.WriteString(wild)
	}
	return b.String()
}

// match reports whether a path of pattern components parts may be the
// data dir or a path inside it. A component holding a wild part, or
// "**", may stand for any number of components; others match one
// component as a shell glob (path.Match; "[!…]" as "[^…]"; a malformed
// glob matches). With specific, a match counts only when a component of
// the pattern that says more than "*" or "?" stands for a component of
// the data dir: "$D/logbook/x" and "$D/lo*/x" count, "$D/*/x" does not;
// the first from components (a relative word's directory) never count.
func (g *dataDirGlobs) match(parts []string, specific bool, from int) bool {
	// seen[i][j][s]: parts[i:] against dd[j:], s whether a specific
	// component already stood for one of dd's, was tried.
	seen := map[[3]int]bool{}
	var m func(i, j int, said bool) bool
	m = func(i, j int, said bool) bool {
		if j == len(g.dd) {
			return !specific || said // the rest is inside the data dir
		}
		if i == len(parts) {
			return false // an ancestor of the data dir
		}
		key := [3]int{i, j, 0}
		if said {
			key[2] = 1
		}
		if seen[key] {
			return false
		}
		seen[key] = true
		p := parts[i]
		if p == "**" || strings.Contains(p, wild) {
			if specific && p != "**" && strings.Trim(strings.ReplaceAll(p, wild, ""), "*?") != "" {
				// "${d}book": its letters may be some of dd's.
				lit := strings.ReplaceAll(p, wild, "*")
				for k := j; k < len(g.dd); k++ {
					if compMatch(lit, g.dd[k]) && m(i+1, k+1, i >= from) {
						return true
					}
				}
			}
			return m(i+1, j, said) || m(i, j+1, said) || m(i+1, j+1, said)
		}
		if !compMatch(p, g.dd[j]) {
			return false
		}
		return m(i+1, j+1, said || i >= from && strings.Trim(p, "*?") != "")
	}
	return m(0, 0, false)
}

// ancestorDepth returns k when pattern components parts may name
// exactly the ancestor of the data dir of k components (0: the root),
// -1 when they name none.
func (g *dataDirGlobs) ancestorDepth(parts []string) int {
	for k := range g.dd {
		if g.matchExactly(parts, k) {
			return k
		}
	}
	return -1
}

// private reports whether the data dir's ancestor of k components is a
// directory between the home directory and the data dir (~/.local,
// ~/.local/share), which no command needs to name and which is reviewed
// whatever the command runs. The others are places commands name all
// the time and are reviewed only with a program of treeRemovers, which
// takes the data dir along: the home directory and the root, and, for a
// data dir outside the home directory, every one of its ancestors
// (/tmp for /tmp/x/data, /var/lib for /var/lib/logbook): a listing of
// /tmp is not a way into a data dir under it.
func (g *dataDirGlobs) private(k int) bool {
	h := g.homeDepth()
	return h > 0 && k > h
}

// homeDepth returns the components of the home directory when the data
// dir is inside it, else 0 (see private).
func (g *dataDirGlobs) homeDepth() int {
	h := splitAbs(g.home)
	if g.home == "" || len(h) >= len(g.dd) {
		return 0
	}
	for i, c := range h {
		if g.dd[i] != c {
			return 0
		}
	}
	return len(h)
}

// treeRemovers are the programs that take a directory with all it holds
// along: remove, move or take away access to it, read or copy it
// recursively, or link it elsewhere. Given an ancestor of the data dir
// (the home directory, the root) they take the data dir with it.
var treeRemovers = map[string]bool{
	"rm": true, "rmdir": true, "mv": true, "unlink": true, "shred": true, "srm": true,
	"chmod": true, "chown": true, "chgrp": true, "setfacl": true, "rsync": true,
	"trash": true, "trash-put": true, "gio": true, "truncate": true, "mount": true,
	// Recursive readers and copiers.
	"tar": true, "bsdtar": true, "gtar": true, "zip": true, "7z": true, "7za": true,
	"cpio": true, "pax": true, "cp": true, "scp": true, "sftp": true, "rclone": true,
	"find": true, "grep": true, "egrep": true, "fgrep": true, "rgrep": true,
	"rg": true, "ag": true, "ack": true, "restic": true, "borg": true,
	"diff": true, "colordiff": true, "ugrep": true, "fd": true, "fdfind": true,
	"gzip": true, "gunzip": true, "pigz": true, "zstd": true, "7zz": true, "rar": true,
	"dar": true, "duplicity": true, "rdiff-backup": true, "unison": true, "mksquashfs": true,
	"genisoimage": true, "mkisofs": true, "xorriso": true, "hashdeep": true, "md5deep": true,
	"sha256deep": true, "aws": true, "gsutil": true, "azcopy": true, "s3cmd": true,
	"chattr": true, "setfattr": true, "chcon": true, "restorecon": true,
	// Link makers.
	"ln": true, "link": true, "bindfs": true,
}

// removesTrees reports whether the words of a command run a program that
// may take a directory tree along (treeRemovers, by base name).
func removesTrees(words []string) bool {
	for _, w := range words {
		if treeRemovers[path.Base(w)] {
			return true
		}
	}
	return false
}

// matchExactly reports whether pattern components parts may name
// exactly the first k components of the data dir (k 0: the root).
func (g *dataDirGlobs) matchExactly(parts []string, k int) bool {
	if len(parts) != k {
		return false
	}
	for i, p := range parts {
		if strings.Contains(p, wild) || p == "**" || !compMatch(p, g.dd[i]) {
			return false
		}
	}
	return true
}

// compMatch reports whether pattern p (a shell glob, or a plain name)
// may match component name.
func compMatch(p, name string) bool {
	if !strings.ContainsAny(p, "*?[") {
		return p == name
	}
	ok, err := path.Match(strings.ReplaceAll(p, "[!", "[^"), name)
	return ok || err != nil
}
