package shell

import "strings"

// chdirOpts are, per wrapper, the options that make it run its command
// in another directory than the shell's, or under another root:
//
//   - dir: short letters and long names whose value is the directory
//     (optional: the value only in the same word, "-wDIR", "--wd=DIR";
//     alone, a directory the gate cannot know);
//   - root: the same for a new root directory (chroot(2));
//   - home: flags that start a login shell, which changes to the target
//     user's home directory.
//
// The sources: GNU coreutils 9.x env (-C, --chdir); sudo 1.9 (-D,
// --chdir; -R, --chroot; -i, --login); util-linux 2.38 unshare (-w,
// --wd; -R, --root), nsenter (-w, --wd; -r, --root, their values
// optional), su and runuser (-, -l, --login); PRoot 5 (-w, --cwd; -r,
// --rootfs); GNU parallel (--wd, --workdir); firejail 0.9
// (--private-cwd); systemd 25x systemd-run (--working-directory). Long
// names are matched by any prefix, as getopt_long takes an unambiguous
// abbreviation (a prefix another option shares makes the tool refuse
// the line; read as the directory option, it only adds a directory).
var chdirOpts = map[string]struct {
	dirShort, dirLong, rootShort, rootLong, homeShort, homeLong string
	optional                                                    bool
}{
	"env":      {dirShort: "C", dirLong: "chdir"},
	"sudo":     {dirShort: "D", dirLong: "chdir", rootShort: "R", rootLong: "chroot", homeShort: "i", homeLong: "login"},
	"unshare":  {dirShort: "w", dirLong: "wd", rootShort: "R", rootLong: "root"},
	"nsenter":  {dirShort: "w", dirLong: "wd", rootShort: "r", rootLong: "root", optional: true},
	"su":       {homeShort: "l", homeLong: "login"},
	"runuser":  {homeShort: "l", homeLong: "login"},
	"proot":    {dirShort: "w", dirLong: "cwd", rootShort: "r", rootLong: "rootfs"},
	"parallel": {dirLong: "workdir"},
	"firejail": {dirLong: "private-cwd"},
}

// unknownDir stands for a directory known only when the command runs.
var unknownDir = Word{Reading: WildPart, Glob: "${_}"}

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
		for _, w := range rest {
			switch v := w.Value; {
			case !w.Static:
				c.Chdir = append(c.Chdir, unknownDir)
				return
			case v == "--scope" || v == "--same-dir" || v == "-d":
				return
			case strings.HasPrefix(v, "--working-directory="):
				d := strings.TrimPrefix(v, "--working-directory=")
				c.Chdir = append(c.Chdir, Word{Value: d, Static: true, Reading: d, Glob: d})
				return
			case !strings.HasPrefix(v, "-"):
				c.Chdir = append(c.Chdir, unknownDir) // the service manager's directory
				return
			}
		}
		return
	}
	o, ok := chdirOpts[name]
	if !ok {
		return
	}
	prefixOf := func(full, got string) bool { return full != "" && got != "" && strings.HasPrefix(full, got) }
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
				r.opaque(at, name+" --"+o.rootLong+" runs its command under another root directory, whose paths the gate cannot read")
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
				r.opaque(at, name+" -"+ch+" runs its command under another root directory, whose paths the gate cannot read")
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
