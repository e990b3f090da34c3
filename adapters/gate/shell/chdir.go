package shell

import (
	"slices"
	"strings"
)

// chdirOpts are, per wrapper, the options that make it run its command
// in another directory than the shell's, or under another root:
//
//   - dir: short letters and long names whose value is the directory
//     (optional: the value only in the same word, "-wDIR", "--wd=DIR";
//     alone, a directory the gate cannot know);
//   - root: the same for a new root directory (chroot(2)) or mount
//     namespace;
//   - home: flags that start a login shell, which changes to the target
//     user's home directory.
//
// The sources: GNU coreutils 9.x env (-C, --chdir); sudo 1.9 (-D,
// --chdir; -R, --chroot; -i, --login); util-linux 2.38 unshare (-w,
// --wd; -R, --root), nsenter (-w, --wd; -r, --root; -m, --mount; -a,
// --all, their values optional); GNU parallel (--workdir, --wd). Long
// names are matched by any prefix, as getopt_long takes an unambiguous
// abbreviation (a prefix another option shares makes the tool refuse
// the line; read as the directory option, it only adds a directory). A
// value in the same word that starts with "~" is the tool's own tilde
// (sudo: the target user's home): a directory the gate cannot know.
// util-linux su and runuser (suLogin), pkexec, systemd-run, chroot and
// the sandbox and multiplexer programs (opaqueWrappers) are read on
// their own.
var chdirOpts = map[string]struct {
	dirShort, rootShort, homeShort string
	dirLong, rootLong, homeLong    []string
	optional                       bool
}{
	"env":      {dirShort: "C", dirLong: []string{"chdir"}},
	"sudo":     {dirShort: "D", dirLong: []string{"chdir"}, rootShort: "R", rootLong: []string{"chroot"}, homeShort: "i", homeLong: []string{"login"}},
	"unshare":  {dirShort: "w", dirLong: []string{"wd"}, rootShort: "R", rootLong: []string{"root"}},
	"nsenter":  {dirShort: "w", dirLong: []string{"wd"}, rootShort: "rma", rootLong: []string{"root", "mount", "all"}, optional: true},
	"parallel": {dirLong: []string{"workdir", "wd"}},
}

// opaqueWrappers run their command where its paths may name other
// files than the shell's (a mount namespace or file system view of
// their own: binds, overlays, a private home), or in a server whose
// directory and commands the line does not show: sandbox and
// multiplexer programs (bubblewrap 0.x, firejail 0.9, PRoot 5, tmux 3,
// GNU screen 4). tmux's subcommands in tmuxReads only report.
var opaqueWrappers = map[string]string{
	"bwrap":    "bwrap runs its command in a mount namespace of its own, whose paths the gate cannot read",
	"firejail": "firejail runs its command in a file system view of its own, whose paths the gate cannot read",
	"proot":    "proot runs its command under a root and binds of its own, whose paths the gate cannot read",
	"tmux":     "tmux runs commands in its server, from directories the line does not show",
	"screen":   "screen runs commands in its session, from directories the line does not show",
}

// tmuxReads are tmux 3 subcommands (and aliases) that run nothing.
var tmuxReads = map[string]bool{
	"ls": true, "list-sessions": true, "lsw": true, "list-windows": true, "lsp": true, "list-panes": true,
	"has": true, "has-session": true, "display": true, "display-message": true, "capturep": true,
	"capture-pane": true, "show": true, "show-options": true, "list-clients": true, "lsc": true,
	"list-keys": true, "lsk": true, "list-buffers": true, "lsb": true, "info": true, "show-buffer": true,
	"showb": true, "-V": true,
}

// suLogin are the programs that start a login shell, in the target
// user's home, when "-", "-l" or "--login" is among their words, before
// or after the command (util-linux 2.38 su and runuser: getopt reorders
// their options), and the options among theirs that take a value.
var suLogin = map[string]string{"su": "cgGsw", "runuser": "cgGswu"}

// unknownDir stands for a directory known only when the command runs.
var unknownDir = Word{Reading: WildPart, Glob: "${_}"}

// WorkTreeTop stands, in Command.Chdir, for the top of the git work
// tree the shell's directory lies in (where git runs a bisect run's,
// a rebase --exec's or a shell alias's command): the judge finds it on
// disk. Its Value is no path.
var WorkTreeTop = Word{Value: "\x00work-tree-top", Reading: WildPart, Glob: "${_}"}

// chdir notes, on wrapper command at (named name, its arguments rest),
// the directories it may run its command in (Command.Chdir) when an
// option of it names another (chdirOpts): each such option's value, or
// a directory known only when it runs; and marks it opaque when an option gives its
// command another root directory, whose paths the gate cannot read
// (chroot to anything but "/" too). systemd-run runs its command from
// the service manager's directory unless --scope or --same-dir keeps
// the shell's. It reads the options up to "--" or the first word that
// is none; a word known only when it runs there may be any option.
func (r *reader) chdir(at int, name string, rest []Word) {
	c := &r.s.Commands[at]
	switch name {
	case "chroot":
		for _, w := range rest {
			if w.Static && strings.HasPrefix(w.Value, "-") {
				continue
			}
			if !w.Static || strings.Trim(w.Value, "/") != "" {
				r.opaque(at, "chroot runs its command under another root directory, whose paths the gate cannot read")
			}
			return
		}
		return
	case "systemd-run":
		// The service manager's directory, --working-directory's, a
		// WorkingDirectory= property's (the last one given wins), or
		// the shell's with --same-dir or --scope: taken for unknown.
		c.Chdir = append(c.Chdir, unknownDir)
		return
	}
	if why, ok := opaqueWrappers[name]; ok {
		if name == "tmux" {
			for _, w := range rest {
				if w.Static && strings.HasPrefix(w.Value, "-") && w.Value != "-V" {
					continue
				}
				if w.Static && tmuxReads[w.Value] {
					return
				}
				break
			}
		}
		r.opaque(at, why)
		return
	}
	if takes, ok := suLogin[name]; ok {
		for i := 0; i < len(rest); i++ {
			w := rest[i]
			v := w.Value
			switch {
			case !w.Static:
				c.Chdir = append(c.Chdir, unknownDir)
				return
			case v == "-" || strings.HasPrefix(v, "--") && len(v) > 2 && strings.HasPrefix("--login", strings.SplitN(v, "=", 2)[0]):
				c.Chdir = append(c.Chdir, unknownDir)
				return
			case strings.HasPrefix(v, "--") && !strings.Contains(v, "=") && longArgs[v]:
				i++
			case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--"):
				for j := 1; j < len(v); j++ {
					if v[j] == 'l' {
						c.Chdir = append(c.Chdir, unknownDir)
						return
					}
					if strings.IndexByte(takes, v[j]) >= 0 {
						if j+1 == len(v) {
							i++
						}
						break
					}
				}
			}
		}
		return
	}
	if name == "pkexec" {
		// pkexec runs its command in the target user's home unless
		// --keep-cwd.
		for _, w := range rest {
			if w.Static && w.Value == "--keep-cwd" {
				return
			}
			if !w.Static || !strings.HasPrefix(w.Value, "--") {
				break
			}
		}
		c.Chdir = append(c.Chdir, unknownDir)
		return
	}
	o, ok := chdirOpts[name]
	if !ok {
		return
	}
	prefixOf := func(names []string, got string) bool {
		return got != "" && slices.ContainsFunc(names, func(full string) bool { return strings.HasPrefix(full, got) })
	}
	set := func(d Word) { c.Chdir = append(c.Chdir, d) }
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		switch {
		case !w.Static:
			set(unknownDir)
			return
		case v == "--":
			return
		case v == "-" && o.homeShort != "":
			set(unknownDir) // su -: a login shell
			continue
		case strings.HasPrefix(v, "--"):
			long, val, eq := strings.Cut(v[2:], "=")
			valueOf := func() Word {
				switch {
				case eq && strings.HasPrefix(val, "~"):
					return unknownDir // the tool's own tilde (sudo: the target user's home)
				case eq:
					return Word{Value: val, Static: true, Reading: val, Glob: val}
				case o.optional || i+1 >= len(rest):
					return unknownDir
				}
				i++
				return rest[i]
			}
			switch {
			case prefixOf(o.dirLong, long):
				set(valueOf())
			case prefixOf(o.rootLong, long):
				valueOf()
				r.opaque(at, name+" --"+long+" runs its command under another root directory or mount namespace, whose paths the gate cannot read")
			case prefixOf(o.homeLong, long):
				set(unknownDir)
			case !eq && longArgs["--"+long]:
				i++
			}
			continue
		case !strings.HasPrefix(v, "-") || v == "-":
			return // the command
		}
		// A cluster of short options: a letter that takes a value takes
		// the rest of the word, else the next word.
		for j := 1; j < len(v); j++ {
			ch := v[j : j+1]
			valueOf := func() Word {
				switch {
				case j+1 < len(v) && v[j+1] == '~':
					return unknownDir // the tool's own tilde (sudo: the target user's home)
				case j+1 < len(v):
					s := v[j+1:]
					return Word{Value: s, Static: true, Reading: s, Glob: s}
				case o.optional || i+1 >= len(rest):
					return unknownDir
				}
				i++
				return rest[i]
			}
			switch {
			case strings.Contains(o.dirShort, ch):
				set(valueOf())
			case strings.Contains(o.rootShort, ch):
				valueOf()
				r.opaque(at, name+" -"+ch+" runs its command under another root directory or mount namespace, whose paths the gate cannot read")
			case strings.Contains(o.homeShort, ch):
				set(unknownDir)
				continue
			case strings.Contains(optArgs[name], ch):
				if j+1 == len(v) {
					i++
				}
			default:
				continue
			}
			break
		}
	}
}
