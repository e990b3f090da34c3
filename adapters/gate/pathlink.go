package gate

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
	"github.com/logbook-dev/logbook/reducers/review"
)

// LinkGuardPattern names the built-in rule that sends a call naming a
// path the gate cannot resolve as the command will to review at critical
// risk: a path through a link the kernel resolves in the process that
// follows it (/proc/PID/fd/…, cwd, root, exe, map_files, /proc/self,
// /dev/fd/…, /dev/stdin/…), or with a ".." after a component that may be
// a symbolic link (the kernel follows the link before the ".."; a
// lexical clean does not). The gate runs in serve's process, not the
// agent's, so no rule can allow such a path.
const LinkGuardPattern = "built-in: paths through a magic link or a .. the gate cannot resolve"

// linkRisk is the risk class of LinkGuardPattern.
const linkRisk = review.RiskCritical

// procLinks are the entries of /proc/PID (and /proc/PID/task/TID) that
// are links the kernel resolves in the process they describe.
var procLinks = map[string]bool{"fd": true, "cwd": true, "root": true, "exe": true, "map_files": true}

// maxLinkParts bounds the components of a path unresolvable checks one
// by one; a longer path is unresolvable (the safe side).
const maxLinkParts = 64

// unresolvable reports whether path p, read from directory dir ("" when
// unknown), may lead somewhere a lexical reading of it does not: it goes
// through a magic link (procLinks under /proc, anything below /dev/fd/N,
// /dev/stdin, /dev/stdout or /dev/stderr), or it has a ".." after a
// component that is not an existing directory the gate can see is no
// symbolic link (a part known only when it runs, "~user", a glob, a
// missing component count as may-be-links). p is shell text as the
// guards read it (Word.Glob) or a file tool's path.
func unresolvable(p, dir string) bool {
	if p == "" {
		return false
	}
	abs := strings.HasPrefix(p, "/")
	if !abs && dir != "" && strings.HasPrefix(dir, "/") {
		p, abs = dir+"/"+p, true
	}
	var comps []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			comps = append(comps, c)
		}
	}
	if abs && magicLink(comps) {
		return true
	}
	last := -1
	for i, c := range comps {
		if c == ".." {
			last = i
		}
	}
	if last < 0 {
		return false
	}
	if !abs || len(comps) > maxLinkParts {
		return true
	}
	for k := 1; k <= last; k++ {
		if comps[k-1] == ".." {
			continue
		}
		fi, err := os.Lstat("/" + strings.Join(comps[:k], "/"))
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			return true
		}
	}
	return false
}

// magicLink reports whether the components of an absolute path go
// through a link the kernel resolves in the process that follows it:
// an entry of procLinks under /proc, anything below /dev/fd/N, /dev/fd/
// followed by other than a number, /dev/stdin, /dev/stdout or
// /dev/stderr followed by more.
func magicLink(comps []string) bool {
	if len(comps) >= 3 && comps[0] == "proc" {
		for _, c := range comps[2:] {
			if procLinks[c] {
				return true
			}
		}
	}
	if len(comps) >= 3 && comps[0] == "dev" {
		switch comps[1] {
		case "stdin", "stdout", "stderr":
			return true
		case "fd":
			if len(comps) > 3 || strings.Trim(comps[2], "0123456789") != "" {
				return true
			}
		}
	}
	return false
}

// filePathUnresolvable reports whether a file tool's path f goes through
// a magic link (magicLink), as written or cleaned: the tool resolves it
// in the agent's process.
func filePathUnresolvable(f string) bool {
	for _, p := range []string{f, filepath.Clean(f)} {
		if strings.HasPrefix(p, "/") && magicLink(strings.FieldsFunc(p, func(r rune) bool { return r == '/' })) {
			return true
		}
	}
	return false
}

// resolvedPath returns file (absolute, or relative to dir) as the kernel
// resolves it now: its deepest existing ancestor with its symbolic links
// followed (a dangling link too, to the path it names), the rest
// appended; "" when that is file itself cleaned, or when it cannot be
// told.
func resolvedPath(file, dir string) string {
	if !filepath.IsAbs(file) {
		if dir == "" {
			return ""
		}
		file = filepath.Join(dir, file)
	}
	file = filepath.Clean(file)
	out := file
	for hop := 0; hop < maxLinkParts; hop++ {
		next, done := resolveStep(out)
		if done {
			out = next
			break
		}
		if next == "" {
			return ""
		}
		out = next
	}
	if out == file {
		return ""
	}
	return out
}

// resolveStep resolves absolute clean path p one dangling link at a
// time: done with p resolved when its deepest existing ancestor is no
// dangling link; else the path that link names with the rest appended
// (not done), "" when it cannot be told.
func resolveStep(p string) (string, bool) {
	head, rest := p, ""
	for {
		fi, err := os.Lstat(head)
		if err == nil {
			if fi.Mode()&os.ModeSymlink != 0 {
				if r, err := filepath.EvalSymlinks(head); err == nil {
					return filepath.Join(r, rest), true
				}
				to, err := os.Readlink(head)
				if err != nil {
					return "", false
				}
				if !filepath.IsAbs(to) {
					to = filepath.Join(filepath.Dir(head), to)
				}
				return filepath.Join(to, rest), false
			}
			r, err := filepath.EvalSymlinks(head)
			if err != nil {
				return "", false
			}
			return filepath.Join(r, rest), true
		}
		if head == "/" {
			return "", false
		}
		rest = filepath.Join(filepath.Base(head), rest)
		head = filepath.Dir(head)
	}
}

// pathMatchesResolved reports whether file matches path glob spec as
// written, or as the kernel resolves it now: cleaned first
// (resolvedPath), and component by component, a ".." after a symbolic
// link taken from the link's target, and a leading "~" as the home
// directory and as a folder of dir (pathReadings): deny and review rules
// win on any reading.
func pathMatchesResolved(spec, file, dir string) bool {
	if pathMatches(spec, file, dir) {
		return true
	}
	if r := resolvedPath(file, dir); r != "" && pathMatches(spec, r, dir) {
		return true
	}
	abs := file
	if !filepath.IsAbs(abs) && dir != "" {
		abs = dir + "/" + file
	}
	if filePathUnresolvable(abs) {
		// Through a magic link the kernel resolves it in the agent's
		// process, not the gate's: the built-in review takes it.
		return false
	}
	for _, r := range pathReadings(file, dir) {
		if pathMatches(spec, r, dir) {
			return true
		}
	}
	return false
}

// homeReading returns a redirection target that starts with "~" or "~/"
// with the home directory in its place, "" for any other target or when
// the home directory is unknown.
func homeReading(v string) string {
	if v != "~" && !strings.HasPrefix(v, "~/") {
		return ""
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, v[1:])
}

// unknownTarget reports whether the gate cannot know which file
// redirection target w names, read from dir: a part known only when it
// runs (a parameter, a substitution, a glob), a brace list, "~user", or a
// path unresolvable says the gate cannot resolve as the command will.
func unknownTarget(w shell.Word, dir string) bool {
	if !w.Static || unresolvable(w.Glob, dir) || unresolvable(w.Value, dir) {
		return true
	}
	if strings.HasPrefix(w.Value, "~") && homeReading(w.Value) == "" {
		return true
	}
	// A brace list, of any length (a literal "{" the safe side).
	return strings.Contains(w.Glob, "{") || strings.Contains(w.Value, "{")
}

// linkGuarded reports whether call c names a path unresolvable says the
// gate cannot resolve: a file tool's path, or in a shell command a
// redirection's target or source, an argument (or the value after an
// option's "="), or an assignment's value.
func linkGuarded(c Call) bool {
	switch c.Tool {
	case "Edit", "Write", "Read", "MultiEdit", "NotebookEdit", "NotebookRead":
		return filePathUnresolvable(toolPath(c))
	}
	if !shellLike(c.Tool) && !shellTool(c.Tool) {
		return false
	}
	sc := c.script()
	see := func(w shell.Word) bool {
		for _, s := range []string{w.Glob, w.Value} {
			if unresolvable(s, c.Dir) {
				return true
			}
			if _, v, ok := strings.Cut(s, "="); ok && unresolvable(v, c.Dir) {
				return true
			}
		}
		return false
	}
	for _, cmd := range sc.Commands {
		for _, a := range cmd.Assigns {
			if see(a.Value) {
				return true
			}
		}
		for _, w := range cmd.Args {
			if see(w) {
				return true
			}
		}
	}
	for _, rs := range [][]shell.Redirection{sc.Writes, sc.Reads} {
		for _, rd := range rs {
			if see(rd.Target) {
				return true
			}
		}
	}
	return false
}

// maxLinkReadings bounds the links linkReadings follows for one path.
const maxLinkReadings = 64

// scriptLinks returns the links the ln, link and cp -s|-l commands of sc
// may make (GNU coreutils: ln [OPTION]... TARGET... [DIRECTORY|LINK_NAME],
// -t DIR, -T; link FILE1 FILE2; cp's operands alike), each as the absolute path of the name made and the absolute
// path it stands for (a symbolic link's target read from the link's
// folder, a hard link's from dir), read from dir; words known only when
// the command runs are left out (no reading of them is certain).
func scriptLinks(sc *shell.Script, dir string) map[string]string {
	var links map[string]string
	abs := func(p, from string) string { return wordPath(p, from, dir) }
	for _, cmd := range sc.Commands {
		if len(cmd.Args) < 2 || !cmd.Args[0].Static {
			continue
		}
		prog := filepath.Base(cmd.Args[0].Value)
		switch prog {
		case "ln", "link":
		case "cp":
			if !copiesAsLinks(cmd.Args[1:]) {
				continue
			}
		default:
			continue
		}
		symbolic, noDir, into := false, prog == "link", ""
		var ops []string
		known := true
		for i := 1; i < len(cmd.Args); i++ {
			a := cmd.Args[i]
			if !a.Static {
				known = false
				break
			}
			v := longOption(a.Value)
			switch {
			case v == "--":
				for _, w := range cmd.Args[i+1:] {
					if !w.Static {
						known = false
					}
					ops = append(ops, w.Value)
				}
				i = len(cmd.Args)
			case v == "-t" || v == "--target-directory":
				if i+1 < len(cmd.Args) {
					into = cmd.Args[i+1].Value
					i++
				}
			case strings.HasPrefix(v, "--target-directory="):
				into = strings.TrimPrefix(v, "--target-directory=")
			case v == "-S" || v == "--suffix":
				i++
			case v == "--symbolic" || v == "--symbolic-link":
				symbolic = true
			case v == "--no-target-directory":
				noDir = true
			case strings.HasPrefix(v, "--"):
			case strings.HasPrefix(v, "-") && v != "-":
				// Short options, ln's and cp's alike: -s makes symbolic
				// links, -T names the link itself; -t DIR and -S SUFFIX
				// take a value, the rest of the word or the next one.
				flags := v[1:]
				if j := strings.IndexAny(flags, "tS"); j >= 0 {
					flags = flags[:j]
				}
				symbolic = symbolic || strings.Contains(flags, "s")
				noDir = noDir || strings.Contains(flags, "T")
				if j := strings.IndexAny(v, "tS"); j >= 0 {
					if j == len(v)-1 && i+1 < len(cmd.Args) {
						if v[j] == 't' {
							into = cmd.Args[i+1].Value
						}
						i++
					} else if v[j] == 't' {
						into = v[j+1:]
					}
				}
			default:
				ops = append(ops, v)
			}
		}
		if !known || len(ops) == 0 {
			continue
		}
		type made struct{ name, target string }
		var ms []made
		switch {
		case into != "":
			for _, t := range ops {
				ms = append(ms, made{filepath.Join(into, filepath.Base(t)), t})
			}
		case len(ops) == 1:
			ms = append(ms, made{filepath.Base(ops[0]), ops[0]})
		case len(ops) == 2 && noDir:
			ms = append(ms, made{ops[1], ops[0]})
		case len(ops) == 2:
			// LINK_NAME, or a directory the link is made in: both.
			ms = append(ms, made{ops[1], ops[0]}, made{filepath.Join(ops[1], filepath.Base(ops[0])), ops[0]})
		default:
			last := ops[len(ops)-1]
			for _, t := range ops[:len(ops)-1] {
				ms = append(ms, made{filepath.Join(last, filepath.Base(t)), t})
			}
		}
		for _, m := range ms {
			name := abs(m.name, dir)
			from := dir
			if symbolic {
				from = filepath.Dir(name)
			}
			target := abs(m.target, from)
			if name == "" || target == "" {
				continue
			}
			if links == nil {
				links = map[string]string{}
			}
			links[name] = target
		}
	}
	return links
}

// linkReadings returns the other paths p (absolute, or relative to dir)
// names once the links sc's ln commands may make exist (scriptLinks): p
// under such a link's name is also that path under what it stands for,
// link after link, at most maxLinkReadings of them.
func linkReadings(sc *shell.Script, p, dir string) []string {
	links := scriptLinks(sc, dir)
	if len(links) == 0 {
		return nil
	}
	if !filepath.IsAbs(p) {
		if dir == "" {
			return nil
		}
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	var out []string
	seen := map[string]bool{p: true}
	for todo := []string{p}; len(todo) > 0 && len(out) < maxLinkReadings; {
		q := todo[0]
		todo = todo[1:]
		for name, target := range links {
			rest, ok := strings.CutPrefix(q, name)
			if !ok || rest != "" && !strings.HasPrefix(rest, "/") {
				continue
			}
			r := filepath.Clean(target + rest)
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
				todo = append(todo, r)
			}
		}
	}
	return out
}

// copiesAsLinks reports whether cp's arguments args ask it to make links
// rather than copies: -s or --symbolic-link (symbolic), -l or --link
// (hard), alone or among other short options; arguments after "--" are
// operands.
func copiesAsLinks(args []shell.Word) bool {
	for _, a := range args {
		v := a.Value
		switch {
		case !a.Static:
			continue
		case v == "--":
			return false
		case longOption(v) == "--symbolic" || longOption(v) == "--link":
			return true
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") && len(v) > 1:
			// -S and -t take a value: letters after them are it.
			opts := v[1:]
			if j := strings.IndexAny(opts, "St"); j >= 0 {
				opts = opts[:j]
			}
			if strings.ContainsAny(opts, "sl") {
				return true
			}
		}
	}
	return false
}

// linkOptions are the long options of ln and cp that say where and how
// links are made, which GNU getopt also takes by any unambiguous prefix.
var linkOptions = []string{"--symbolic-link", "--symbolic", "--link", "--target-directory", "--no-target-directory", "--suffix"}

// longOption returns v with a long option of linkOptions written by a
// prefix of two letters or more (`--sym`, `--li`, `--target-dir=src`)
// spelled out, its "=value" kept; any other word as it is.
func longOption(v string) string {
	if !strings.HasPrefix(v, "--") || v == "--" {
		return v
	}
	name, value, eq := strings.Cut(v, "=")
	if len(name) < 4 { // "--" and two letters at least
		return v
	}
	for _, o := range linkOptions {
		if strings.HasPrefix(o, name) {
			if o == "--symbolic-link" {
				o = "--symbolic"
			}
			if eq {
				return o + "=" + value
			}
			return o
		}
	}
	return v
}

// wordPath returns the absolute path shell word p (static) names: "~+"
// as pwd (the line's directory), "~" and "~/" as the home directory, an
// absolute path cleaned, a relative one read from from; "" when it cannot
// be told (~-, ~user, an unknown home, a relative word with no from).
func wordPath(p, from, pwd string) string {
	if r, ok := strings.CutPrefix(p, "~+"); ok && (r == "" || r[0] == '/') && pwd != "" {
		return filepath.Join(pwd, r)
	}
	if strings.HasPrefix(p, "~") {
		return homeReading(p)
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if from == "" {
		return ""
	}
	return filepath.Join(from, p)
}
