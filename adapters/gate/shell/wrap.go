package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A wrapper is a program that runs another command given in its
// arguments. inner reads that command as one more Command whose Parent
// is the wrapper, so the gate judges both.

// nameTakers are the builtins whose arguments may be variable names
// (with subscripts, evaluated as arithmetic).
var nameTakers = map[string]bool{
	"unset": true, "read": true, "printf": true, "mapfile": true, "readarray": true,
	"test": true, "[": true, "wait": true, "getopts": true, "export": true, "readonly": true,
	"declare": true, "typeset": true, "local": true, "let": true,
}

// optArgs lists, per wrapper, the short options that take an argument
// (as separate words); long options take theirs after "=" or as the next
// word when listed in longArgs. The sources: GNU coreutils 9.x
// (env, nice, nohup, stdbuf, timeout), util-linux 2.38 (ionice, setsid,
// taskset, flock, su, runuser), sudo 1.9, OpenSSH 9.x ssh(1), GNU
// findutils 4.9 xargs, procps watch, GNU parallel.
var optArgs = map[string]string{
	"env":      "uCS",
	"nice":     "n",
	"ionice":   "cnp",
	"stdbuf":   "ioe",
	"timeout":  "sk",
	"sudo":     "ughpCDrtUTRa",
	"doas":     "uC",
	"xargs":    "aEdIiLlnPs",
	"watch":    "nq",
	"ssh":      "BbcDEeFIiJLlmOopQRSWw",
	"exec":     "a",
	"time":     "fo",
	"taskset":  "",
	"setsid":   "",
	"nohup":    "",
	"command":  "",
	"builtin":  "",
	"flock":    "wE",
	"chrt":     "",
	"busybox":  "",
	"unbuffer": "",
	// util-linux 2.38 unshare, nsenter, setpriv, runuser; strace 6.x,
	// ltrace 0.7, fakeroot 1.3x, systemd 25x systemd-run and
	// systemd-inhibit, PRoot 5, valgrind 3.2x, firejail 0.9, glibc
	// catchsegv, util-linux prlimit, numactl 2, torsocks 2,
	// proxychains-ng 4, xvfb-run, libfaketime, eatmydata, cgroup-tools
	// cgexec, polkit pkexec, OpenSSH ssh-agent, dbus.
	"runuser":          "ugGscw",
	"unshare":          "RwSG",
	"nsenter":          "tSG",
	"setpriv":          "",
	"strace":           "eopsuabEIOPSXU",
	"ltrace":           "aAeFlnopsuwxD",
	"fakeroot":         "lfsib",
	"systemd-run":      "pEMHu",
	"systemd-inhibit":  "",
	"proot":            "rbmwqk",
	"valgrind":         "",
	"firejail":         "",
	"catchsegv":        "",
	"prlimit":          "p",
	"numactl":          "CNmip",
	"torsocks":         "uapP",
	"proxychains":      "f",
	"proxychains4":     "f",
	"xvfb-run":         "nsfwep",
	"eatmydata":        "",
	"cgexec":           "g",
	"pkexec":           "",
	"ssh-agent":        "aEPt",
	"dbus-run-session": "",
	"dbus-launch":      "",
	"nocache":          "",
	"setarch":          "",
	"linux32":          "",
	"linux64":          "",
}

// positionalFirst are the wrappers that take one word before the
// command: flock FILE, taskset MASK, chrt PRIORITY, faketime TIMESTAMP,
// setarch ARCH.
var positionalFirst = map[string]bool{
	"flock": true, "taskset": true, "chrt": true, "faketime": true, "setarch": true,
}

var longArgs = map[string]bool{
	"--unset": true, "--chdir": true, "--split-string": true, "--adjustment": true,
	"--class": true, "--classdata": true, "--input": true, "--output": true, "--error": true,
	"--signal": true, "--kill-after": true, "--user": true, "--group": true, "--host": true,
	"--prompt": true, "--close-from": true, "--role": true, "--type": true, "--other-user": true,
	"--arg-file": true, "--delimiter": true, "--eof": true, "--replace": true, "--max-lines": true,
	"--max-args": true, "--max-procs": true, "--max-chars": true, "--interval": true,
	"--format": true, "--output-file": true, "--timeout": true, "--conflict-exit-code": true,
	"--command": true, "--shell": true, "--login-shell": false,
	"--root": true, "--wd": true, "--setuid": true, "--setgid": true, "--map-user": true,
	"--map-group": true, "--map-users": true, "--map-groups": true, "--propagation": true,
	"--setgroups": true, "--target": true, "--reuid": true, "--regid": true, "--ruid": true,
	"--euid": true, "--rgid": true, "--egid": true, "--groups": true, "--inh-caps": true,
	"--ambient-caps": true, "--bounding-set": true, "--securebits": true, "--pdeathsig": true,
	"--selinux-label": true, "--apparmor-profile": true, "--landlock-access": true,
	"--landlock-rule": true, "--unit": true, "--property": true, "--description": true,
	"--slice": true, "--setenv": true, "--uid": true, "--gid": true, "--nice": true,
	"--working-directory": true, "--machine": true, "--service-type": true,
	"--on-calendar": true, "--on-active": true, "--on-boot": true, "--on-startup": true,
	"--on-unit-active": true, "--on-unit-inactive": true, "--timer-property": true,
	"--path-property": true, "--socket-property": true, "--what": true, "--who": true,
	"--why": true, "--mode": true, "--lib": true, "--faked": true, "--trace": true,
	"--bind": true, "--cwd": true, "--qemu": true, "--kernel-release": true, "--pid": true,
	"--physcpubind": true, "--cpunodebind": true, "--membind": true, "--interleave": true,
	"--preferred": true, "--supp-group": true, "--whitelist-environment": true,
}

// shells run a command string with -c, a script file, or their
// standard input.
var shells = map[string]bool{
	"bash": true, "sh": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "yash": true, "posh": true, "rbash": true, "busybox sh": true,
}

// commandVars name environment variables whose value a program runs as
// a command line (git, pagers, editors, ssh helpers).
var commandVars = map[string]bool{
	"GIT_SSH_COMMAND": true, "GIT_PAGER": true, "GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_ASKPASS": true, "GIT_SSH": true, "GIT_PROXY_COMMAND": true,
	"PAGER": true, "MANPAGER": true, "SYSTEMD_PAGER": true, "EDITOR": true, "VISUAL": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "LESSOPEN": true, "LESSCLOSE": true,
	"PROMPT_COMMAND": true, "BROWSER": true, "TERMINAL": true, "DIFF": true,
	"RSYNC_RSH": true, "RSYNC_CONNECT_PROG": true, "FCEDIT": true, "SUDO_EDITOR": true, "LESSEDIT": true,
}

// optionVars name environment variables a program reads as options,
// an options file or a command it runs (TAR_OPTIONS=--to-command=CMD,
// ZIPOPT='-TT CMD', MANOPT='-P CMD', LESS='+!CMD', RIPGREP_CONFIG_PATH,
// MAKEFLAGS, SHELL, …): the gate does not read them as that program's
// words, so the command is opaque.
var optionVars = map[string]bool{
	"TAR_OPTIONS": true, "ZIPOPT": true, "ZIP": true, "UNZIP": true, "UNZIPOPT": true, "ZIPINFO": true,
	"ZIPINFOOPT": true, "MANOPT": true, "MANROFFOPT": true, "LESS": true, "LESSKEY": true, "LESSKEYIN": true,
	"LESSKEY_CONTENT": true, "LESSKEYIN_SYSTEM": true, "RIPGREP_CONFIG_PATH": true, "GREP_OPTIONS": true,
	"PARALLEL": true, "MAKEFLAGS": true, "MFLAGS": true, "GNUMAKEFLAGS": true, "SHELL": true, "WGETRC": true,
	"CURL_HOME": true, "XZ_OPT": true, "XZ_DEFAULTS": true, "RSYNC_OLD_ARGS": true, "RSYNC_PROTECT_ARGS": true,
}

// loaderVars name environment variables that change which code runs
// (the program search path, preloaded libraries, files a shell reads at
// start, git's config and helpers): the gate cannot see what they bring.
var loaderVars = map[string]bool{
	"PATH": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true,
	"GIT_CONFIG": true, "GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true, "GIT_CONFIG_PARAMETERS": true,
	"GIT_CONFIG_COUNT": true, "GIT_EXEC_PATH": true, "GIT_DIR": false, "PYTHONSTARTUP": true,
	"PYTHONPATH": true, "NODE_OPTIONS": true, "PERL5OPT": true, "RUBYOPT": true, "BASH_LOADABLES_PATH": true,
	"HOSTALIASES": false, "GCONV_PATH": true, "IFS": false,
	"HOME": true, "POSIXLY_CORRECT": true, "CDPATH": false, "SSH_AUTH_SOCK": false,
	"NODE_PATH": true, "RUBYLIB": true, "PERL5LIB": true, "PYTHONHOME": true, "PYTHONUSERBASE": true,
	"CARGO_HOME": true, "GOFLAGS": true, "NPM_CONFIG_USERCONFIG": true, "TMPDIR": false,
}

// gitCommandKey reports whether git config key k (lower case) names a
// command git runs: a shell alias, a pager, an editor, a helper or
// driver (git-config(1), git 2.4x); or moves the work tree git writes
// (core.worktree).
func gitCommandKey(k string) bool {
	switch k {
	case "core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass",
		"core.gitproxy", "sequence.editor", "diff.external", "gpg.program", "credential.helper",
		"interactive.difffilter", "uploadpack.packobjectshook", "sendemail.sendmailcmd",
		"sendemail.tocmd", "sendemail.cccmd", "merge.tool", "diff.tool", "web.browser",
		"receive.procreceiverefs", "core.hookspath", "include.path", "feature.experimental",
		"core.worktree":
		return true
	}
	for _, p := range []string{"pager.", "alias.", "gpg.", "includeif.", "include."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	for _, s := range []string{".textconv", ".command", ".driver", ".clean", ".smudge", ".process", ".cmd", ".helper", ".program", ".path", ".sshcommand"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// GitCommandKey reports whether git config key k (any case) names a
// command git runs (gitCommandKey): what a `git config` that sets it
// makes a later git run.
func GitCommandKey(k string) bool { return gitCommandKey(strings.ToLower(k)) }

// inner reads the commands that command at runs through its arguments.
func (r *reader) inner(at int, st *syntax.Stmt, depth int) {
	c := r.s.Commands[at]
	// Env assignments before the command that name code to run.
	for _, a := range c.Assigns {
		if why := r.assignEffect(a, at, depth); why != "" {
			r.opaque(at, why)
		}
	}
	args := c.Args
	prog := args[0]
	r.changes(at, prog, args[1:])
	if prog.Static {
		r.assignsByName(at, base(prog), args[1:], depth)
	}
	if !prog.Static {
		// A program known only when it runs may be any of the wrappers:
		// its arguments are read as each would read them, as readings
		// that may not happen.
		r.maybeWrapper(at, args, depth)
		return
	}
	name := base(prog)
	rest := args[1:]
	r.chdir(at, name, rest)
	switch {
	case shells[name]:
		r.shell(at, name, rest, st, depth)
	case name == "eval":
		if len(rest) > 0 && rest[0].Static && rest[0].Value == "--" {
			rest = rest[1:]
		}
		r.evalWords(at, rest, "eval", depth)
	case name == "mapfile" || name == "readarray" || name == "compgen" || name == "complete":
		// -C CALLBACK: a command line bash evaluates (mapfile for each
		// quantum of lines; compgen to list completions). compgen and
		// complete -F name a function, judged where it is defined.
		for i, w := range rest {
			if !w.Static {
				r.opaque(at, name+" with an option known only when it runs")
				break
			}
			cb, ok := "", false
			if w.Value == "-C" && i+1 < len(rest) {
				cb, ok = src(rest[i+1]), rest[i+1].Static
				if !ok {
					cb, ok = rest[i+1].Reading, true
				}
			} else if v, found := strings.CutPrefix(w.Value, "-C"); found && v != "" {
				cb, ok = v, true
			}
			if ok {
				// bash evaluates CALLBACK INDEX LINE: the line read is
				// known only when it runs.
				r.text(at, name+" -C", cb+" 0 "+WildPart, false, depth)
			}
		}
	case nameTakers[name]:
		// A variable name with a subscript (a[$(…)], a[x]) is evaluated
		// as arithmetic, which may run commands.
		for i, w := range rest {
			prev := ""
			if i > 0 {
				prev = rest[i-1].Value
			}
			switch name {
			case "test", "[", "printf":
				if prev != "-v" {
					continue
				}
			case "wait":
				if prev != "-p" {
					continue
				}
			case "read", "mapfile", "readarray":
				if strings.HasPrefix(w.Value, "-") || strings.HasPrefix(prev, "-") {
					continue // an option, or its argument (a prompt, a delimiter)
				}
			}
			if strings.Contains(w.Reading, "[") && (!w.Static || strings.ContainsAny(w.Value, "$`") || name != "test" && name != "[") {
				r.evaluate("a variable name with a subscript, which bash evaluates as arithmetic")
				if w.Static && strings.ContainsAny(w.Value, "$`") {
					// Its substitutions run: read them, for deny.
					r.source(": "+w.Value, at, name+" subscript", true, depth+1)
				}
			}
		}
	case name == "bind" || name == "fc":
		r.opaque(at, name+" runs commands the gate cannot see")
	case name == "source" || name == ".":
		if len(rest) > 0 {
			r.opaque(at, "runs the file "+rest[0].Value+", which the gate did not read")
		} else {
			r.opaque(at, "source with no file")
		}
	case name == "alias":
		r.aliasDefined = true
		for _, w := range rest {
			if _, v, ok := strings.Cut(src(w), "="); ok {
				r.repeats++ // wherever the alias is used
				r.text(at, "alias", v, w.Static, depth)
				r.repeats--
			}
		}
	case name == "trap":
		if len(rest) > 0 && rest[0].Static && rest[0].Value == "--" {
			rest = rest[1:]
		}
		if len(rest) > 0 && !(rest[0].Static && strings.HasPrefix(rest[0].Value, "-") && len(rest[0].Value) > 1) {
			// A trap's code runs whenever its signal comes (DEBUG:
			// before every command), in the shell itself.
			r.repeats++
			r.text(at, "trap", src(rest[0]), rest[0].Static, depth)
			r.repeats--
		}
	case name == "shopt":
		for _, w := range rest {
			if !w.Static || w.Value == "expand_aliases" {
				r.expandAliases = true
			}
		}
	case name == "set":
		// POSIX mode expands aliases in a non-interactive shell.
		for _, w := range rest {
			if !w.Static || w.Value == "posix" {
				r.expandAliases = true
			}
		}
	case name == "enable":
		r.opaque(at, "enable may load a builtin from a shared object")
	case name == "hash":
		// hash -p PATH NAME: NAME runs PATH from now on.
		for i := 0; i+1 < len(rest); i++ {
			if rest[i].Value == "-p" {
				r.sub(at, "hash -p", append([]Word{rest[i+1]}, wild()), false, depth)
				break
			}
		}
	case name == "git":
		r.git(at, rest, depth)
	case name == "xargs":
		r.xargs(at, rest, depth)
	case name == "find":
		r.find(at, rest, depth)
		r.findWrites(at, rest)
	case name == "sed" || name == "gsed":
		r.sed(at, rest, depth)
	case name == "sort":
		r.sortOpts(at, rest, depth)
	case name == "rg":
		r.rgOpts(at, rest, depth)
	case name == "less":
		r.lessOpts(at, rest)
	case name == "tar" || name == "gtar":
		r.tarOpts(at, rest, depth)
	case name == "parallel":
		r.parallel(at, rest, depth)
	case name == "watch":
		r.watch(at, rest, depth)
	case name == "ssh":
		r.ssh(at, rest, depth)
	case name == "rsync":
		r.runOpts(at, "rsync", rest, "e", "", "fBMT@", []string{"rsh"}, []string{"rsync-path"}, depth)
	case name == "zip":
		r.runOpts(at, "zip", rest, "", "", "", []string{"unzip-command"}, nil, depth)
	case name == "man":
		r.runOpts(at, "man", rest, "P", "HC", "LmMSsepRrET", []string{"pager"}, []string{"html", "config-file"}, depth)
	case name == "scp" || name == "sftp":
		r.runOpts(at, name, rest, "", "SFDo", "cilPJB", nil, nil, depth)
	case name == "su" || name == "runuser" || name == "script" || name == "flock" || name == "sg":
		for i, w := range rest {
			short := w.Static && len(w.Value) > 2 && w.Value[0] == '-' && w.Value[1] != '-' && strings.HasSuffix(w.Value, "c") && !strings.ContainsAny(w.Value, "=/")
			if w.Value == "-c" || w.Value == "--command" || short && name != "flock" {
				// -c, or a cluster ending in c (-lc, -qc): the next word.
				if i+1 < len(rest) {
					r.text(at, name+" -c", src(rest[i+1]), rest[i+1].Static, depth)
				}
				return
			}
			if v, ok := strings.CutPrefix(w.Value, "--command="); ok {
				r.text(at, name+" -c", v, w.Static, depth)
				return
			}
		}
		switch name {
		case "flock":
			r.positional(at, name, rest, depth)
		case "runuser":
			// runuser -u USER [--] COMMAND [ARGS]: the command as words.
			for _, w := range rest {
				if w.Value == "-u" || w.Value == "--user" || strings.HasPrefix(w.Value, "--user=") {
					r.simpleWrapper(at, name, rest, depth)
					break
				}
			}
		case "sg":
			// sg GROUP COMMAND: the words joined, run by /bin/sh -c.
			ws := rest
			if len(ws) > 0 && ws[0].Value == "-" {
				ws = ws[1:]
			}
			if len(ws) > 1 {
				r.evalWords(at, ws[1:], "sg", depth)
			}
		}
	case name == "env":
		r.env(at, rest, depth)
	case name == "logbook-exec":
		r.logbookExec(at, rest, depth)
	case name == "logbook":
		r.logbook(at, rest, depth)
	case name == "chroot":
		if len(rest) > 1 {
			r.sub(at, "chroot", skipOpts(rest[1:], ""), false, depth)
		}
	case positionalFirst[name]:
		r.positional(at, name, rest, depth)
	case name == "capsh":
		// capsh [opts] -- ARGS: bash runs with ARGS (-c STRING…).
		for i, w := range rest {
			if w.Static && w.Value == "--" {
				r.shell(at, "bash", rest[i+1:], st, depth)
				break
			}
		}
	case name == "bwrap":
		r.bwrap(at, rest, depth)
	case name == "timeout":
		ws := skipOpts(rest, optArgs[name])
		if len(ws) > 1 {
			r.sub(at, name, ws[1:], false, depth)
		}
	case name == "sudo" || name == "doas":
		ws := skipOpts(rest, optArgs[name])
		for len(ws) > 0 && strings.Contains(ws[0].Value, "=") && isName(strings.SplitN(ws[0].Value, "=", 2)[0]) {
			ws = ws[1:]
		}
		if len(ws) > 0 {
			r.sub(at, name, ws, false, depth)
		} else {
			for _, w := range rest {
				if w.Value == "-s" || w.Value == "-i" || w.Value == "--shell" || w.Value == "--login" || !w.Static {
					r.opaque(at, name+" starts a shell whose commands the gate cannot see")
				}
			}
		}
	case optArgsHas(name):
		r.simpleWrapper(at, name, rest, depth)
	}
}

// nameOpts are, per builtin that gives variables values by their names
// (bash 5.2; compgen -V of bash 5.3), the short options that take an
// argument (as the rest of the word or the next word) and, among them,
// those whose argument is such a name.
var nameOpts = map[string]struct{ arg, name string }{
	"printf":    {"v", "v"},
	"read":      {"adeinNptu", "a"},
	"mapfile":   {"dunOCcs", ""},
	"readarray": {"dunOCcs", ""},
	"getopts":   {"", ""},
	"wait":      {"p", "p"},
	"compgen":   {"AGWFCXPSoV", "V"},
	"unset":     {"", ""},
}

// assignedNames returns the words of builtin name's arguments rest that
// name a variable it gives a value (or, for unset, removes), each cut to
// the name (a cluster's "-vNAME" is NAME), as bash reads its options:
// up to "--" or the first word not an option. ok is false when a word
// known only when it runs stands where an option may: then any name may
// be given.
func assignedNames(name string, rest []Word) (names []Word, ok bool) {
	opts, takes := nameOpts[name]
	if !takes {
		return nil, true
	}
	funcs := false // unset -f: the names are functions'
	i := 0
options:
	for ; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			return nil, false
		}
		v := w.Value
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			if name == "unset" && c == 'f' {
				funcs = true
			}
			if strings.IndexByte(opts.arg, c) < 0 {
				continue
			}
			arg := Word{}
			if j+1 < len(v) {
				arg = Word{Value: v[j+1:], Static: true, Reading: v[j+1:], Glob: v[j+1:]}
			} else if i+1 < len(rest) {
				i++
				arg = rest[i]
			} else {
				break options
			}
			if strings.IndexByte(opts.name, c) >= 0 {
				names = append(names, arg)
			}
			break
		}
	}
	pos := rest[min(i, len(rest)):]
	switch name {
	case "read":
		names = append(names, pos...)
	case "unset":
		if !funcs {
			names = append(names, pos...)
		}
	case "mapfile", "readarray":
		if len(pos) > 0 {
			names = append(names, pos[0])
		}
	case "getopts":
		if len(pos) > 1 {
			names = append(names, pos[1])
		}
	}
	return names, true
}

// assignsByName judges the variables builtin name, run as command at
// with arguments rest, gives values by their names (assignedNames:
// printf -v, read, mapfile, getopts, wait -p, compgen -V, unset) as an
// assignment NAME=value of a value known only when it runs: PATH,
// LD_*, BASH* and the other names assignEffect knows make the command
// opaque, as does a name known only when it runs; a subscript is
// evaluated as arithmetic.
func (r *reader) assignsByName(at int, name string, rest []Word, depth int) {
	names, ok := assignedNames(name, rest)
	if !ok {
		r.opaque(at, name+" with an option known only when it runs, which may name any variable")
		return
	}
	for _, w := range names {
		if !w.Static {
			r.opaque(at, name+" gives a value to a variable whose name is known only when it runs")
			continue
		}
		n := w.Value
		if i := strings.IndexByte(n, '['); i >= 0 {
			r.evaluate("a variable name with a subscript, which bash evaluates as arithmetic")
			if strings.ContainsAny(n[i:], "$`") {
				// Its substitutions run: read them, for deny.
				r.source(": "+n[i:], at, name+" subscript", true, depth+1)
			}
			n = n[:i]
		}
		if why := r.assignEffect(Assignment{Name: n, Value: Word{Reading: WildPart, Glob: "${_}"}}, at, depth); why != "" {
			r.opaque(at, why)
		}
	}
}

// execValueFlags are the flags of `logbook exec` (its own and logbook's
// global ones) that take a value, as the next word unless given as
// --flag=value: those of cmd/internal/execfast.
var execValueFlags = map[string]bool{
	"session": true, "mode": true, "cwd": true, "workspace": true, "wait": true, "id": true, "key": true,
	"env": true, "justification": true, "data": true, "nats-url": true, "creds": true, "socket": true,
}

// logbookExec reads `logbook-exec ARGS…`, which is `logbook exec ARGS…`.
func (r *reader) logbookExec(at int, rest []Word, depth int) {
	r.execArgs(at, "logbook-exec", rest, false, depth)
}

// logbook reads `logbook [global flags] exec ARGS…`: exec runs the
// command its arguments name. A subcommand known only when it runs may
// be exec: its arguments are read so, as a reading that may not happen.
func (r *reader) logbook(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			r.execArgs(at, "logbook exec", rest[i+1:], true, depth)
			return
		}
		v := w.Value
		if !strings.HasPrefix(v, "-") || v == "-" {
			if v == "exec" {
				r.execArgs(at, "logbook exec", rest[i+1:], false, depth)
			}
			return
		}
		if v == "--" {
			return
		}
		if n, ok := strings.CutPrefix(v, "--"); ok && !strings.Contains(n, "=") && execValueFlags[n] {
			i++
		}
	}
}

// execArgs reads exec's arguments (cobra's reading, as
// cmd/internal/execfast's): the command is the words that are no flag
// nor a flag's value, flags interspersed, then every word after "--";
// it runs as those words (no shell), a reading that may not happen when
// maybe is set. Each --env NAME=VALUE is judged as an assignment in the
// command's environment.
func (r *reader) execArgs(at int, via string, rest []Word, maybe bool, depth int) {
	var cmd []Word
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			cmd = append(cmd, w)
			continue
		}
		if v == "--" {
			cmd = append(cmd, rest[i+1:]...)
			break
		}
		n, ok := strings.CutPrefix(v, "--")
		if !ok {
			// A word of one dash exec refuses as a flag (nothing
			// runs) is read as the command's too: deny sees more.
			cmd = append(cmd, w)
			continue
		}
		n, val, has := strings.Cut(n, "=")
		if !execValueFlags[n] {
			continue
		}
		vw := Word{Value: val, Static: true, Reading: val, Glob: val}
		if !has {
			if i+1 >= len(rest) {
				break
			}
			i++
			vw = rest[i]
		}
		if n != "env" {
			continue
		}
		name, value, _ := strings.Cut(src(vw), "=")
		_, gv, _ := strings.Cut(vw.Glob, "=")
		if !isName(name) {
			if !vw.Static {
				r.opaque(at, via+" --env with a name known only when it runs")
			}
			continue
		}
		a := Assignment{Name: name, Value: Word{Value: value, Static: vw.Static, Reading: value, Glob: gv}}
		if why := r.assignEffect(a, at, depth); why != "" {
			r.opaque(at, why)
		}
	}
	if len(cmd) > 0 {
		r.sub(at, via, cmd, maybe, depth)
	}
}

// src returns w as text to read as a command line: its value when
// static, else its reading.
func src(w Word) string {
	if w.Static {
		return w.Value
	}
	return w.Reading
}

// wild returns a word known only when it runs, any number of words.
func wild() Word { return Word{Reading: Wild, Glob: "${_}"} }

func optArgsHas(name string) bool { _, ok := optArgs[name]; return ok }

// simpleWrapper reads "name [options] command args…".
func (r *reader) simpleWrapper(at int, name string, rest []Word, depth int) {
	ws := skipOptsOf(rest, optArgs[name], longFlags[name])
	if len(ws) > 0 {
		r.sub(at, name, ws, false, depth)
	}
}

// positional reads "name [options] WORD command args…" (flock FILE,
// taskset MASK, chrt PRIORITY).
func (r *reader) positional(at int, name string, rest []Word, depth int) {
	ws := skipOpts(rest, optArgs[name])
	if len(ws) > 1 {
		r.sub(at, name, skipOpts(ws[1:], optArgs[name]), false, depth)
	}
}

// bwrapArgs are the number of words each bubblewrap 0.x option takes.
var bwrapArgs = map[string]int{
	"--bind": 2, "--bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--dev-bind": 2,
	"--dev-bind-try": 2, "--symlink": 2, "--setenv": 2, "--chmod": 2, "--file": 2,
	"--bind-data": 2, "--ro-bind-data": 2, "--bind-fd": 2, "--ro-bind-fd": 2,
	"--dev": 1, "--proc": 1, "--tmpfs": 1, "--dir": 1, "--mqueue": 1, "--chdir": 1,
	"--uid": 1, "--gid": 1, "--hostname": 1, "--remount-ro": 1, "--seccomp": 1,
	"--add-seccomp-fd": 1, "--info-fd": 1, "--json-status-fd": 1, "--sync-fd": 1,
	"--block-fd": 1, "--userns-block-fd": 1, "--lock-file": 1, "--exec-label": 1,
	"--file-label": 1, "--args": 1, "--unsetenv": 1, "--cap-add": 1, "--cap-drop": 1,
	"--userns": 1, "--userns2": 1, "--pidns": 1, "--overlay-src": 1, "--tmp-overlay": 1,
	"--ro-overlay": 1, "--size": 1, "--argv0": 1, "--perms": 1,
	"--overlay": 3,
}

// bwrap reads "bwrap [options] command args…", each option with the
// words it takes.
func (r *reader) bwrap(at int, rest []Word, depth int) {
	for len(rest) > 0 && rest[0].Static && strings.HasPrefix(rest[0].Value, "-") {
		v := rest[0].Value
		rest = rest[1:]
		if v == "--" {
			break
		}
		rest = rest[min(bwrapArgs[v], len(rest)):]
	}
	r.sub(at, "bwrap", rest, false, depth)
}

// skipOpts returns ws after the leading options: "-x", "-xVALUE",
// "--long", "--long=value", "-o VALUE" for o in withArg, a "--long
// VALUE" in longArgs, and a "--" ending them. An unknown word (not
// static) ends them too.
func skipOpts(ws []Word, withArg string) []Word { return skipOptsOf(ws, withArg, nil) }

// longFlags are, per wrapper, the long options of longArgs it takes
// with no argument (systemd-run --user).
var longFlags = map[string]map[string]bool{
	"systemd-run": {"--user": true},
}

// skipOptsOf is skipOpts with the long options in flags taking no
// argument.
func skipOptsOf(ws []Word, withArg string, flags map[string]bool) []Word {
	for len(ws) > 0 {
		v := ws[0].Value
		if !ws[0].Static || !strings.HasPrefix(v, "-") || v == "-" {
			return ws
		}
		ws = ws[1:]
		if v == "--" {
			return ws
		}
		if strings.HasPrefix(v, "--") {
			if !strings.Contains(v, "=") && longArgs[v] && !flags[v] && len(ws) > 0 {
				ws = ws[1:]
			}
			continue
		}
		// A cluster of short options: the first that takes an argument
		// takes the rest of the word, or the next word.
		for i := 1; i < len(v); i++ {
			if strings.IndexByte(withArg, v[i]) >= 0 {
				if i == len(v)-1 && len(ws) > 0 {
					ws = ws[1:]
				}
				break
			}
		}
	}
	return ws
}

// sub adds the command ws that command at runs.
func (r *reader) sub(at int, via string, ws []Word, maybe bool, depth int) {
	if len(ws) == 0 {
		return
	}
	if depth+1 > MaxDepth {
		r.fault("commands nested more than 16 deep (wrappers, eval, bash -c)")
		return
	}
	c := Command{Args: ws, Parent: at, Via: via, Maybe: maybe || r.s.Commands[at].Maybe}
	i := r.add(c)
	if i >= 0 {
		r.inner(i, nil, depth+1)
	}
}

// text reads s as a command line that command at runs (bash -c, eval,
// an alias, a trap); when s is not static (known only at run time) the
// command is opaque, and its known reading is still read for deny.
func (r *reader) text(at int, via, s string, static bool, depth int) {
	if !static {
		r.opaque(at, via+" of a value known only when it runs")
		if s = strings.NewReplacer(Wild, " ", WildPart, " ").Replace(s); strings.TrimSpace(s) != "" {
			r.source(s, at, via, true, depth+1)
		}
		return
	}
	r.source(s, at, via, r.s.Commands[at].Maybe, depth+1)
}

// evalWords reads eval's words joined by spaces, as eval does.
func (r *reader) evalWords(at int, ws []Word, via string, depth int) {
	static := true
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = src(w)
		static = static && w.Static
	}
	r.text(at, via, strings.Join(parts, " "), static, depth)
}

// opaque marks command at as running code the gate cannot see.
func (r *reader) opaque(at int, why string) {
	if r.s.Commands[at].Opaque == "" {
		r.s.Commands[at].Opaque = why
	}
}

// shell reads a shell's arguments: -c STRING, a script file, or its
// standard input (a here-document or here-string the gate can read, or
// anything else it cannot).
func (r *reader) shell(at int, name string, rest []Word, st *syntax.Stmt, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			r.opaque(at, name+" with an argument known only when it runs")
			return
		}
		switch {
		case v == "--":
			rest = rest[i+1:]
			i = len(rest) // fall to the script file below
			if len(rest) > 0 {
				r.opaque(at, name+" runs the script file "+rest[0].Value+", which the gate did not read")
			} else {
				r.stdin(at, name, st, depth)
			}
			return
		case v == "-c" || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v[1:], "c")):
			// -c, or a cluster holding c (-ec, -xc): the first non-option
			// word after is the command string.
			j := i + 1
			for j < len(rest) && rest[j].Static && strings.HasPrefix(rest[j].Value, "-") && rest[j].Value != "-" && rest[j].Value != "--" {
				if rest[j].Value == "-o" || rest[j].Value == "-O" {
					j++
				}
				j++
			}
			if j < len(rest) && strings.HasPrefix(rest[j].Value, "+") {
				// +o, +x, a lone +: shells differ on where the options
				// end after them (dash takes "sh -c + 00" to run 00).
				r.opaque(at, name+" -c followed by a + option, which shells read differently")
				return
			}
			if j < len(rest) && (rest[j].Value == "--" || rest[j].Value == "-") {
				j++
			}
			if j >= len(rest) {
				r.fault(name + " -c with no command string")
				return
			}
			r.text(at, name+" -c", src(rest[j]), rest[j].Static, depth)
			return
		case v == "--rcfile" || v == "--init-file":
			r.opaque(at, name+" "+v+" runs a file the gate did not read")
			i++
		case v == "-o" || v == "+o" || v == "-O" || v == "+O":
			i++
		case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
			// Other options: -e, -x, -l, -i, -s, --norc, --posix…
		default:
			r.opaque(at, name+" runs the script file "+v+", which the gate did not read")
			return
		}
	}
	r.stdin(at, name, st, depth)
}

// stdin reads what a shell reads from its standard input: a
// here-document or here-string on its own statement, else opaque.
func (r *reader) stdin(at int, name string, st *syntax.Stmt, depth int) {
	if st != nil {
		for _, rd := range st.Redirs {
			switch rd.Op {
			case syntax.Hdoc, syntax.DashHdoc:
				if rd.Hdoc == nil {
					return // an empty here-document
				}
				body := decodeDoc(rd.Hdoc, quotedDelim(rd.Word))
				r.text(at, name+" <<", src(body), body.Static, depth)
				return
			case syntax.WordHdoc:
				// bash appends a newline to a here-string.
				w := decode(rd.Word, true)
				r.text(at, name+" <<<", src(w)+"\n", w.Static, depth)
				return
			case syntax.RdrIn:
				r.opaque(at, name+" reads commands from a file the gate did not read")
				return
			}
		}
	}
	r.opaque(at, name+" reads commands from its standard input, which the gate cannot see")
}

// quotedDelim reports whether a here-document's delimiter word is
// quoted in any part ('EOF', "EOF", \EOF, E"O"F): then bash expands
// nothing in the body and removes no backslash.
func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if strings.Contains(x.Value, `\`) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// decodeDoc decodes a here-document body as bash does: an unquoted one
// expands parameters and substitutions (unknown) and drops backslashes
// before $, `, \ and newline; a quoted one (the parser gives it as one
// literal) is kept as written.
func decodeDoc(w *syntax.Word, quoted bool) Word {
	var val, rd strings.Builder
	static := true
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			s := l.Value
			if !quoted {
				s = unescapeDoc(s)
			}
			val.WriteString(s)
			rd.WriteString(s)
			continue
		}
		static = false
		rd.WriteString(" " + WildPart + " ")
	}
	out := Word{Value: val.String(), Static: static, Reading: rd.String()}
	if static {
		out.Reading = out.Value
	}
	out.Glob = out.Reading
	return out
}

// unescapeDoc drops the backslashes bash drops in an unquoted
// here-document: before $, `, \ and newline.
func unescapeDoc(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// maybeWrapper reads the arguments of a program known only when it runs
// as a shell's -c string, eval's words, and a wrapper's command.
func (r *reader) maybeWrapper(at int, args []Word, depth int) {
	rest := args[1:]
	if len(rest) == 0 {
		return
	}
	via := "a program known only when it runs"
	r.sub(at, via, skipOpts(rest, ""), true, depth)
	for i, w := range rest {
		if w.Static && w.Value == "-c" && i+1 < len(rest) {
			r.source(strings.NewReplacer(Wild, " ", WildPart, " ").Replace(rest[i+1].Reading), at, via, true, depth+1)
		}
	}
	parts := make([]string, len(rest))
	for i, w := range rest {
		parts[i] = strings.NewReplacer(Wild, " ", WildPart, " ").Replace(w.Reading)
	}
	r.source(strings.Join(parts, " "), at, via, true, depth+1)
}

// env reads env's options, assignments and command; -S splits a string
// into the command (GNU coreutils 9 env).
func (r *reader) env(at int, rest []Word, depth int) {
opts:
	for len(rest) > 0 {
		w := rest[0]
		v := w.Value
		if !w.Static {
			break
		}
		switch {
		case v == "-S" || v == "--split-string":
			if len(rest) > 1 {
				r.text(at, "env -S", src(rest[1]), rest[1].Static, depth)
			}
			return
		case strings.HasPrefix(v, "--split-string="):
			r.text(at, "env -S", strings.TrimPrefix(v, "--split-string="), true, depth)
			return
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "S"):
			// -iS'cmd', -S'cmd': the rest of the cluster after S.
			s := v[strings.IndexByte(v, 'S')+1:]
			if s == "" && len(rest) > 1 {
				r.text(at, "env -S", src(rest[1]), rest[1].Static, depth)
			} else {
				r.text(at, "env -S", s, true, depth)
			}
			return
		case v == "--":
			rest = rest[1:]
			break opts
		case v == "-u" || v == "-C" || v == "--unset" || v == "--chdir":
			rest = rest[min(2, len(rest)):]
		case strings.HasPrefix(v, "-") && v != "-":
			rest = rest[1:]
		default:
			break opts
		}
	}
	for len(rest) > 0 {
		name, val, ok := strings.Cut(src(rest[0]), "=")
		if !ok || !isName(name) {
			break
		}
		_, gv, _ := strings.Cut(rest[0].Glob, "=")
		vw := Word{Value: val, Static: rest[0].Static, Reading: val, Glob: gv}
		if why := r.assignEffect(Assignment{Name: name, Value: vw}, at, depth); why != "" {
			r.opaque(at, why)
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		r.sub(at, "env", rest, false, depth)
	}
}

// git reads git's global options (git 2.4x): -c KEY=VALUE for a key
// that names a command (git alias "!…", pagers, editors, helpers) is
// read as that command; --exec-path, --config-env for such a key, and
// "git config KEY VALUE" setting one are judged as what they run later.
func (r *reader) git(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			r.opaque(at, "git with a subcommand or option known only when it runs")
			return
		}
		switch {
		case v == "-c" && i+1 < len(rest):
			i++
			r.gitConfig(at, rest[i], depth)
		case strings.HasPrefix(v, "-c") && len(v) > 2:
			r.gitConfig(at, lit(v[2:]), depth)
		case v == "--config-env" || strings.HasPrefix(v, "--config-env="):
			kv := strings.TrimPrefix(v, "--config-env=")
			if v == "--config-env" && i+1 < len(rest) {
				i++
				kv = rest[i].Reading
			}
			k, _, _ := strings.Cut(kv, "=")
			if gitCommandKey(strings.ToLower(k)) {
				r.opaque(at, "git --config-env sets "+k+" from the environment")
			}
		case v == "--exec-path" || strings.HasPrefix(v, "--exec-path="):
			if strings.Contains(v, "=") {
				r.opaque(at, "git --exec-path changes which programs git runs")
			}
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--super-prefix" || v == "--list-cmds" || v == "--attr-source":
			i++
		case strings.HasPrefix(v, "-"):
		case v == "config":
			r.gitSet(at, rest[i+1:], depth)
			return
		default:
			r.gitSub(at, v, rest[i+1:], depth)
			return
		}
	}
}

// gitConfig reads one -c KEY=VALUE.
func (r *reader) gitConfig(at int, kv Word, depth int) {
	k, val, _ := strings.Cut(src(kv), "=")
	k = strings.ToLower(k)
	if strings.ContainsAny(k, Wild+WildPart) {
		r.opaque(at, "git -c with a key known only when it runs")
		return
	}
	if !gitCommandKey(k) {
		return
	}
	if strings.HasPrefix(k, "alias.") {
		if s, ok := strings.CutPrefix(val, "!"); ok {
			// A shell alias runs from the top of the work tree.
			r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, WorkTreeTop)
			r.text(at, "git alias", s, kv.Static, depth)
		} else if strings.ContainsAny(val, Wild+WildPart) {
			r.opaque(at, "git alias known only when it runs")
		}
		return
	}
	if k == "core.worktree" {
		r.opaque(at, "git -c core.worktree moves the work tree git writes")
		return
	}
	if k == "core.hookspath" || k == "include.path" || strings.HasPrefix(k, "include") || k == "core.fsmonitor" && !kv.Static {
		r.opaque(at, "git -c "+k+" makes git run code the gate cannot see")
		return
	}
	r.text(at, "git -c "+k, strings.TrimPrefix(val, "!"), kv.Static, depth)
}

// gitSet reads "git config [opts] KEY VALUE" and "git config set KEY
// VALUE": a command key's value runs later, so it is judged now.
func (r *reader) gitSet(at int, rest []Word, depth int) {
	var pos []Word
	for i := 0; i < len(rest); i++ {
		v := rest[i].Value
		if rest[i].Static && strings.HasPrefix(v, "-") {
			if v == "-f" || v == "--file" || v == "--blob" || v == "--type" || v == "--default" || v == "--comment" || v == "--value" {
				i++
			}
			continue
		}
		pos = append(pos, rest[i])
	}
	if len(pos) > 0 && (pos[0].Value == "set" || pos[0].Value == "--add") {
		pos = pos[1:]
	}
	if len(pos) < 2 {
		return
	}
	kv := Word{Value: pos[0].Value + "=" + pos[1].Value, Static: pos[0].Static && pos[1].Static, Reading: pos[0].Reading + "=" + pos[1].Reading, Glob: pos[0].Glob + "=" + pos[1].Glob}
	r.gitConfig(at, kv, depth)
}

// xargs reads "xargs [opts] [command [initial args]]" (GNU findutils
// 4.9): the command runs with more arguments from standard input
// (unknown), echo when none is given.
func (r *reader) xargs(at int, rest []Word, depth int) {
	ws := skipOpts(rest, optArgs["xargs"])
	if len(ws) == 0 {
		ws = []Word{lit("echo")}
	}
	r.sub(at, "xargs", append(append([]Word(nil), ws...), wild()), false, depth)
}

// find reads each -exec, -execdir, -ok and -okdir command up to its ";"
// or "+"; "{}" stands for a file name (unknown).
func (r *reader) find(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		v := rest[i].Value
		if v != "-exec" && v != "-execdir" && v != "-ok" && v != "-okdir" {
			continue
		}
		var ws []Word
		j := i + 1
		for ; j < len(rest); j++ {
			if rest[j].Static && (rest[j].Value == ";" || rest[j].Value == "+") {
				break
			}
			w := rest[j]
			if strings.Contains(w.Reading, "{}") {
				w = Word{Value: w.Value, Reading: strings.ReplaceAll(w.Reading, "{}", WildPart), Glob: strings.ReplaceAll(w.Glob, "{}", "${"+FoundName+"}")}
			}
			ws = append(ws, w)
		}
		if v == "-execdir" || v == "-okdir" {
			// Run from the folder of each file found.
			r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, unknownDir)
		}
		r.sub(at, "find "+v, ws, false, depth)
		i = j
	}
}

// parallel reads GNU parallel's command template up to ":::" (run by a
// shell with the inputs in place of {}); with no template, the commands
// come from standard input.
func (r *reader) parallel(at int, rest []Word, depth int) {
	ws := skipOpts(rest, "jSkXnNsaI")
	var tmpl []string
	static := true
	for _, w := range ws {
		if w.Static && (w.Value == ":::" || w.Value == "::::" || w.Value == ":::+" || w.Value == "::::+") {
			break
		}
		tmpl = append(tmpl, strings.ReplaceAll(w.Reading, "{}", WildPart))
		static = static && w.Static && !strings.Contains(w.Value, "{")
	}
	if len(tmpl) == 0 {
		r.opaque(at, "parallel runs commands from its standard input")
		return
	}
	r.text(at, "parallel", strings.Join(tmpl, " "), static, depth)
}

// watch reads procps watch's command: joined and run by sh -c, or with
// -x/--exec run as words.
func (r *reader) watch(at int, rest []Word, depth int) {
	exec := false
	for _, w := range rest {
		if w.Value == "-x" || w.Value == "--exec" {
			exec = true
		}
	}
	ws := skipOpts(rest, optArgs["watch"])
	if len(ws) == 0 {
		return
	}
	if exec {
		r.sub(at, "watch -x", ws, false, depth)
		return
	}
	r.evalWords(at, ws, "watch", depth)
}

// ssh reads OpenSSH's "ssh [opts] host [command…]": the command words
// are joined and run by the remote user's shell.
//
// The options that run a command here (ssh_config(5)): -o
// ProxyCommand=CMD, LocalCommand=CMD and KnownHostsCommand=CMD are read
// as commands; -F FILE (a configuration the gate does not read, which
// may name such commands) makes the command opaque.
func (r *reader) ssh(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !w.Static || !strings.HasPrefix(w.Value, "-") || w.Value == "--" {
			break
		}
		for k := 1; k < len(w.Value); k++ {
			c := w.Value[k]
			if strings.IndexByte(optArgs["ssh"], c) < 0 {
				continue
			}
			val := Word{}
			if v := w.Value[k+1:]; v != "" {
				val = lit(v)
			} else if i+1 < len(rest) {
				i++
				val = rest[i]
			}
			switch c {
			case 'F':
				r.opaque(at, "ssh -F reads a configuration the gate did not read")
			case 'o':
				kv := src(val)
				key, cmd, ok := strings.Cut(kv, "=")
				if !ok {
					key, cmd, _ = strings.Cut(kv, " ")
				}
				switch strings.ToLower(strings.TrimSpace(key)) {
				case "proxycommand", "localcommand", "knownhostscommand":
					r.text(at, "ssh -o "+key, cmd, val.Static, depth)
				case "include":
					r.opaque(at, "ssh -o Include reads a configuration the gate did not read")
				}
			}
			break
		}
	}
	ws := skipOpts(rest, optArgs["ssh"])
	if len(ws) < 2 {
		return
	}
	r.evalWords(at, ws[1:], "ssh", depth)
}

// assignEffect judges an assignment NAME=value made for command at (-1:
// for the commands after it): a value some program runs as a command is
// read as one; one that changes which code runs makes the command
// opaque (the reason is returned).
func (r *reader) assignEffect(a Assignment, at, depth int) string {
	switch {
	case commandVars[a.Name]:
		if at >= 0 {
			r.text(at, a.Name, src(a.Value), a.Value.Static, depth)
			return ""
		}
		// Alone: it runs later, under a command not yet known.
		i := r.add(Command{Args: []Word{lit(a.Name + "=")}, Parent: -1})
		if i >= 0 {
			r.text(i, a.Name, src(a.Value), a.Value.Static, depth)
		}
		return ""
	case optionVars[a.Name]:
		return "sets " + a.Name + ", which a program reads as its options or a command it runs"
	case loaderVars[a.Name], strings.HasPrefix(a.Name, "BASH"), strings.HasPrefix(a.Name, "GIT_"),
		strings.HasPrefix(a.Name, "LD_"), strings.HasPrefix(a.Name, "XDG_"), strings.HasPrefix(a.Name, "LOGBOOK_"):
		if a.Name == "BASH_ALIASES" {
			r.aliasDefined = true
		}
		return "sets " + a.Name + ", which changes what code runs or where programs read their settings"
	}
	return ""
}

// runOpts reads the options of program prog that run a command: those
// whose value is a command line (rsync -e|--rsh, zip -TT|--unzip-command,
// man -P|--pager) are read through as one (see runText); those that run a program or read a configuration the gate does
// not read through (rsync --rsync-path, man -H|--html|-C|--config-file,
// scp and sftp -S|-o|-F|-D) make the command opaque. texts and runs are
// such short options, args the other short options that take a value
// (the rest of the word or the next word); longTexts and longRuns such
// long options, matched in any abbreviation.
func (r *reader) runOpts(at int, prog string, rest []Word, texts, runs, args string, longTexts, longRuns []string, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-") {
				r.opaque(at, prog+" with a word known only when it runs, which may be an option")
				return
			}
			continue
		}
		if v == "--" {
			return
		}
		// value returns the value of the option ending word i at k: the
		// rest of the word, or the next word.
		value := func(k int) (Word, bool) {
			if k < len(v) {
				return lit(v[k:]), true
			}
			if i+1 < len(rest) {
				i++
				return rest[i], true
			}
			return Word{}, false
		}
		if n, ok := strings.CutPrefix(v, "--"); ok {
			n, val, eq := strings.Cut(n, "=")
			for _, name := range longTexts {
				if n != "" && strings.HasPrefix(name, n) {
					c, ok := lit(val), eq
					if !eq {
						c, ok = value(len(v))
					}
					if ok {
						r.runText(at, prog+" --"+name, c, depth)
					}
				}
			}
			for _, name := range longRuns {
				if n != "" && strings.HasPrefix(name, n) {
					r.opaque(at, prog+" --"+name+" runs a program or reads a configuration the gate does not read through")
					return
				}
			}
			continue
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			continue
		}
		if prog == "zip" {
			if k := strings.Index(v, "TT"); k > 0 {
				if c, ok := value(k + 2); ok {
					r.runText(at, "zip -TT", c, depth)
				}
			}
			continue
		}
		for k := 1; k < len(v); k++ {
			c := v[k]
			if strings.IndexByte(runs, c) >= 0 {
				r.opaque(at, prog+" -"+string(c)+" runs a program or reads a configuration the gate does not read through")
				return
			}
			if strings.IndexByte(texts, c) >= 0 {
				if val, ok := value(k + 1); ok {
					r.runText(at, prog+" -"+string(c), val, depth)
				}
				break
			}
			if strings.IndexByte(args, c) >= 0 {
				value(k + 1)
				break
			}
		}
	}
}

// runText reads the command line c that option via (rsync -e, zip -TT,
// man -P) runs: rsync splits it into words itself and adds the host and
// its own words (read without them: a program other than ssh or rsh,
// or a quote or a backslash, which rsync reads its own way, makes the
// command opaque);
// zip runs it by sh with a name of its own added, man as the pager.
func (r *reader) runText(at int, via string, c Word, depth int) {
	if !strings.HasPrefix(via, "rsync") {
		r.text(at, via, src(c), c.Static, depth)
		return
	}
	if !c.Static || strings.ContainsAny(c.Value, "'\"\\") {
		r.opaque(at, via+" of a command the gate cannot split as rsync does")
		return
	}
	var ws []Word
	for _, f := range strings.Fields(c.Value) {
		ws = append(ws, lit(f))
	}
	if len(ws) == 0 {
		return
	}
	r.sub(at, via, ws, false, depth)
	if n := path.Base(ws[0].Value); n != "ssh" && n != "rsh" {
		// ssh and rsh take the host and run rsync's words there; another
		// program may run them here.
		r.opaque(at, via+" runs "+n+" with words rsync adds, which the gate does not read")
	}
}
