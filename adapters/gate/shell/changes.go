package shell

import (
	"path"
	"slices"
	"strings"
)

// Programs that write, create or remove the files their operands name
// (or an option names by its value, as dd's of=): each such file is
// one of Script.Changes, read as the program's manual reads its words
// (GNU coreutils 9.x, util-linux, GNU sed 4.9, tar 1.35, rsync 3.2,
// patch 2.7, gawk 5, perl 5, unzip 6, zip 3, git 2.4x), options
// anywhere before "--" as getopt_long permutes them, long options in
// any unique abbreviation:
//
//   - cp, mv, install, ln: the destination (the last operand, or -t
//     DIR), and DEST/NAME for each source NAME when it may be a
//     directory (a tree with -r, -R, -a; mv always: it moves trees);
//     --parents DEST/SOURCE; a backup (-b, --backup, -S, --suffix) of a
//     name known only when it runs; mv's sources (removed, trees);
//     install -d's directories. link: its second operand.
//   - tee, touch, truncate, shred, unlink, rmdir (and its parents with
//     -p), mkdir (and its parents with -p), mkfifo, mknod: every operand
//     (mknod's first); rm: every operand, a tree with -r, -R; chmod,
//     chown, chgrp: every operand, trees with -R (the mode or owner
//     among them: a name the rules seldom hold).
//   - uniq IN OUT, xxd IN OUT: OUT; dd: of=FILE; split, csplit: files
//     of their prefix (x, xx, or the PREFIX operand, -f) with a suffix
//     known only when they run; mktemp TEMPLATE (and -p DIR, --tmpdir):
//     the template's file, its X's known only when it runs.
//   - sed -i, --in-place (perl -i, gawk -i inplace, --include=inplace
//     or a program that names inplace): each file operand, and its
//     backup (a SUFFIX with "*" is a name made from the file's).
//   - tar: extracting (-x, --extract, --get), a tree under each -C DIR
//     (--directory, chained as tar changes directory), the working
//     directory when no -C comes first, and --one-top-level's DIR;
//     any path with -P (--absolute-names); nothing with -O
//     (--to-stdout) or --to-command. Creating or changing an archive
//     (-c, -r, -u, -A, --delete): the archive (-f FILE), and with
//     --remove-files each member (removed, trees). -g|--listed-
//     incremental, --index-file, --volno-file: the file they name.
//   - unzip: a tree under -d DIR or the working directory, unless it
//     only lists, tests or prints (-l, -t, -v, -z, -Z, -c, -p); any path
//     with -: (members outside the folder). zip: the archive (and
//     ARCHIVE.zip), -O|--output-file, and with -m|--move its members
//     (removed, trees).
//   - rsync: a tree under the destination (the last operand, when on
//     this machine), the sources with --remove-source-files (trees),
//     --log-file, --write-batch, --only-write-batch (and FILE.sh),
//     --backup-dir and --temp-dir (trees, under the destination when
//     relative).
//   - patch: its file operand (and FILE.orig, FILE.rej), -o|--output,
//     -r|--reject-file, else a tree under -d|--directory DIR or the
//     working directory (the files the patch names); a backup when
//     asked of a name known only when it runs.
//   - gzip, bzip2, xz, lzma, zstd, lz4, lzip, pigz, compress and their
//     un- forms: each operand (replaced unless kept) and its compressed
//     or uncompressed name (-S|--suffix), a tree with -r; zstd -o,
//     lz4's OUT; nothing with -c, --stdout, -l, -t.
//   - git checkout, restore (their pathspecs, trees), rm (removed,
//     trees), mv (as mv), clean (a tree under each pathspec, else the
//     working directory); under -C DIR, each relative to DIR, and under
//     --work-tree DIR, to DIR as well. The whole work tree (--work-tree's,
//     else the one the directory lies in, from its top: RepoTop) for
//     those that may write anywhere in it (gitWritesTree: reset --hard,
//     pull, merge, stash, a branch checked out …); init's folder,
//     clone's, worktree add's (gitNewTree).
//   - find -delete: a tree under each starting point.
//   - curl -o|--output, -D|--dump-header, -c|--cookie-jar, --trace,
//     --trace-ascii, --stderr, --etag-save, --libcurl FILE; -O,
//     --remote-name(-all), -J: a tree under --output-dir DIR or the
//     working directory; -K|--config: any path. wget: a tree under
//     -P|--directory-prefix DIR or the working directory, or
//     -O|--output-document FILE; -o|--output-file, -a|--append-output
//     FILE; -e|--execute (a wgetrc command): any path.
//   - ed, ex, vi, vim, nvim, nano, emacs: every word that is no option
//     (what their own commands write, :w FILE, the gate cannot see).
//   - a program known only when it runs: each word that is no option
//     (a tree: it may be rm -r).
//
// A word known only when it runs that may be an option (one that may
// begin with "-") may change what every other word means: every operand
// is then read as written, the unknown word too. A file read from the
// archive, patch or tree a program takes (tar's members, unzip's, a
// patch's names) is any file under the folder it writes into: a tree.
// Naming a file a program reads (cp's sources, tar -f of -x) is no
// change.

// changeTree marks a change of a file and every path under it (a
// Redirection's Tree).
const changeTree = true

// getopt is one program's options as getopt_long reads them.
type getopt struct {
	// short are the short options that take a value: the rest of the
	// word or the next word.
	short string
	// long are the long options, with "=" after a name that takes a
	// value ("--name V" or "--name=V") and "?" after one that takes it
	// only after "=".
	long []string
}

// opt is one option of a command's words: "-x" for a short option,
// "--name" for a long one (its full name when it abbreviates one).
type opt struct {
	name string
	val  Word
}

// parsedArgs are a command's words read by its getopt.
type parsedArgs struct {
	opts     []opt
	operands []Word
	// unknown are the words known only when they run that may be
	// options (they are among operands too).
	unknown []Word
	// all are the options and operands in the order given, an
	// operand as an opt with no name.
	all []opt
}

// has reports whether any of the options names is given.
func (p parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values returns the values of the options names, in order.
func (p parsedArgs) values(names ...string) []Word {
	var out []Word
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				out = append(out, o.val)
			}
		}
	}
	return out
}

// parse reads rest as getopt_long does, options anywhere before "--".
func (g getopt) parse(rest []Word) parsedArgs {
	var p parsedArgs
	names := make([]string, len(g.long))
	for i, l := range g.long {
		names[i] = strings.TrimRight(l, "=?")
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		switch {
		case !w.Static:
			if mayBeOption(w, "-") {
				p.unknown = append(p.unknown, w)
			}
			p.operand(w)
		case v == "--":
			for _, w := range rest[i+1:] {
				p.operand(w)
			}
			return p
		case strings.HasPrefix(v, "--"):
			n, val, eq := strings.Cut(v[2:], "=")
			name := longOpt(n, names)
			o := opt{name: "--" + name}
			if name == "" {
				o.name = "--" + n
			}
			for _, l := range g.long {
				switch {
				case name == "" || strings.TrimRight(l, "=?") != name:
				case eq:
					o.val = lit(val)
				case strings.HasSuffix(l, "=") && i+1 < len(rest):
					i++
					o.val = rest[i]
				}
			}
			p.option(o)
		case strings.HasPrefix(v, "-") && v != "-":
			for k := 1; k < len(v); k++ {
				o := opt{name: "-" + v[k:k+1]}
				if strings.IndexByte(g.short, v[k]) >= 0 {
					if k+1 < len(v) {
						o.val = lit(v[k+1:])
					} else if i+1 < len(rest) {
						i++
						o.val = rest[i]
					}
					p.option(o)
					break
				}
				p.option(o)
			}
		default:
			p.operand(w)
		}
	}
	return p
}

func (p *parsedArgs) option(o opt) {
	p.opts = append(p.opts, o)
	p.all = append(p.all, o)
}

func (p *parsedArgs) operand(w Word) {
	p.operands = append(p.operands, w)
	p.all = append(p.all, opt{val: w})
}

// change records that command at writes, creates or removes the file
// w names (tree: and any path under it), as op says.
func (r *reader) change(at int, op string, w Word, tree bool) {
	if w.Static && (w.Value == "" || w.Value == "-") {
		return // standard input or output
	}
	r.s.Changes = append(r.s.Changes, Redirection{Op: op, Target: w, Command: at, Tree: tree})
}

// unknownPath is a path known only when the command runs: any path.
func unknownPath() Word { return Word{Reading: Wild, Glob: "${_}"} }

// joinPath returns the path dir/name as a word, static when both are;
// an empty dir is name itself.
func joinPath(dir, name Word) Word {
	if dir.Static && dir.Value == "" {
		return name
	}
	d := func(s string) string {
		if s == "/" {
			return ""
		}
		return strings.TrimSuffix(s, "/")
	}
	return Word{
		Value:   d(dir.Value) + "/" + name.Value,
		Static:  dir.Static && name.Static,
		Reading: d(dir.Reading) + "/" + name.Reading,
		Glob:    d(dir.Glob) + "/" + name.Glob,
	}
}

// relativeTo returns w read from directory dir when w is relative
// (dir "" or w absolute: w itself).
func relativeTo(dir, w Word) Word {
	if dir.Static && dir.Value == "" || w.Static && (strings.HasPrefix(w.Value, "/") || strings.HasPrefix(w.Value, "~")) {
		return w
	}
	return joinPath(dir, w)
}

// baseName returns the last part of path w (trailing slashes aside) as
// a word: static when that part is known; a part known only when it
// runs when it is not.
func baseName(w Word) Word {
	rd := strings.TrimRight(w.Reading, "/")
	tail := rd[strings.LastIndexByte(rd, '/')+1:]
	if tail != "" && !strings.ContainsAny(tail, Wild+WildPart) {
		return lit(tail)
	}
	return Word{Reading: WildPart, Glob: "${_}"}
}

// withSuffix returns path w with text s after it.
func withSuffix(w Word, s string) Word {
	return Word{Value: w.Value + s, Static: w.Static, Reading: w.Reading + s, Glob: w.Glob + s}
}

// unknownSuffix returns path w followed by text known only when the
// command runs (a backup's suffix, split's names).
func unknownSuffix(w Word) Word {
	return Word{Value: w.Value, Reading: w.Reading + WildPart, Glob: w.Glob + "${_}"}
}

// changers are the programs whose operands changes reads, by base name.
var changers = map[string]func(r *reader, at int, name string, rest []Word){
	"cp": (*reader).copyChanges, "mv": (*reader).copyChanges, "install": (*reader).copyChanges,
	"ln": (*reader).copyChanges, "link": (*reader).linkChanges,
	"tee": (*reader).operandChanges, "touch": (*reader).operandChanges, "truncate": (*reader).operandChanges,
	"shred": (*reader).operandChanges, "unlink": (*reader).operandChanges, "rmdir": (*reader).operandChanges,
	"mkdir": (*reader).operandChanges, "mkfifo": (*reader).operandChanges, "mknod": (*reader).operandChanges,
	"rm": (*reader).operandChanges, "chmod": (*reader).operandChanges, "chown": (*reader).operandChanges,
	"chgrp": (*reader).operandChanges,
	"uniq":  (*reader).outputOperand, "xxd": (*reader).outputOperand,
	"dd": (*reader).ddChanges, "split": (*reader).splitChanges, "csplit": (*reader).splitChanges,
	"mktemp": (*reader).mktempChanges,
	"perl":   (*reader).perlChanges, "awk": (*reader).awkChanges, "gawk": (*reader).awkChanges,
	"tar": (*reader).tarChanges, "gtar": (*reader).tarChanges, "bsdtar": (*reader).tarChanges,
	"unzip": (*reader).unzipChanges, "zip": (*reader).zipChanges,
	"rsync": (*reader).rsyncChanges, "patch": (*reader).patchChanges,
	"git": (*reader).gitChanges, "find": (*reader).findChanges,
	"curl": (*reader).curlChanges, "wget": (*reader).wgetChanges,
	"ed": (*reader).editorChanges, "ex": (*reader).editorChanges, "vi": (*reader).editorChanges,
	"vim": (*reader).editorChanges, "nvim": (*reader).editorChanges, "nano": (*reader).editorChanges,
	"emacs":  (*reader).editorChanges,
	"strace": (*reader).wrapperOutputs, "ltrace": (*reader).wrapperOutputs, "valgrind": (*reader).wrapperOutputs,
	"time": (*reader).wrapperOutputs, "script": (*reader).wrapperOutputs, "flock": (*reader).wrapperOutputs,
	"xvfb-run": (*reader).wrapperOutputs,
}

// wrapperLogs are, per wrapper, the options whose value is a file it
// writes itself (its log, trace or timing), short letters and long
// names: strace 6.x (-o, --output), ltrace 0.7 (-o, --output), valgrind
// 3.2x (--log-file, --xml-file), GNU time 1.9 (-o, --output), util-linux
// 2.38 script (-O, --log-out, -I, --log-in, -T, --log-timing, -B,
// --log-io, -t and --timing with their value in the same word),
// xvfb-run (-e, --error-file, -f, --auth-file).
var wrapperLogs = map[string]struct {
	short string
	long  []string
}{
	"strace":   {"o", []string{"output"}},
	"ltrace":   {"o", []string{"output"}},
	"valgrind": {"", []string{"log-file", "xml-file"}},
	"time":     {"o", []string{"output"}},
	"script":   {"OITB", []string{"log-out", "log-in", "log-timing", "log-io", "timing"}},
	"xvfb-run": {"ef", []string{"error-file", "auth-file"}},
}

// wrapperOutputs reads the files a wrapper writes itself (wrapperLogs)
// from its options before the command it runs, and script's file
// operand (typescript when none) and flock's lock file (made when
// missing). A word known only when it runs where an option may stand
// may be any of them: any path.
func (r *reader) wrapperOutputs(at int, name string, rest []Word) {
	logs := wrapperLogs[name]
	takes := optArgs[name]
	if name == "script" {
		takes = "cEmOITB"
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		switch {
		case !w.Static:
			r.change(at, name, unknownPath(), false)
			return
		case v == "--":
			rest = rest[i+1:]
			i = len(rest)
		case strings.HasPrefix(v, "--"):
			long, val, eq := strings.Cut(v[2:], "=")
			isLog := slices.ContainsFunc(logs.long, func(full string) bool { return long != "" && strings.HasPrefix(full, long) })
			switch {
			case isLog && eq:
				r.change(at, name+" --"+long, Word{Value: val, Static: true, Reading: val, Glob: val}, false)
			case isLog && long != "timing" && i+1 < len(rest):
				i++
				r.change(at, name+" --"+long, rest[i], false)
			case !eq && longArgs["--"+long]:
				i++
			}
			continue
		case strings.HasPrefix(v, "-") && v != "-":
			for j := 1; j < len(v); j++ {
				ch := v[j]
				if name == "script" && ch == 't' {
					if j+1 < len(v) {
						r.change(at, name+" -t", lit(v[j+1:]), false)
					}
					break
				}
				if strings.IndexByte(logs.short, ch) >= 0 {
					switch {
					case j+1 < len(v):
						r.change(at, name+" -"+string(ch), lit(v[j+1:]), false)
					case i+1 < len(rest):
						i++
						r.change(at, name+" -"+string(ch), rest[i], false)
					}
					break
				}
				if strings.IndexByte(takes, ch) >= 0 {
					if j+1 == len(v) {
						i++
					}
					break
				}
			}
			continue
		}
		// The first operand: script's file, flock's lock file; the
		// others' command.
		switch name {
		case "script":
			r.change(at, name, w, false)
		case "flock":
			if strings.Trim(v, "0123456789") != "" {
				r.change(at, name, w, false)
			}
		}
		return
	}
	if name == "script" {
		r.change(at, name, lit("typescript"), false)
	}
}

func init() {
	for prog := range compressors {
		changers[prog] = (*reader).compressChanges
		changers["un"+prog] = (*reader).compressChanges
	}
	changers["gunzip"] = (*reader).compressChanges
	changers["bunzip2"] = (*reader).compressChanges
}

// changes reads the files command at (program prog, arguments rest)
// writes, creates or removes by its operands (see the list above). A
// program known only when it runs may be any of them: each of its
// words that is no option may be a tree it changes.
func (r *reader) changes(at int, prog Word, rest []Word) {
	if !prog.Static {
		for _, w := range rest {
			if !w.Static || !strings.HasPrefix(w.Value, "-") {
				r.change(at, "a program known only when it runs", w, changeTree)
			}
		}
		return
	}
	name := base(prog)
	if f := changers[name]; f != nil {
		f(r, at, name, rest)
	}
}

// findChanges reads find's -delete: it removes what it finds, under
// each starting point (the words before the first expression; "." when
// none).
func (r *reader) findChanges(at int, name string, rest []Word) {
	del := false
	for i, w := range rest {
		// A word known only when it runs may be -delete, unless it is
		// the value of the word before it (-name "$x").
		afterOpt := i > 0 && rest[i-1].Static && strings.HasPrefix(rest[i-1].Value, "-")
		if w.Static && w.Value == "-delete" || !w.Static && !afterOpt {
			del = true
		}
	}
	if !del {
		return
	}
	i := 0
	for i < len(rest) && rest[i].Static && (rest[i].Value == "-H" || rest[i].Value == "-L" || rest[i].Value == "-P" || strings.HasPrefix(rest[i].Value, "-D") || strings.HasPrefix(rest[i].Value, "-O")) {
		if rest[i].Value == "-D" {
			i++
		}
		i++
	}
	start := i
	for ; i < len(rest); i++ {
		if v := rest[i].Value; rest[i].Static && (strings.HasPrefix(v, "-") || v == "(" || v == "!") {
			break
		}
		r.change(at, "find -delete", rest[i], changeTree)
	}
	if i == start {
		r.change(at, "find -delete", lit("."), changeTree)
	}
}

// unknownOptions records, for words p whose getopt met a word known
// only when it runs that may be an option, every operand and unknown
// word as changed (trees): such a word may make any of them a
// destination. It reports whether it did.
func (r *reader) unknownOptions(at int, name string, p parsedArgs) bool {
	if len(p.unknown) == 0 {
		return false
	}
	for _, w := range p.operands {
		r.change(at, name, w, changeTree)
	}
	for _, o := range p.opts {
		if o.val.Reading != "" {
			r.change(at, name, o.val, changeTree)
		}
	}
	return true
}

// copyOpts are the getopts of cp, mv, install and ln (coreutils 9.x).
var copyOpts = map[string]getopt{
	"cp": {short: "St", long: []string{"archive", "attributes-only", "backup?", "copy-contents", "debug", "force",
		"interactive", "link", "dereference", "no-clobber", "no-dereference", "preserve?", "no-preserve=", "parents",
		"recursive", "reflink?", "remove-destination", "sparse=", "strip-trailing-slashes", "symbolic-link",
		"suffix=", "target-directory=", "no-target-directory", "update?", "verbose", "keep-directory-symlink",
		"one-file-system", "context?", "help", "version"}},
	"mv": {short: "St", long: []string{"backup?", "debug", "exchange", "force", "interactive", "no-clobber", "no-copy",
		"strip-trailing-slashes", "suffix=", "target-directory=", "no-target-directory", "update?", "verbose",
		"context", "help", "version"}},
	"install": {short: "gmoSt", long: []string{"backup?", "compare", "debug", "directory", "group=", "mode=", "owner=",
		"preserve-timestamps", "strip", "strip-program=", "suffix=", "target-directory=", "no-target-directory",
		"verbose", "preserve-context", "context?", "help", "version"}},
	"ln": {short: "St", long: []string{"backup?", "directory", "force", "interactive", "logical", "no-dereference",
		"physical", "relative", "symbolic", "suffix=", "target-directory=", "no-target-directory", "verbose",
		"help", "version"}},
}

// copyChanges reads cp, mv, install and ln: see the list above.
func (r *reader) copyChanges(at int, name string, rest []Word) {
	p := copyOpts[name].parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	tree := name == "mv" || p.has("-r", "-R", "-a", "--recursive", "--archive")
	backup := p.has("-b", "--backup", "-S", "--suffix")
	write := func(w Word, tree bool) {
		r.change(at, name, w, tree)
		if backup {
			r.change(at, name+" backup", unknownSuffix(w), tree)
		}
	}
	if name == "install" && p.has("-d", "--directory") {
		for _, w := range p.operands {
			r.change(at, name, w, false)
		}
		return
	}
	ops := p.operands
	if name == "mv" {
		srcs := ops
		if len(p.values("-t", "--target-directory")) == 0 && len(ops) > 0 {
			srcs = ops[:len(ops)-1]
		}
		for _, w := range srcs {
			r.change(at, "mv source", w, changeTree)
		}
	}
	into := func(dir Word, srcs []Word) {
		for _, s := range srcs {
			if p.has("--parents") {
				write(joinPath(dir, s), tree)
			} else {
				write(joinPath(dir, baseName(s)), tree)
			}
		}
	}
	if dirs := p.values("-t", "--target-directory"); len(dirs) > 0 {
		into(dirs[len(dirs)-1], ops)
		return
	}
	switch {
	case len(ops) == 0:
	case len(ops) == 1:
		if name == "ln" {
			// ln TARGET: a link named as TARGET's last part, here.
			write(baseName(ops[0]), false)
		}
	case p.has("-T", "--no-target-directory"):
		write(ops[len(ops)-1], tree)
	case len(ops) == 2:
		// DEST, or DEST/NAME when DEST is a directory.
		write(ops[1], tree)
		into(ops[1], ops[:1])
	default:
		into(ops[len(ops)-1], ops[:len(ops)-1])
	}
}

// linkChanges reads link FILE1 FILE2: FILE2 is made.
func (r *reader) linkChanges(at int, name string, rest []Word) {
	p := getopt{}.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	if len(p.operands) > 1 {
		r.change(at, name, p.operands[1], false)
	}
}

// operandOpts are the getopts of the programs that change every
// operand (coreutils 9.x; mknod its first).
var operandOpts = map[string]getopt{
	"tee":      {long: []string{"append", "ignore-interrupts", "output-error?", "help", "version"}},
	"touch":    {short: "drt", long: []string{"time=", "no-create", "date=", "no-dereference", "reference=", "help", "version"}},
	"truncate": {short: "rs", long: []string{"no-create", "io-blocks", "reference=", "size=", "help", "version"}},
	"shred": {short: "ns", long: []string{"force", "iterations=", "random-source=", "size=", "remove?", "verbose",
		"exact", "zero", "help", "version"}},
	"unlink": {long: []string{"help", "version"}},
	"rmdir":  {long: []string{"ignore-fail-on-non-empty", "parents", "verbose", "help", "version"}},
	"mkdir":  {short: "m", long: []string{"mode=", "parents", "verbose", "context?", "help", "version"}},
	"mkfifo": {short: "m", long: []string{"mode=", "context?", "help", "version"}},
	"mknod":  {short: "m", long: []string{"mode=", "context?", "help", "version"}},
	"rm": {long: []string{"force", "interactive?", "one-file-system", "no-preserve-root", "preserve-root?",
		"recursive", "dir", "verbose", "help", "version"}},
	"chmod": {long: []string{"changes", "quiet", "silent", "verbose", "no-preserve-root", "preserve-root",
		"reference=", "recursive", "dereference", "no-dereference", "help", "version"}},
	"chown": {long: []string{"changes", "dereference", "no-dereference", "from=", "quiet", "silent",
		"no-preserve-root", "preserve-root", "reference=", "recursive", "verbose", "help", "version"}},
	"chgrp": {long: []string{"changes", "dereference", "no-dereference", "quiet", "silent",
		"no-preserve-root", "preserve-root", "reference=", "recursive", "verbose", "help", "version"}},
}

// operandChanges reads the programs that change every operand.
func (r *reader) operandChanges(at int, name string, rest []Word) {
	p := operandOpts[name].parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	ops := p.operands
	if name == "mknod" && len(ops) > 1 {
		ops = ops[:1]
	}
	tree := (name == "rm" || name == "chmod" || name == "chown" || name == "chgrp") && p.has("-r", "-R", "--recursive")
	parents := (name == "mkdir" || name == "rmdir") && p.has("-p", "--parents")
	for _, w := range ops {
		r.change(at, name, w, tree)
		if !parents || !w.Static {
			continue
		}
		// mkdir -p makes, rmdir -p removes, each folder on the way.
		for d := path.Dir(strings.TrimRight(w.Value, "/")); d != "." && d != "/" && d != "~"; d = path.Dir(d) {
			r.change(at, name, lit(d), false)
		}
	}
}

// outputOpts are the getopts of uniq (coreutils 9.x) and xxd.
var outputOpts = map[string]getopt{
	"uniq": {short: "fsw", long: []string{"count", "repeated", "all-repeated?", "skip-fields=", "group?",
		"ignore-case", "skip-chars=", "unique", "zero-terminated", "check-chars=", "help", "version"}},
	"xxd": {short: "cglnosR"},
}

// outputOperand reads uniq [IN [OUT]] and xxd [IN [OUT]]: OUT is
// written.
func (r *reader) outputOperand(at int, name string, rest []Word) {
	ws := rest
	if name == "xxd" {
		// xxd's options are words of their own: -c N, -cols N, -c8.
		ws = nil
		for i := 0; i < len(rest); i++ {
			w := rest[i]
			if w.Static && w.Value == "--" {
				ws = append(ws, rest[i+1:]...)
				break
			}
			if w.Static && strings.HasPrefix(w.Value, "-") && len(w.Value) > 1 {
				v := strings.TrimLeft(w.Value, "-")
				if v != "" && strings.IndexByte("cglnosR", v[0]) >= 0 && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz") == "" && i+1 < len(rest) {
					i++
				}
				continue
			}
			ws = append(ws, w)
		}
		ws = append([]Word{lit("--")}, ws...)
	}
	p := outputOpts[name].parse(ws)
	if r.unknownOptions(at, name, p) {
		return
	}
	if len(p.operands) > 1 {
		r.change(at, name, p.operands[1], false)
	}
}

// ddChanges reads dd's of=FILE.
func (r *reader) ddChanges(at int, name string, rest []Word) {
	for _, w := range rest {
		switch {
		case w.Static:
			if f, ok := strings.CutPrefix(w.Value, "of="); ok {
				r.change(at, name, lit(f), false)
			}
		case strings.HasPrefix(w.Reading, "of="):
			r.change(at, name, Word{Value: strings.TrimPrefix(w.Value, "of="), Reading: strings.TrimPrefix(w.Reading, "of="),
				Glob: strings.TrimPrefix(w.Glob, "of=")}, false)
		case mayBegin(w, "of="):
			r.change(at, name, unknownPath(), false)
		}
	}
}

// mayBegin reports whether word w, known only when it runs, may begin
// with prefix: its reading does, or does up to a part known only when
// it runs.
func mayBegin(w Word, prefix string) bool {
	for k := 0; k <= len(prefix); k++ {
		if k == len(prefix) {
			return strings.HasPrefix(w.Reading, prefix)
		}
		if !strings.HasPrefix(w.Reading, prefix[:k]) {
			return false
		}
		if rest := w.Reading[k:]; strings.HasPrefix(rest, Wild) || strings.HasPrefix(rest, WildPart) {
			return true
		}
	}
	return false
}

// splitOpts are the getopts of split and csplit (coreutils 9.x).
var splitOpts = map[string]getopt{
	"split": {short: "abClnt", long: []string{"suffix-length=", "additional-suffix=", "bytes=", "line-bytes=",
		"numeric-suffixes?", "hex-suffixes?", "elide-empty-files", "filter=", "lines=", "number=", "separator=",
		"unbuffered", "verbose", "help", "version"}},
	"csplit": {short: "bfn", long: []string{"suffix-format=", "prefix=", "keep-files", "suppress-matched",
		"digits=", "quiet", "silent", "elide-empty-files", "help", "version"}},
}

// splitChanges reads split [IN [PREFIX]] and csplit -f PREFIX: files
// of the prefix (x, xx by default) with suffixes known only when they
// run.
func (r *reader) splitChanges(at int, name string, rest []Word) {
	p := splitOpts[name].parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	prefix := lit("x")
	if name == "csplit" {
		prefix = lit("xx")
		if v := p.values("-f", "--prefix"); len(v) > 0 {
			prefix = v[len(v)-1]
		}
	} else if len(p.operands) > 1 {
		prefix = p.operands[1]
	}
	r.change(at, name, unknownSuffix(prefix), false)
}

// mktempChanges reads mktemp [TEMPLATE], -p DIR, --tmpdir[=DIR]: the
// file made is the template's, its X's known only when it runs; with no
// template and no folder, one in the system's temporary folder, which
// the rules do not speak of.
func (r *reader) mktempChanges(at int, name string, rest []Word) {
	p := getopt{short: "p", long: []string{"directory", "dry-run", "quiet", "suffix=", "tmpdir?", "help", "version"}}.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	if p.has("-u", "--dry-run") {
		return // makes nothing
	}
	var dirs []Word
	for _, d := range p.values("-p", "--tmpdir") {
		if d.Reading != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 && p.has("-t", "--tmpdir") {
		return // in the system's temporary folder
	}
	if len(p.operands) == 0 {
		if len(dirs) > 0 {
			r.change(at, name, joinPath(dirs[len(dirs)-1], Word{Reading: WildPart, Glob: "${_}"}), false)
		}
		return
	}
	t := p.operands[len(p.operands)-1]
	if len(dirs) > 0 {
		t = relativeTo(dirs[len(dirs)-1], t)
	}
	r.change(at, name, unknownSuffix(t), false)
}

// inPlace records each file of operands as edited in place by op, with
// its backup when suffix (as sed and perl read it: "*" is the file's
// name) is not empty.
func (r *reader) inPlace(at int, op string, files []Word, suffix string) {
	for _, f := range files {
		r.change(at, op, f, false)
		switch {
		case suffix == "":
		case strings.Contains(suffix, "*"):
			b := baseName(f)
			name := Word{Value: strings.ReplaceAll(suffix, "*", b.Value), Static: b.Static,
				Reading: strings.ReplaceAll(suffix, "*", b.Reading), Glob: strings.ReplaceAll(suffix, "*", b.Glob)}
			if !strings.Contains(suffix, "/") {
				// A name beside the file.
				dir := strings.TrimSuffix(f.Value, baseName(f).Value)
				r.change(at, op+" backup", Word{Value: dir + name.Value, Static: f.Static && name.Static,
					Reading: strings.TrimSuffix(f.Reading, b.Reading) + name.Reading, Glob: strings.TrimSuffix(f.Glob, b.Glob) + name.Glob}, false)
			} else {
				r.change(at, op+" backup", name, false)
			}
		default:
			r.change(at, op+" backup", withSuffix(f, suffix), false)
		}
	}
}

// perlChanges reads perl -i[EXT]: each file after the program (the
// -e code, else the script operand) is edited in place.
func (r *reader) perlChanges(at int, name string, rest []Word) {
	inplace, suffix, code := false, "", false
	var ops []Word
	unknown := false
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		v := w.Value
		if !w.Static {
			unknown = unknown || mayBeOption(w, "-")
			ops = append(ops, rest[i:]...)
			break
		}
		if v == "--" || !strings.HasPrefix(v, "-") || v == "-" {
			if v == "--" {
				i++
			}
			ops = append(ops, rest[i:]...)
			break
		}
	cluster:
		for k := 1; k < len(v); k++ {
			switch v[k] {
			case 'i':
				inplace, suffix = true, v[k+1:]
				break cluster
			case 'e', 'E':
				code = true
				if k+1 == len(v) {
					i++
				}
				break cluster
			case 'I', 'M', 'm', 'x', 'F', 'l', '0', 'C', 'd', 'D', 'V':
				// The rest of the word is the option's.
				break cluster
			}
		}
	}
	if unknown {
		r.inPlace(at, "perl -i", ops, "")
		return
	}
	if !inplace {
		return
	}
	if !code && len(ops) > 0 {
		ops = ops[1:] // the script
	}
	r.inPlace(at, "perl -i", ops, suffix)
}

// awkChanges reads gawk -i inplace (--include=inplace, or a program
// that names inplace): each file operand (not a VAR=value) is edited in
// place; and the files of -d, -o, -p (--dump-variables, --pretty-print,
// --profile: awkvars.out, awkprof.out by default).
func (r *reader) awkChanges(at int, name string, rest []Word) {
	p := getopt{short: "fvFiEle", long: []string{"field-separator=", "assign=", "file=", "include=", "load=",
		"source=", "exec=", "characters-as-bytes", "traditional", "copyright", "debug?", "dump-variables?",
		"gen-pot", "help", "lint?", "bignum", "use-lc-numeric", "no-optimize", "optimize", "pretty-print?",
		"profile?", "posix", "re-interval", "sandbox", "lint-old", "version", "csv", "non-decimal-data"}}
	// -d, -o, -p and -D take a value only in the same word; -l, -e, -b
	// … as their manual says. Read the optional ones by hand.
	args := p.parse(rest)
	for _, w := range rest {
		if !w.Static || strings.HasPrefix(w.Value, "--") || !strings.HasPrefix(w.Value, "-") {
			continue
		}
		for k := 1; k < len(w.Value); k++ {
			c := w.Value[k]
			if strings.IndexByte("fvFiEle", c) >= 0 {
				break
			}
			if c == 'd' || c == 'o' || c == 'p' {
				f := w.Value[k+1:]
				if f == "" {
					f = map[byte]string{'d': "awkvars.out", 'o': "awkprof.out", 'p': "awkprof.out"}[c]
				}
				r.change(at, name+" -"+string(c), lit(f), false)
				break
			}
		}
	}
	for _, o := range args.opts {
		f := o.val.Value
		switch o.name {
		case "--dump-variables":
			r.change(at, name+" "+o.name, lit(or(f, "awkvars.out")), false)
		case "--pretty-print", "--profile":
			r.change(at, name+" "+o.name, lit(or(f, "awkprof.out")), false)
		}
	}
	if r.unknownOptions(at, name, args) {
		return
	}
	inplace := false
	for _, w := range rest {
		if !w.Static || strings.Contains(w.Value, "inplace") {
			inplace = true
		}
	}
	if !inplace {
		return
	}
	ops := args.operands
	if !args.has("-f", "--file", "-E", "--exec", "-e", "--source") && len(ops) > 0 {
		ops = ops[1:] // the program
	}
	var files []Word
	for _, w := range ops {
		if k := strings.IndexByte(w.Value, '='); w.Static && k > 0 && isName(w.Value[:k]) {
			continue // an assignment
		}
		files = append(files, w)
	}
	r.inPlace(at, name+" -i inplace", files, "")
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// tarGetopt is GNU tar's (1.35) long options, and its short options
// that take a value.
var tarGetopt = getopt{short: "IFfbCgHKLNTVX", long: []string{
	"absolute-names", "acls", "add-file=", "after-date=", "anchored", "append", "atime-preserve?", "auto-compress",
	"backup?", "block-number", "blocking-factor=", "bzip2", "catenate", "check-device", "check-links",
	"checkpoint-action=", "checkpoint?", "clamp-mtime", "compare", "compress", "concatenate", "confirmation",
	"create", "delay-directory-restore", "delete", "dereference", "diff", "directory=", "exclude-backups",
	"exclude-caches", "exclude-caches-all", "exclude-caches-under", "exclude-from=", "exclude-ignore-recursive=",
	"exclude-ignore=", "exclude-tag-all=", "exclude-tag-under=", "exclude-tag=", "exclude-vcs",
	"exclude-vcs-ignores", "exclude=", "extract", "file=", "files-from=", "force-local", "format=", "full-time",
	"get", "group-map=", "group=", "gunzip", "gzip", "hard-dereference", "help", "hole-detection=", "ignore-case",
	"ignore-command-error", "ignore-failed-read", "ignore-zeros", "incremental", "index-file=", "info-script=",
	"interactive", "keep-directory-symlink", "keep-newer-files", "keep-old-files", "label=", "level=", "list",
	"listed-incremental=", "lzip", "lzma", "lzop", "mode=", "mtime=", "multi-volume", "new-volume-script=",
	"newer-mtime=", "newer=", "no-acls", "no-anchored", "no-auto-compress", "no-check-device",
	"no-delay-directory-restore", "no-ignore-case", "no-ignore-command-error", "no-null", "no-overwrite-dir",
	"no-quote-chars=", "no-recursion", "no-same-owner", "no-same-permissions", "no-seek", "no-selinux",
	"no-unquote", "no-verbatim-files-from", "no-wildcards", "no-wildcards-match-slash", "no-xattrs", "null",
	"numeric-owner", "occurrence?", "old-archive", "one-file-system", "one-top-level?", "overwrite",
	"overwrite-dir", "owner-map=", "owner=", "pax-option=", "portability", "posix", "preserve-order",
	"preserve-permissions", "quote-chars=", "quoting-style=", "read-full-records", "record-size=", "recursion",
	"recursive-unlink", "remove-files", "restrict", "rmt-command=", "rsh-command=", "same-order", "same-owner",
	"same-permissions", "seek", "selinux", "show-defaults", "show-omitted-dirs", "show-snapshot-field-ranges",
	"show-stored-names", "show-transformed-names", "skip-old-files", "sort=", "sparse", "sparse-version=",
	"starting-file=", "strip-components=", "suffix=", "tape-length=", "test-label", "to-command=", "to-stdout",
	"totals?", "touch", "transform=", "uncompress", "ungzip", "unlink-first", "unquote", "update", "usage",
	"use-compress-program=", "utc", "verbatim-files-from", "verbose", "verify", "version", "volno-file=",
	"warning=", "wildcards", "wildcards-match-slash", "xattrs", "xattrs-exclude=", "xattrs-include=", "xform=",
	"xz", "zstd",
}}

// tarChanges reads GNU tar: see the list above.
func (r *reader) tarChanges(at int, name string, rest []Word) {
	// An old-style first word (tar xzf A) is a cluster without its
	// dash, whose options take the next words in order.
	ws := rest
	if len(ws) > 0 && ws[0].Static && ws[0].Value != "" && !strings.HasPrefix(ws[0].Value, "-") {
		var lead []Word
		next := 1
		for _, c := range ws[0].Value {
			lead = append(lead, lit("-"+string(c)))
			if strings.ContainsRune(tarGetopt.short, c) && next < len(ws) {
				lead = append(lead, ws[next])
				next++
			}
		}
		ws = append(lead, ws[next:]...)
	}
	p := tarGetopt.parse(ws)
	if r.unknownOptions(at, name, p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-g", "--listed-incremental", "--index-file", "--volno-file":
			r.change(at, name+" "+o.name, o.val, false)
		}
	}
	// The folder tar stands in as it reads its words in order: -C
	// changes it, relative to the one before.
	extract := p.has("-x", "--extract", "--get")
	if !extract {
		if p.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete") {
			for _, f := range p.values("-f", "--file") {
				if !strings.Contains(f.Value, ":") {
					r.change(at, name+" archive", f, false)
				}
			}
		}
		if !p.has("--remove-files") {
			return
		}
	}
	if extract && (p.has("-O", "--to-stdout", "--to-command")) {
		return
	}
	if extract && p.has("-P", "--absolute-names") {
		r.change(at, name+" -x -P", unknownPath(), changeTree)
		return
	}
	dir := lit("")
	first := true // no -C before the first member
	seenMember := false
	for _, o := range p.all {
		switch o.name {
		case "":
			seenMember = true
			continue
		case "-C", "--directory":
		default:
			continue
		}
		if first && seenMember && extract {
			r.change(at, name+" -x", lit("."), changeTree)
		}
		first = false
		dir = relativeTo(dir, o.val)
		if extract {
			r.change(at, name+" -x", dir, changeTree)
		}
	}
	if extract {
		if first {
			r.change(at, name+" -x", lit("."), changeTree)
		}
		for _, d := range p.values("--one-top-level") {
			if d.Reading != "" {
				r.change(at, name+" --one-top-level", relativeTo(dir, d), changeTree)
			}
		}
		return
	}
	// --remove-files: each member, from the folder of the last -C (an
	// approximation: each -C before its member).
	for _, m := range p.operands {
		r.change(at, name+" --remove-files", relativeTo(dir, m), changeTree)
	}
}

// unzipChanges reads unzip [-opts] ZIP [members] [-x …] [-d DIR].
func (r *reader) unzipChanges(at int, name string, rest []Word) {
	var dir Word
	hasDir := false
	for i, w := range rest {
		if !w.Static {
			if mayBeOption(w, "-") {
				r.change(at, name, unknownPath(), changeTree)
				return
			}
			continue
		}
		v := w.Value
		if !strings.HasPrefix(v, "-") || v == "-" {
			continue
		}
		if k := strings.IndexByte(v, 'd'); k > 0 {
			// -d DIR, the folder in the same word or the next.
			if k+1 < len(v) {
				dir, hasDir = lit(v[k+1:]), true
			} else if i+1 < len(rest) {
				dir, hasDir = rest[i+1], true
			}
			v = v[:k]
		}
		if v == "-x" {
			continue
		}
		if strings.ContainsAny(v[1:], "cltpvz") || i == 0 && strings.HasPrefix(v, "-Z") {
			return // lists, tests or prints
		}
		if strings.Contains(v[1:], ":") {
			r.change(at, name+" -:", unknownPath(), changeTree)
			return
		}
	}
	if !hasDir {
		dir = lit(".")
	}
	r.change(at, name, dir, changeTree)
}

// zipChanges reads zip [-opts] ARCHIVE [files] [-x …]: the archive
// (or ARCHIVE.zip), -O FILE, and with -m the files (removed).
func (r *reader) zipChanges(at int, name string, rest []Word) {
	takes := map[string]bool{"-b": true, "-n": true, "-t": true, "-tt": true, "-O": true, "-P": true, "-Z": true,
		"-s": true, "-TT": true, "--output-file": true, "--temp-path": true, "--suffixes": true, "--from-date": true,
		"--before-date": true, "--password": true, "--compression-method": true, "--split-size": true,
		"--unzip-command": true}
	var archive Word
	found, move, lists := false, false, false
	var files []Word
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			if mayBeOption(w, "-") {
				r.change(at, name, unknownPath(), changeTree)
				return
			}
		} else if strings.HasPrefix(w.Value, "-") && w.Value != "-" {
			v := w.Value
			n, val, eq := strings.Cut(v, "=")
			if n == "-O" || n == "--output-file" || strings.HasPrefix(v, "-O") && len(v) > 2 && !eq {
				switch {
				case eq:
					r.change(at, name+" -O", lit(val), false)
				case len(v) > 2 && !strings.HasPrefix(v, "--"):
					r.change(at, name+" -O", lit(v[2:]), false)
				case i+1 < len(rest):
					r.change(at, name+" -O", rest[i+1], false)
				}
			}
			if v == "-m" || v == "--move" || !strings.HasPrefix(v, "--") && strings.Contains(v[1:], "m") && !takes[v] {
				move = true
			}
			if v == "-x" || v == "-i" || v == "--exclude" || v == "--include" {
				lists = true
			} else {
				lists = false
			}
			if takes[n] && !eq && i+1 < len(rest) {
				i++
			}
			continue
		}
		switch {
		case lists:
		case !found:
			archive, found = w, true
		default:
			files = append(files, w)
		}
	}
	if found {
		r.change(at, name+" archive", archive, false)
		r.change(at, name+" archive", withSuffix(archive, ".zip"), false)
	}
	if move {
		for _, f := range files {
			r.change(at, name+" -m", f, changeTree)
		}
	}
}

// rsyncGetopt is rsync 3.2's long options that take a value, and its
// short ones.
var rsyncGetopt = getopt{short: "eBfMT@", long: []string{
	"rsh=", "rsync-path=", "backup-dir=", "suffix=", "chmod=", "chown=", "usermap=", "groupmap=", "timeout=",
	"contimeout=", "temp-dir=", "compare-dest=", "copy-dest=", "link-dest=", "compress-choice=", "zc=",
	"compress-level=", "zl=", "skip-compress=", "checksum-choice=", "cc=", "max-delete=", "max-size=",
	"min-size=", "max-alloc=", "block-size=", "exclude=", "exclude-from=", "include=", "include-from=",
	"files-from=", "filter=", "address=", "port=", "sockopts=", "out-format=", "log-file=", "log-file-format=",
	"password-file=", "early-input=", "bwlimit=", "stop-after=", "stop-at=", "write-batch=",
	"only-write-batch=", "read-batch=", "protocol=", "iconv=", "checksum-seed=", "outbuf=", "partial-dir=",
	"modify-window=", "info=", "debug=", "remote-option=", "copy-as=", "remove-source-files", "recursive",
	"archive", "verbose", "delete", "mkpath", "relative", "dry-run", "list-only",
}}

// remote reports whether rsync's operand w names another machine
// (HOST:PATH, HOST::MODULE, rsync://…).
func remote(w Word) bool {
	v := w.Reading
	k := strings.IndexByte(v, ':')
	return k > 0 && !strings.Contains(v[:k], "/") || strings.HasPrefix(v, "rsync://")
}

// rsyncChanges reads rsync: see the list above.
func (r *reader) rsyncChanges(at int, name string, rest []Word) {
	p := rsyncGetopt.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	ops := p.operands
	if p.has("--dry-run", "-n", "--list-only") || len(ops) < 2 {
		return
	}
	dest := ops[len(ops)-1]
	local := !remote(dest)
	if local {
		r.change(at, name, dest, changeTree)
	}
	if p.has("--remove-source-files") {
		for _, s := range ops[:len(ops)-1] {
			if !remote(s) {
				r.change(at, name+" --remove-source-files", s, changeTree)
			}
		}
	}
	for _, o := range p.opts {
		switch o.name {
		case "--log-file", "--write-batch":
			r.change(at, name+" "+o.name, o.val, false)
		case "--only-write-batch":
			r.change(at, name+" "+o.name, o.val, false)
			r.change(at, name+" "+o.name, withSuffix(o.val, ".sh"), false)
		case "--backup-dir", "--temp-dir", "-T":
			if local {
				r.change(at, name+" "+o.name, relativeTo(dest, o.val), changeTree)
			}
		}
	}
}

// patchGetopt is GNU patch 2.7's options.
var patchGetopt = getopt{short: "BdDFgioprVxYz", long: []string{
	"prefix=", "directory=", "ifdef=", "fuzz=", "get=", "input=", "output=", "strip=", "reject-file=",
	"version-control=", "debug=", "basename-prefix=", "suffix=", "backup", "backup-if-mismatch",
	"no-backup-if-mismatch", "batch", "context", "dry-run", "ed", "force", "forward", "ignore-whitespace",
	"merge?", "normal", "posix", "quiet", "silent", "remove-empty-files", "reverse", "set-time", "set-utc",
	"unified", "verbose", "follow-symlinks", "read-only=", "reject-format=", "quoting-style=", "help", "version",
}}

// patchChanges reads patch [ORIGFILE [PATCHFILE]]: see the list above.
func (r *reader) patchChanges(at int, name string, rest []Word) {
	p := patchGetopt.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	if p.has("--dry-run") {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-o", "--output", "-r", "--reject-file":
			r.change(at, name+" "+o.name, o.val, false)
		}
	}
	backup := p.has("-b", "--backup", "-B", "--prefix", "-Y", "--basename-prefix", "-z", "--suffix", "-V", "--version-control")
	dir := lit("")
	if d := p.values("-d", "--directory"); len(d) > 0 {
		dir = d[len(d)-1]
	}
	if len(p.operands) > 0 {
		f := relativeTo(dir, p.operands[0])
		r.change(at, name, f, false)
		r.change(at, name, withSuffix(f, ".orig"), false)
		r.change(at, name, withSuffix(f, ".rej"), false)
		if backup {
			r.change(at, name+" backup", unknownSuffix(f), false)
		}
		if p.has("-B", "--prefix", "-Y", "--basename-prefix") {
			// A prefix may name any folder.
			r.change(at, name+" backup", unknownPath(), false)
		}
		return
	}
	if dir.Static && dir.Value == "" {
		dir = lit(".")
	}
	r.change(at, name, dir, changeTree)
	if p.has("-B", "--prefix") {
		// A prefix may name any folder.
		r.change(at, name+" backup", unknownPath(), false)
	}
}

// compressors are the compressing programs whose un- forms (and -d)
// decompress, with the suffix each adds.
var compressors = map[string]string{
	"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", "lzma": ".lzma", "zstd": ".zst", "lz4": ".lz4", "lzip": ".lz",
	"pigz": ".gz", "compress": ".Z",
}

// compressChanges reads the compressors: see the list above.
func (r *reader) compressChanges(at int, name string, rest []Word) {
	prog := strings.TrimPrefix(name, "un")
	switch name {
	case "gunzip":
		prog = "gzip"
	case "bunzip2":
		prog = "bzip2"
	}
	if _, ok := compressors[name]; ok {
		prog = name
	}
	p := getopt{short: "SoDT", long: []string{"suffix=", "output=", "stdout", "to-stdout", "decompress",
		"uncompress", "keep", "force", "list", "test", "recursive", "rm", "memory=", "threads=", "format=", "quiet",
		"verbose", "name", "no-name", "fast", "best", "rsyncable", "help", "version"}}.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	if p.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test") {
		return
	}
	for _, o := range p.values("-o", "--output") {
		r.change(at, name+" -o", o, false)
	}
	ops := p.operands
	if prog == "lz4" && len(ops) == 2 && !p.has("-m") {
		r.change(at, name, ops[1], false)
		return
	}
	suffix := compressors[prog]
	if s := p.values("-S", "--suffix"); len(s) > 0 && s[len(s)-1].Static {
		suffix = s[len(s)-1].Value
	}
	decompress := name != prog || p.has("-d", "--decompress", "--uncompress")
	tree := p.has("-r", "--recursive")
	// zstd and lz4 keep the file they read unless --rm; the others
	// remove it unless -k.
	keep := p.has("-k", "--keep") || (prog == "zstd" || prog == "lz4") && !p.has("--rm")
	for _, f := range ops {
		if !keep || tree {
			r.change(at, name, f, tree)
		}
		if tree {
			continue
		}
		if !decompress {
			r.change(at, name, withSuffix(f, suffix), false)
			continue
		}
		b := baseName(f)
		if k := strings.LastIndexByte(b.Value, '.'); b.Static && k > 0 && f.Static {
			r.change(at, name, lit(strings.TrimSuffix(f.Value, b.Value[k:])), false)
		} else {
			r.change(at, name, unknownSuffix(lit(strings.TrimSuffix(f.Value, b.Value))), false)
		}
	}
}

// gitChanges reads git checkout, restore, rm, mv and clean: see the
// list above.
func (r *reader) gitChanges(at int, name string, rest []Word) {
	dir := lit("")
	var workTree *Word
	i := 0
	for ; i < len(rest); i++ {
		w := rest[i]
		if !w.Static {
			return // a subcommand known only when it runs: the rules read it as any command
		}
		v := w.Value
		if !strings.HasPrefix(v, "-") {
			break
		}
		switch {
		case v == "-C" && i+1 < len(rest):
			i++
			dir = relativeTo(dir, rest[i])
		case v == "--work-tree" && i+1 < len(rest):
			i++
			w := relativeTo(dir, rest[i])
			workTree = &w
		case strings.HasPrefix(v, "--work-tree="):
			w := relativeTo(dir, Word{Value: strings.TrimPrefix(v, "--work-tree="), Static: true, Reading: strings.TrimPrefix(v, "--work-tree="), Glob: strings.TrimPrefix(v, "--work-tree=")})
			workTree = &w
		case v == "-c" || v == "--git-dir" || v == "--namespace" || v == "--config-env" || v == "--super-prefix":
			i++
		}
	}
	if i >= len(rest) {
		return
	}
	sub := rest[i].Value
	args := rest[i+1:]
	in := func(w Word) Word { return relativeTo(dir, w) }
	// tree notes a change of the whole work tree: --work-tree's, else
	// the one the directory lies in (Redirection.RepoTop).
	tree := func() {
		if workTree != nil {
			r.change(at, "git "+sub, *workTree, changeTree)
			return
		}
		r.s.Changes = append(r.s.Changes, Redirection{Op: "git " + sub, Target: or2(dir, lit(".")), Command: at, Tree: true, RepoTop: true})
	}
	if gitWritesTree(sub, args) {
		tree()
	}
	r.gitOutputs(at, sub, args, in)
	switch sub {
	case "init", "clone", "worktree":
		if to := gitNewTree(sub, args); to != nil {
			r.change(at, "git "+sub, in(*to), changeTree)
		}
	case "checkout", "restore", "rm", "clean":
		p := getopt{short: "bBse", long: []string{"source=", "pathspec-from-file=", "conflict=", "orphan=",
			"exclude=", "staged", "worktree", "ours", "theirs", "force", "quiet", "cached", "recursive", "dry-run"}}.parse(args)
		ops := p.operands
		// checkout [TREE-ISH] [--] PATHS: without "--" the first word may
		// be a branch; it is read as a path too (the safe side).
		if p.has("-n", "--dry-run") || sub == "rm" && p.has("--cached") || sub == "restore" && p.has("--staged", "-S") && !p.has("--worktree", "-W") {
			return
		}
		if sub == "clean" && len(ops) == 0 {
			ops = []Word{lit(".")}
		}
		for _, w := range ops {
			r.change(at, "git "+sub, in(w), changeTree)
			if workTree != nil {
				// From outside the work tree, a pathspec is read
				// from its top.
				r.change(at, "git "+sub, relativeTo(*workTree, w), changeTree)
			}
		}
		if len(p.unknown) > 0 || p.has("--pathspec-from-file") {
			r.change(at, "git "+sub, unknownPath(), changeTree)
		}
	case "mv":
		ws := make([]Word, 0, len(args))
		for _, w := range args {
			if w.Static && strings.HasPrefix(w.Value, "-") {
				if w.Value == "--" {
					continue
				}
				continue
			}
			ws = append(ws, in(w))
		}
		r.copyChanges(at, "mv", ws)
	}
}

// gitOutputOpts are, per git subcommand (git 2.4x), the options whose
// value is a file it writes (false) or a folder it writes into (true).
var gitOutputOpts = map[string]map[string]bool{
	"format-patch":     {"-o": true, "--output-directory": true},
	"archive":          {"-o": false, "--output": false},
	"config":           {"-f": false, "--file": false},
	"init":             {"--separate-git-dir": true},
	"clone":            {"--separate-git-dir": true},
	"fast-export":      {"--export-marks": false},
	"fast-import":      {"--export-marks": false, "--export-pack-edges": false},
	"bugreport":        {"-o": true, "--output-directory": true},
	"diagnose":         {"-o": true, "--output-directory": true},
	"credential-store": {"--file": false},
	"commit-graph":     {"--object-dir": true},
	"multi-pack-index": {"--object-dir": true},
	"diff":             {"--output": false},
	"log":              {"--output": false},
	"show":             {"--output": false},
	"checkout-index":   {"--prefix": true},
}

// gitOutputs notes the files git subcommand sub, with arguments args,
// writes by its options (gitOutputOpts: "-o V", "-oV", "--name=V",
// "--name V") and operands: bundle create FILE, merge-file's first file
// (unless -p or --stdout), worktree move's destination and worktree
// remove's folder; format-patch, bugreport and diagnose write into the
// working directory without -o (format-patch --stdout: nowhere). in
// reads a path from the directory -C names.
func (r *reader) gitOutputs(at int, sub string, args []Word, in func(Word) Word) {
	opts := gitOutputOpts[sub]
	named := false
	var ops []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if !w.Static {
			ops = append(ops, w)
			continue
		}
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(v, "-") {
			ops = append(ops, w)
			continue
		}
		name, val, eq := strings.Cut(v, "=")
		tree, ok := opts[name]
		switch {
		case ok && eq:
			r.change(at, "git "+sub+" "+name, in(lit(val)), tree)
			named = true
		case ok && i+1 < len(args):
			i++
			r.change(at, "git "+sub+" "+name, in(args[i]), tree)
			named = true
		case !strings.HasPrefix(v, "--") && len(v) > 2:
			if tree, ok := opts[v[:2]]; ok {
				r.change(at, "git "+sub+" "+v[:2], in(lit(v[2:])), tree)
				named = true
			}
		}
	}
	has := func(v string) bool {
		return slices.ContainsFunc(args, func(w Word) bool { return w.Static && w.Value == v })
	}
	switch sub {
	case "format-patch", "bugreport", "diagnose":
		if !named && !has("--stdout") {
			r.change(at, "git "+sub, in(lit(".")), changeTree)
		}
	case "bundle":
		if len(ops) > 1 && ops[0].Static && ops[0].Value == "create" {
			r.change(at, "git bundle create", in(ops[1]), false)
		}
	case "merge-file":
		if len(ops) > 0 && !has("-p") && !has("--stdout") {
			r.change(at, "git merge-file", in(ops[0]), false)
		}
	case "worktree":
		switch {
		case len(ops) > 2 && ops[0].Static && ops[0].Value == "move":
			r.change(at, "git worktree move", in(ops[1]), changeTree)
			r.change(at, "git worktree move", in(ops[2]), changeTree)
		case len(ops) > 1 && ops[0].Static && ops[0].Value == "remove":
			r.change(at, "git worktree remove", in(ops[1]), changeTree)
		}
	}
}

// gitWritesTree reports whether git subcommand sub with arguments args
// (git 2.4x) may write files anywhere in the work tree: reset --hard,
// --merge or --keep; switch to another commit; checkout of a branch
// (no "--", an operand that may be one); stash (but list, show, drop,
// clear, create, store); pull, merge, rebase, am, cherry-pick, revert,
// bisect, apply (but --cached, --check and the reports), read-tree -u,
// checkout-index, submodule, sparse-checkout, filter-branch; and a
// subcommand known only when it runs.
func gitWritesTree(sub string, args []Word) bool {
	has := func(names ...string) bool {
		return slices.ContainsFunc(args, func(w Word) bool {
			return !w.Static || slices.Contains(names, w.Value)
		})
	}
	operands := func() int {
		n := 0
		for _, w := range args {
			if w.Static && w.Value == "--" {
				return -1
			}
			if !w.Static || !strings.HasPrefix(w.Value, "-") {
				n++
			}
		}
		return n
	}
	switch sub {
	case "reset":
		return has("--hard", "--merge", "--keep")
	case "switch":
		return operands() != 0
	case "checkout":
		// checkout -b NEW: a new branch at HEAD, the files as they are.
		n := operands()
		if has("-b", "-B", "--orphan") {
			n--
		}
		return n > 0
	case "stash":
		return len(args) == 0 || !args[0].Static || !slices.Contains([]string{"list", "show", "drop", "clear", "create", "store"}, args[0].Value)
	case "pull", "merge", "rebase", "am", "cherry-pick", "revert", "bisect", "checkout-index", "submodule", "sparse-checkout", "filter-branch":
		return true
	case "apply":
		return !has("--cached", "--check", "--stat", "--numstat", "--summary")
	case "read-tree":
		return has("-u")
	}
	return false
}

// gitNewTree returns the folder git init, clone or worktree add makes or
// writes into: init's operand (else the working directory), clone's
// second operand (else the repository's name), worktree add's path; nil
// when sub makes none.
func gitNewTree(sub string, args []Word) *Word {
	var ops []Word
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w.Static && w.Value == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case w.Static && strings.HasPrefix(w.Value, "-"):
			switch w.Value {
			case "-b", "-B", "--branch", "-o", "--origin", "--template", "--separate-git-dir", "--reference", "--depth", "-c", "--config", "-u", "--upload-pack", "--initial-branch", "--object-format", "--shared", "--filter", "-j", "--jobs", "--reason":
				i++
			}
		default:
			ops = append(ops, w)
		}
	}
	switch {
	case sub == "init" && len(ops) == 0:
		d := lit(".")
		return &d
	case sub == "init":
		return &ops[0]
	case sub == "clone" && len(ops) > 1:
		return &ops[1]
	case sub == "clone" && len(ops) == 1:
		n := urlName(ops[0], "")
		n = Word{Value: strings.TrimSuffix(n.Value, ".git"), Static: n.Static, Reading: strings.TrimSuffix(n.Reading, ".git"), Glob: strings.TrimSuffix(n.Glob, ".git")}
		return &n
	case sub == "worktree" && len(ops) > 1 && ops[0].Static && ops[0].Value == "add":
		return &ops[1]
	case sub == "worktree" && len(ops) > 0 && !ops[0].Static:
		u := unknownPath()
		return &u
	}
	return nil
}

// curlGetopt is curl's short options that take a value, and the long
// ones that write a file or take a value.
var curlGetopt = getopt{short: "AbcCdDeEFHKmoPQrtTuUwxXyYz", long: []string{
	"output=", "dump-header=", "cookie-jar=", "trace=", "trace-ascii=", "stderr=", "etag-save=", "libcurl=",
	"output-dir=", "config=", "remote-name", "remote-name-all", "remote-header-name", "create-dirs",
	"user-agent=", "cookie=", "continue-at=", "data=", "data-raw=", "data-binary=", "data-urlencode=",
	"data-ascii=", "referer=", "cert=", "form=", "header=", "max-time=", "request=", "proxy=", "user=",
	"upload-file=", "write-out=", "range=", "json=", "url=", "connect-timeout=", "retry=", "key=", "cacert=",
}}

// curlChanges reads curl: see the list above.
func (r *reader) curlChanges(at int, name string, rest []Word) {
	p := curlGetopt.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
			"--stderr", "--etag-save", "--libcurl":
			r.change(at, name+" "+o.name, o.val, false)
		case "-K", "--config":
			r.change(at, name+" "+o.name, unknownPath(), changeTree)
		}
	}
	if p.has("-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name") {
		dir := lit("")
		if d := p.values("--output-dir"); len(d) > 0 {
			dir = d[len(d)-1]
		}
		if p.has("-J", "--remote-header-name") {
			r.change(at, name+" -J", or2(dir, lit(".")), changeTree) // a name the server gives
			return
		}
		for _, u := range append(p.values("--url"), p.operands...) {
			r.change(at, name+" -O", relativeTo(dir, urlName(u, "")), false)
		}
	}
}

// or2 returns w, or def when w is the empty word.
func or2(w, def Word) Word {
	if w.Static && w.Value == "" {
		return def
	}
	return w
}

// urlName returns the file name a download of URL u takes from it: the
// last part of its path (def when it has none; a name known only when
// it runs when u is).
func urlName(u Word, def string) Word {
	if !u.Static {
		return Word{Reading: WildPart, Glob: "${_}"}
	}
	v := u.Value
	if _, after, ok := strings.Cut(v, "://"); ok {
		v = after
		if k := strings.IndexByte(v, '/'); k >= 0 {
			v = v[k:]
		} else {
			v = ""
		}
	}
	v, _, _ = strings.Cut(v, "#")
	v, _, _ = strings.Cut(v, "?")
	b := v[strings.LastIndexByte(v, '/')+1:]
	if b == "" {
		b = def
	}
	return lit(b)
}

// wgetChanges reads wget: see the list above.
func (r *reader) wgetChanges(at int, name string, rest []Word) {
	p := getopt{short: "oaeiBtOTwQPlARDIXU", long: []string{
		"output-file=", "append-output=", "execute=", "input-file=", "base=", "tries=", "output-document=",
		"timeout=", "wait=", "quota=", "directory-prefix=", "level=", "accept=", "reject=", "domains=",
		"include-directories=", "exclude-directories=", "user-agent=", "header=", "post-data=", "post-file=",
		"spider", "recursive", "mirror", "user=", "password=", "config=", "save-cookies=", "load-cookies=",
		"warc-file=", "rejected-log=", "method=", "body-data=", "body-file=",
	}}.parse(rest)
	if r.unknownOptions(at, name, p) {
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-o", "--output-file", "-a", "--append-output", "-O", "--output-document", "--save-cookies",
			"--rejected-log":
			r.change(at, name+" "+o.name, o.val, false)
		case "--warc-file":
			r.change(at, name+" "+o.name, unknownSuffix(o.val), false)
		case "-e", "--execute", "--config":
			r.change(at, name+" "+o.name, unknownPath(), changeTree)
		}
	}
	if p.has("--spider") || p.has("-O", "--output-document") && !p.has("-r", "--recursive", "-m", "--mirror") {
		return
	}
	dir := lit("")
	if d := p.values("-P", "--directory-prefix"); len(d) > 0 {
		dir = d[len(d)-1]
	}
	if p.has("-r", "--recursive", "-m", "--mirror", "-i", "--input-file", "--content-disposition", "--trust-server-names") {
		// Names the server or a list gives.
		r.change(at, name, or2(dir, lit(".")), changeTree)
		return
	}
	for _, u := range p.operands {
		n := urlName(u, "index.html")
		r.change(at, name, relativeTo(dir, n), false)
	}
}

// editorChanges reads an editor's words: each that is no option may
// be a file it writes.
func (r *reader) editorChanges(at int, name string, rest []Word) {
	for _, w := range rest {
		if !w.Static || !strings.HasPrefix(w.Value, "-") && !strings.HasPrefix(w.Value, "+") {
			r.change(at, name, w, false)
		}
	}
}
