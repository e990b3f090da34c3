package gate

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
	"github.com/logbook-dev/logbook/reducers/review"
)

// GuardPattern names the built-in rule that sends a shell command naming
// Logbook's project folder, a policy file or the data dir, or a file
// tool's read or write of the data dir (its path read through links and
// from the working directory), to review at critical risk: the pattern
// a verdict it decides is recorded under.
const GuardPattern = "built-in: commands that name .logbook, policy.toml or the data dir"

// SettingsGuardPattern names the built-in rule that sends a file tool's
// write to Claude Code's settings (.claude/settings.json or
// .claude/settings.local.json, where the hooks that run the gate are
// wired), or a shell command that may name both a .claude folder and one
// of those files, to review at critical risk: the pattern a verdict it
// decides is recorded under. (Critical since the settings wire the gate
// itself.)
const SettingsGuardPattern = "built-in: commands that name .claude/settings.json"

// LeverGuardPattern names the built-in rule that sends a shell command
// running Logbook's own levers to review at critical risk: logbook-hook,
// or logbook with hook, review, serve, creds, setup, worker, top, session
// mode|end|abandon, hooks install|uninstall, keys pin|register|revoke,
// checkpoint trust, command stdin|stop, workspace cancel-check, workspace
// archive but by the agent's own --session (verbs that act as the person
// on another command, review or run), and logbook exec or logbook-exec asking for a mode
// wider than the session's, another session, or another data
// dir or server (--data, --nats-url, --creds, --socket, LOGBOOK_*), so a
// prompt, a verdict, a mode or a sandbox cannot be forged from inside
// the session the gate governs.
const LeverGuardPattern = "built-in: commands that run Logbook's own levers"

// UnreadablePattern names the built-in rule that sends a shell command
// the gate cannot read (it does not parse as bash, or passes a limit of
// package shell) to review at high risk: never allowed by a rule, denied
// when nobody reviews it within the budget. The Match's pattern is this
// text followed by the reason in parentheses.
const UnreadablePattern = "built-in: commands the gate cannot read"

// guard returns the built-in guard of the policy files for data dir dd
// ("" for none) and of Claude Code's settings: for call c it returns the
// pattern and risk class of the rule that guards what c may change
// (GuardPattern at critical risk, SettingsGuardPattern at high), or
// "", "" when c changes none of them.
func guard(dd string) func(Call) (pattern, risk string) {
	var dds []string
	var globs []*dataDirGlobs
	var places *dataDirPlaces
	var home string
	var xdg []string
	if dd != "" {
		dd = filepath.Clean(dd)
		var err error
		home, err = os.UserHomeDir()
		if err != nil {
			home = ""
		}
		if home != "" {
			xdg = append(xdg, filepath.Join(home, ".local", "share"))
		}
		if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
			xdg = append(xdg, x)
		}
		places = newDataDirPlaces(dd, home)
		// The data dir by its letters, and where its links lead (a data
		// dir ~/.local/share/logbook that is a link to /srv/lb is /srv/lb
		// as well).
		for _, d := range places.written() {
			dds = append(dds, d)
			if home != "" && home != "/" {
				if rel, ok := strings.CutPrefix(d, strings.ToLower(filepath.Clean(home))+"/"); ok {
					dds = append(dds, "/"+rel)
				}
			}
			globs = append(globs, newDataDirGlobs(d, home, os.Getenv("XDG_DATA_HOME")))
		}
	}
	anyGlobs := func(f func(*dataDirGlobs) bool) bool {
		for _, g := range globs {
			if f(g) {
				return true
			}
		}
		return false
	}
	guarded := func(c Call) bool {
		if _, ok := pathFields[c.Tool]; ok {
			// A built-in file tool: the path it reads or writes, or the
			// tree it searches, on every reading (through links,
			// relative to the working directory).
			return fileToolReaches(c, places)
		}
		if !shellLike(c.Tool) {
			return false
		}
		texts, removes, raw := guardTexts(c)
		for _, s := range texts {
			if namesPolicy(s, dds) || anyGlobs(func(g *dataDirGlobs) bool {
				return g.namesAs(s, c.Dir, func([]string) bool { return removes })
			}) {
				return true
			}
		}
		for _, s := range otherStrings(c, raw) {
			if namesPolicy(s, dds) || anyGlobs(func(g *dataDirGlobs) bool { return g.names(s, c.Dir) }) {
				return true
			}
		}
		if places == nil {
			return false
		}
		// What the words match on disk now, each match through its
		// links: `cat d?/creds.json` with a link dl to the data dir.
		found, whole := shellPathsOnDisk(c.script(), c.Dir, home, xdg)
		if !whole {
			return true
		}
		for _, f := range found {
			if places.holds(f, removes) {
				return true
			}
		}
		return false
	}
	return func(c Call) (string, string) {
		c = c.parsed()
		if guarded(c) || treeChangesProject(c) {
			return GuardPattern, review.RiskCritical
		}
		if linkGuarded(c) {
			return LinkGuardPattern, linkRisk
		}
		if changesSettings(c) {
			return SettingsGuardPattern, review.RiskCritical
		}
		if pullsLever(c) {
			return LeverGuardPattern, review.RiskCritical
		}
		if why := changesGit(c); why != "" {
			return GitLeverPattern + " (" + why + ")", review.RiskCritical
		}
		if shellLike(c.Tool) && unknownArg(c.script()) {
			return GuardPattern, review.RiskCritical
		}
		if c.sh != nil && len(c.sh.Faults) > 0 {
			return UnreadablePattern + " (" + c.sh.Faults[0] + ")", review.RiskHigh
		}
		return "", ""
	}
}

// treeChangesProject reports whether a command of c changes a whole
// tree that holds a project's .logbook folder on disk now: a git work
// tree it checks out, resets, switches or stashes (the top of the one
// its directory lies in, as withRepoTops finds it), or a folder it
// removes, extracts or copies into. Such a command may rewrite or
// remove a project's policy file without naming it (`git checkout
// HEAD~1` where the commit before held none).
func treeChangesProject(c Call) bool {
	if !shellLike(c.Tool) || c.sh == nil {
		return false
	}
	for _, rd := range c.sh.Changes {
		if !rd.Tree {
			continue
		}
		d, ok := absTarget(rd, c.Dir)
		if !ok {
			continue
		}
		if rd.RepoTop {
			if top := workTreeTop(d); top != "" {
				d = top
			}
		}
		if _, err := os.Lstat(filepath.Join(d, ProjectPolicyDir)); err == nil {
			return true
		}
	}
	return false
}

// unknownArg reports whether a command of sc (but for the package
// scripts a runner may run: code read from a file) has an argument, a
// redirection's target, or a value the line gives a variable, whose value
// the gate cannot know: it holds a variable the line gives no value
// (other than $HOME and $XDG_DATA_HOME, whose values the guards know, and
// $?, $#, $$ and $!, numbers), a command or process substitution, or the
// words xargs adds from its input. An arithmetic expansion of literals is a number
// (shell.DigitsName): no path of its own. Such a
// word may be the data dir, a policy file or .logbook whatever its
// letters say (`ls $X`, `ls $(echo L3Rt…|base64 -d)`), so it is guarded.
// A variable the line gives values to (NAME=…, for NAME in …) is known
// by those values, which are read like any word, unless the line may
// give it others or use it before (shell.Script.Unsure). What find's {} stands
// for is known too: a path under find's starting points, which are read.
func unknownArg(sc *shell.Script) bool {
	if sc == nil {
		return false
	}
	given := make(map[string]bool, len(sc.Given))
	for _, a := range sc.Given {
		given[a.Name] = !sc.Unsure[a.Name]
	}
	for _, a := range sc.Given {
		if unknownWord(a.Value, given) {
			return true
		}
	}
	for _, cmd := range sc.Commands {
		if cmd.Maybe {
			continue
		}
		for _, w := range cmd.Args {
			if unknownWord(w, given) {
				return true
			}
		}
	}
	for _, rs := range [][]shell.Redirection{sc.Writes, sc.Reads} {
		for _, rd := range rs {
			if unknownWord(rd.Target, given) {
				return true
			}
		}
	}
	return false
}

// unknownWord reports whether decoded word w holds a part whose value
// the gate cannot know (see unknownArg): a "${…}" of its Glob other than
// a known variable's or one of given's (the names the line gives values).
func unknownWord(w shell.Word, given map[string]bool) bool {
	if w.Static {
		return false
	}
	g := w.Glob
	for {
		i := strings.Index(g, "${")
		if i < 0 {
			return false
		}
		j := strings.IndexByte(g[i:], '}')
		if j < 0 {
			return true
		}
		name := g[i+2 : i+j]
		switch strings.ToLower(name) {
		case "home", "xdg_data_home", "?", "#", "$", "!", shell.FoundName, shell.DigitsName:
		default:
			if name == "_" || !given[name] {
				return true
			}
		}
		g = g[i+j+1:]
	}
}

// toolPath returns the path a file tool's call c names: its file_path,
// else its notebook_path; "" when it names neither (or its input is not
// an object: the "usable input" rule denies such a call).
func toolPath(c Call) string {
	var in map[string]any // names as the tool reads them: exact, never case-folded
	_ = json.Unmarshal(c.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	return or(str("file_path"), str("notebook_path"))
}

// The Claude Code settings files the hooks are wired in, and their
// folder.
var (
	settingsDir   = ".claude"
	settingsFiles = []string{"settings.json", "settings.local.json"}
)

// changesSettings reports whether call c may change Claude Code's
// settings: a file tool's write to .claude/settings.json or
// .claude/settings.local.json, or a shell command with a word that may
// name a .claude folder (or run in one) and a word that may name one of
// those files, however quoted, globbed or cut around a variable.
func changesSettings(c Call) bool {
	switch c.Tool {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		f := strings.ToLower(filepath.Clean(toolPath(c)))
		return filepath.Base(filepath.Dir(f)) == settingsDir && slices.Contains(settingsFiles, filepath.Base(f))
	}
	if !shellLike(c.Tool) {
		return false
	}
	inDir := slices.Contains(strings.Split(strings.ToLower(c.Dir), "/"), settingsDir)
	texts, _, raw := guardTexts(c)
	for _, s := range append(texts, otherStrings(c, raw)...) {
		// Read as shell words, and as code (an interpreter's -c argument
		// or a here-document's body: open("…/settings.json","w")), where
		// quotes and commas end a name.
		words := append(shellFields(unquoteLower(s)), codeFields(strings.ToLower(s))...)
		dir, file := inDir, false
		for _, w := range distinct(words) {
			for _, comp := range strings.Split(w, "/") {
				dir = dir || compMayName(comp, settingsDir)
				for _, f := range settingsFiles {
					file = file || compMayName(comp, f)
				}
			}
		}
		if dir && file {
			return true
		}
	}
	return false
}

// compMayName reports whether one path component of shell text may
// name name: itself, by a glob that says more than "*", by a brace list,
// or by a piece of three letters or more of it beside a variable.
func compMayName(comp, name string) bool {
	for _, alt := range braces(comp, 64) {
		if alt == name {
			return true
		}
		if strings.ContainsAny(alt, "*?[") && strings.Trim(alt, "*?") != "" {
			if ok, _ := path.Match(strings.ReplaceAll(alt, "[!", "[^"), name); ok {
				return true
			}
		}
		if strings.Contains(alt, "$") {
			if lit := stripVars(alt); len(lit) >= 3 && strings.Contains(name, lit) {
				return true
			}
		}
	}
	return false
}

// shellLike reports whether tool runs what its input says through a
// shell or as a program: Claude Code's Bash, Codex's shell tools,
// Logbook's exec, and any tool whose name says bash, shell or exec.
func shellLike(tool string) bool {
	t := strings.ToLower(tool)
	return strings.Contains(t, "bash") || strings.Contains(t, "shell") || strings.Contains(t, "exec") || t == "sh" || t == "zsh"
}

// otherStrings returns the strings of c's input the guards read raw:
// all of them, but for a shell tool's command that read cleanly (raw
// false), whose decoded words (guardTexts) stand for it.
func otherStrings(c Call, raw bool) []string {
	all := inputStrings(c.Input)
	if raw || !shellTool(c.Tool) {
		return all
	}
	cmd := commandOf(c.Input)
	out := all[:0]
	for _, s := range all {
		if s != cmd {
			out = append(out, s)
		}
	}
	return out
}

// inputStrings returns every string of a tool's JSON input (the whole
// input when it is not JSON).
func inputStrings(in json.RawMessage) []string {
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		return []string{string(in)}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// The names the guard looks for.
const (
	guardDir  = "." + "logbook"
	guardFile = PolicyFile
)

// unquoteLower returns s in lower case without the quotes and
// backslashes a shell would take away: "'.Log'Book" is ".logbook".
func unquoteLower(s string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		switch r {
		case '\'', '"', '\\':
			return -1
		}
		return r
	}, s))
}

// shellFields splits s into words at blanks and at the shell's operators
// and redirections (;|&()<>=`).
func shellFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n\r;|&()<>=`", r)
	})
}

// distinct returns ws without the words seen before in it, in order,
// reusing ws: a guard that reads each word on its own reads a long line
// of repeated words once a word.
func distinct(ws []string) []string {
	seen := make(map[string]bool, min(len(ws), 1024))
	out := ws[:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// codeFields splits s into words as code in another language delimits
// names: at blanks, the shell's operators, quotes, commas and plus signs.
func codeFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n\r;|&()<>=`'\",+", r)
	})
}

// namesPolicy reports whether shell text s may name Logbook's project
// folder, a policy file or the data dir (dds: its path and its path
// under the home directory, lower case). It errs on the side of yes:
// quotes and backslashes are dropped and case ignored before it looks;
// "logbook" glued to anything but a separator (".logbook",
// "$'\x2elogbook'", "'.'+'logbook'"), "policy.toml", $LOGBOOK_DATA, a
// glob or brace list that matches ".logbook" or "policy.toml", a word
// that is ".logbook" or "policy.toml" cut short around a variable
// ("${d}book", "$p.toml") all count.
func namesPolicy(s string, dds []string) bool {
	s = unquoteLower(s)
	if strings.Contains(s, guardFile) || strings.Contains(s, "logbook_data") {
		return true
	}
	for _, d := range dds {
		if namesPath(s, d) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "logbook")
		if j < 0 {
			break
		}
		i += j
		if i > 0 && !strings.ContainsRune(" \t\n\r/-_;|&()<>=:,", rune(s[i-1])) {
			return true
		}
		i += len("logbook")
	}
	for _, w := range distinct(shellFields(s)) {
		for _, comp := range strings.Split(w, "/") {
			if compNames(comp) {
				return true
			}
		}
	}
	return false
}

// namesPath reports whether text s holds path d as a whole path: d
// followed by the end of s or by a character that cannot go on a file
// name (a separator, a quote, a glob, a variable's "$"), so the data
// dir's sibling ~/.local/share/logbook-workspaces is not taken for the
// data dir ~/.local/share/logbook, while ~/.local/share/logbook/x,
// logbook* and logbook$X are.
func namesPath(s, d string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], d)
		if j < 0 {
			return false
		}
		end := i + j + len(d)
		if end == len(s) || !nameByte(s[end]) {
			return true
		}
		i += j + 1
	}
}

// nameByte reports whether b goes on in a file name as a plain
// character: a letter, a digit or one of "-_.+@%", or any byte of a
// multi-byte character.
func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80 || strings.IndexByte("-_.+@%", b) >= 0
}

// compNames reports whether one path component of shell text may name
// ".logbook" or "policy.toml": by a glob, a brace list, or a piece of the
// name beside a variable.
func compNames(comp string) bool {
	if comp == "" || strings.Trim(comp, "*") == "" {
		return false // "*" alone: every name, not these in particular
	}
	for _, alt := range braces(comp, 64) {
		if alt == guardDir || alt == guardFile {
			return true
		}
		if strings.ContainsAny(alt, "*?[") {
			for _, name := range []string{guardDir, guardFile} {
				if ok, _ := path.Match(alt, name); ok {
					return true
				}
			}
		}
		if strings.Contains(alt, "$") {
			lit := stripVars(alt)
			if len(lit) >= 3 && (strings.Contains(guardDir, lit) || strings.Contains(guardFile, lit)) {
				return true
			}
		}
		if len(alt) >= 3 && alt[0] == '.' && strings.HasPrefix(guardDir, alt) {
			return true // ".log", ".logb": the start of it, finished elsewhere
		}
	}
	return false
}

// stripVars drops $name, ${…} and $(…) from s.
func stripVars(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i < len(s) && (s[i] == '{' || s[i] == '(') {
			close := byte('}')
			if s[i] == '(' {
				close = ')'
			}
			if k := strings.IndexByte(s[i:], close); k >= 0 {
				i += k
				continue
			}
			return b.String()
		}
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		i--
	}
	return b.String()
}

// braces expands the brace lists of s as a shell does ("a{b,c}d" → abd,
// acd), at most max words; s itself when it has none or more than max.
func braces(s string, max int) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	depth, end := 0, -1
	var cuts []int
	for i := open; i < len(s) && end < 0; i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i
			}
		case ',':
			if depth == 1 {
				cuts = append(cuts, i)
			}
		}
	}
	if end < 0 || len(cuts) == 0 {
		return []string{s}
	}
	var out []string
	from := open + 1
	for _, c := range append(cuts, end) {
		for _, w := range braces(s[:open]+s[from:c]+s[end+1:], max) {
			out = append(out, w)
			if len(out) > max {
				return []string{s}
			}
		}
		from = c + 1
	}
	return out
}
