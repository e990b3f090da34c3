package gate

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/gate/shell"
	"github.com/logbook-dev/logbook/events"
)

// shellTool reports whether tool's "command" input is a command line
// bash runs: Claude Code's Bash.
func shellTool(tool string) bool { return tool == "Bash" }

// commandOf returns the "command" string of a tool's JSON input, "" when
// there is none.
//
// A command given as an argument vector (Codex's shell tool:
// ["bash", "-lc", "…"]) is returned as a command line that runs exactly
// those words, each quoted for bash.
func commandOf(in json.RawMessage) string {
	var v map[string]any // names as the tool reads them: exact, never case-folded
	if json.Unmarshal(in, &v) != nil {
		return ""
	}
	switch x := v["command"].(type) {
	case string:
		return x
	case []any:
		ws := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return ""
			}
			q, err := syntax.Quote(s, syntax.LangBash)
			if err != nil {
				return "" // a NUL byte: no such argument can exist
			}
			ws = append(ws, q)
		}
		return strings.Join(ws, " ")
	}
	return ""
}

// script returns the shell reading of c's command: parsed once per
// Decide (see Call.parsed), else now.
func (c Call) script() *shell.Script {
	if c.sh != nil {
		return c.sh
	}
	return shell.Read(commandOf(c.Input))
}

// parsed returns c with its command read, when its tool runs one, so
// every rule and guard judges the same reading.
func (c Call) parsed() Call {
	if c.sh == nil && (shellTool(c.Tool) || shellLike(c.Tool)) {
		c.sh = shell.Read(commandOf(c.Input))
		addPackageScripts(c.sh, c.Dir)
	}
	return c
}

// maxPackageJSON is the most bytes of a package.json the gate reads.
const maxPackageJSON = 1 << 20

// addPackageScripts adds to sc the commands of the package.json scripts
// that sc's npm, pnpm, yarn or bun commands run (run NAME, run-script
// NAME, test, start, with their pre and post scripts), from dir's
// package.json, as readings that may happen (Command.Maybe), and the
// files they write as sc's Changes: they count for deny and review,
// while an allow is the runner's own (the policy names the script). A
// package.json that cannot be read adds nothing.
func addPackageScripts(sc *shell.Script, dir string) {
	if dir == "" {
		return
	}
	var names []string
	for _, cmd := range sc.Commands {
		if len(cmd.Args) < 2 || !cmd.Args[0].Static || !cmd.Args[1].Static {
			continue
		}
		switch path.Base(cmd.Args[0].Value) {
		case "npm", "pnpm", "yarn", "bun":
		default:
			continue
		}
		switch sub := cmd.Args[1].Value; sub {
		case "run", "run-script":
			if len(cmd.Args) > 2 && cmd.Args[2].Static {
				names = append(names, cmd.Args[2].Value)
			}
		case "test", "start", "stop", "restart":
			names = append(names, sub)
		}
	}
	if len(names) == 0 {
		return
	}
	text, err := hookspool.ReadRegular(filepath.Join(dir, "package.json"), maxPackageJSON)
	if err != nil {
		return
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(text, &pkg) != nil {
		return
	}
	for _, n := range names {
		for _, name := range []string{"pre" + n, n, "post" + n} {
			body, ok := pkg.Scripts[name]
			if !ok {
				continue
			}
			sub := shell.Read(body)
			at := len(sc.Commands)
			for _, cmd := range sub.Commands {
				cmd.Maybe, cmd.Via, cmd.Parent = true, "package.json script "+name, -1
				sc.Commands = append(sc.Commands, cmd)
			}
			// The files the script writes meet the Write and Edit deny
			// and review rules; the runner's allow stands for them.
			for _, rs := range [][]shell.Redirection{sub.Writes, sub.Changes} {
				for _, rd := range rs {
					if rd.Command >= 0 {
						rd.Command += at
					}
					sc.Changes = append(sc.Changes, rd)
				}
			}
		}
	}
}

// specGlobs returns a Bash pattern's spec as globs over a command's
// words joined by spaces ("*" any text): "git push:*" is "git push" and
// "git push *".
func specGlobs(spec string) []string {
	if pre, ok := strings.CutSuffix(spec, ":*"); ok {
		return []string{pre, pre + " *"}
	}
	return []string{spec}
}

// mayMatch reports whether any value command cmd may take when it runs
// matches Bash spec: deny and review win on any reading. The program is
// read as written and by its base name (/bin/rm is rm), and git without
// the options before its subcommand (gitSubcommandReading).
func mayMatch(spec string, cmd shell.Command) bool {
	subjects := []string{cmd.Text()}
	if p := cmd.Program(); strings.Contains(p, "/") {
		subjects = append(subjects, shell.Base(p)+strings.TrimPrefix(cmd.Text(), p))
	}
	if s, ok := gitSubcommandReading(cmd); ok {
		subjects = append(subjects, s)
	}
	for _, g := range specGlobs(spec) {
		for _, s := range subjects {
			if intersects(g, s) {
				return true
			}
		}
	}
	return false
}

// intersects reports whether some text matches both glob g ("*" any
// text, every other byte itself) and reading s (shell.Wild any text,
// shell.WildPart any text without a space, every other byte itself).
func intersects(g, s string) bool {
	// reach[j] after consuming g[:i]: positions j of s reachable. A
	// product of the two automata, with the stars' and wilds' self loops.
	n, m := len(g), len(s)
	wildAt := func(j int) (bool, bool) { // is a wild, may hold a space
		if j >= m {
			return false, false
		}
		switch s[j] {
		case shell.Wild[0]:
			return true, true
		case shell.WildPart[0]:
			return true, false
		}
		return false, false
	}
	cur := make([]bool, (n+1)*(m+1))
	idx := func(i, j int) int { return i*(m+1) + j }
	// Depth-first over states (i, j); each state once.
	stack := [][2]int{{0, 0}}
	cur[idx(0, 0)] = true
	push := func(i, j int) {
		if i <= n && j <= m && !cur[idx(i, j)] {
			cur[idx(i, j)] = true
			stack = append(stack, [2]int{i, j})
		}
	}
	for len(stack) > 0 {
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j := st[0], st[1]
		if i == n && j == m {
			return true
		}
		gStar := i < n && g[i] == '*'
		sWild, sSpace := wildAt(j)
		// Empty moves: a star or a wild matches nothing.
		if gStar {
			push(i+1, j)
		}
		if sWild {
			push(i, j+1)
		}
		// Consuming one character c on both sides.
		switch {
		case gStar && sWild:
			// Both loop on the same text: nothing new.
		case gStar && j < m:
			push(i, j+1) // the star takes s[j]
		case sWild && i < n:
			if g[i] != ' ' || sSpace {
				push(i+1, j) // the wild takes g[i]
			}
		case i < n && j < m && g[i] == s[j]:
			push(i+1, j+1)
		}
	}
	return false
}

// harmlessTargets are redirection targets that write no file.
var harmlessTargets = map[string]bool{
	"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true,
}

// decideShell returns what p says of c, whose command bash runs: deny
// when any reading of any command (inner ones too), redirection target,
// file a program writes by its operands (shell.Script.Changes) or file
// it reads may match a deny rule; review likewise; allow only when the
// input reads whole, nothing in it is opaque, every command is static
// and matched by an allow rule, and every file it writes by a
// redirection or an option is allowed by a Write or Edit rule.
func (p *Policy) decideShell(c Call) Match {
	sc := c.script()
	for _, set := range []struct {
		action string
		ps     []Pattern
	}{{ActionDeny, p.deny}, {ActionReview, p.review}} {
		// A rule that matches a command whose program is known names
		// the match before one that may match a program known only when
		// it runs, which then says so.
		var maybe *Match
		for _, pt := range set.ps {
			switch ok, through := pt.shellMatch(c, sc); {
			case ok && through == "":
				return Match{Action: set.action, Pattern: pt.Source, Path: p.Path}
			case ok && maybe == nil:
				maybe = &Match{Action: set.action, Pattern: pt.Source, Path: p.Path, Through: through}
			}
		}
		if maybe != nil {
			return *maybe
		}
	}
	if pt, why, ok := p.unknownFileRule(c, sc); ok {
		return Match{Action: ActionReview, Pattern: pt.Source, Path: p.Path, Why: why}
	}
	// A deny or review rule's command written anywhere in the line's
	// words (an interpreter's code, a wrapper the gate does not know)
	// may run: reviewed at least, never allowed.
	for _, ps := range [][]Pattern{p.deny, p.review} {
		for _, pt := range ps {
			if ok, _ := path.Match(pt.Tool, c.Tool); ok && pt.HasArg && mentionsSpec(pt.Spec, sc) {
				return Match{Action: ActionReview, Pattern: pt.Source, Path: p.Path,
					Why: fmt.Sprintf("the %s's command is written among the line's words, where code the gate does not read (an interpreter's, a wrapper's) may run it", p.kindOf(pt))}
			}
		}
	}
	if pat, ok := p.shellAllows(c, sc); ok {
		return Match{Action: ActionAllow, Pattern: pat, Path: p.Path}
	}
	return Match{Path: p.Path}
}

// unknownFileRule returns a deny or review Write or Edit rule of p when
// shell call c, read as sc, writes a file the gate cannot know
// (unknownTarget) or one of a tree below which the rule's glob may match
// a path (treeMayHold: tar -x's members, rm -r's files), or a Read one
// when it reads such a file: that file cannot be proved outside the
// rule, so the call is reviewed.
//
// The built-in rules are not these: the guards read such a target with
// their own globs.
func (p *Policy) unknownFileRule(c Call, sc *shell.Script) (pt Pattern, why string, ok bool) {
	if p.guard != nil {
		return Pattern{}, "", false
	}
	for _, ps := range [][]Pattern{p.deny, p.review} {
		for _, pt := range ps {
			if !pt.HasArg {
				continue
			}
			for _, rd := range pt.fileRedirections(sc) {
				verb := "changes"
				if rd.Op == "<" {
					verb = "reads"
				}
				switch {
				case unknownTarget(rd.Target, c.Dir):
					why = fmt.Sprintf("the command %s a file whose path is known only when it runs (%s), which the %s may match", verb, rd.Target.Reading, p.kindOf(pt))
				case rd.Tree && treeMayHold(pt.Spec, rd.Target.Value, c.Dir):
					where := rd.Target.Value
					if !filepath.IsAbs(where) && c.Dir != "" {
						where = filepath.Join(c.Dir, where)
					}
					if rd.RepoTop {
						where = "the git work tree that holds " + where
					}
					why = fmt.Sprintf("the command %s the files below %s, which the gate does not list, and the %s may match one of them", verb, where, p.kindOf(pt))
				case placedByLine(sc, rd, c.Dir):
					why = fmt.Sprintf("the command %s %s, where another of its commands may place a link first, and the %s may match where that leads", verb, rd.Target.Value, p.kindOf(pt))
				default:
					continue
				}
				return pt, why, true
			}
		}
	}
	return Pattern{}, "", false
}

// kindOf names pt as the kind of rule of p it is: "deny rule P" or
// "review rule P".
func (p *Policy) kindOf(pt Pattern) string {
	for _, d := range p.deny {
		if d.Source == pt.Source {
			return "deny rule " + pt.Source
		}
	}
	return "review rule " + pt.Source
}

// fdPath reports whether redirection target v is /dev/fd/N, one of the
// command's own descriptors.
func fdPath(v string) bool {
	n, ok := strings.CutPrefix(v, "/dev/fd/")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// codeSeparators are the bytes that end a word in code given to a
// program (an interpreter's string, a here-document, make --eval):
// blanks, quotes, brackets, the separators of commands and lists, and
// the marks before a command in an editor or a makefile (:!cmd, x:=).
const codeSeparators = " \t\n\r\v\f\"'`()[]{};,|&<>\\!:=$"

// dataPrograms never run their arguments or their standard input as
// code: a deny rule's words among theirs are text (echo 'rm -rf /').
var dataPrograms = map[string]bool{
	"echo": true, "printf": true, ":": true, "true": true, "false": true, "test": true, "[": true,
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "sort": true, "uniq": true,
	"cut": true, "tr": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "diff": true,
	"cmp": true, "comm": true, "file": true, "stat": true, "touch": true, "mkdir": true,
	"rmdir": true, "rm": true, "cp": true, "mv": true, "ln": true, "chmod": true, "chown": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true, "pwd": true, "cd": true,
	"export": true, "declare": true, "local": true, "readonly": true, "typeset": true, "unset": true,
	"read": true, "printenv": true, "date": true, "sleep": true, "tee": true, "less": true,
	"more": true, "jq": true, "base64": true, "sha256sum": true, "md5sum": true, "od": true,
	"xxd": true, "hexdump": true, "du": true, "df": true, "which": true, "type": true, "git": true,
	"mktemp": true, "nl": true, "paste": true, "join": true, "fold": true, "column": true,
}

// codeTokens returns the words written in ws, each split at
// codeSeparators: the words a program given one of them as code may
// run.
func codeTokens(ws []shell.Word) []string {
	var out []string
	for _, m := range ws {
		s := m.Value
		if !m.Static {
			s = strings.NewReplacer(shell.Wild, " ", shell.WildPart, " ").Replace(m.Reading)
		}
		out = append(out, strings.FieldsFunc(s, func(r rune) bool {
			return strings.ContainsRune(codeSeparators, r)
		})...)
	}
	return out
}

// mentionsSpec reports whether Bash spec's command words (before a
// ":*") are written one after another, the program by its base name
// too, among the words (codeTokens) of sc's commands, their arguments
// and the here-documents and here-strings fed to them, when some
// command of sc is a program the gate does not read through (no
// wrapper it unwraps, no program of dataPrograms): that program may
// run the command (an interpreter's code, make --eval, a wrapper the
// gate does not know, code piped or written to a file for it), and the
// gate cannot tell whether it does.
func mentionsSpec(spec string, sc *shell.Script) bool {
	want := strings.Fields(strings.TrimSuffix(spec, ":*"))
	if len(want) == 0 {
		return false
	}
	read := map[int]bool{}
	for _, cmd := range sc.Commands {
		if cmd.Parent >= 0 {
			read[cmd.Parent] = true
		}
	}
	runsCode := false
	var toks []string
	for at, cmd := range sc.Commands {
		if len(cmd.Args) == 0 {
			continue
		}
		if !read[at] && !(cmd.Args[0].Static && dataPrograms[shell.Base(cmd.Args[0].Value)]) || cmd.Opaque != "" || gitWritesOrRuns(cmd) {
			// A program of dataPrograms with an option or script command
			// that runs what the gate cannot read through (sed's s///e,
			// a git option that runs a configured program) runs code too.
			runsCode = true
		}
		toks = append(toks, codeTokens(append(append([]shell.Word(nil), cmd.Args...), cmd.Input...))...)
		toks = append(toks, "") // no command's words run on into the next's
	}
	if !runsCode {
		return false
	}
	eq := func(g, tok string) bool {
		ok, _ := path.Match(g, tok)
		return ok || g == tok
	}
	for i := 0; i+len(want) <= len(toks); i++ {
		if !eq(want[0], toks[i]) && !eq(want[0], shell.Base(toks[i])) {
			continue
		}
		n := 1
		for n < len(want) && eq(want[n], toks[i+n]) {
			n++
		}
		if n == len(want) {
			return true
		}
	}
	return false
}

// shellMayMatch reports whether pattern pt may match some part of the
// shell call c read as sc: a command (Bash patterns), a file written,
// created or removed, a folder a program writes files under among them
// (Write and Edit patterns), or read (Read patterns).
func (pt Pattern) shellMayMatch(c Call, sc *shell.Script) bool {
	ok, _ := pt.shellMatch(c, sc)
	return ok
}

// shellMatch is shellMayMatch, and says how: through is "" when pt
// matches a command whose program the gate knows, or a file it names;
// else pt matches only a command whose program is known only when it
// runs, and through says which, for the person told why (`$x y` may be
// `rm -rf /`).
func (pt Pattern) shellMatch(c Call, sc *shell.Script) (ok bool, through string) {
	if ok, _ := path.Match(pt.Tool, c.Tool); ok {
		if !pt.HasArg {
			return true, ""
		}
		for _, cmd := range sc.Commands {
			if len(cmd.Args) == 0 || !mayMatch(pt.Spec, cmd) {
				continue
			}
			if cmd.Args[0].Static && !cmd.Maybe {
				return true, ""
			}
			if through == "" {
				through = unknownProgram(cmd)
			}
		}
	}
	if !pt.HasArg {
		return false, ""
	}
	for _, rd := range pt.fileRedirections(sc) {
		if !rd.Target.Static {
			continue
		}
		// As written, as the kernel resolves it now, and with a leading
		// "~" the home directory.
		if pathMatchesResolved(pt.Spec, rd.Target.Value, c.Dir) {
			return true, ""
		}
		// Through a link an ln of the same line makes (ln -s secret s
		// && echo x > s/y; a hard link, ln secret/f h && echo x > h).
		for _, l := range linkReadings(sc, rd.Target.Value, c.Dir) {
			if pathMatchesResolved(pt.Spec, l, c.Dir) {
				return true, ""
			}
		}
		if h := homeReading(rd.Target.Value); h != "" && pathMatchesResolved(pt.Spec, h, c.Dir) {
			return true, ""
		}
	}
	// A file the command names is the match, before a program known
	// only when it runs (a pattern whose tool matches Bash and a file
	// tool, "*(/etc/**)", on `$x y > /etc/passwd`).
	return through != "", through
}

// unknownProgram says of cmd, a command whose program is known only when
// it runs (or that such a program may run), why a rule may match it.
func unknownProgram(cmd shell.Command) string {
	words := make([]string, 0, min(len(cmd.Args), 4))
	for _, w := range cmd.Args[:min(len(cmd.Args), 4)] {
		words = append(words, w.Glob)
	}
	text := strings.Join(words, " ")
	if len(cmd.Args) > 4 {
		text += " …"
	}
	if !cmd.Args[0].Static {
		return "`" + text + "` names its program only when it runs, and that may be what the rule names"
	}
	return "`" + text + "` may be run by a program known only when it runs (" + cmd.Via + ")"
}

// fileRedirections returns the redirections of sc whose kind pattern pt's
// tool names: the files written (an edit tool's, editTools), by a
// redirection or an option and by a program's operands (Changes), then
// those read (Read).
func (pt Pattern) fileRedirections(sc *shell.Script) []shell.Redirection {
	var rs []shell.Redirection
	for _, set := range []struct {
		tools []string
		rs    []shell.Redirection
	}{{[]string{"Write", "Edit", "MultiEdit", "NotebookEdit"}, append(sc.Writes[:len(sc.Writes):len(sc.Writes)], sc.Changes...)}, {[]string{"Read"}, sc.Reads}} {
		for _, tool := range set.tools {
			if ok, _ := path.Match(pt.Tool, tool); ok {
				rs = append(rs, set.rs...)
				break
			}
		}
	}
	return rs
}

// shellAllows reports whether p's allow rules allow every part of shell
// call c read as sc, and names the rules that did.
func (p *Policy) shellAllows(c Call, sc *shell.Script) (string, bool) {
	if len(sc.Faults) > 0 || sc.Opaque() {
		// Code the gate cannot see (eval "$x", bash script.sh, curl … |
		// bash) is allowed by no pattern, "Bash" alone included.
		return "", false
	}
	for _, pt := range p.allow {
		if ok, _ := path.Match(pt.Tool, c.Tool); ok && !pt.HasArg {
			// "Bash": every command line read whole that runs nothing
			// unseen and writes no file a variable of unknown value names,
			// by a redirection or by a program's operands.
			for _, rs := range [][]shell.Redirection{sc.Writes, sc.Changes} {
				for _, rd := range rs {
					if rd.Command >= 0 && rd.Command < len(sc.Commands) && sc.Commands[rd.Command].Maybe {
						continue // a package script's, which the runner stands for
					}
					if unknownStart(rd.Target, commandOf(c.Input)) {
						return "", false
					}
				}
			}
			return pt.Source, true
		}
	}
	if len(sc.Commands) == 0 {
		return "", false
	}
	var used []string
	note := func(s string) {
		for _, u := range used {
			if u == s {
				return
			}
		}
		used = append(used, s)
	}
	for _, cmd := range sc.Commands {
		if cmd.Maybe {
			// A reading that may happen: an unknown program's (whose
			// command is not allowed), a package script's (allowed with
			// its runner).
			continue
		}
		if len(cmd.Args) == 0 || !cmd.Static() || gitWritesOrRuns(cmd) {
			// git with an option that writes a file or runs a program is
			// more than a pattern for its subcommand says.
			return "", false
		}
		text := allowText(cmd)
		found := false
		for _, pt := range p.allow {
			if ok, _ := path.Match(pt.Tool, c.Tool); !ok {
				continue
			}
			if !pt.HasArg || commandMatches(pt.Spec, text) {
				note(pt.Source)
				found = true
				break
			}
		}
		if !found {
			return "", false
		}
	}
	for _, rd := range sc.Reads {
		if netDevice(rd.Target) {
			return "", false // bash opens a connection: no file to judge
		}
	}
	for _, rd := range sc.Writes {
		if !rd.Target.Static || netDevice(rd.Target) {
			return "", false
		}
		if unresolvable(rd.Target.Value, c.Dir) {
			return "", false // the kernel may resolve it elsewhere
		}
		if harmlessTargets[rd.Target.Value] || fdPath(rd.Target.Value) {
			continue
		}
		found := false
		for _, pt := range p.allow {
			if !pt.HasArg || !editTools[pt.Tool] {
				continue
			}
			if pathMatches(pt.Spec, rd.Target.Value, c.Dir) {
				note(pt.Source)
				found = true
				break
			}
		}
		if !found {
			return "", false
		}
	}
	return strings.Join(used, ", "), true
}

// allowText returns the command as an allow pattern reads it: its words
// joined by spaces, a word that holds a blank quoted for bash, so that a
// program named "echo /x" is not the program echo.
func allowText(cmd shell.Command) string {
	ws := make([]string, len(cmd.Args))
	for i, w := range cmd.Args {
		ws[i] = w.Value
		if strings.ContainsAny(w.Value, " \t\n\r\v\f") {
			if q, err := syntax.Quote(w.Value, syntax.LangBash); err == nil {
				ws[i] = q
			}
		}
	}
	return strings.Join(ws, " ")
}

// netDevice reports whether a redirection target may be one of bash's
// network paths (/dev/tcp/HOST/PORT, /dev/udp/…), which open a
// connection rather than a file.
func netDevice(w shell.Word) bool {
	return intersects("/dev/tcp/*", w.Reading) || intersects("/dev/udp/*", w.Reading)
}

// guardTexts returns what the path guards read of shell call c: the
// decoded words of all its commands as one line (Word.Glob: unquoted
// globs and a leading "~" kept, "${…}" for each part known only when it
// runs), redirection targets included, and each target alone, and each
// word the line holds wherever it stands (shell.Script.Mentions), and
// where the links inside the trees of a read that follows them lead
// (linkTargets); removes says whether one of its commands may remove or
// move a tree (treeRemovers, find -delete or -exec, git reading a tree
// (gitTakesTree), a read that follows links, or a program known only
// when it runs). raw is false when the
// command read cleanly, so its decoded words stand for its text.
func guardTexts(c Call) (texts []string, removes, raw bool) {
	sc := c.script()
	var ws []string
	for _, cmd := range sc.Commands {
		for _, a := range cmd.Assigns {
			ws = append(ws, a.Name+"="+a.Value.Glob)
		}
		for _, w := range cmd.Args {
			ws = append(ws, w.Glob)
		}
		ws = append(ws, ";")
		if len(cmd.Args) > 0 {
			prog := cmd.Args[0]
			if !prog.Static {
				removes = true
				continue
			}
			words := []string{path.Base(prog.Value)}
			if words[0] == "git" && gitTakesTree(cmd.Args[1:]) {
				removes = true
			}
			if words[0] == "find" {
				for _, w := range cmd.Args[1:] {
					words = append(words, w.Value)
				}
			}
			removes = removes || removesTrees(words)
		}
	}
	for _, rs := range [][]shell.Redirection{sc.Writes, sc.Reads} {
		for _, rd := range rs {
			texts = append(texts, rd.Target.Glob)
			ws = append(ws, ">", rd.Target.Glob)
		}
	}
	texts = append(texts, aliasPaths(sc, c.Dir)...)
	// A read that follows the links inside its tree (grep -R, find -L)
	// reads where they lead: it names their targets, and takes a tree
	// along.
	lt, follows := linkTargets(sc, c.Dir)
	texts = append(texts, lt...)
	removes = removes || follows
	// Every word the line holds, wherever it stands (an assignment's
	// value, a for loop's list, a here-document's body): a name reaches
	// a command by a variable as well as by an argument. A word that is
	// one of the line's arguments as spelled there is read with the line
	// already, among more words and places to start from: what it names
	// alone, the line names (so a long line is not read twice).
	inLine := make(map[string]bool, len(ws))
	for _, w := range ws {
		inLine[w] = true
	}
	for _, m := range sc.Mentions {
		if !inLine[m.Glob] {
			texts = append(texts, m.Glob)
		}
	}
	texts = append([]string{strings.Join(ws, " ")}, texts...)
	return texts, removes, len(sc.Faults) > 0
}

// maxResolved bounds the words whose symbolic links aliasPaths follows.
const maxResolved = 256

// procLink matches /proc/PID/cwd/… and /proc/PID/root/… (PID a number,
// self or thread-self, or unknown).
var procLink = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/proc/[^/]+/(cwd|root)(/|$)`) })

// magicLinkPath matches a path through a link the kernel resolves to
// whatever a process holds open or stands in: /proc/…/cwd, root, fd,
// map_files, exe (of any process or thread), /dev/fd.
var magicLinkPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(/proc/.*/(cwd|root|fd|map_files|exe)|/dev/fd)(/|$)`)
})

// aliasPaths returns the other names of the paths a shell call's words
// may name, for the path guards: /proc/self/cwd/X is X from the working
// directory and /proc/self/root/X is /X; and a path that exists through
// a symbolic link (a project's "data -> ~/.local/share/logbook") is
// also its target, as the kernel resolves it now: a file not yet made
// under a link, or a dangling link, too (resolvedPath).
func aliasPaths(sc *shell.Script, dir string) []string {
	var out []string
	n := 0
	see := func(w shell.Word) {
		g := w.Glob
		if magicLinkPath().MatchString(g) {
			// Any directory, the root among them: reviewed with a
			// program that takes a tree along.
			out = append(out, "/")
		}
		if m := procLink().FindStringSubmatch(g); m != nil {
			rest := strings.TrimPrefix(g[len(m[0]):], "/")
			if m[1] == "root" {
				out = append(out, "/"+rest)
			} else if dir != "" {
				out = append(out, filepath.Join(dir, rest))
			} else {
				out = append(out, "${_}/"+rest)
			}
		}
		if !w.Static || n >= maxResolved || w.Value == "" || strings.HasPrefix(w.Value, "-") {
			return
		}
		p, raw := w.Value, w.Value
		if !filepath.IsAbs(p) {
			if dir == "" {
				return
			}
			p, raw = filepath.Join(dir, p), dir+"/"+p
		}
		n++
		if r := resolvedPath(p, ""); r != "" {
			out = append(out, r)
		}
		// A ".." after a link, from the link's target, as the kernel
		// takes it (p's letters were cleaned first).
		if r := kernelPath(raw); r != "" && r != p {
			out = append(out, r)
		}
	}
	for w := range sc.PathWords() {
		see(w)
	}
	return out
}

// Logbook's levers: the programs, and the subcommands of logbook that
// decide, record or wire what the gate governs, or act as the person on
// another command, review or check run.
var (
	leverPrograms = []string{"logbook", "logbook-hook"}
	// leverCommands are levers whatever follows: review answers reviews
	// (allow, deny), top answers them from its screen.
	leverCommands = []string{"hook", "review", "serve", "creds", "setup", "worker", "top"}
	leverSession  = []string{"mode", "end", "abandon"}
	leverHooks    = []string{"install", "uninstall"}
	// leverCommand are the command subcommands that act on a running
	// command as the person: stdin feeds its input (the stdin gate
	// reviews it only in auto mode or by a rule), stop stops it.
	leverCommand = []string{"stdin", "stop"}
	// leverWorkspace are the workspace subcommands that act as the
	// person on another's runs: cancel-check stops a check run, and
	// archive (without the agent's own --session) stops the commands
	// working in it.
	leverWorkspace = []string{"cancel-check", "archive"}
	// leverKeys are the keys and checkpoint subcommands that change
	// which keys the log is trusted by.
	leverKeys       = []string{"pin", "register", "revoke"}
	leverCheckpoint = []string{"trust"}
)

// pullsLever reports whether shell call c may run logbook-hook, or
// logbook with a lever subcommand (leverCommands, session
// leverSession, hooks leverHooks, keys leverKeys, checkpoint
// leverCheckpoint, command leverCommand, workspace leverWorkspace but
// for the agent's own session's), or logbook exec or logbook-exec with a lever of
// execLever, on any reading of its words.
func pullsLever(c Call) bool {
	if !shellLike(c.Tool) && !shellTool(c.Tool) {
		return false
	}
	mayBe := func(w shell.Word, names ...string) bool {
		for _, n := range names {
			if w.Static && w.Value == n || !w.Static && intersects(n, w.Reading) {
				return true
			}
		}
		return false
	}
	sc := c.script()
	for _, cmd := range sc.Commands {
		if len(cmd.Args) == 0 {
			continue
		}
		prog := cmd.Args[0]
		b := shell.Word{Value: path.Base(prog.Value), Static: prog.Static, Reading: shell.Base(prog.Reading)}
		if mayBe(b, "logbook-hook") {
			return true
		}
		if mayBe(b, "logbook-exec") && execLever(cmd.Args[1:], c, sc, mayBe) {
			return true
		}
		if !mayBe(b, "logbook") {
			continue
		}
		args := cmd.Args[1:]
		for i, w := range args {
			switch {
			case mayBe(w, leverCommands...):
				return true
			case mayBe(w, "session") && i+1 < len(args) && mayBe(args[i+1], leverSession...):
				return true
			case mayBe(w, "hooks") && i+1 < len(args) && mayBe(args[i+1], leverHooks...):
				return true
			case mayBe(w, "keys") && i+1 < len(args) && mayBe(args[i+1], leverKeys...):
				return true
			case mayBe(w, "checkpoint") && i+1 < len(args) && mayBe(args[i+1], leverCheckpoint...):
				return true
			case mayBe(w, "command") && i+1 < len(args) && mayBe(args[i+1], leverCommand...):
				return true
			case mayBe(w, "workspace") && i+1 < len(args) && mayBe(args[i+1], leverWorkspace...) && !ownSession(args[i+2:], c, mayBe):
				return true
			case mayBe(w, "exec") && execLever(args, c, sc, mayBe):
				return true
			}
		}
	}
	return false
}

// ownSession reports whether the arguments args of a logbook
// subcommand that acts as a person unless told which session acts
// (workspace archive) name, by --session, one of c.Sessions (by its
// whole id) and none other, on any reading of their words (mayBe): the
// session then acts as itself, not as the person. A prefix of its id is
// not it: logbook takes a session by its whole id first, so the prefix
// names another session whose id it is.
func ownSession(args []shell.Word, c Call, mayBe func(shell.Word, ...string) bool) bool {
	own := false
	for i, w := range args {
		if w.Static && w.Value == "--" {
			break
		}
		v, ok := shell.Word{}, false
		switch {
		case w.Static && strings.HasPrefix(w.Value, "--session="):
			val := strings.TrimPrefix(w.Value, "--session=")
			v, ok = shell.Word{Value: val, Static: true, Reading: val}, true
		case w.Static && w.Value == "--session" && i+1 < len(args):
			v, ok = args[i+1], true
		case mayBe(w, "--session") || !w.Static && intersects("--session=*", w.Reading):
			return false
		default:
			continue
		}
		if !ok || !v.Static || v.Value == "" || !slices.Contains(c.Sessions, v.Value) {
			return false
		}
		own = true
	}
	return own
}

// execServerFlags are the flags of `logbook exec` (and logbook-exec)
// that name another data dir or server than the one the gate's session
// is recorded in.
var execServerFlags = []string{"--data", "--nats-url", "--creds", "--socket"}

// modeRank orders the modes of `logbook exec` by what they let a
// command reach: read_only 0, workspace_write 1, full_access 2; -1 for
// a name exec refuses.
func modeRank(m string) int {
	switch m {
	case events.ModeReadOnly:
		return 0
	case events.ModeWorkspaceWrite:
		return 1
	case events.ModeFullAccess:
		return 2
	}
	return -1
}

// execLever reports whether the arguments args of `logbook exec` or
// logbook-exec (read by script sc, in call c) may pull a lever, on any
// reading of its words (mayBe): a --mode wider than the ceiling of the
// session's mode c.Mode (events.ModeRank) or known only when it runs, a
// --session other than one of c.Sessions by its whole id (a prefix of
// it, which exec takes as the whole id of another session first, or one
// known only when it runs), whose own mode exec would run in, a flag of execServerFlags, or a LOGBOOK_* variable the
// line gives (before the command, through env, by export): each reaches
// past what the session's own mode and server allow. Only the words
// before "--" are exec's.
func execLever(args []shell.Word, c Call, sc *shell.Script, mayBe func(shell.Word, ...string) bool) bool {
	for _, a := range sc.Given {
		if strings.HasPrefix(a.Name, "LOGBOOK_") {
			return true
		}
	}
	for _, cmd := range sc.Commands {
		for _, a := range cmd.Assigns {
			if strings.HasPrefix(a.Name, "LOGBOOK_") {
				return true
			}
		}
		for _, w := range cmd.Args {
			if intersects("LOGBOOK_*=*", w.Reading) {
				return true
			}
		}
	}
	flag := func(w shell.Word, name string) bool {
		return mayBe(w, name) || !w.Static && intersects(name+"=*", w.Reading) || w.Static && strings.HasPrefix(w.Value, name+"=")
	}
	for i, w := range args {
		if w.Static && w.Value == "--" {
			return false
		}
		// --elevate is no lever: exec asks the gate for the elevation
		// itself (gate.Elevate), in a review at critical risk, which
		// only a person may allow and which the worker admits the
		// command on (bound to its id and the session's mode revision).
		// A lever review of the shell command before it would ask the
		// person the same question twice, and outside auto mode, where
		// the elevation is refused unasked, once for nothing.
		for _, f := range execServerFlags {
			if flag(w, f) {
				return true
			}
		}
		for _, name := range []string{"--mode", "--session"} {
			if !flag(w, name) {
				continue
			}
			v, ok := shell.Word{}, false
			switch {
			case w.Static && strings.HasPrefix(w.Value, name+"="):
				val := strings.TrimPrefix(w.Value, name+"=")
				v, ok = shell.Word{Value: val, Static: true, Reading: val}, true
			case w.Static && w.Value == name && i+1 < len(args):
				v, ok = args[i+1], true
			}
			if !ok || !v.Static {
				return true
			}
			if name == "--mode" && modeRank(v.Value) > events.ModeRank(c.Mode) {
				return true
			}
			if name == "--session" && len(c.Sessions) > 0 && (v.Value == "" || !slices.Contains(c.Sessions, v.Value)) {
				return true
			}
		}
	}
	return false
}

// leadingVar matches a word's path known only when it runs from its
// start: "${NAME}" (a parameter) or "${_}" (anything else).
var leadingVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// unknownStart reports whether redirection target w may be any path:
// it starts with a part known only when it runs, other than a variable
// command line src gives a value (NAME=… or for NAME in …), whose
// values the guards read.
func unknownStart(w shell.Word, src string) bool {
	if w.Static {
		return false
	}
	m := leadingVar().FindStringSubmatch(w.Glob)
	if m == nil {
		return strings.HasPrefix(w.Glob, "${_}")
	}
	if m[1] == "_" {
		return true
	}
	given := regexp.MustCompile(`(^|[\s;&|(])` + m[1] + `=|\bfor\s+` + m[1] + `\s+in\b`)
	return !given.MatchString(src)
}

// linkPlacers are the programs that may leave a symbolic or hard link at
// the paths they change: ln and link make them, cp copies them (-r, -a,
// -d, -P) or makes them (-s, -l), mv and rsync move or copy them, and
// the archivers and git extract them.
var linkPlacers = map[string]bool{
	"ln": true, "link": true, "cp": true, "mv": true, "rsync": true, "install": true,
	"tar": true, "bsdtar": true, "unzip": true, "cpio": true, "pax": true, "7z": true, "git": true,
}

// placedByLine reports whether file redirection rd's target (static) is,
// or lies below, a path another command of the line that may place a
// link there (linkPlacers) changes: `cp -r sl l2 && echo x > l2/y`,
// `mv a/b t && cat < t/l/key`, `cp --li key h && echo x > h`. What is
// there when the target is opened is known only when the line runs:
// no reading of it now sees that link, or where a relative one moved
// with its folder now leads.
func placedByLine(sc *shell.Script, rd shell.Redirection, dir string) bool {
	t := rd.Target.Value
	if !rd.Target.Static || t == "" {
		return false
	}
	abs := func(p string) string { return wordPath(p, dir, dir) }
	at := abs(t)
	if at == "" {
		return false
	}
	links := scriptLinks(sc, dir)
	for _, ch := range sc.Changes {
		if ch.Command == rd.Command || ch.Command < 0 || ch.Command >= len(sc.Commands) || !ch.Target.Static {
			continue
		}
		args := sc.Commands[ch.Command].Args
		if len(args) == 0 || !args[0].Static || !linkPlacers[filepath.Base(args[0].Value)] {
			continue
		}
		placed := abs(ch.Target.Value)
		if placed == "" || placed == "/" {
			continue
		}
		if p := filepath.Base(args[0].Value); (p == "ln" || p == "link") && links[placed] != "" {
			continue // a link whose target the line names: read through it (linkReadings)
		}
		if at == placed || strings.HasPrefix(at, placed+"/") {
			return true
		}
	}
	return false
}
