package gate

import (
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate/shell"
)

// gitGlobalRisky are git's options before the subcommand that change
// which git programs or which configuration (pager, external diff,
// hooks) run: with one, no pattern but "Bash" alone allows the command.
var gitGlobalRisky = []string{"-c", "--config-env", "--exec-path", "--git-dir"}

// gitRiskyLong are the long options of git's subcommands that write a
// file named on the command line, or run a program or configured
// command: --output (diff, log, format-patch…), --ext-diff and
// --textconv (diff drivers), --exec (rebase, archive), --extcmd
// (difftool), --upload-pack and --receive-pack (fetch, clone, push,
// ls-remote), --template (init, clone: hooks), --config (clone),
// --open-files-in-pager (grep), --tool (difftool, mergetool).
var gitRiskyLong = []string{
	"output", "ext-diff", "textconv", "exec", "extcmd", "upload-pack",
	"receive-pack", "template", "config", "open-files-in-pager", "tool",
}

// gitRiskyShort are the short options, by subcommand, that do the same:
// rebase -x CMD, difftool -x CMD and -t TOOL, grep -O[PAGER], clone -c
// and -u, fetch/ls-remote -u (upload-pack).
var gitRiskyShort = map[string]string{
	"rebase": "x", "difftool": "xt", "mergetool": "t", "grep": "O",
	"clone": "cu", "fetch": "u", "ls-remote": "u", "pull": "u",
}

// gitWritesOrRuns reports whether cmd runs git with an option that
// writes a file or runs a program other than git's own (git's options
// documentation): a global option of gitGlobalRisky, or a subcommand's
// option of gitRiskyLong (any abbreviation git accepts, --no-… aside)
// or gitRiskyShort.
func gitWritesOrRuns(cmd shell.Command) bool {
	if len(cmd.Args) == 0 || shell.Base(cmd.Args[0].Value) != "git" {
		return false
	}
	args := cmd.Args[1:]
	sub := ""
	i := 0
	for ; i < len(args); i++ {
		a := args[i].Value
		if !strings.HasPrefix(a, "-") {
			sub = a
			i++
			break
		}
		for _, g := range gitGlobalRisky {
			if a == g || strings.HasPrefix(a, g+"=") || (g == "-c" && strings.HasPrefix(a, "-c")) {
				return true
			}
		}
		if a == "-C" || a == "--work-tree" || a == "--namespace" {
			i++ // takes a value
		}
	}
	for ; i < len(args); i++ {
		a := args[i].Value
		if a == "--" {
			break
		}
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if name == "" || name == "text" || strings.HasPrefix(name, "no-") {
				// --text (diff -a) is an option of its own, not --textconv.
				continue
			}
			for _, r := range gitRiskyLong {
				if strings.HasPrefix(r, name) {
					return true
				}
			}
			continue
		}
		if flags, ok := strings.CutPrefix(a, "-"); ok && flags != "" {
			if strings.ContainsAny(flags, gitRiskyShort[sub]) {
				return true
			}
		}
	}
	return false
}

// gitTreeReaders are the git subcommands that read files or trees at
// paths the command line names, inside the repository or not: diff
// (--no-index, or paths outside the repository, which git diffs as
// --no-index), difftool, grep (--no-index), add and stage (into the
// object store), hash-object and update-index.
var gitTreeReaders = map[string]bool{
	"diff": true, "difftool": true, "grep": true, "add": true, "stage": true,
	"hash-object": true, "update-index": true,
}

// gitTakesTree reports whether git with arguments args may read a tree
// the command line names, as rm or tar -c take one along: a subcommand
// of gitTreeReaders, git run in another directory or work tree (-C,
// --work-tree, --git-dir), or a subcommand known only when it runs.
func gitTakesTree(args []shell.Word) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Static {
			return true
		}
		v := a.Value
		switch {
		case v == "-C" || v == "--work-tree" || v == "--git-dir" ||
			strings.HasPrefix(v, "--work-tree=") || strings.HasPrefix(v, "--git-dir="):
			return true
		case v == "-c" || v == "--namespace" || v == "--config-env" || v == "--super-prefix" || v == "--attr-source":
			i++ // takes the next word
		case strings.HasPrefix(v, "-"):
		default:
			return gitTreeReaders[v]
		}
	}
	return false
}

// gitGlobalValued are git's options before the subcommand that take the
// next word as their value (git's documentation, "git [<options>]
// <command>").
var gitGlobalValued = map[string]bool{
	"-C": true, "-c": true, "--work-tree": true, "--git-dir": true, "--namespace": true,
	"--config-env": true, "--super-prefix": true, "--attr-source": true, "--list-cmds": true,
}

// gitSubcommandReading returns the reading of git command cmd with the
// options before its subcommand left out ("git push origin" for "git -C .
// --no-pager push origin"), and false when cmd is not git or has none:
// a deny or review rule of a git subcommand meets that reading too, so
// `git -C . push` is `git push` to Bash(git push:*). The program is read
// by its base name.
func gitSubcommandReading(cmd shell.Command) (string, bool) {
	if len(cmd.Args) < 2 || shell.Base(cmd.Args[0].Value) != "git" {
		return "", false
	}
	i := 1
	for ; i < len(cmd.Args); i++ {
		v := cmd.Args[i].Value
		if !cmd.Args[i].Static || !strings.HasPrefix(v, "-") {
			break
		}
		if gitGlobalValued[v] {
			i++
		}
	}
	if i == 1 || i >= len(cmd.Args) {
		return "", false
	}
	parts := []string{"git"}
	for _, w := range cmd.Args[i:] {
		parts = append(parts, w.Reading)
	}
	return strings.Join(parts, " "), true
}
