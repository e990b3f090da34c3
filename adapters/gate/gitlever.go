package gate

import (
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
)

// GitLeverPattern names the built-in rule that sends a call changing
// what a later git runs to review at critical risk, as Logbook's own
// levers are: a `git config` (or `git remote add|set-url`, `git
// submodule add`, `git init|clone --template`, `git clone -c`) that
// writes a key naming a command (an alias, a pager, an editor, a
// helper, a driver, core.hooksPath, include.path, protocol.*, url.*, an
// ext:: URL…) or one known only when it runs, `git config --edit`; and
// a write to a file git reads such keys or code from: a hook under
// .git/hooks, .git/config, .git/info/attributes, .gitattributes,
// ~/.gitconfig, ~/.config/git/config or attributes, /etc/gitconfig. A
// later git the rules allow (`git log`) would run what they name unseen.
// The Match's pattern is this text followed by what was found, in
// parentheses.
const GitLeverPattern = "built-in: commands that change what a later git runs (git's configuration, hooks or attributes)"

// gitPathReaders are the programs that only read the paths they are
// given (or print their arguments): naming a git path, they change
// nothing git reads. Their output goes through redirections, which are
// read on their own (shell.Script.Writes).
var gitPathReaders = map[string]bool{
	"cat": true, "less": true, "more": true, "head": true, "tail": true, "grep": true, "egrep": true,
	"fgrep": true, "rg": true, "ag": true, "ls": true, "stat": true, "file": true, "wc": true, "diff": true,
	"cmp": true, "md5sum": true, "sha1sum": true, "sha256sum": true, "sha512sum": true, "xxd": true,
	"od": true, "hexdump": true, "bat": true, "nl": true, "tree": true, "du": true, "realpath": true,
	"readlink": true, "test": true, "[": true, "echo": true, "printf": true, "find": true, "true": true,
}

// gitPathSubcommands are git's subcommands whose paths are pathspecs
// read from the work tree or the index, not files written: naming a git
// path, they change nothing a later git reads.
var gitPathSubcommands = map[string]bool{
	"add": true, "stage": true, "rm": true, "diff": true, "log": true, "show": true, "status": true,
	"blame": true, "annotate": true, "grep": true, "ls-files": true, "commit": true, "diff-files": true,
	"diff-index": true, "cat-file": true, "check-attr": true, "check-ignore": true, "config": true,
	"shortlog": true, "whatchanged": true, "hash-object": true,
}

// changesGit returns what in call c changes what a later git runs (see
// GitLeverPattern), "" when nothing does: a file tool's write to a git
// path, or a shell command that sets a git key naming a command or
// writes or moves a git path.
func changesGit(c Call) string {
	switch c.Tool {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		f := toolPath(c)
		if f == "" {
			return ""
		}
		if !filepath.IsAbs(f) && c.Dir != "" {
			f = filepath.Join(c.Dir, f)
		}
		if why := gitPathIn(f); why != "" {
			return c.Tool + " of " + why
		}
		return ""
	}
	if !shellLike(c.Tool) && !shellTool(c.Tool) {
		return ""
	}
	sc := c.script()
	if sc == nil {
		return ""
	}
	// named reports a git path text names as it stands, or from c.Dir.
	named := func(text string) string {
		if why := gitPathIn(text); why != "" {
			return why
		}
		if c.Dir != "" && !strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "~") && !strings.HasPrefix(text, "$") {
			return gitPathIn(filepath.Join(c.Dir, text))
		}
		return ""
	}
	// read holds the words a reader (or git, read above) is given: its
	// arguments, and the here-documents it prints or takes as a message.
	read := make(map[string]bool)
	readBy := func(cmd shell.Command) {
		for _, w := range append(cmd.Args, cmd.Input...) {
			read[w.Glob] = true
		}
	}
	for _, cmd := range sc.Commands {
		if len(cmd.Args) == 0 {
			continue
		}
		prog := shell.Base(cmd.Args[0].Value)
		switch {
		case cmd.Args[0].Static && prog == "git":
			if why := gitSetsLever(cmd.Args[1:], named); why != "" {
				return why
			}
			readBy(cmd)
			continue
		case cmd.Args[0].Static && gitPathReaders[prog]:
			readBy(cmd)
			continue
		}
		for _, w := range cmd.Args[1:] {
			if why := named(w.Glob); why != "" {
				return shell.Base(cmd.Args[0].Reading) + " names " + why
			}
		}
		for _, w := range cmd.Input {
			if why := named(w.Glob); why != "" {
				return shell.Base(cmd.Args[0].Reading) + " reads code naming " + why
			}
		}
	}
	for _, rd := range sc.Writes {
		if why := named(rd.Target.Glob); why != "" {
			return "a redirection writes " + why
		}
	}
	// A word no reader is given (an assignment's value, a here-document's
	// body, a for loop's list) may reach any program.
	for _, m := range sc.Mentions {
		if read[m.Glob] {
			continue
		}
		if why := named(m.Glob); why != "" {
			return "the line names " + why
		}
	}
	// A path through a symbolic link into a git folder.
	for _, p := range aliasPaths(sc, c.Dir) {
		if why := gitPathIn(p); why != "" && !read[p] {
			for _, cmd := range sc.Commands {
				if len(cmd.Args) > 0 && !(cmd.Args[0].Static && gitPathReaders[shell.Base(cmd.Args[0].Value)]) {
					return "a link leads to " + why
				}
			}
		}
	}
	return ""
}

// gitSetsLever returns what git with arguments args (after the program)
// sets that a later git runs (GitLeverPattern), "" when nothing: named
// says what git path a path option's value names.
func gitSetsLever(args []shell.Word, named func(string) string) string {
	i := 0
	for ; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "-C" || v == "--work-tree":
			if i+1 < len(args) {
				if why := named(args[i+1].Glob); why != "" {
					return "git " + v + " " + why
				}
			}
			i++
			continue
		case strings.HasPrefix(v, "--work-tree="):
			if why := named(strings.TrimPrefix(args[i].Glob, "--work-tree=")); why != "" {
				return "git --work-tree " + why
			}
			continue
		case v == "-c" || strings.HasPrefix(v, "-c") && len(v) > 2:
			// An alias that runs git (not "!…") may run git config:
			// `git -c alias.x='config core.pager …' x`.
			kv := strings.TrimPrefix(args[i].Reading, "-c")
			if v == "-c" && i+1 < len(args) {
				i++
				kv = args[i].Reading
			}
			k, val, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(strings.ToLower(k), "alias.") && !strings.HasPrefix(val, "!") {
				var ws []shell.Word
				for _, f := range strings.Fields(val) {
					ws = append(ws, shell.Word{Value: f, Static: true, Reading: f, Glob: f})
				}
				if why := gitSetsLever(ws, named); why != "" {
					return "git alias " + strings.ToLower(k) + ": " + why
				}
			}
			continue
		case gitGlobalValued[v]:
			i++
			continue
		case strings.HasPrefix(v, "-"):
			continue
		}
		break
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i].Value, args[i+1:]
	switch sub {
	case "config":
		return gitConfigLever(rest)
	case "remote", "submodule":
		for _, w := range rest {
			if strings.Contains(strings.ToLower(w.Reading), "ext::") {
				return "git " + sub + " sets a URL run as a command (ext::)"
			}
		}
	case "init", "clone":
		for j, w := range rest {
			v := w.Value
			if v == "--" {
				break
			}
			if name, ok := strings.CutPrefix(v, "--"); ok && len(name) >= 3 && strings.HasPrefix("template", strings.SplitN(name, "=", 2)[0]) {
				return "git " + sub + " --template copies hooks into the repository"
			}
			kv := ""
			switch {
			case sub == "clone" && (v == "-c" || v == "--config") && j+1 < len(rest):
				kv = rest[j+1].Reading
			case sub == "clone" && strings.HasPrefix(v, "--config="):
				kv = strings.TrimPrefix(w.Reading, "--config=")
			case sub == "clone" && strings.HasPrefix(v, "-c") && len(v) > 2:
				kv = w.Reading[2:]
			}
			if kv != "" {
				k, val, _ := strings.Cut(kv, "=")
				if gitLeverKey(k, val) {
					return "git clone writes " + strings.ToLower(k) + " into the new repository's configuration"
				}
			}
		}
	}
	if !gitPathSubcommands[sub] {
		for _, w := range rest {
			if why := named(w.Glob); why != "" {
				return "git " + sub + " names " + why
			}
		}
	}
	return ""
}

// gitConfigValued are the options of git config that take the next
// word as their value.
var gitConfigValued = map[string]bool{
	"-f": true, "--file": true, "--blob": true, "--type": true, "--default": true, "--comment": true,
	"--value": true,
}

// gitConfigLever returns what `git config ARGS` (args) writes that a
// later git runs, "" when it only reads (--get…, --list, get, list, a
// key alone) or writes keys that run nothing (user.name).
func gitConfigLever(args []shell.Word) string {
	var pos []shell.Word
	op := ""
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		if !strings.HasPrefix(v, "-") || v == "-" {
			pos = append(pos, args[i])
			continue
		}
		name, _, _ := strings.Cut(v, "=")
		// git takes a unique abbreviation of a long option (--ed for
		// --edit): the ones that write are read whole.
		for _, long := range []string{"--edit", "--unset-all", "--rename-section", "--remove-section"} {
			if len(name) >= 4 && strings.HasPrefix(long, name) && !strings.HasPrefix("--replace-all", name) {
				name = long
			}
		}
		switch {
		case gitConfigValued[v]:
			i++
		case strings.HasPrefix(name, "--get") || name == "--list" || v == "-l":
			op = "get"
		case name == "--edit" || v == "-e":
			return "git config --edit opens git's configuration in an editor"
		case name == "--unset" || name == "--unset-all":
			op = "unset"
		case name == "--rename-section" || name == "--remove-section":
			return "git config " + name + " moves or removes a section of git's configuration"
		}
	}
	if op == "get" {
		return ""
	}
	if op == "" && len(pos) > 0 {
		switch pos[0].Value {
		case "get", "list":
			return ""
		case "edit":
			return "git config edit opens git's configuration in an editor"
		case "rename-section", "remove-section":
			return "git config " + pos[0].Value + " moves or removes a section of git's configuration"
		case "unset":
			op, pos = "unset", pos[1:]
		case "set":
			pos = pos[1:]
		}
	}
	if len(pos) == 0 {
		return ""
	}
	k := strings.ToLower(pos[0].Reading)
	if op == "unset" {
		if gitLeverKey(k, "") {
			return "git config unsets " + k
		}
		return ""
	}
	if len(pos) < 2 {
		return "" // a key alone: its value is read
	}
	if gitLeverKey(k, pos[1].Reading) {
		return "git config sets " + k
	}
	return ""
}

// gitLeverKey reports whether setting git config key k (any case) to
// val makes a later git run a command: a key of shell.GitCommandKey, a
// protocol.* or url.* key (which let a URL run one), a remote's
// uploadpack, receivepack or vcs, a submodule's update, init.templateDir,
// core.alternateRefsCommand, imap.tunnel, instaweb.*, hook.*, a URL
// with ext:: (a transport that runs a command), or a key known only when
// it runs.
func gitLeverKey(k, val string) bool {
	k = strings.ToLower(k)
	if strings.ContainsAny(k, shell.Wild+shell.WildPart) || shell.GitCommandKey(k) {
		return true
	}
	for _, p := range []string{"protocol.", "url.", "instaweb.", "hook."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	switch k {
	case "init.templatedir", "core.alternaterefscommand", "imap.tunnel":
		return true
	}
	for _, s := range []string{".uploadpack", ".receivepack", ".vcs", ".update"} {
		if strings.HasSuffix(k, s) && (strings.HasPrefix(k, "remote.") || strings.HasPrefix(k, "submodule.")) {
			return true
		}
	}
	return strings.Contains(strings.ToLower(val), "ext::") || strings.ContainsAny(val, shell.Wild+shell.WildPart) && strings.HasSuffix(k, "url")
}

// gitPathIn returns the git path shell text s may name whose content a
// later git reads as configuration, hooks or attributes ("" when none):
// in any of its words, read as shell words and as code (a quote or a
// comma ends a name), globs and brace lists matched as bash expands them
// (a leading "." only by a pattern that starts with one).
func gitPathIn(s string) string {
	s = strings.ToLower(s)
	for _, w := range distinct(append(shellFields(unquoteLower(s)), codeFields(s)...)) {
		if why := gitPathWord(w); why != "" {
			return why
		}
	}
	return ""
}

// gitPathWord returns the git path one path w may name (gitPathIn).
func gitPathWord(w string) string {
	comps := strings.Split(w, "/")
	// may reports whether component i may name name; within (a folder
	// git reads) also by a glob of stars alone, which bash expands to
	// any name without a leading dot.
	may := func(i int, name string, within bool) bool {
		if i >= len(comps) {
			return false
		}
		c := comps[i]
		if within && !strings.HasPrefix(name, ".") && c != "" && strings.Trim(c, "*?") == "" {
			return true
		}
		return compMayName(c, name)
	}
	end := func(i int) bool { return i >= len(comps) || comps[i] == "" }
	for i := range comps {
		switch {
		case may(i, ".gitattributes", false):
			return ".gitattributes"
		case may(i, ".gitconfig", false) || may(i, "gitconfig", false):
			return "git's configuration file " + w
		case i > 0 && may(i-1, ".config", false) && may(i, "git", true):
			return "git's configuration folder " + w
		case may(i, ".git", false):
			switch {
			case end(i + 1):
				return "the .git folder"
			case may(i+1, "hooks", true):
				return "git's hooks (.git/hooks)"
			case may(i+1, "config", true) || may(i+1, "config.worktree", true):
				return "git's configuration (.git/config)"
			case may(i+1, "info", true) && (end(i+2) || may(i+2, "attributes", true)):
				return "git's attributes (.git/info/attributes)"
			case may(i+1, "modules", true) || may(i+1, "worktrees", true):
				return "the git folder of a submodule or worktree (" + w + ")"
			}
		}
	}
	return ""
}
