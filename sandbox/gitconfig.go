package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Git configuration that names the workspace. Host git, run by a person
// after a command, reads a repository's configuration and runs programs
// it names: hooks from core.hooksPath, core.fsmonitor, filters, diff and
// merge drivers, `!` aliases and the like. The configuration files
// themselves are protected (.git), or outside the workspace (a worktree's
// git directory), but a value may name a file in the work tree, which a
// WorkspaceWrite command could write: scan keeps what the configuration
// of each repository in the workspace names there read-only (see
// gitNamed).

// gitConfigMaxBytes bounds a configuration file read; a larger one is
// read up to it.
const gitConfigMaxBytes = 1 << 20

// gitIncludeDepth bounds nested [include] and [includeIf] files, as git
// bounds them (MAX_INCLUDE_DEPTH).
const gitIncludeDepth = 10

// gitValue is one key of a git configuration file and its value. key is
// section.name, or section.subsection.name, section and name lower case.
type gitValue struct {
	key, value string
	file       string // the file it was read from
}

// gitPathKind is how a configuration value names a path.
type gitPathKind int

const (
	gitNotPath     gitPathKind = iota
	gitDirPath                 // the value is a directory (core.hooksPath)
	gitIncludePath             // the value is a configuration file, relative to its including file
	gitCommand                 // the value is a command line: its words with a slash are paths
)

// gitCommandKeys are the keys (section.name, or section.*.name for any
// subsection) whose value is a program git runs, or a command line it
// hands to the shell. alias.* counts only for a value that begins with
// "!".
var gitCommandKeys = []string{
	"core.fsmonitor", "core.sshcommand", "core.editor", "core.pager", "core.askpass",
	"core.gitproxy", "core.alternaterefscommand", "sequence.editor", "diff.external",
	"diff.*.command", "diff.*.textconv", "difftool.*.cmd", "difftool.*.path",
	"mergetool.*.cmd", "mergetool.*.path", "merge.*.driver", "filter.*.clean",
	"filter.*.smudge", "filter.*.process", "credential.helper", "credential.*.helper",
	"gpg.program", "gpg.*.program", "uploadpack.packobjectshook", "remote.*.uploadpack",
	"remote.*.receivepack", "sendemail.smtpserver", "sendemail.*.smtpserver",
	"sendemail.tocmd", "sendemail.cccmd", "browser.*.cmd", "browser.*.path", "man.*.cmd",
	"man.*.path", "pager.*", "interactive.difffilter", "hook.*.command", "alias.*",
}

// gitPathKindOf returns how the value of key (as gitValue.key) names a
// path.
func gitPathKindOf(key, value string) gitPathKind {
	section, rest, _ := strings.Cut(key, ".")
	name, sub := rest, ""
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		sub, name = rest[:i], rest[i+1:]
	}
	switch {
	case section == "core" && sub == "" && name == "hookspath",
		section == "init" && sub == "" && name == "templatedir":
		return gitDirPath
	case section == "include" && sub == "" && name == "path",
		section == "includeif" && sub != "" && name == "path":
		return gitIncludePath
	case section == "alias":
		if strings.HasPrefix(strings.TrimSpace(value), "!") {
			return gitCommand
		}
		return gitNotPath
	case section == "pager":
		return gitCommand
	}
	for _, k := range gitCommandKeys {
		ks, kr, _ := strings.Cut(k, ".")
		if ks != section {
			continue
		}
		kn, wild := strings.CutPrefix(kr, "*.")
		if kn == name && (wild == (sub != "")) {
			return gitCommand
		}
	}
	return gitNotPath
}

// parseGitConfig returns the values of git configuration text b, read
// from file, in order, as git reads them: sections ([core], [remote
// "origin"], the old [branch.main]), a key alone meaning true, double
// quotes, backslash escapes and continuation lines, comments after # or
// ;. What does not parse is skipped to the next line.
func parseGitConfig(b []byte, file string) []gitValue {
	var out []gitValue
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), gitConfigMaxBytes)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t")
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := gitSectionEnd(line)
			if end < 0 {
				continue
			}
			section = gitSectionName(line[1:end])
			line = strings.TrimLeft(line[end+1:], " \t")
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		if section == "" {
			continue
		}
		name := line
		rest := ""
		if j := strings.IndexAny(line, "= \t#;"); j >= 0 {
			name, rest = line[:j], strings.TrimLeft(line[j:], " \t")
		}
		if name == "" {
			continue
		}
		value := ""
		if strings.HasPrefix(rest, "=") {
			var v strings.Builder
			text := rest[1:]
			quoted := false
			for {
				cont := false
				for k := 0; k < len(text); k++ {
					c := text[k]
					switch {
					case c == '\\' && k+1 < len(text):
						k++
						switch text[k] {
						case 'n':
							v.WriteByte('\n')
						case 't':
							v.WriteByte('\t')
						case 'b':
							s := v.String()
							v.Reset()
							if s != "" {
								v.WriteString(s[:len(s)-1])
							}
						default:
							v.WriteByte(text[k])
						}
					case c == '\\':
						cont = true
					case c == '"':
						quoted = !quoted
					case !quoted && (c == '#' || c == ';'):
						k = len(text)
					default:
						v.WriteByte(c)
					}
				}
				if !cont || i+1 >= len(lines) {
					break
				}
				i++
				text = lines[i]
			}
			value = strings.TrimSpace(v.String())
		}
		out = append(out, gitValue{key: section + "." + strings.ToLower(name), value: value, file: file})
	}
	return out
}

// gitSectionEnd returns the index of the "]" that ends the section
// header line begins with, quotes taken into account, or -1.
func gitSectionEnd(line string) int {
	quoted := false
	for i := 1; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && quoted && i+1 < len(line):
			i++
		case c == '"':
			quoted = !quoted
		case c == ']' && !quoted:
			return i
		}
	}
	return -1
}

// gitSectionName returns a section header's name as gitValue.key begins:
// section lower case, then the subsection as written (quoted) or lower
// case (the old dotted form).
func gitSectionName(h string) string {
	h = strings.TrimSpace(h)
	name, sub, quoted := strings.Cut(h, " ")
	if !quoted {
		return strings.ToLower(h)
	}
	sub = strings.TrimSpace(sub)
	sub = strings.TrimSuffix(strings.TrimPrefix(sub, `"`), `"`)
	var b strings.Builder
	for i := 0; i < len(sub); i++ {
		if sub[i] == '\\' && i+1 < len(sub) {
			i++
		}
		b.WriteByte(sub[i])
	}
	return strings.ToLower(name) + "." + b.String()
}

// gitConfigFiles returns the configuration files of the repository
// whose git directory is gitDir: its config and config.worktree, and,
// for a linked worktree or a repository sharing another's objects, the
// config of the common directory its commondir file names.
func gitConfigFiles(gitDir string) []string {
	files := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree")}
	if common, ok := gitCommonDir(gitDir); ok {
		files = append(files, filepath.Join(common, "config"))
	}
	return files
}

// gitCommonDir returns the directory gitDir's commondir file names
// (relative to gitDir if it is relative), if it has one.
func gitCommonDir(gitDir string) (string, bool) {
	b, err := readSmall(filepath.Join(gitDir, "commondir"), 4096)
	if err != nil {
		return "", false
	}
	d := strings.TrimSpace(string(b))
	if d == "" {
		return "", false
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(gitDir, d)
	}
	return filepath.Clean(d), true
}

// userGitConfigs are the configuration files git reads for every
// repository of the worker's user besides the repository's own: the
// system's, the global one in the home directory, and the XDG one.
func userGitConfigs() []string {
	files := []string{"/etc/gitconfig"}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gitconfig"))
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(xdg) {
			xdg = filepath.Join(home, ".config")
		}
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	return files
}

// readSmall reads file p, regular files only, up to max bytes, into a
// buffer grown as the file is read, not one of max bytes: every
// WorkspaceWrite start in a repository reads its configuration files,
// and max (gitConfigMaxBytes) is a megabyte, which a buffer of its size
// would allocate and clear per file per command.
func readSmall(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if len(b) == 0 && err != nil {
		return nil, err
	}
	return b, nil
}

// gitNames is what the configuration of a workspace's repositories names
// in the workspace.
type gitNames struct {
	exist  []string          // existing paths, kept read-only
	absent map[string]bool   // missing top-level names kept missing: true for a directory
	refuse string            // why the workspace cannot be protected ("" if it can)
	repos  map[string]bool   // the git directories whose configuration was read
	read   map[string][]byte // their contents, by path
}

// gitNamed adds to n what the configuration of the repository with git
// directory gitDir and work tree top (both resolved; top in workspace
// ws) names inside ws: the directory core.hooksPath and init.templateDir
// name, the files [include] and [includeIf] name (all of them, whatever
// their condition, and what those include in turn), and every word with
// a slash of a command a key of gitCommandKeys gives, relative paths
// taken from top (where git runs hooks, `!` aliases, filters and
// fsmonitor), or, for an included file, from the including file's
// directory. userFiles are read too, their relative paths taken from
// top as well. A path that exists is kept read-only (for a hooks
// directory named _, husky's, its parent too: its hooks run the scripts
// there); one that is missing is kept missing, by a placeholder if its
// first missing part is at the workspace's top level, else by keeping
// its deepest existing directory read-only. A path in the workspace
// that reaches it through a symbolic link is a reason to refuse the
// workspace (the link could be replaced).
func (n *gitNames) gitNamed(ws, top, gitDir string, userFiles []string) {
	if n.repos == nil {
		n.repos = map[string]bool{}
	}
	if n.repos[gitDir] {
		return
	}
	n.repos[gitDir] = true
	var values []gitValue
	var read func(file string, depth int)
	read = func(file string, depth int) {
		file = filepath.Clean(file)
		if depth > gitIncludeDepth {
			return
		}
		b, ok := n.read[file]
		if !ok {
			var err error
			if b, err = readSmall(file, gitConfigMaxBytes); err != nil {
				b = nil
			}
			if n.read == nil {
				n.read = map[string][]byte{}
			}
			n.read[file] = b
		}
		for _, v := range parseGitConfig(b, file) {
			values = append(values, v)
			if gitPathKindOf(v.key, v.value) == gitIncludePath {
				p, ok := gitExpand(v.value, filepath.Dir(file))
				if !ok {
					continue
				}
				if within(ws, p) {
					n.name(ws, p, false)
				}
				read(p, depth+1)
			}
		}
	}
	for _, f := range slices.Concat(gitConfigFiles(gitDir), userFiles) {
		read(f, 0)
	}
	for _, v := range values {
		switch gitPathKindOf(v.key, v.value) {
		case gitDirPath:
			p, ok := gitExpand(v.value, top)
			if !ok || !within(ws, p) {
				continue
			}
			if p == ws {
				// Its hooks would be any top-level file of a writable
				// workspace.
				if n.refuse == "" {
					n.refuse = fmt.Sprintf("%s (in %s) names the workspace itself as a directory git runs hooks from", v.key, v.file)
				}
				continue
			}
			n.name(ws, p, true)
			if filepath.Base(p) == "_" && filepath.Dir(p) != ws {
				n.name(ws, filepath.Dir(p), true)
			}
		case gitCommand:
			for _, w := range commandWords(v.value) {
				p, ok := gitExpand(w, top)
				if ok && within(ws, p) && p != ws {
					n.name(ws, p, false)
				}
			}
		}
	}
}

// gitExpand returns value as an absolute clean path: relative ones taken
// from base, ~/ from the worker's home. false: not a path it can
// expand.
func gitExpand(value, base string) (string, bool) {
	value = strings.TrimSpace(value)
	if value == "" || strings.ContainsAny(value, "\x00") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(value, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", false
		}
		return filepath.Join(home, rest), true
	}
	if strings.HasPrefix(value, "~") {
		return "", false
	}
	if !filepath.IsAbs(value) {
		value = filepath.Join(base, value)
	}
	return filepath.Clean(value), true
}

// commandWords returns the words of command line s that hold a slash
// and name a path as written: split at blanks and at the shell's
// operators and quotes, an alias's leading "!" and an option's "--x="
// dropped; words with the shell's expansions ($, `, globs, ~ past the
// start) are left out, as what they name is not known before the shell
// runs.
func commandWords(s string) []string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "!")
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n;|&()<>'\"=", r)
	}) {
		if !strings.Contains(w, "/") || strings.ContainsAny(w, "$`*?[]{}\\") || strings.Contains(w[1:], "~") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// name records path p (absolute, clean, inside ws) that a configuration
// names; dir says a missing p is a directory.
func (n *gitNames) name(ws, p string, dir bool) {
	if p == ws {
		return
	}
	if n.absent == nil {
		n.absent = map[string]bool{}
	}
	// Walk down from ws: each part must be a directory (or, last, any
	// entry) that is not a symbolic link.
	rel, err := filepath.Rel(ws, p)
	if err != nil {
		return
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := ws
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case cur == ws && (err != nil || isPlaceholder(fi)):
			// Missing at the top level: kept missing by a placeholder.
			n.absent[next] = n.absent[next] || dir || i < len(parts)-1
			return
		case err != nil:
			// Missing below: its deepest existing directory is kept
			// read-only, so that it cannot be made.
			n.exist = append(n.exist, cur)
			return
		case fi.Mode()&fs.ModeSymlink != 0:
			if n.refuse == "" {
				n.refuse = fmt.Sprintf("%s, which the repository's git configuration names, passes through symbolic link %s", p, next)
			}
			return
		case i < len(parts)-1 && !fi.IsDir():
			return // names nothing that can be made
		}
		cur = next
	}
	n.exist = append(n.exist, p)
}

// repoOf returns the git directory and the work tree of the repository
// whose .git entry is dotGit: the directory itself, or the one a .git
// file names.
func repoOf(dotGit string) (gitDir, top string, ok bool) {
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return "", "", false
	case fi.IsDir():
		return dotGit, filepath.Dir(dotGit), true
	case fi.Mode().IsRegular():
		if gd, ok := gitFileTarget(dotGit); ok {
			if real, err := filepath.EvalSymlinks(gd); err == nil {
				return real, filepath.Dir(dotGit), true
			}
		}
	}
	return "", "", false
}

// worktreeGitDirs returns, resolved, the common git directory of the
// linked worktree that workspace ws (resolved) is, which holds the
// worktree's own git directory (worktrees/<name>), when it lies outside
// ws and checks out as git made it: ws/.git is a file naming
// <common>/worktrees/<name>, whose gitdir file names ws/.git back, and
// <common> holds HEAD, objects and refs. Nil otherwise: a .git file
// cannot show a command any other directory of the host.
func worktreeGitDirs(ws string, r *Resolver) []string {
	dotGit := filepath.Join(ws, ".git")
	gd, ok := gitFileTarget(dotGit)
	if !ok {
		return nil
	}
	gdr, err := r.EvalSymlinks(gd)
	if err != nil || within(ws, gdr) || within(gdr, ws) {
		return nil
	}
	common, ok := gitCommonDir(gdr)
	if !ok {
		return nil
	}
	cr, err := r.EvalSymlinks(common)
	if err != nil || cr == "/" || within(ws, cr) || within(cr, ws) || filepath.Dir(gdr) != filepath.Join(cr, "worktrees") {
		return nil
	}
	back, err := readSmall(filepath.Join(gdr, "gitdir"), 4096)
	if err != nil {
		return nil
	}
	bp := strings.TrimSpace(string(back))
	if !filepath.IsAbs(bp) {
		bp = filepath.Join(gdr, bp)
	}
	if br, err := filepath.EvalSymlinks(bp); err != nil || br != dotGit {
		return nil
	}
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(cr, name)); err != nil {
			return nil
		}
	}
	return []string{cr}
}

// enclosingRepo returns the git directory and the work tree of the
// repository whose work tree holds workspace ws (resolved) from above,
// as git finds it: the nearest directory above ws with a .git entry.
func enclosingRepo(ws string) (gitDir, top string, ok bool) {
	for d := filepath.Dir(ws); ; d = filepath.Dir(d) {
		if gd, wt, ok := repoOf(filepath.Join(d, ".git")); ok {
			return gd, wt, true
		}
		if d == "/" {
			return "", "", false
		}
	}
}
