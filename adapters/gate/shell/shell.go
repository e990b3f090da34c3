// Package shell reads a command line as bash 5.2 would run it, without
// running it, for the gate: every simple command in the tree (lists,
// pipelines, subshells, groups, if/for/while/case, function bodies,
// command and process substitutions, here-documents, arithmetic), each
// word decoded as bash passes it (quotes, $'…', escapes, brace lists),
// every redirection target, and the commands that wrappers run (bash -c,
// eval, env, sudo, xargs, find -exec, ssh, git -c, …).
//
// Parsing is mvdan.cc/sh/v3/syntax in its bash dialect (LangBash, which
// follows Bash 5.2); brace lists are expanded by mvdan.cc/sh/v3/expand;
// quotes, escapes and $'…' are decoded here, as bash does (ansiC).
// What is known only when the command runs (a parameter, a command
// substitution, a glob against the file system, arithmetic, a tilde) is
// never given a value: such a word is not Static, and its Reading marks
// the unknown parts with Wild or WildPart, so that a caller can ask
// whether any value could match a pattern (deny wins on any reading)
// while allowing only what is known.
//
// Read never runs anything and never reads a file.
package shell

import (
	"fmt"
	"iter"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The markers a Reading holds for a part known only when the command
// runs. Neither byte can occur in a bash word's value (bash words are C
// strings, and the gate refuses 0x01 in what it judges as text only by
// reading it as unknown, the safe side).
const (
	// Wild is any text, word breaks included: an unquoted expansion,
	// which bash splits into any number of words, or a glob.
	Wild = "\x00"
	// WildPart is any text within one word: a quoted expansion, a
	// tilde, one glob character.
	WildPart = "\x01"
)

// FoundName is the name a Word's Glob gives, as "${" + FoundName + "}",
// to the path find's -exec and -ok put where a "{}" stands: a path under
// find's starting points, not any text ("${_}"). No variable has this
// name.
const FoundName = ":found"

// DigitsName is the name a Word's Glob gives, as "${" + DigitsName + "}",
// to an arithmetic expansion of literals alone ($((6*7)), not $((x))): a
// number, known only when it runs
// but never more than an optional "-" and digits, so it cannot name a
// path of its own. Path guards still read it as any text where it stands.
// No variable has this name.
const DigitsName = ":digits"

// Limits on what Read follows; past them the Script has a Fault, and
// the gate fails closed.
const (
	MaxDepth    = 16     // nesting of wrappers, eval and bash -c strings
	MaxCommands = 10_000 // simple commands in one input, inner ones counted
)

// Word is one word of a command after bash's expansions, as far as they
// are known without running anything.
type Word struct {
	// Value is the word's value when Static; else the known parts, with
	// the unknown ones dropped (for people, never for matching).
	Value string
	// Static is true when Value is exactly what bash passes, a leading
	// "~" aside (kept as written, as patterns write it): no parameter,
	// substitution, arithmetic or unquoted glob.
	Static bool
	// Reading is Value with Wild or WildPart where a part is known only
	// when it runs (a tilde prefix too, though Static: the home directory
	// is the user's, but any reading may be denied).
	Reading string
	// Glob is the word for path guards: decoded text with its unquoted
	// glob characters and tilde prefix kept, "${NAME}" for a plain
	// parameter and "${_}" for any other part known only when it runs.
	Glob string
}

// Assignment is a NAME=value before a command or alone.
type Assignment struct {
	Name  string
	Value Word
}

// Command is one simple command bash (or a wrapper) would run.
type Command struct {
	// Args are the command's words after brace expansion: Args[0] is
	// the program, builtin or function name. A static word that expands
	// to several (a brace list) is several Args.
	Args []Word
	// Assigns are the NAME=value prefixes (env assignments for this
	// command), or the assignments of a declare/export/local clause.
	Assigns []Assignment
	// Parent is the index in Script.Commands of the wrapper that runs
	// this command (bash -c, sudo, xargs, eval…), -1 when bash runs it
	// from the input itself.
	Parent int
	// Via says how the parent runs it ("bash -c", "sudo", "eval", "git
	// alias", "a program known only when it runs"…); "" for bash.
	Via string
	// Maybe is true for a reading that may or may not happen: the inner
	// command of a program whose name is known only when it runs, read
	// as if it were a wrapper. Such a command counts for deny and
	// review, and, like any, must be allowed for the whole to be.
	Maybe bool
	// Opaque, when set, says what code the command runs that the gate
	// cannot see (eval of a value known only at run time, source of a
	// file, a script file, commands on standard input): a command with
	// Opaque is never allowed by a pattern.
	Opaque string
	// Input are the here-documents and here-strings fed to the
	// command's standard input, decoded as bash passes them: code, when
	// the program is an interpreter (tclsh <<< "exec …").
	Input []Word
	// Chdir are the directories a wrapper may run the commands it reads
	// (those with it as Parent) in, when an option of it names another
	// than the shell's (env -C, sudo -D, unshare -w, find -execdir …):
	// each a Static word, or one known only when it runs (a directory
	// the gate cannot know).
	Chdir []Word
	// Repeats is true for a command that may run more than once in the
	// same shell, each run going on from where the one before left it:
	// it lies in a loop (for, select, while, until, a C-style for: the
	// condition too), a function's body, a trap's or an alias's code,
	// and not in a subshell inside
	// it (which starts again from the shell's directory each time it
	// runs). A directory a cd of it leads to may be left again from
	// there.
	Repeats bool
}

// Program returns the reading of the command's program (Args[0]), ""
// for a command of assignments only.
func (c Command) Program() string {
	if len(c.Args) == 0 {
		return ""
	}
	return c.Args[0].Reading
}

// Static reports whether every word of c is known without running it.
func (c Command) Static() bool {
	for _, w := range c.Args {
		if !w.Static {
			return false
		}
	}
	for _, a := range c.Assigns {
		if !a.Value.Static {
			return false
		}
	}
	return true
}

// Text returns the command as words joined by spaces: the values when
// static, the readings (with Wild and WildPart) otherwise.
func (c Command) Text() string { return c.join(func(w Word) string { return w.Reading }) }

// Value returns the command's values joined by spaces: what an allow
// pattern is matched against when the command is Static.
func (c Command) Value() string { return c.join(func(w Word) string { return w.Value }) }

// join returns part of each of the command's words, joined by spaces.
func (c Command) join(part func(Word) string) string {
	var b strings.Builder
	for i, w := range c.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(part(w))
	}
	return b.String()
}

// Redirection is a file a command's redirection names.
type Redirection struct {
	Op      string // ">", ">>", ">|", "&>", "&>>", "<>", ">&", "<"
	Target  Word
	Command int // index in Script.Commands; -1 for a compound command's
	// Tree is true when the command may change every path under
	// Target as well as Target (a folder it extracts or copies into, a
	// tree it removes): Changes only.
	Tree bool
	// RepoTop is true for a Tree change of a git work tree whose top
	// the words do not name: Target is a directory in it, and the
	// change is of the whole tree, from the nearest ancestor of Target
	// that holds .git (found on disk by whoever judges it).
	RepoTop bool
}

// Script is what Read found in one input.
type Script struct {
	Commands []Command
	// Writes are the targets of redirections that write (>, >>, >|, &>,
	// &>>, <>, >& to a file name); fd duplications (2>&1) are not.
	Writes []Redirection
	// Reads are the targets of < redirections.
	Reads []Redirection
	// Changes are the files programs write, create or remove by their
	// operands (cp's destination, rm's operands, sed -i's files, tar
	// -x's folder, dd's of=…; changes.go lists them), Op naming the
	// program: judged as Writes are for deny and review, while allowing
	// the program allows them.
	Changes []Redirection
	// Faults are reasons the input cannot be judged: a parse error, a
	// limit passed. A script with a fault must never be allowed.
	Faults []string
	// Mentions are all the words the input holds, wherever they stand
	// and whether or not a command passes them on: arguments, the value
	// of an assignment alone on its line, a for loop's word list, a case
	// pattern, a here-document's body (one word), an array's elements.
	// A path guard reads these: a name may reach a command by a variable
	// the reader does not follow.
	Mentions []Word
	// Given are the values the input gives variables, in order: every
	// NAME=value (alone, before a command, after declare or export), and
	// each word of a for loop's list as the loop variable's. A guard
	// that reads these knows what such a variable may hold.
	Given []Assignment
	// Unsure are names the input may give values Given does not hold,
	// or use before it gives them: a name read from input (read,
	// mapfile, readarray, getopts, printf -v, wait -p, declare -n …), one
	// given only in a subshell, a pipeline's part, a substitution or
	// before a command that runs (its environment, not the line's), and
	// one used before any value is given it. A guard takes these for any
	// value, whatever Given says.
	Unsure map[string]bool
	// Unheld are the names of Unsure the input may give a value Given
	// does not hold (all but those only used before a value is given
	// them, whose value there is the environment's).
	Unheld map[string]bool
}

// Opaque reports whether some command runs code the gate cannot see.
func (s *Script) Opaque() bool {
	for _, c := range s.Commands {
		if c.Opaque != "" {
			return true
		}
	}
	return false
}

// PathWords yields the words a command may take for paths: each
// command's arguments, in order, then the targets of the writes and of
// the reads.
func (s *Script) PathWords() iter.Seq[Word] {
	return func(yield func(Word) bool) {
		for _, cmd := range s.Commands {
			for _, w := range cmd.Args {
				if !yield(w) {
					return
				}
			}
		}
		for _, rs := range [][]Redirection{s.Writes, s.Reads} {
			for _, rd := range rs {
				if !yield(rd.Target) {
					return
				}
			}
		}
	}
}

// Read reads src, a command line as an agent hands it to bash -c.
func Read(src string) *Script {
	s := &Script{}
	r := &reader{s: s}
	r.source(src, -1, "", false, 0)
	if r.aliasDefined && r.expandAliases && r.evaluates == "" {
		r.evaluates = "aliases with expand_aliases on, which change how later lines read"
	}
	if r.evaluates != "" {
		r.add(Command{Parent: -1, Args: []Word{lit("((")}, Opaque: r.evaluates})
	}
	if r.cr && !r.sawStand {
		back := func(w *Word) {
			w.Value = strings.ReplaceAll(w.Value, crStand, "\r")
			w.Reading = strings.ReplaceAll(w.Reading, crStand, "\r")
			w.Glob = strings.ReplaceAll(w.Glob, crStand, "\r")
		}
		for i := range s.Commands {
			c := &s.Commands[i]
			c.Args = append([]Word(nil), c.Args...)
			for j := range c.Args {
				back(&c.Args[j])
			}
			c.Assigns = append([]Assignment(nil), c.Assigns...)
			for j := range c.Assigns {
				back(&c.Assigns[j].Value)
			}
		}
		for _, rs := range [][]Redirection{s.Writes, s.Reads, s.Changes} {
			for i := range rs {
				back(&rs[i].Target)
			}
		}
		for i := range s.Mentions {
			back(&s.Mentions[i])
		}
		for i := range s.Given {
			back(&s.Given[i].Value)
		}
	}
	return s
}

type reader struct {
	s *Script
	// What makes the whole input opaque, wherever it is seen: a
	// variable read in an arithmetic context (its value is evaluated,
	// and may run commands), a prompt expansion ${x@P}, aliases defined
	// where expand_aliases may be on.
	evaluates     string
	aliasDefined  bool
	expandAliases bool
	// cr: some input held "\r", parsed as crStand; sawStand: some held
	// crStand itself.
	cr, sawStand bool
	// given: the names Given holds so far, in reading order.
	given map[string]bool
	// repeats: how many loops and function bodies enclose what is
	// being read (Command.Repeats).
	repeats int
}

// crStand stands for a carriage return while parsing: a byte the parser
// reads as a word character, as bash reads "\r".
const crStand = "\x02"

// heredocTrap returns why a here-document of f (parsed from src) may
// end where bash ends it and the parser does not: a delimiter quoted
// with $'…' or $"…" (bash decodes it), or, for an unquoted delimiter, a
// body line that is the delimiter once backslash-newlines are joined, as
// bash joins them before it looks for the end. "" when none.
func heredocTrap(f *syntax.File, src string) string {
	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		rd, ok := n.(*syntax.Redirect)
		if !ok || why != "" || (rd.Op != syntax.Hdoc && rd.Op != syntax.DashHdoc) || rd.Word == nil {
			return why == ""
		}
		for _, p := range rd.Word.Parts {
			switch x := p.(type) {
			case *syntax.SglQuoted:
				if x.Dollar {
					why = "a here-document delimiter in $'…', which bash decodes and the parser does not"
				}
			case *syntax.DblQuoted:
				if x.Dollar {
					why = "a here-document delimiter in $\"…\""
				}
			}
		}
		if why != "" {
			return false
		}
		if end := int(rd.Word.End().Offset()); end >= 0 && end < len(src) && src[end] == '#' {
			// bash reads "<<'EOF'#" as the delimiter EOF#; the parser
			// ends it at the quote and reads a comment.
			why = "a here-document delimiter followed by #, which bash reads as part of it"
			return false
		}
		if quotedDelim(rd.Word) || rd.Hdoc == nil {
			return true
		}
		delim := rd.Word.Lit()
		from := int(rd.Hdoc.Pos().Offset())
		if from < 0 || from > len(src) {
			return true
		}
		trim := func(l string) string {
			if rd.Op == syntax.DashHdoc {
				return strings.TrimLeft(l, "\t")
			}
			return l
		}
		// The parser's end: the first raw line that is the delimiter.
		raw := strings.Split(src[from:], "\n")
		end := len(raw)
		for k, l := range raw {
			if trim(l) == delim {
				end = k
				break
			}
		}
		body := strings.ReplaceAll(strings.Join(raw[:end], "\n"), "\\\n", "")
		for _, line := range strings.Split(body, "\n") {
			if trim(line) == delim {
				why = "a here-document whose end line bash finds across a backslash-newline"
				return false
			}
		}
		return true
	})
	return why
}

// letOperators reports whether a let clause of f, parsed from src, holds
// one of & | ; < > ( ), which bash reads as control operators where the
// parser reads arithmetic.
func letOperators(f *syntax.File, src string) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if l, ok := n.(*syntax.LetClause); ok && !found {
			from, to := int(l.Pos().Offset()), int(l.End().Offset())
			if from >= 0 && to <= len(src) && from < to && strings.ContainsAny(src[from:to], "&|;<>()") {
				found = true
			}
		}
		return !found
	})
	return found
}

// nestedBackquotes reports whether a backquoted command substitution
// holds another.
func nestedBackquotes(n syntax.Node) bool {
	found := false
	var walk func(n syntax.Node, in bool)
	walk = func(n syntax.Node, in bool) {
		syntax.Walk(n, func(m syntax.Node) bool {
			if found {
				return false
			}
			if cs, ok := m.(*syntax.CmdSubst); ok && cs.Backquotes && m != n {
				if in {
					found = true
					return false
				}
				walk(cs, true)
				return false
			}
			return true
		})
	}
	walk(n, false)
	return found
}

// commentsOf returns the source text of each comment in src, from its
// "#" to where the parser ends it.
func commentsOf(src string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok {
			from, to := int(c.Pos().Offset()), int(c.End().Offset())
			if from >= 0 && to <= len(src) && from < to {
				out = append(out, src[from:to])
			}
		}
		return true
	})
	return out
}

// parser returns a bash-dialect parser.
func parser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
}

// source parses src and reads its statements as run by command parent.
func (r *reader) source(src string, parent int, via string, maybe bool, depth int) {
	if depth > MaxDepth {
		r.fault(fmt.Sprintf("commands nested more than %d deep (wrappers, eval, bash -c)", MaxDepth))
		return
	}
	if strings.Contains(src, "$\\\n") {
		// bash joins "$\<newline>(" into "$(", the parser does not.
		r.fault("a backslash-newline after $, which bash and the parser read differently")
		return
	}
	if strings.Contains(src, crStand) {
		r.sawStand = true
	}
	if strings.ContainsRune(src, '\r') {
		// bash reads a carriage return as a character of a word; the
		// parser reads it as a blank. It is parsed as crStand, which the
		// parser reads as bash reads \r, and given back after.
		r.cr = true
		src = strings.ReplaceAll(src, "\r", crStand)
	}
	if r.cr && r.sawStand {
		r.fault("both a carriage return and a \\x02 byte, which the reader cannot tell apart")
		return
	}
	f, err := parser().Parse(strings.NewReader(src), "")
	if err == nil && letOperators(f, src) {
		r.fault("let with an operator bash reads as a control operator")
		return
	}
	if err == nil && nestedBackquotes(f) {
		// Backslashes in backquotes inside backquotes: the parser
		// unescapes them differently from bash.
		r.fault("backquotes inside backquotes, which bash and the parser read differently")
		return
	}
	if err == nil {
		if why := heredocTrap(f, src); why != "" {
			r.fault(why)
			return
		}
	}
	if err == nil && strings.Contains(src, "\\\n") {
		// bash ends a comment at a newline even after a backslash; the
		// parser joins the lines.
		for _, c := range commentsOf(src) {
			if strings.Contains(c, "\\\n") {
				r.fault("a comment that ends in a backslash, which bash and the parser read differently")
				return
			}
		}
	}
	if err != nil {
		if maybe {
			// A reading that may not happen (an unknown program's
			// arguments read as a command line) need not parse.
			return
		}
		r.fault("does not parse as bash: " + err.Error())
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			r.s.Mentions = append(r.s.Mentions, decode(w, true))
		}
		return true
	})
	r.stmts(f.Stmts, parent, via, maybe, depth)
}

func (r *reader) fault(why string) {
	for _, f := range r.s.Faults {
		if f == why {
			return
		}
	}
	r.s.Faults = append(r.s.Faults, why)
}

func (r *reader) stmts(ss []*syntax.Stmt, parent int, via string, maybe bool, depth int) {
	for _, st := range ss {
		r.stmt(st, parent, via, maybe, depth)
	}
}

func (r *reader) stmt(st *syntax.Stmt, parent int, via string, maybe bool, depth int) {
	if st == nil {
		return
	}
	at := -1
	if st.Cmd != nil {
		if st.Background || st.Coprocess {
			// Sent to the background (or a coprocess): a subshell.
			r.scoped(func() { at = r.command(st, parent, via, maybe, depth) })
		} else {
			at = r.command(st, parent, via, maybe, depth)
		}
	}
	for _, rd := range st.Redirs {
		r.redirect(rd, at, depth)
	}
}

// redirect records a redirection of command at (-1: a compound one).
func (r *reader) redirect(rd *syntax.Redirect, at, depth int) {
	if (rd.Op == syntax.DplOut || rd.Op == syntax.DplIn) && rd.Word != nil {
		if lit := rd.Word.Lit(); len(lit) > 1 && lit[0] == '-' {
			// bash reads ">&-0" as ">&-" and a word "0"; the parser as
			// one target "-0".
			r.fault("a duplication to \"" + lit + "\", which bash reads as \"-\" and a word")
			return
		}
	}
	if rd.Word != nil && rd.Op != syntax.Hdoc && rd.Op != syntax.DashHdoc && rd.Op != syntax.WordHdoc {
		w := r.word1(rd.Word, depth)
		red := Redirection{Op: rd.Op.String(), Target: w, Command: at}
		switch rd.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			r.s.Writes = append(r.s.Writes, red)
			if rd.Op == syntax.RdrInOut {
				r.s.Reads = append(r.s.Reads, red)
			}
		case syntax.DplOut:
			if !isFD(w) {
				r.s.Writes = append(r.s.Writes, red)
			}
		case syntax.RdrIn:
			r.s.Reads = append(r.s.Reads, red)
		case syntax.DplIn:
			if !isFD(w) {
				r.s.Reads = append(r.s.Reads, red)
			}
		}
	}
	if rd.Op == syntax.WordHdoc && rd.Word != nil {
		r.word1(rd.Word, depth) // its substitutions run
		if at >= 0 {
			r.s.Commands[at].Input = append(r.s.Commands[at].Input, decode(rd.Word, true))
		}
	}
	if rd.Hdoc != nil {
		r.word1(rd.Hdoc, depth) // an unquoted here-document's substitutions run
		if at >= 0 {
			r.s.Commands[at].Input = append(r.s.Commands[at].Input, decodeDoc(rd.Hdoc, quotedDelim(rd.Word)))
		}
	}
}

// isFD reports whether a duplication's word is a descriptor ("1", "2-")
// or "-" (close), not a file name.
func isFD(w Word) bool {
	if !w.Static {
		return false
	}
	v := strings.TrimSuffix(w.Value, "-")
	if v == "" {
		return w.Value == "-"
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// add appends c and returns its index, or -1 past MaxCommands.
func (r *reader) add(c Command) int {
	if len(r.s.Commands) >= MaxCommands {
		r.fault(fmt.Sprintf("more than %d commands", MaxCommands))
		return -1
	}
	c.Repeats = c.Repeats || r.repeats > 0
	r.s.Commands = append(r.s.Commands, c)
	return len(r.s.Commands) - 1
}

// command reads one command node and returns the index of the simple
// command it is (-1 for a compound one).
func (r *reader) command(st *syntax.Stmt, parent int, via string, maybe bool, depth int) int {
	switch x := st.Cmd.(type) {
	case *syntax.CallExpr:
		c := Command{Parent: parent, Via: via, Maybe: maybe}
		for _, a := range x.Assigns {
			c.Assigns = append(c.Assigns, r.assign(a, depth))
		}
		for _, w := range x.Args {
			c.Args = append(c.Args, r.words(w, depth)...)
		}
		if len(c.Args) > 0 {
			// NAME=value before a command gives the command's
			// environment the value, not the line's shell.
			for _, a := range c.Assigns {
				r.unsure(a.Name)
			}
			r.takesNames(c.Args)
		}
		if len(c.Args) == 0 {
			// Assignments alone run nothing, but some name what runs
			// later or how programs are found.
			at := -1
			for _, a := range c.Assigns {
				if why := r.assignEffect(a, -1, depth); why != "" {
					c.Opaque = why
				}
			}
			if c.Opaque != "" {
				at = r.add(c)
			}
			return at
		}
		at := r.add(c)
		if at < 0 {
			return -1
		}
		r.inner(at, st, depth)
		return at
	case *syntax.Block:
		r.stmts(x.Stmts, parent, via, maybe, depth)
	case *syntax.Subshell:
		r.scoped(func() { r.stmts(x.Stmts, parent, via, maybe, depth) })
	case *syntax.BinaryCmd:
		if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
			// Each part of a pipeline runs in a subshell.
			r.scoped(func() { r.stmt(x.X, parent, via, maybe, depth) })
		} else {
			r.stmt(x.X, parent, via, maybe, depth)
		}
		if tc, ok := x.Y.Cmd.(*syntax.TimeClause); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) {
			// "time" after a pipe is no keyword but the time program,
			// which runs what follows.
			r.timeProgram(x.Y, tc, parent, via, maybe, depth)
			return -1
		}
		if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
			r.scoped(func() { r.stmt(x.Y, parent, via, maybe, depth) })
		} else {
			r.stmt(x.Y, parent, via, maybe, depth)
		}
	case *syntax.IfClause:
		for ic := x; ic != nil; ic = ic.Else {
			r.stmts(ic.Cond, parent, via, maybe, depth)
			r.stmts(ic.Then, parent, via, maybe, depth)
		}
	case *syntax.WhileClause:
		r.repeats++
		r.stmts(x.Cond, parent, via, maybe, depth)
		r.stmts(x.Do, parent, via, maybe, depth)
		r.repeats--
	case *syntax.ForClause:
		switch l := x.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				for _, v := range r.words(w, depth) {
					r.give(Assignment{Name: l.Name.Value, Value: v})
				}
			}
		case *syntax.CStyleLoop:
			r.arith(parent, via, maybe, depth, l)
		}
		r.repeats++
		r.stmts(x.Do, parent, via, maybe, depth)
		r.repeats--
	case *syntax.CaseClause:
		r.words(x.Word, depth)
		for _, item := range x.Items {
			for _, p := range item.Patterns {
				r.words(p, depth)
			}
			r.stmts(item.Stmts, parent, via, maybe, depth)
		}
	case *syntax.FuncDecl:
		// The body runs whenever the name is called: judged as if run,
		// as often as it is called.
		r.repeats++
		r.stmt(x.Body, parent, via, maybe, depth)
		r.repeats--
	case *syntax.ArithmCmd:
		r.arith(parent, via, maybe, depth, x)
	case *syntax.LetClause:
		// bash reads let's arguments as words, where & | ; < > ( ) are
		// control operators; the parser reads them as arithmetic.
		r.arith(parent, via, maybe, depth, x)
	case *syntax.TestClause:
		r.nested(x, depth)
	case *syntax.DeclClause:
		c := Command{Parent: parent, Via: via, Maybe: maybe}
		c.Args = append(c.Args, lit(x.Variant.Value))
		var naked []Word
		for _, a := range x.Args {
			switch {
			case a.Naked && a.Name == nil && a.Value != nil:
				ws := r.words(a.Value, depth)
				naked = append(naked, ws...)
				c.Args = append(c.Args, ws...) // an option such as -x
			default:
				as := r.assign(a, depth)
				c.Assigns = append(c.Assigns, as)
				c.Args = append(c.Args, Word{Value: as.Name + "=" + as.Value.Value, Static: as.Value.Static, Reading: as.Name + "=" + as.Value.Reading, Glob: as.Name + "=" + as.Value.Glob})
			}
		}
		for _, w := range c.Args[1:] {
			if w.Static && strings.HasPrefix(w.Value, "-") && strings.Contains(w.Value, "i") || !w.Static && !strings.Contains(w.Value, "=") {
				// declare -i: values assigned later are evaluated.
				r.evaluate("declare -i, whose values bash evaluates as arithmetic")
			}
		}
		at := r.add(c)
		if at >= 0 {
			for _, a := range c.Assigns {
				if why := r.assignEffect(a, at, depth); why != "" && r.s.Commands[at].Opaque == "" {
					r.s.Commands[at].Opaque = why
				}
			}
			r.declNames(at, c, naked, depth)
		}
		return at
	case *syntax.TimeClause:
		dash := false
		if x.Stmt != nil {
			if call, ok := x.Stmt.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 && len(call.Args[0].Parts) > 0 {
				if l, ok := call.Args[0].Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "-") {
					dash = true
				}
			}
		}
		if x.PosixFormat || dash {
			// "time -p", "time -x": in POSIX mode (sh) a "time"
			// followed by a word starting with "-" is the time program.
			r.timeProgram(st, x, parent, via, maybe, depth)
			return -1
		}
		r.stmt(x.Stmt, parent, via, maybe, depth)
	case *syntax.CoprocClause:
		r.stmt(x.Stmt, parent, via, maybe, depth)
	default:
		r.fault(fmt.Sprintf("a %T the gate cannot judge", x))
	}
	return -1
}

// declNames judges what declare, typeset, local, export or readonly
// (command at, read as c, with naked its words that are no assignment
// as written) give values by name beyond its assignments: a quoted word
// it still reads as NAME=value ("PATH=/x"), a word known only when it
// runs (which may be any NAME=value), and, with -n, the variable each
// nameref names, which its next assignments assign (a nameref given no
// name yet takes one from its next assignment, so it may be any).
func (r *reader) declNames(at int, c Command, naked []Word, depth int) {
	nameref := false
	for _, w := range naked {
		v := w.Value
		switch {
		case !w.Static:
			r.opaque(at, c.Args[0].Value+" of a word known only when it runs, which may give any variable a value")
		case strings.HasPrefix(v, "-"):
			nameref = nameref || strings.Contains(v, "n")
		case strings.Contains(v, "="):
			n, _, _ := strings.Cut(v, "=")
			n, _, _ = strings.Cut(n, "[")
			if why := r.assignEffect(Assignment{Name: strings.TrimSuffix(n, "+"), Value: Word{Reading: WildPart, Glob: "${_}"}}, at, depth); why != "" {
				r.opaque(at, why)
			}
		}
	}
	if !nameref {
		return
	}
	for _, a := range c.Assigns {
		switch {
		case !a.Value.Static:
			r.opaque(at, "a nameref to a variable whose name is known only when it runs")
		case a.Value.Value == "":
			r.opaque(at, "a nameref given no name yet, whose next assignment may name any variable")
		default:
			n, _, _ := strings.Cut(a.Value.Value, "[")
			if why := r.assignEffect(Assignment{Name: n, Value: Word{Reading: WildPart, Glob: "${_}"}}, at, depth); why != "" {
				r.opaque(at, why)
			}
			// What the nameref is given goes to n.
			r.unsure(n)
		}
	}
}

// timeProgram reads statement st, a time clause tc, as the time
// program running tc's command.
func (r *reader) timeProgram(st *syntax.Stmt, tc *syntax.TimeClause, parent int, via string, maybe bool, depth int) {
	word := func(v string) *syntax.Word { return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: v}}} }
	call := &syntax.CallExpr{Args: []*syntax.Word{word("time")}}
	if tc.PosixFormat {
		call.Args = append(call.Args, word("-p"))
	}
	out := *st
	out.Cmd = call
	if tc.Stmt != nil {
		if inner, ok := tc.Stmt.Cmd.(*syntax.CallExpr); ok {
			call.Assigns = inner.Assigns
			call.Args = append(call.Args, inner.Args...)
			out.Redirs = append(append([]*syntax.Redirect(nil), st.Redirs...), tc.Stmt.Redirs...)
		} else {
			r.stmt(tc.Stmt, parent, via, maybe, depth)
		}
	}
	r.stmt(&out, parent, via, maybe, depth)
}

// arith reads an arithmetic command, let or C-style loop: its
// substitutions run, and a variable it names makes the input opaque
// (arithVars).
func (r *reader) arith(parent int, via string, maybe bool, depth int, n syntax.Node) {
	r.nested(n, depth)
	switch x := n.(type) {
	case *syntax.ArithmCmd:
		r.arithVars(x.X)
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			r.arithVars(e)
		}
	case *syntax.CStyleLoop:
		r.arithVars(x.Init)
		r.arithVars(x.Cond)
		r.arithVars(x.Post)
	}
}

// nested reads the command and process substitutions inside node n:
// the commands they run.
func (r *reader) nested(n syntax.Node, depth int) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			r.scoped(func() { r.stmts(x.Stmts, -1, "", false, depth) })
			return false
		case *syntax.ProcSubst:
			r.scoped(func() { r.stmts(x.Stmts, -1, "", false, depth) })
			return false
		case *syntax.ArithmExp:
			r.arithVars(x.X)
		case *syntax.ParamExp:
			if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && x.Exp.Word != nil && strings.Contains(x.Exp.Word.Lit(), "P") {
				r.evaluate("a prompt expansion ${…@P}, which runs the command substitutions in a value")
			}
			if x.Slice != nil {
				r.arithVars(x.Slice.Offset)
				r.arithVars(x.Slice.Length)
			}
			if x.Index != nil {
				r.arithVars(x.Index)
			}
		case *syntax.Assign:
			if x.Index != nil {
				r.arithVars(x.Index)
			}
		case *syntax.ArrayElem:
			if x.Index != nil {
				r.arithVars(x.Index)
			}
		case *syntax.UnaryTest:
			if x.Op == syntax.TsVarSet {
				// [[ -v a[x] ]] evaluates the subscript; [[ -v $x ]] a
				// name known only when it runs.
				if w, ok := x.X.(*syntax.Word); !ok || w.Lit() == "" || strings.Contains(w.Lit(), "[") {
					r.evaluate("[[ -v ]] of a subscript or a name known only when it runs, which bash evaluates as arithmetic")
				}
			}
		case *syntax.BinaryTest:
			switch x.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				// [[ a -eq b ]] evaluates both sides as arithmetic.
				r.arithVars(x.X)
				r.arithVars(x.Y)
			}
		}
		return true
	})
}

// evaluate marks the input opaque for why (the first reason kept).
func (r *reader) evaluate(why string) {
	if r.evaluates == "" {
		r.evaluates = why
	}
}

// arithVars marks the input opaque when arithmetic expression n names a
// variable: bash evaluates a variable's value as an expression in turn,
// and an array subscript in it runs command substitutions.
func (r *reader) arithVars(n syntax.Node) {
	if readsVars(n) {
		r.evaluate("arithmetic that reads a variable, whose value bash evaluates as an expression")
	}
}

// readsVars reports whether arithmetic n reads a variable (or any text
// known only when it runs), whose value bash evaluates as an expression.
func readsVars(n syntax.Node) bool {
	if n == nil {
		return false
	}
	vars := false
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.ParamExp:
			vars = true
		case *syntax.Word:
			lit := x.Lit()
			if lit == "" && len(x.Parts) > 0 {
				vars = true // quoted or expanded: any text
			}
			if lit != "" && (isName(lit) || strings.ContainsAny(lit, "[$")) {
				vars = true
			}
		}
		return !vars
	})
	return vars
}

func (r *reader) assign(a *syntax.Assign, depth int) Assignment {
	as := Assignment{}
	if a.Name != nil {
		as.Name = a.Name.Value
	}
	if a.Index != nil {
		r.nested(a.Index, depth)
		r.arithVars(a.Index)
	}
	switch {
	case a.Array != nil:
		r.nested(a.Array, depth)
		as.Value = Word{Reading: WildPart, Glob: "${_}"}
	case a.Value != nil:
		as.Value = r.word1(a.Value, depth)
	default:
		as.Value = Word{Static: true}
	}
	if a.Array == nil {
		r.give(as)
	} else {
		// An array's elements are read by subscripts, which the guards
		// take for unknown: the name is given no value here, but may
		// hold any (DIRSTACK=(…)).
		r.unsure(as.Name)
	}
	if a.Append {
		// NAME+=value: the value is appended to one Given may not hold
		// (or added, under declare -i).
		r.unsure(as.Name)
	}
	return as
}

// words decodes w into the words bash passes (several for a brace list)
// and notes the variables they use before the input gives them (uses).
func (r *reader) words(w *syntax.Word, depth int) []Word {
	ws := r.expand(w, depth)
	for _, d := range ws {
		r.uses(d)
	}
	return ws
}

// expand decodes w into the words bash passes (several for a brace list).
func (r *reader) expand(w *syntax.Word, depth int) []Word {
	if w == nil {
		return nil
	}
	r.nested(w, depth)
	w = cloneWord(w)
	// SplitBraces can report a split that made no list ("{0},}" becomes
	// four literals): that word is read as one not split.
	if syntax.SplitBraces(w) && slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool { _, ok := p.(*syntax.BraceExp); return ok }) {
		if oddBraces(w) {
			// Nested lists and sequences other than plain numbers or
			// letters: bash and expand disagree on some; unknown.
			return []Word{{Reading: Wild, Glob: "${_}"}}
		}
		var out []Word
		n := 0
		for bw, err := range expand.BracesSeq(nil, w) {
			if err != nil || n > 1024 {
				// A brace list too large to list: one unknown word.
				return []Word{{Reading: Wild, Glob: "${_}"}}
			}
			n++
			out = append(out, decode(bw, false))
		}
		return out
	}
	if unsplitBraces(w) {
		// A list expand does not see but bash may ("x{},}" is x} x):
		// unknown.
		return []Word{{Reading: Wild, Glob: "${_}"}}
	}
	return []Word{decode(w, false)}
}

// unsplitBraces reports whether word w, in which syntax.SplitBraces found
// no brace list, still holds an unquoted "{" with a "," or ".." and then
// a "}" after it: bash reads some of those as lists (a "}" right after
// the "{" is a member, not the end), so the word is not known.
func unsplitBraces(w *syntax.Word) bool {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteByte(0)
		}
	}
	s := b.String()
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	return i >= 0 && j > i && (strings.Contains(s[i:j], ",") || strings.Contains(s[i:j], ".."))
}

// oddBraces reports whether word w, split into brace lists, holds one
// inside another, a brace left unpaired beside one, or a sequence whose
// ends are not both integers or both single letters.
func oddBraces(w *syntax.Word) bool {
	lists := false
	for _, p := range w.Parts {
		if _, ok := p.(*syntax.BraceExp); ok {
			lists = true
		}
	}
	if !lists {
		return false
	}
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "{}") {
			return true // a brace left beside a list: read otherwise by bash
		}
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		for _, e := range b.Elems {
			for _, q := range e.Parts {
				if _, nested := q.(*syntax.BraceExp); nested {
					return true
				}
			}
		}
		if b.Sequence {
			if len(b.Elems) < 2 {
				return true
			}
			x, y := b.Elems[0].Lit(), b.Elems[1].Lit()
			num := func(s string) bool { _, err := strconv.Atoi(s); return err == nil }
			letter := func(s string) bool {
				return len(s) == 1 && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
			}
			if !(num(x) && num(y) || letter(x) && letter(y)) {
				return true
			}
			if len(b.Elems) > 2 && !num(b.Elems[2].Lit()) {
				return true
			}
		}
	}
	return false
}

// word1 decodes w as one word (an assignment's value, a redirection's
// target, a here-document): no brace expansion, no splitting.
func (r *reader) word1(w *syntax.Word, depth int) Word {
	if w == nil {
		return Word{Static: true}
	}
	r.nested(w, depth)
	d := decode(w, true)
	r.uses(d)
	return d
}

func cloneWord(w *syntax.Word) *syntax.Word {
	c := *w
	c.Parts = append([]syntax.WordPart(nil), w.Parts...)
	for i, p := range c.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			lc := *l
			c.Parts[i] = &lc
		}
	}
	return &c
}

// decode returns what bash makes of word w: its value when static, and
// a reading with Wild/WildPart where a part is unknown. one: the word is
// never split (an assignment, a redirection target).
func decode(w *syntax.Word, one bool) Word {
	var val, rd, gl strings.Builder
	static := true
	unknown := func(quoted bool) {
		static = false
		gl.WriteString("${_}")
		if quoted || one {
			rd.WriteString(WildPart)
		} else {
			rd.WriteString(Wild)
		}
	}
	digits := func(x *syntax.ArithmExp, quoted bool) { // unknown, but a number
		unknown(quoted)
		if readsVars(x.X) {
			return // evaluates a value: anything may come of it
		}
		g := strings.TrimSuffix(gl.String(), "${_}")
		gl.Reset()
		gl.WriteString(g + "${" + DigitsName + "}")
	}
	named := func(p *syntax.ParamExp) {
		// The guards know some variables by name ($HOME, $LOGBOOK_DATA):
		// a plain one is written ${NAME} in Glob, not ${_}.
		if p.Param != nil && p.Exp == nil && p.Repl == nil && p.Slice == nil && p.Index == nil && !p.Excl && !p.Length {
			g := gl.String()
			gl.Reset()
			gl.WriteString(strings.TrimSuffix(g, "${_}") + "${" + p.Param.Value + "}")
		}
	}
	known := func(s string) {
		val.WriteString(s)
		rd.WriteString(s)
		gl.WriteString(s)
	}
	for i, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				// A tilde prefix: the home directory (or another's),
				// known when it runs; the rest of the word is literal.
				end := strings.IndexByte(v, '/')
				if end < 0 {
					end = len(v)
				}
				val.WriteString(v[:end])
				gl.WriteString(v[:end])
				rd.WriteString(WildPart)
				v = v[end:]
			}
			if globby(v) {
				val.WriteString(unescape(v))
				gl.WriteString(unescape(v))
				static = false
				rd.WriteString(globReading(v, one))
				continue
			}
			known(unescape(v))
		case *syntax.SglQuoted:
			s := x.Value
			if x.Dollar {
				var ok bool
				if s, ok = ansiC(s); !ok {
					unknown(true)
					continue
				}
			}
			known(s)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.Lit:
					known(unescapeDouble(y.Value))
				case *syntax.ParamExp:
					// "$@" and "${a[@]}" are several words.
					unknown(!multiWord(y))
					named(y)
				case *syntax.ArithmExp:
					digits(y, true)
				default:
					unknown(true)
				}
			}
		case *syntax.ArithmExp:
			digits(x, false)
		case *syntax.BraceExp:
			unknown(false) // left by a failed expansion
		case *syntax.ParamExp:
			unknown(false)
			named(x)
		default:
			// ParamExp, CmdSubst, ArithmExp, ProcSubst, ExtGlob.
			unknown(false)
		}
	}
	return Word{Value: val.String(), Static: static, Reading: rd.String(), Glob: gl.String()}
}

// ansiC decodes the text of $'…' as bash 5.2 does (the Bash manual,
// "ANSI-C Quoting"): \a \b \e \E \f \n \r \t \v \\ \' \" \?, \nnn (one
// to three octal digits, the low byte of the value), \xHH (one or two
// hex digits, a byte), \uHHHH and \UHHHHHHHH (one to four or eight hex
// digits, the character in UTF-8); any other backslash is kept with the
// character after it. The value ends at a NUL byte, as bash's strings
// do. ok is false for what it does not decode exactly (\cX, a
// backslash-newline, a \u value that is no character): unknown rather
// than wrong.
func ansiC(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			b.WriteByte(byte(v))
			i = j - 1
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			v := 0
			for ; j < len(s) && j < i+1+max && isHex(s[j]); j++ {
				d := s[j]
				switch {
				case d <= '9':
					v = v*16 + int(d-'0')
				case d >= 'a':
					v = v*16 + int(d-'a'+10)
				default:
					v = v*16 + int(d-'A'+10)
				}
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				if v > utf8.MaxRune || v >= 0xD800 && v <= 0xDFFF {
					return "", false
				}
				b.WriteRune(rune(v))
			}
			i = j - 1
		case 'c', '\n':
			return "", false
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	out, _, _ := strings.Cut(b.String(), "\x00")
	return out, true
}

// multiWord reports whether a quoted parameter expansion may give
// several words: $@, ${a[@]}, ${!prefix@}.
func multiWord(p *syntax.ParamExp) bool {
	if p.Param != nil && (p.Param.Value == "@" || p.Param.Value == "*") {
		return true
	}
	if p.Names != 0 {
		return true
	}
	if idx, ok := p.Index.(*syntax.Word); ok && (idx.Lit() == "@" || idx.Lit() == "*") {
		return true
	}
	return false
}

// globby reports whether unquoted literal text v holds a glob character
// bash would expand (*, ?, [) not escaped by a backslash.
func globby(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// globReading returns the reading of unquoted literal text v with glob
// characters: * any text (any words, unless one), ? and […] one part.
func globReading(v string, one bool) string {
	var b strings.Builder
	star := Wild
	if one {
		star = WildPart
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			}
		case '*':
			b.WriteString(star)
		case '?':
			b.WriteString(WildPart)
		case '[':
			if j := strings.IndexByte(v[i+1:], ']'); j >= 0 {
				i += j + 1
				b.WriteString(WildPart)
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescape removes the backslashes of unquoted text as bash's quote
// removal does: "\\c" is c.
func unescape(v string) string { return dropBackslashes(v, "") }

// unescapeDouble removes the backslashes bash removes inside double
// quotes: before $, `, ", \ (a backslash-newline the parser dropped).
func unescapeDouble(v string) string { return dropBackslashes(v, "$`\"\\\n") }

// dropBackslashes removes each backslash of v that comes before one of
// the bytes of before (before any byte when before is empty), keeping
// that byte; a backslash-newline, a line continuation the parser kept,
// goes whole.
func dropBackslashes(v, before string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && (before == "" || strings.IndexByte(before, v[i+1]) >= 0) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// lit returns a static word of value v.
func lit(v string) Word { return Word{Value: v, Static: true, Reading: v, Glob: v} }

// IsName reports whether s is a shell variable name (bash 5.2: a
// letter or _, then letters, digits and _).
func IsName(s string) bool { return isName(s) }

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Base returns the program name a reading runs: its last path
// component.
func Base(reading string) string {
	if i := strings.LastIndexByte(reading, '/'); i >= 0 {
		return reading[i+1:]
	}
	return reading
}

// base is Base of a static word's value, "" when it is not static.
func base(w Word) string {
	if !w.Static {
		return ""
	}
	return path.Base(w.Value)
}

// give records that the input gives name as the value: a Given entry.
func (r *reader) give(as Assignment) {
	r.s.Given = append(r.s.Given, as)
	if r.given == nil {
		r.given = map[string]bool{}
	}
	r.given[as.Name] = true
}

// unsure marks name as one whose value Given may not hold (Script.Unsure,
// Script.Unheld).
func (r *reader) unsure(name string) {
	r.used(name)
	if r.s.Unheld == nil {
		r.s.Unheld = map[string]bool{}
	}
	r.s.Unheld[name] = true
}

// used marks name as one used before the input gives it a value
// (Script.Unsure, not Script.Unheld).
func (r *reader) used(name string) {
	if r.s.Unsure == nil {
		r.s.Unsure = map[string]bool{}
	}
	r.s.Unsure[name] = true
}

// usedVars matches the names a decoded word's Glob uses ("${NAME}").
var usedVars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// uses marks each variable w uses that the input has not given a value
// yet as unsure: its value there is the environment's.
func (r *reader) uses(w Word) {
	if w.Static {
		return
	}
	for _, m := range usedVars().FindAllStringSubmatch(w.Glob, -1) {
		if !r.given[m[1]] {
			r.used(m[1])
		}
	}
}

// scoped reads with read and marks every name it gives unsure: read runs
// in a subshell (a ( … ), a pipeline's part, a substitution, a command
// sent to the background), whose values never reach the line's shell.
func (r *reader) scoped(read func()) {
	from := len(r.s.Given)
	// A subshell starts from the shell's directory each time it runs:
	// what its commands change does not carry over to its next run.
	repeats := r.repeats
	r.repeats = 0
	read()
	r.repeats = repeats
	for _, a := range r.s.Given[from:] {
		r.unsure(a.Name)
	}
}

// takesNames marks the names the arguments of a builtin that takes
// variable names (nameTakers: read, mapfile, printf -v, declare …) may
// give values as unsure: every static argument shaped as a name.
func (r *reader) takesNames(args []Word) {
	if len(args) == 0 || !args[0].Static || !nameTakers[path.Base(args[0].Value)] {
		return
	}
	for _, w := range args[1:] {
		if w.Static && isName(w.Value) {
			r.unsure(w.Value)
		}
	}
}
