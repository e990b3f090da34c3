package shell

import (
	"strings"
)

// Programs the gate counts as reading or printing, or whose options it
// knows, that run a command or write a file by an option or a script
// command: each such command is read as one more Command (a wrapper's),
// each such file as one more of Script.Writes (or Reads), and what the
// gate cannot read through makes the command Opaque (never allowed by a
// pattern). Checked against the manuals (GNU coreutils 9.x, sed 4.9,
// grep 3.x, findutils 4.9, tar 1.35, diffutils 3.x, git 2.4x, ripgrep
// 14, less 6xx, jq 1.7):
//
//   - git: submodule foreach CMD and submodule--helper foreach CMD (run
//     by sh), bisect run CMD ARGS, filter-branch --env-filter|
//     --tree-filter|--index-filter|--parent-filter|--msg-filter|
//     --commit-filter|--tag-name-filter|--setup CMD (eval'd by sh; every
//     other option but -f|--force|--prune-empty takes the next word, as
//     git's script reads them), rebase -x|--exec CMD, difftool
//     -x|--extcmd CMD, send-email --to-cmd|--cc-cmd|--header-cmd|
//     --sendmail-cmd CMD, clone|fetch|pull|ls-remote|archive
//     --upload-pack|-u CMD, push|send-pack --receive-pack|--exec CMD,
//     archive --exec CMD, grep -O|--open-files-in-pager[=PAGER] (read as
//     commands); instaweb --httpd|--browser, difftool|mergetool
//     -t|--tool (a configured tool: opaque); the options that write a
//     file (--output) are gitWritesOrRuns' in package gate. A
//     subcommand known only when it runs is opaque.
//   - sed: the e command (e CMD runs CMD by sh; a bare e runs the
//     pattern space: opaque), the s command's e flag (opaque), w, W and
//     the s command's w flag (a file written), r and R (a file read),
//     in every -e, --expression and the script operand (-i's files are
//     Script.Changes); -f|--file (a
//     script the gate does not read: opaque); a word known only when it
//     runs that may be an option (opaque). --sandbox turns them off.
//   - sort: --compress-program=PROG (run as PROG and PROG -d), -o|--output
//     FILE (written); a long option in any unique abbreviation (--co).
//     Long options are matched as their programs match them: any unique
//     abbreviation for git's, GNU tar's, sort's and less's.
//   - rg: --pre CMD (run as CMD FILE); --pre-glob only narrows it; -z
//     runs fixed decompressors found by name, none of the line's.
//   - less: +CMD and -+… initial commands (! and | run commands: opaque),
//     -o|-O|--log-file|--LOG-FILE FILE (written: opaque), --lesskey-src
//     (opaque); LESSOPEN and LESSCLOSE are commandVars.
//   - tar: --to-command CMD, --checkpoint-action=exec=CMD,
//     -I|--use-compress-program PROG, -F|--info-script|--new-volume-script
//     CMD, --rsh-command|--rmt-command PROG (read as commands), an
//     archive on a HOST: (runs rsh or ssh: opaque).
//   - rsync -e|--rsh, zip -TT|--unzip-command, man -P|--pager (read as
//     commands); rsync --rsync-path, man -H|--html|-C|--config-file, scp
//     and sftp -S|-o|-F|-D (opaque); wrap.go's optionVars (TAR_OPTIONS,
//     ZIPOPT, MANOPT, LESS, RIPGREP_CONFIG_PATH, …) make a command
//     opaque.
//   - find: -exec, -execdir, -ok, -okdir (find); -fprint, -fprint0,
//     -fprintf, -fls FILE (written).
//   - echo, printf, cat, head, tail, wc, uniq, cut, tr, grep, diff, cmp,
//     comm, file, stat, touch, mkdir, rmdir, rm, cp, mv, ln, chmod, chown,
//     basename, dirname, realpath, readlink, pwd, cd, date, sleep, tee,
//     more, jq, base64, sha256sum, md5sum, od, xxd, hexdump, du, df,
//     which, type, mktemp, nl, paste, join, fold, column: no option or
//     script runs a program (printf -v, read, declare, export are
//     builtins read in wrap.go; the files the programs that write
//     their operands write, cp, mv, tee, touch, uniq OUT, …, are
//     Script.Changes, read in changes.go).

// gitSub reads git subcommand sub's arguments rest for the commands it
// runs (see the list above).
func (r *reader) gitSub(at int, sub string, rest []Word, depth int) {
	// valueOf returns the value of option word i (one of names, in any
	// abbreviation of at least min letters, "--name=V" or "--name V"),
	// and the index of the last word it took.
	long := func(i int, min int, names ...string) (Word, int, bool) {
		v := rest[i].Value
		n, val, eq := strings.Cut(strings.TrimPrefix(v, "--"), "=")
		if !strings.HasPrefix(v, "--") || len(n) < min {
			return Word{}, i, false
		}
		for _, name := range names {
			if strings.HasPrefix(name, n) {
				if eq {
					return Word{Value: val, Static: true, Reading: val, Glob: val}, i, true
				}
				if i+1 < len(rest) {
					return rest[i+1], i + 1, true
				}
				return Word{}, i, false
			}
		}
		return Word{}, i, false
	}
	// short returns the value of short option c in cluster word i.
	short := func(i int, c byte) (Word, int, bool) {
		v := rest[i].Value
		if !strings.HasPrefix(v, "-") || strings.HasPrefix(v, "--") {
			return Word{}, i, false
		}
		k := strings.IndexByte(v[1:], c)
		if k < 0 {
			return Word{}, i, false
		}
		if s := v[k+2:]; s != "" {
			return lit(s), i, true
		}
		if i+1 < len(rest) {
			return rest[i+1], i + 1, true
		}
		return Word{}, i, false
	}
	via := "git " + sub
	if sub == "submodule--helper" {
		sub = "submodule" // git submodule--helper foreach CMD runs CMD as submodule foreach does
	}
	if sub == "filter-branch" {
		r.filterBranch(at, rest, depth)
		return
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			if sub == "submodule" || sub == "bisect" {
				r.opaque(at, via+" with a word known only when it runs")
				return
			}
			continue
		}
		if w.Value == "--" && sub != "bisect" && sub != "submodule" {
			return
		}
		switch sub {
		case "submodule", "bisect":
			if strings.HasPrefix(w.Value, "-") {
				continue
			}
			if sub == "submodule" && w.Value != "foreach" || sub == "bisect" && w.Value != "run" {
				return // another subcommand: the first word that is no option
			}
			if sub == "submodule" {
				ws := rest[i+1:]
				for len(ws) > 0 && ws[0].Static && (ws[0].Value == "--recursive" || ws[0].Value == "--quiet" || ws[0].Value == "-q" || ws[0].Value == "--") {
					ws = ws[1:]
				}
				// git runs the words by sh (one word as a command line),
				// in each submodule's folder.
				r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, unknownDir)
				r.evalWords(at, ws, via+" foreach", depth)
				return
			}
			// bisect run: from the top of the work tree.
			r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, WorkTreeTop)
			r.sub(at, via+" run", rest[i+1:], false, depth)
			r.evalWords(at, rest[i+1:], via+" run", depth)
			return
		case "rebase":
			if _, _, ok := long(i, 1, "exec"); ok {
				r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, WorkTreeTop)
			} else if _, _, ok := short(i, 'x'); ok {
				r.s.Commands[at].Chdir = append(r.s.Commands[at].Chdir, WorkTreeTop)
			}
			if c, j, ok := long(i, 1, "exec"); ok {
				r.text(at, via+" --exec", src(c), c.Static, depth)
				i = j
			} else if c, j, ok := short(i, 'x'); ok {
				r.text(at, via+" -x", src(c), c.Static, depth)
				i = j
			}
		case "difftool":
			if c, j, ok := long(i, 1, "extcmd"); ok {
				r.text(at, via+" --extcmd", src(c)+" "+WildPart+" "+WildPart, false, depth)
				i = j
			} else if c, j, ok := short(i, 'x'); ok {
				r.text(at, via+" -x", src(c)+" "+WildPart+" "+WildPart, false, depth)
				i = j
			} else if _, j, ok := long(i, 1, "tool"); ok {
				r.opaque(at, via+" --tool runs a configured tool")
				i = j
			} else if _, j, ok := short(i, 't'); ok {
				r.opaque(at, via+" -t runs a configured tool")
				i = j
			}
		case "mergetool":
			if _, j, ok := long(i, 1, "tool"); ok {
				r.opaque(at, via+" --tool runs a configured tool")
				i = j
			} else if _, j, ok := short(i, 't'); ok {
				r.opaque(at, via+" -t runs a configured tool")
				i = j
			}
		case "send-email":
			if c, j, ok := long(i, 3, "to-cmd", "cc-cmd", "header-cmd", "sendmail-cmd"); ok {
				r.text(at, via+" "+w.Value, src(c)+" "+WildPart, false, depth)
				i = j
			} else if c, j, ok := long(i, 7, "smtp-server"); ok && strings.HasPrefix(c.Value, "/") {
				r.sub(at, via+" --smtp-server", []Word{c, wild()}, false, depth)
				i = j
			}
		case "clone", "fetch", "pull", "ls-remote", "archive", "push", "send-pack", "fetch-pack":
			if c, j, ok := long(i, 1, "upload-pack", "receive-pack"); ok {
				r.text(at, via+" "+w.Value, src(c)+" "+WildPart, false, depth)
				i = j
			} else if c, j, ok := long(i, 1, "exec"); ok && (sub == "archive" || sub == "push" || sub == "send-pack" || sub == "fetch-pack") {
				r.text(at, via+" --exec", src(c)+" "+WildPart, false, depth)
				i = j
			} else if sub != "push" && sub != "archive" && !strings.HasPrefix(w.Value, "--") {
				if c, j, ok := short(i, 'u'); ok {
					r.text(at, via+" -u", src(c)+" "+WildPart, false, depth)
					i = j
				}
			}
		case "grep":
			v := w.Value
			if n, val, eq := strings.Cut(strings.TrimPrefix(v, "--"), "="); strings.HasPrefix(v, "--") && len(n) >= 2 && strings.HasPrefix("open-files-in-pager", n) {
				if eq && val != "" {
					r.text(at, via+" -O", val+" "+WildPart, true, depth)
				}
			} else if strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") {
				if k := strings.IndexByte(v, 'O'); k > 0 && v[k+1:] != "" {
					r.text(at, via+" -O", v[k+1:]+" "+WildPart, true, depth)
				}
			}
		case "instaweb":
			if strings.HasPrefix(w.Value, "--h") || strings.HasPrefix(w.Value, "--b") || strings.HasPrefix(w.Value, "-d") || strings.HasPrefix(w.Value, "-b") {
				r.opaque(at, via+" runs a web server or browser it is given")
			}
		}
	}
}

// filterBranchFilters are git filter-branch's options whose value sh
// evals.
var filterBranchFilters = map[string]bool{
	"--setup": true, "--env-filter": true, "--tree-filter": true, "--index-filter": true, "--parent-filter": true,
	"--msg-filter": true, "--commit-filter": true, "--tag-name-filter": true,
}

// filterBranch reads git filter-branch's options as its script does:
// up to -- or the first word that is no option, --force, -f,
// --prune-empty and --remap-to-ancestor take no value and every other
// option takes the next word, whatever it looks like (--original
// --msg-filter --tree-filter CMD runs CMD as the tree filter). Each
// filter's value is read as a command; so is the word after any word
// that names a filter, or names one with =VALUE (VALUE), wherever it
// stands: deny and review win on any reading.
func (r *reader) filterBranch(at int, rest []Word, depth int) {
	via := "git filter-branch"
	read := map[int]bool{}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			r.opaque(at, via+" with a word known only when it runs")
			return
		}
		if w.Value == "--" || !strings.HasPrefix(w.Value, "-") {
			break
		}
		switch w.Value {
		case "--force", "-f", "--prune-empty", "--remap-to-ancestor":
			continue
		}
		if i+1 < len(rest) && filterBranchFilters[w.Value] {
			read[i+1] = true
		}
		i++
	}
	for i, w := range rest {
		if !w.Static {
			r.opaque(at, via+" with a word known only when it runs")
			return
		}
		n, val, eq := strings.Cut(w.Value, "=")
		switch {
		case !filterBranchFilters[n]:
		case eq:
			r.text(at, via+" "+n, val, true, depth)
		case i+1 < len(rest):
			read[i+1] = true
		}
	}
	for i, w := range rest {
		if read[i] {
			r.text(at, via+" "+rest[i-1].Value, src(w), w.Static, depth)
		}
	}
}

// longOpt returns the long option of names that word n (the text after
// "--", before any "=") stands for, as getopt_long reads it: the option
// itself, or the one option it is a unique abbreviation of; "" for none
// or an ambiguous one (which the program refuses).
func longOpt(n string, names []string) string {
	found := ""
	for _, name := range names {
		if name == n {
			return name
		}
		if n != "" && strings.HasPrefix(name, n) {
			if found != "" {
				return ""
			}
			found = name
		}
	}
	return found
}

// sortLongOpts are GNU sort's long options (coreutils 9.1 sort --help),
// with "=" after those that take a value.
var sortLongOpts = []string{
	"ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort", "ignore-nonprinting",
	"month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "random-source=", "reverse", "sort=",
	"version-sort", "batch-size=", "check", "compress-program=", "debug", "files0-from=", "key=", "merge",
	"output=", "stable", "buffer-size=", "field-separator=", "temporary-directory=", "parallel=", "unique",
	"zero-terminated", "help", "version",
}

// sortLongNames are sortLongOpts without their "=".
var sortLongNames = func() []string {
	out := make([]string, len(sortLongOpts))
	for i, o := range sortLongOpts {
		out[i] = strings.TrimSuffix(o, "=")
	}
	return out
}()

// sed reads GNU sed's options and script (see the list above).
func (r *reader) sed(at int, rest []Word, depth int) {
	var scripts []string
	given := false // a script given by -e, --expression or -f
	sandbox := false
	var operands []Word
	// -i, --in-place: each file operand is written, and its backup
	// when a suffix is given (inPlace).
	inplace, suffix, read := false, "", false
	defer func() {
		if !inplace {
			return
		}
		files := operands
		if !given && len(files) > 0 {
			files = files[1:] // the script
		}
		if !read {
			// Left before every word was read (a script file, a word
			// known only when it runs): every word that is no option may
			// be a file, the script's too.
			files = nil
			for _, o := range rest {
				if !o.Static || !strings.HasPrefix(o.Value, "-") {
					files = append(files, o)
				}
			}
		}
		r.inPlace(at, "sed -i", files, suffix)
	}()
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-") {
				r.opaque(at, "sed with a word known only when it runs, which may be a script")
				inplace, suffix = true, "" // it may be -i
				return
			}
			operands = append(operands, w)
			continue
		}
		switch {
		case v == "--":
			operands = append(operands, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(v, "--"):
			n, val, eq := strings.Cut(v[2:], "=")
			next := func() (string, bool) {
				if eq {
					return val, true
				}
				if i+1 < len(rest) {
					i++
					if !rest[i].Static {
						return "", false
					}
					return rest[i].Value, true
				}
				return "", true
			}
			switch {
			case n == "":
			case strings.HasPrefix("expression", n):
				s, ok := next()
				if !ok {
					r.opaque(at, "sed -e of a value known only when it runs")
					return
				}
				scripts, given = append(scripts, s), true
			case strings.HasPrefix("file", n):
				r.opaque(at, "sed -f runs a script file the gate did not read")
				return
			case strings.HasPrefix("line-length", n):
				next()
			case strings.HasPrefix("in-place", n):
				inplace, suffix = true, val
			case len(n) >= 2 && strings.HasPrefix("sandbox", n):
				sandbox = true
			}
		case strings.HasPrefix(v, "-") && v != "-":
		cluster:
			for k := 1; k < len(v); k++ {
				switch v[k] {
				case 'e':
					s := v[k+1:]
					if s == "" {
						if i+1 >= len(rest) {
							break cluster
						}
						i++
						if !rest[i].Static {
							r.opaque(at, "sed -e of a value known only when it runs")
							return
						}
						s = rest[i].Value
					}
					scripts, given = append(scripts, s), true
					break cluster
				case 'f':
					r.opaque(at, "sed -f runs a script file the gate did not read")
					return
				case 'l':
					if k == len(v)-1 {
						i++
					}
					break cluster
				case 'i':
					inplace, suffix = true, v[k+1:]
					break cluster // the rest is the suffix
				}
			}
		default:
			operands = append(operands, w)
		}
	}
	read = true
	if !given && len(operands) > 0 {
		if !operands[0].Static {
			r.opaque(at, "sed with a script known only when it runs")
			return
		}
		scripts = append(scripts, operands[0].Value)
	}
	if sandbox {
		return
	}
	for _, s := range scripts {
		sp := sedScript{s: s}
		sp.parse()
		if sp.opaque != "" {
			r.opaque(at, sp.opaque)
		}
		for _, c := range sp.runs {
			r.source(c, at, "sed e", r.s.Commands[at].Maybe, depth+1)
		}
		for _, f := range sp.writes {
			if f != "/dev/stdout" && f != "/dev/stderr" {
				r.s.Writes = append(r.s.Writes, Redirection{Op: "sed w", Target: lit(f), Command: at})
			}
		}
		for _, f := range sp.reads {
			if f != "/dev/stdin" {
				r.s.Reads = append(r.s.Reads, Redirection{Op: "sed r", Target: lit(f), Command: at})
			}
		}
	}
}

// sedScript is a GNU sed script being read for what it runs, writes
// and reads.
type sedScript struct {
	s      string
	i      int
	runs   []string // the commands of e CMD
	writes []string // the files of w, W and s///w
	reads  []string // the files of r and R
	opaque string   // why the gate cannot read it through
}

func (p *sedScript) eof() bool { return p.i >= len(p.s) }

// toEOL returns the text up to the end of the line, spaces before it
// dropped.
func (p *sedScript) toEOL() string {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	j := strings.IndexByte(p.s[p.i:], '\n')
	if j < 0 {
		j = len(p.s) - p.i
	}
	out := p.s[p.i : p.i+j]
	p.i += j
	return out
}

// delimited skips text up to an unescaped d, and d.
func (p *sedScript) delimited(d byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		if c == '\\' {
			p.i++
			continue
		}
		if c == d {
			return true
		}
	}
	return false
}

// regex skips a regular expression up to an unescaped d, and d, as GNU
// sed 4.9 reads it: d inside a bracket expression ("[/]", "[^/]",
// "[]/]", "[[:alpha:]/]") ends nothing. A bracket expression that holds a
// backslash (which GNU sed may read as an escape, POSIX as itself) or
// never ends fails: the script is then one the gate cannot read.
func (p *sedScript) regex(d byte) bool {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			p.i++
		case c == d:
			return true
		case c == '[':
			if !p.bracket() {
				return false
			}
		}
	}
	return false
}

// bracket skips the rest of a bracket expression whose "[" was read: an
// optional "^", a "]" first as itself, classes "[:x:]", "[.x.]" and
// "[=x=]", up to its "]".
func (p *sedScript) bracket() bool {
	if !p.eof() && p.s[p.i] == '^' {
		p.i++
	}
	if !p.eof() && p.s[p.i] == ']' {
		p.i++
	}
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			return false
		case c == ']':
			return true
		case c == '[' && !p.eof() && strings.IndexByte(":.=", p.s[p.i]) >= 0:
			k := p.s[p.i]
			end := strings.Index(p.s[p.i+1:], string(k)+"]")
			if end < 0 {
				return false
			}
			p.i += 1 + end + 2
		}
	}
	return false
}

// address skips one address, if there is one.
func (p *sedScript) address() bool {
	if p.eof() {
		return true
	}
	c := p.s[p.i]
	switch {
	case c >= '0' && c <= '9' || c == '+' || c == '~':
		p.i++
		for !p.eof() && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '~') {
			p.i++
		}
	case c == '$':
		p.i++
	case c == '/' || c == '\\':
		d := byte('/')
		p.i++
		if c == '\\' {
			if p.eof() {
				return false
			}
			d = p.s[p.i]
			p.i++
		}
		if !p.regex(d) {
			return false
		}
		for !p.eof() && (p.s[p.i] == 'I' || p.s[p.i] == 'M') {
			p.i++
		}
	}
	return true
}

// parse reads the whole script; anything it does not know makes it
// opaque.
func (p *sedScript) parse() {
	fail := func() { p.opaque = "a sed script the gate cannot read" }
	for !p.eof() {
		c := p.s[p.i]
		if strings.IndexByte(" \t\n;}", c) >= 0 {
			p.i++
			continue
		}
		if c == '#' {
			p.toEOL()
			continue
		}
		if !p.address() {
			fail()
			return
		}
		for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
			p.i++
		}
		if !p.eof() && p.s[p.i] == ',' {
			p.i++
			for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
				p.i++
			}
			if !p.address() {
				fail()
				return
			}
		}
		for !p.eof() && strings.IndexByte(" \t!", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			fail()
			return
		}
		c = p.s[p.i]
		p.i++
		switch c {
		case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
				p.i++
			}
		case ':', 'b', 't', 'T', 'v':
			for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
				p.i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line, a backslash before a newline
			// going on to the next.
			for !p.eof() && p.s[p.i] != '\n' {
				if p.s[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
		case 'r', 'R':
			p.reads = append(p.reads, p.toEOL())
		case 'w', 'W':
			p.writes = append(p.writes, p.toEOL())
		case 'e':
			cmd := p.toEOL()
			if strings.TrimSpace(cmd) == "" {
				p.opaque = "sed's e command runs the pattern space"
				return
			}
			p.runs = append(p.runs, cmd)
		case 's', 'y':
			if p.eof() || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
				fail()
				return
			}
			d := p.s[p.i]
			p.i++
			// s: a regular expression, then the replacement; y: two
			// lists of characters.
			if c == 's' && !p.regex(d) || c == 'y' && !p.delimited(d) || !p.delimited(d) {
				fail()
				return
			}
			if c == 'y' {
				continue
			}
		flags:
			for !p.eof() {
				switch f := p.s[p.i]; {
				case f == 'e':
					p.opaque = "sed's s///e runs the pattern space"
					return
				case f == 'w':
					p.i++
					p.writes = append(p.writes, p.toEOL())
					break flags
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					p.i++
				default:
					break flags
				}
			}
		default:
			fail()
			return
		}
	}
}

// mayBeOption reports whether w, a word known only when it runs, may
// begin with one of the option prefixes (as "-", "+"): its reading
// begins with one, or with a wildcard that may stand for one.
func mayBeOption(w Word, prefixes ...string) bool {
	for _, p := range append(prefixes, Wild, WildPart) {
		if strings.HasPrefix(w.Reading, p) {
			return true
		}
	}
	return false
}

// sortOpts reads GNU sort's --compress-program (run to compress and,
// with -d, to decompress) and -o|--output (a file written).
func (r *reader) sortOpts(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-") {
				r.opaque(at, "sort with a word known only when it runs, which may be an option")
			}
			continue
		}
		if v == "--" {
			return
		}
		if n, val, eq := strings.Cut(strings.TrimPrefix(v, "--"), "="); strings.HasPrefix(v, "--") && n != "" {
			// Any unique abbreviation: --compress-program from --co, --output
			// from --o; an ambiguous one (--c) makes sort refuse the line.
			name := longOpt(n, sortLongNames)
			takes := false
			for _, o := range sortLongOpts {
				if o == name+"=" {
					takes = true
				}
			}
			var pw Word
			ok := false
			if eq {
				pw, ok = lit(val), true
			} else if takes && i+1 < len(rest) {
				i++
				pw, ok = rest[i], true
			}
			switch {
			case !ok:
			case name == "compress-program":
				r.sub(at, "sort --compress-program", []Word{pw}, false, depth)
				r.sub(at, "sort --compress-program", []Word{pw, lit("-d")}, false, depth)
			case name == "output":
				r.s.Writes = append(r.s.Writes, Redirection{Op: "sort -o", Target: pw, Command: at})
			}
			continue
		}
		if strings.HasPrefix(v, "-") && v != "-" {
			for k := 1; k < len(v); k++ {
				if strings.IndexByte("kotST", v[k]) < 0 {
					continue
				}
				val := v[k+1:]
				var pw Word
				if val == "" {
					if i+1 >= len(rest) {
						break
					}
					i++
					pw = rest[i]
				} else {
					pw = lit(val)
				}
				if v[k] == 'o' {
					r.s.Writes = append(r.s.Writes, Redirection{Op: "sort -o", Target: pw, Command: at})
				}
				break
			}
		}
	}
}

// rgOpts reads ripgrep's --pre COMMAND: run on each file searched, as
// COMMAND FILE.
func (r *reader) rgOpts(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-") {
				r.opaque(at, "rg with a word known only when it runs, which may be --pre")
			}
			continue
		}
		if v == "--" {
			return
		}
		if val, ok := strings.CutPrefix(v, "--pre="); ok {
			if val != "" {
				r.sub(at, "rg --pre", []Word{lit(val), searched()}, false, depth)
			}
			continue
		}
		if v == "--pre" && i+1 < len(rest) {
			i++
			if rest[i].Reading != "" {
				r.sub(at, "rg --pre", []Word{rest[i], searched()}, false, depth)
			}
		}
	}
}

// searched returns the word for a file a search program passes the
// command it runs: a path under the trees the line names, as find's {}.
func searched() Word {
	return Word{Reading: WildPart, Glob: "${" + FoundName + "}"}
}

// lessOpts reads less's initial commands (+CMD, -+… aside, --cmd) and
// log files (-o, -O, --log-file, --LOG-FILE): a command line or a shell
// escape less may run, or a file written, which the gate does not read
// through.
func (r *reader) lessOpts(at int, rest []Word) {
	for _, w := range rest {
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-", "+") {
				r.opaque(at, "less with a word known only when it runs, which may be a command")
			}
			continue
		}
		if v == "--" {
			return
		}
		switch {
		case strings.HasPrefix(v, "+") && len(v) > 1 && strings.ContainsAny(v, "!|sEv"):
			r.opaque(at, "less runs its initial commands, which may run a program or write a file")
		case strings.HasPrefix(v, "--") && lessRunsOpt(v[2:]):
			r.opaque(at, "less "+v+" writes a file or runs a command")
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "oOk"):
			r.opaque(at, "less -o|-O|-k writes a log file or reads key bindings")
		}
	}
}

// lessRunsOpt reports whether long option n (the text after "--") is
// one of less's options that write a log file, read key bindings or
// run a command, in any abbreviation and any case (less takes unique
// abbreviations of its long options).
func lessRunsOpt(n string) bool {
	n, _, _ = strings.Cut(strings.ToLower(n), "=")
	if n == "" {
		return false
	}
	for _, name := range []string{"log-file", "lesskey-file", "lesskey-src", "lesskey-content", "cmd", "editor"} {
		if strings.HasPrefix(name, n) {
			return true
		}
	}
	return false
}

// tarOpts reads GNU tar's options that run a program: --to-command,
// --checkpoint-action=exec=, -I|--use-compress-program, -F|--info-script|
// --new-volume-script, --rsh-command, --rmt-command; an archive on a
// HOST: runs rsh or ssh.
func (r *reader) tarOpts(at int, rest []Word, depth int) {
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			if mayBeOption(w, "-") {
				r.opaque(at, "tar with a word known only when it runs, which may be an option")
			}
			continue
		}
		if v == "--" {
			return
		}
		if strings.HasPrefix(v, "--") {
			n, val, eq := strings.Cut(v[2:], "=")
			take := func() (Word, bool) {
				if eq {
					return lit(val), true
				}
				if i+1 < len(rest) {
					i++
					return rest[i], true
				}
				return Word{}, false
			}
			switch {
			case len(n) >= 2 && strings.HasPrefix("to-command", n):
				if c, ok := take(); ok {
					r.text(at, "tar --to-command", src(c), c.Static, depth)
				}
			case len(n) >= 11 && strings.HasPrefix("checkpoint-action", n): // --checkpoint itself is another option
				if c, ok := take(); ok {
					if s, found := strings.CutPrefix(src(c), "exec="); found {
						r.text(at, "tar --checkpoint-action=exec", s, c.Static, depth)
					} else if !c.Static {
						r.opaque(at, "tar --checkpoint-action known only when it runs")
					}
				}
			case len(n) >= 2 && strings.HasPrefix("use-compress-program", n):
				if c, ok := take(); ok {
					r.text(at, "tar --use-compress-program", src(c), c.Static, depth)
				}
			case len(n) >= 2 && (strings.HasPrefix("info-script", n) || strings.HasPrefix("new-volume-script", n)):
				if c, ok := take(); ok {
					r.text(at, "tar --info-script", src(c), c.Static, depth)
				}
			case len(n) >= 2 && (strings.HasPrefix("rsh-command", n) || strings.HasPrefix("rmt-command", n)):
				if c, ok := take(); ok {
					r.sub(at, "tar --"+n, []Word{c, wild()}, false, depth)
				}
			case len(n) >= 2 && strings.HasPrefix("file", n):
				if c, ok := take(); ok {
					r.tarArchive(at, c)
				}
			}
			continue
		}
		// A cluster, with or without its dash in the first word (tar
		// czf A): I, F and f take a value, the rest of the word or the
		// next word.
		if !strings.HasPrefix(v, "-") && i != 0 {
			continue
		}
		for k := strings.IndexFunc(v, func(c rune) bool { return c != '-' }); k >= 0 && k < len(v); k++ {
			c := v[k]
			if strings.IndexByte("IFfbCgHKLNTVX", c) < 0 {
				continue
			}
			var val Word
			if s := v[k+1:]; s != "" && strings.HasPrefix(v, "-") {
				val = lit(s)
			} else if i+1 < len(rest) {
				i++
				val = rest[i]
			}
			switch c {
			case 'I':
				r.text(at, "tar -I", src(val), val.Static, depth)
			case 'F':
				r.text(at, "tar -F", src(val), val.Static, depth)
			case 'f':
				r.tarArchive(at, val)
			}
			if strings.HasPrefix(v, "-") {
				break
			}
		}
	}
}

// tarArchive judges tar's archive name: HOST:FILE (a colon before any
// slash) is an archive on another machine, reached by rsh or ssh.
func (r *reader) tarArchive(at int, w Word) {
	v := src(w)
	if k := strings.IndexByte(v, ':'); k > 0 && !strings.Contains(v[:k], "/") {
		r.opaque(at, "tar on an archive "+v+" reached through a remote shell")
	}
}

// findWrites reads find's -fprint, -fprint0, -fprintf and -fls: each
// writes the file it names.
func (r *reader) findWrites(at int, rest []Word) {
	for i := 0; i+1 < len(rest); i++ {
		switch rest[i].Value {
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			r.s.Writes = append(r.s.Writes, Redirection{Op: "find " + rest[i].Value, Target: rest[i+1], Command: at})
			i++
		}
	}
}
