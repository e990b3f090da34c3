package shell_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sample is one command for the differential test and how it was made
// ("seed", "corpus", "gen:…", "mut:…"), for grouping findings.
type sample struct {
	Label string
	Cmd   string
}

// seedFile holds the seed corpus: one JSON string a line, written in
// the style coding agents run; lines starting with # are comments.
const seedFile = "testdata/seed-commands.jsonl"

// corpusDir holds recorded Claude Code sessions, outside the
// repository; tests read it when it is there and never copy it.
const corpusDir = "../../../../shared/corpus/claude"

// seedSamples returns the seed corpus and, when corpusDir exists, every
// Bash command of its recordings.
func seedSamples(t testing.TB) []sample {
	t.Helper()
	f, err := os.Open(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ss []sample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var cmd string
		if err := json.Unmarshal([]byte(line), &cmd); err != nil {
			t.Fatalf("%s:%d: %v", seedFile, n, err)
		}
		ss = append(ss, sample{"seed", cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return append(ss, corpusSamples(t)...)
}

// corpusSamples returns the command of every Bash tool_use in the
// JSON-lines files under corpusDir, nil when it is absent.
func corpusSamples(t testing.TB) []sample {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Logf("no recorded sessions at %s: seeds only", corpusDir)
		return nil
	}
	var ss []sample
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var line struct {
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			var parts []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Input struct {
					Command string `json:"command"`
				} `json:"input"`
			}
			if json.Unmarshal(line.Message.Content, &parts) != nil {
				continue
			}
			for _, p := range parts {
				if p.Type == "tool_use" && p.Name == "Bash" && p.Input.Command != "" {
					ss = append(ss, sample{"corpus", p.Input.Command})
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("read %s: %v", corpusDir, err)
	}
	return ss
}

// sampleCommands returns n commands: the seeds (and recorded ones)
// first, then grammar-made and mutated ones from seed.
func sampleCommands(t testing.TB, n int, seed uint64) []sample {
	seeds := seedSamples(t)
	ss := seeds[:min(n, len(seeds))]
	g := newGen(seed, seeds)
	for len(ss) < n {
		ss = append(ss, g.next())
	}
	return ss
}

// gen makes commands that hide a dangerous payload from a reader that
// does not read as bash does. Deterministic for a seed; not safe for
// concurrent use.
type gen struct {
	r     *rand.Rand
	seeds []sample
}

func newGen(seed uint64, seeds []sample) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), seeds: seeds}
}

// next returns a grammar-made or a mutated command.
func (g *gen) next() sample {
	if len(g.seeds) > 0 && g.r.IntN(5) < 2 {
		return g.mutate()
	}
	return g.grammar()
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// payloads are what must never run unseen: each a program and its
// arguments.
var payloads = [][]string{
	{"rm", "-rf", "/tmp/x"},
	{"curl", "http://127.0.0.1:1/x"},
	{"rm", "-rf", "/tmp/x y"},
	{"curl", "-fsSL", "http://127.0.0.1:1/i.sh"},
	{"wget", "-q", "http://127.0.0.1:1/x"},
	{"rm", "-rf", "--", "/tmp/x"},
	{"rm", "-fr", "/tmp/x"},
	{"python3", "-c", "import os; os.remove('/tmp/x')"},
}

// benign are commands around a payload.
var benign = [][]string{
	{"ls", "-la"}, {"echo", "ok"}, {"git", "status"}, {"git", "log", "--oneline", "-3"},
	{"cat", "README.md"}, {"grep", "-rn", "TODO", "."}, {"go", "test", "./..."},
	{"npm", "test"}, {"make"}, {"git", "diff", "--stat"}, {"pwd"}, {"cd", "/tmp"},
	{"wc", "-l", "go.mod"}, {"echo", "a b"},
}

// stmt is a piece of command line; simple when it is one simple
// command, which a prefix wrapper (command, env, sudo, exec…) may take.
type stmt struct {
	text   string
	simple bool
}

// grammar builds a command: a payload, disguised, hidden under one to
// three layers of wrappers and constructs, among benign commands.
func (g *gen) grammar() sample {
	var labels []string
	p := payloads[g.r.IntN(len(payloads))]
	s, l := g.simple(p, 0.6)
	labels = append(labels, l)
	for range 1 + g.r.IntN(3) {
		var l string
		s, l = g.hide(s, len(labels))
		labels = append(labels, l)
	}
	parts := []string{s.text}
	for range g.r.IntN(3) {
		b, _ := g.simple(benign[g.r.IntN(len(benign))], 0.1)
		at := g.r.IntN(len(parts) + 1)
		parts = slices.Insert(parts, at, b.text)
	}
	var line strings.Builder
	for i, part := range parts {
		if i > 0 {
			line.WriteString(g.pick("; ", " && ", "\n", " | ", " & ", ";", " ;\n", " && \\\n  "))
		}
		line.WriteString(part)
	}
	if g.r.IntN(8) == 0 {
		line.WriteString(g.pick(" # done", "  # it's fine", " #'", "\n# end\n"))
	}
	// The first label is the disguise of the payload, the last the
	// outermost wrapper: group by the outermost.
	slices.Reverse(labels)
	return sample{"gen:" + strings.Join(labels, "<"), line.String()}
}

// simple renders words as one command, the program disguised with
// probability p (and then, sometimes, not a simple command any more).
func (g *gen) simple(words []string, p float64) (stmt, string) {
	name, args := words[0], words[1:]
	rest := ""
	for _, a := range args {
		if g.r.Float64() < 0.15 {
			rest += " " + g.quote(a)
		} else {
			rest += " " + plainWord(a)
		}
	}
	if g.r.Float64() >= p {
		return stmt{name + rest, true}, "plain"
	}
	joinable := true // every word free of what IFS or a brace list would cut
	for _, w := range words {
		if strings.ContainsAny(w, " \t\n,{}'\"\\$`;()|&<>*?[]") {
			joinable = false
		}
	}
	kinds := []string{"quote", "quote", "path", "var", "qvar", "default", "subst", "backq",
		"printf", "glob", "alias", "hash", "exec-a", "func", "set", "array", "indirect",
		"continuation", "extglob", "dollar-hex", "dollar-oct", "dollar-u", "split-quote"}
	if joinable {
		kinds = append(kinds, "brace", "ifs", "ifsvar")
	}
	k := g.pick(kinds...)
	all := func(sep string) string { return strings.Join(words, sep) }
	switch k {
	case "quote":
		return stmt{g.quote(name) + rest, true}, k
	case "path":
		return stmt{g.pick("/bin/", "/usr/bin/", "/usr/bin/../bin/", "//usr//bin//", "/usr/local/bin/", "/sbin/", "/usr/./bin/") + name + rest, true}, k
	case "var":
		return stmt{"x=" + g.quote(name) + "; $x" + rest, false}, k
	case "qvar":
		return stmt{"x=" + name + `; "${x}"` + rest, false}, k
	case "default":
		return stmt{g.pick("${nx:-", "${nx-", "${nx:=") + name + "}" + rest, true}, k
	case "subst":
		return stmt{"$(echo " + name + ")" + rest, true}, k
	case "backq":
		return stmt{"`echo " + name + "`" + rest, true}, k
	case "printf":
		return stmt{"$(printf " + g.quote(hexEscapes(name)) + ")" + rest, true}, k
	case "glob":
		if len(name) >= 2 {
			return stmt{"/usr/bin/" + name[:1] + "[" + name[1:2] + "]" + name[2:] + rest, true}, k
		}
		return stmt{"/usr/bin/" + name[:len(name)-1] + "?" + rest, true}, k
	case "alias":
		return stmt{"shopt -s expand_aliases\nalias zq=" + g.quote(name) + "\nzq" + rest, false}, k
	case "hash":
		return stmt{"hash -p /usr/bin/" + name + " ls; ls" + rest, false}, k
	case "exec-a":
		return stmt{"exec -a " + g.pick("ls", "echo", "git") + " " + name + rest, true}, k
	case "func":
		return stmt{g.pick("ls", "echo", "git", "cat") + "() { " + name + ` "$@"; }; ` + g.pick("ls", "echo", "git", "cat") + rest, false}, k
	case "set":
		return stmt{"set -- " + name + rest + `; "$@"`, false}, k
	case "array":
		return stmt{"a=(" + name + rest + `); "${a[@]}"`, false}, k
	case "indirect":
		return stmt{"n=" + name + "; m=n; ${!m}" + rest, false}, k
	case "continuation":
		i := 1 + g.r.IntN(max(1, len(name)-1))
		return stmt{name[:i] + "\\\n" + name[i:] + rest, true}, k
	case "extglob":
		return stmt{"shopt -s extglob\n/usr/bin/@(" + name + "|nothing)" + rest, false}, k
	case "dollar-hex":
		return stmt{"$'" + hexEscapes(name) + "'" + rest, true}, k
	case "dollar-oct":
		var b strings.Builder
		for i := 0; i < len(name); i++ {
			fmt.Fprintf(&b, `\%03o`, name[i])
		}
		return stmt{"$'" + b.String() + "'" + rest, true}, k
	case "dollar-u":
		var b strings.Builder
		for _, c := range name {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		return stmt{"$'" + b.String() + "'" + rest, true}, k
	case "split-quote":
		i := 1 + g.r.IntN(max(1, len(name)-1))
		return stmt{name[:i] + g.pick(`''`, `""`, `\`, `$''`, `$""`) + name[i:] + rest, true}, k
	case "brace":
		return stmt{"{" + all(",") + "}", true}, k
	case "ifs":
		return stmt{all("${IFS}"), true}, k
	case "ifsvar":
		return stmt{"IFS=,; x=" + all(",") + "; $x", false}, k
	}
	panic("unknown disguise " + k)
}

// hide puts s under one wrapper or construct. depth numbers here-doc
// delimiters so that nested ones differ.
func (g *gen) hide(s stmt, depth int) (stmt, string) {
	S := s.text
	q := func() string { return g.quote(S) }
	eof := fmt.Sprintf("EOF%d", depth)
	type tmpl struct {
		label  string
		simple bool // needs a simple s
		out    func() stmt
	}
	ts := []tmpl{
		// Compound commands.
		{"subshell", false, func() stmt { return stmt{"(" + S + ")", false} }},
		{"group", false, func() stmt { return stmt{"{ " + S + "; }", false} }},
		{"if", false, func() stmt { return stmt{"if true; then " + S + "; fi", false} }},
		{"else", false, func() stmt { return stmt{"if false; then :; else " + S + "; fi", false} }},
		{"for", false, func() stmt { return stmt{"for i in 1; do " + S + "; done", false} }},
		{"while", false, func() stmt { return stmt{"while :; do " + S + "; break; done", false} }},
		{"case", false, func() stmt { return stmt{"case a in b) :;; *) " + S + ";; esac", false} }},
		{"func", false, func() stmt { return stmt{"f() { " + S + "; }; f", false} }},
		{"function", false, func() stmt { return stmt{"function f {\n" + S + "\n}\nf", false} }},
		{"func-subshell", false, func() stmt { return stmt{"f() ( " + S + " ); f", false} }},
		{"background", false, func() stmt { return stmt{S + " &", false} }},
		{"negate", false, func() stmt { return stmt{"! " + S, false} }},
		{"time", false, func() stmt { return stmt{g.pick("time ", "time -p ") + S, false} }},
		{"coproc", false, func() stmt { return stmt{"coproc { " + S + "; }", false} }},
		{"redirect", false, func() stmt {
			return stmt{"{ " + S + "; } " + g.pick(">/dev/null 2>&1", "2>/dev/null", "&>/dev/null", "| tail -n 5"), false}
		}},
		{"or-true", false, func() stmt { return stmt{S + " || true", false} }},
		// Substitutions.
		{"cmdsubst", false, func() stmt {
			return stmt{g.pick("echo ", ": ", "x=", "export y=", "declare z=", "readonly r=") + "$(" + S + ")", false}
		}},
		{"cmdsubst-dq", false, func() stmt { return stmt{`echo "$(` + S + `)"`, false} }},
		{"backquote", false, func() stmt { return stmt{"echo `" + backquoted(S) + "`", false} }},
		{"procsubst", false, func() stmt { return stmt{g.pick("cat <(", ": <(", "echo >(", "diff <(ls) <(") + S + ")", false} }},
		{"test", false, func() stmt {
			return stmt{g.pick("[[ -n $("+S+") ]]", `test -n "$(`+S+`)"`, `[ -z "$(`+S+`)" ]`), false}
		}},
		{"default-subst", false, func() stmt { return stmt{"echo ${u:-$(" + S + ")}", false} }},
		{"arith-subst", false, func() stmt { return stmt{"echo $(( $(" + S + ") 1 ))", false} }},
		{"for-subst", false, func() stmt { return stmt{"for f in $(" + S + "); do :; done", false} }},
		{"case-subst", false, func() stmt { return stmt{"case $(" + S + ") in *) ;; esac", false} }},
		{"redirect-target", false, func() stmt { return stmt{`echo hi > "$(` + S + `; echo f)"`, false} }},
		{"herestring-subst", false, func() stmt { return stmt{`cat <<< "$(` + S + `)"`, false} }},
		{"while-read", false, func() stmt { return stmt{"while read -r l; do :; done < <(" + S + ")", false} }},
		{"heredoc-subst", false, func() stmt { return stmt{"cat <<" + eof + "\n$(" + S + ")\n" + eof, false} }},
		{"heredoc-quoted", false, func() stmt { return stmt{"cat <<'" + eof + "'\n$(" + S + ")\n" + eof, false} }},
		// Shells in shells.
		{"bash -c", false, func() stmt {
			return stmt{g.pick("bash -c ", "sh -c ", "bash -lc ", "bash -ec ", "bash -c -- ", "bash -o pipefail -c ", "dash -c ", "/bin/bash -c ", "exec bash -c ", "command bash -c ", "\"$BASH\" -c ", "${SHELL:-sh} -c ", "$0 -c ") + q(), false}
		}},
		{"bash -c args", false, func() stmt { return stmt{"bash -c " + q() + " " + g.pick("_", "bash", "x y"), false} }},
		{"eval", false, func() stmt { return stmt{g.pick("eval ", "builtin eval ", "command eval ", "eval -- ") + q(), false} }},
		{"eval-subst", false, func() stmt { return stmt{`eval "$(echo ` + q() + `)"`, false} }},
		{"stdin-bash", false, func() stmt {
			return stmt{g.pick("bash <<< ", "bash -s <<< ", "sh <<< ", "source /dev/stdin <<< ", ". /dev/stdin <<< ") + q(), false}
		}},
		{"pipe-bash", false, func() stmt {
			return stmt{g.pick("echo ", "printf '%s\\n' ") + q() + g.pick(" | bash", " | sh", " | bash -s", " | source /dev/stdin"), false}
		}},
		{"heredoc-bash", false, func() stmt {
			return stmt{g.pick("bash", "sh", "bash -s", "cat | bash", "source /dev/stdin") + " <<" + g.pick("'"+eof+"'", eof, `"`+eof+`"`) + "\n" + S + "\n" + eof, false}
		}},
		{"source-procsubst", false, func() stmt { return stmt{g.pick(". <(echo ", "source <(echo ", "bash <(echo ") + q() + ")", false} }},
		{"bash-env", false, func() stmt { return stmt{"BASH_ENV=<(echo " + q() + ") bash -c :", false} }},
		{"bash-dollar0", true, func() stmt { return stmt{`bash -c '"$0" "$@"' ` + S, false} }},
		// Traps and expansions that run code.
		{"trap", false, func() stmt {
			return stmt{"trap " + q() + g.pick(" EXIT", " ERR; false", " DEBUG; :", " EXIT; exit 0"), false}
		}},
		{"ps4", false, func() stmt { return stmt{"PS4=" + g.quote("$("+S+")") + "; set -x; :", false} }},
		{"prompt-expand", false, func() stmt { return stmt{"x=" + g.quote("$("+S+")") + "; echo ${x@P}", false} }},
		{"arith-var", false, func() stmt {
			return stmt{"x=" + g.quote("a[$("+S+")]") + g.pick("; echo $((x))", "; [[ $x -eq 0 ]]", "; (( x ))", "; let x"), false}
		}},
		{"mapfile", false, func() stmt { return stmt{"mapfile -t -C " + g.quote(S+"; :") + " -c 1 a <<< x", false} }},
		{"alias", false, func() stmt { return stmt{"shopt -s expand_aliases\nalias zz=" + q() + "\nzz", false} }},
		// Prefix wrappers: bash runs only some (command, exec, builtin).
		{"prefix", true, func() stmt {
			return stmt{g.pick("command ", "command -- ", "command -p ", "builtin command ", "exec ", "env ", "env FOO=1 ",
				"env -i PATH=/usr/bin ", "sudo ", "sudo -u root ", "nohup ", "timeout 30 ", "timeout -s KILL 5 ",
				"nice -n 10 ", "stdbuf -oL ", "ionice -c3 ", "setsid ", "FOO=1 ", "LC_ALL=C ", "time ") + S, true}
		}},
		{"xargs", true, func() stmt {
			return stmt{g.pick("echo x | xargs ", "xargs -0 ", "xargs -I{} ") + S + " < /dev/null", false}
		}},
		{"find-exec", false, func() stmt {
			return stmt{"find . -maxdepth 0 " + g.pick("-exec ", "-execdir ", "-ok ") + g.pick("sh -c "+q(), "bash -c "+q()) + ` \;`, false}
		}},
		{"remote", false, func() stmt { return stmt{g.pick("ssh host ", "watch -n1 ", "ssh -t host ") + q(), false} }},
		{"git-alias", false, func() stmt { return stmt{"git -c alias.x=" + g.quote("!"+S) + " x", false} }},
	}
	var ok []tmpl
	for _, t := range ts {
		if !t.simple || s.simple {
			ok = append(ok, t)
		}
	}
	t := ok[g.r.IntN(len(ok))]
	return t.out(), t.label
}

// mutate changes a seed: it always adds a payload, in one of the ways
// a naive reader gets wrong, and sometimes changes the seed's text.
func (g *gen) mutate() sample {
	seed := g.seeds[g.r.IntN(len(g.seeds))].Cmd
	p := payloads[g.r.IntN(len(payloads))]
	pay, _ := g.simple(p, 0.3)
	var labels []string
	cmd := seed
	for range g.r.IntN(3) {
		var l string
		cmd, l = g.perturb(cmd)
		labels = append(labels, l)
	}
	k := g.pick("append", "comment-quote", "dollar-quote", "dq-backslash", "sq-backslash", "hide", "encode-first", "prepend")
	switch k {
	case "append":
		cmd += g.pick("; ", " && ", "\n", " | ", " & ", " || ") + pay.text
	case "comment-quote":
		cmd += g.pick(" #'", ` #"`, " #`", " # it's") + "\n" + pay.text + g.pick(" #'", "", ` #"`)
	case "dollar-quote":
		cmd += g.pick(` $'\'' ; `, ` $'\''; `, ` $"\"" ; `) + pay.text + g.pick(" #'", " ;'", ` #"`)
	case "dq-backslash":
		cmd += ` "\\"; ` + pay.text + ` #"`
	case "sq-backslash":
		cmd += ` '\'; ` + pay.text + ` #'`
	case "hide":
		h, l := g.hide(pay, 9)
		k += "(" + l + ")"
		cmd += g.pick("; ", " && ", "\n") + h.text
	case "encode-first":
		i := strings.IndexFunc(cmd, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
		if i < 0 {
			i = len(cmd)
		}
		if i == 0 {
			cmd = pay.text + "; " + cmd
			break
		}
		cmd = "$'" + hexEscapes(cmd[:i]) + "'" + cmd[i:] + "; " + pay.text
	case "prepend":
		cmd = pay.text + g.pick("; ", " && ", "\n") + cmd
	}
	labels = append(labels, k)
	return sample{"mut:" + strings.Join(labels, "+"), cmd}
}

// perturb makes a small change to cmd that keeps it close to valid.
func (g *gen) perturb(cmd string) (string, string) {
	at := func() int { return g.r.IntN(len(cmd) + 1) }
	switch k := g.pick("swap-sep", "insert-quotes", "continuation", "insert-char", "wrap", "cd", "env", "newline"); k {
	case "swap-sep":
		from := g.pick("; ", " && ", "\n", " | ")
		to := g.pick(";\n", " ; ", " && ", "\n", " || ", " &\n")
		return strings.Replace(cmd, from, to, 1), k
	case "insert-quotes":
		i := at()
		return cmd[:i] + g.pick(`''`, `""`, `$''`, `\`) + cmd[i:], k
	case "continuation":
		i := at()
		return cmd[:i] + "\\\n" + cmd[i:], k
	case "insert-char":
		i := at()
		return cmd[:i] + g.pick("'", `"`, "`", "$", `\`, "#", "\n", ";", "(", ")", "{", "}", "|", "&", " ") + cmd[i:], k
	case "wrap":
		s, l := g.hide(stmt{cmd, false}, 8)
		return s.text, k + "(" + l + ")"
	case "cd":
		return "cd /tmp && " + cmd, k
	case "env":
		return g.pick("env VAR=x ", "VAR=x ", "timeout 30 ") + cmd, k
	default:
		return strings.ReplaceAll(cmd, "; ", "\n"), k
	}
}

// quote returns one shell word whose value is s, quoted in one or more
// of bash's ways.
func (g *gen) quote(s string) string {
	switch g.r.IntN(6) {
	case 0:
		return singleQuoted(s)
	case 1:
		return doubleQuoted(s)
	case 2:
		return g.dollarQuoted(s)
	case 3:
		return g.backslashed(s)
	default:
		// Several pieces, each quoted its own way, side by side.
		var b strings.Builder
		for len(s) > 0 {
			n := 1 + g.r.IntN(len(s))
			for n < len(s) && s[n]&0xc0 == 0x80 {
				n++ // keep UTF-8 sequences whole for double quotes
			}
			piece := s[:n]
			s = s[n:]
			switch g.r.IntN(4) {
			case 0:
				b.WriteString(singleQuoted(piece))
			case 1:
				b.WriteString(doubleQuoted(piece))
			case 2:
				b.WriteString(g.dollarQuoted(piece))
			default:
				b.WriteString(g.backslashed(piece))
			}
		}
		if b.Len() == 0 {
			return "''"
		}
		return b.String()
	}
}

func singleQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("\\\"$`", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// dollarQuoted returns s as $'…', some bytes as \xHH, \NNN, \uHHHH or
// \UHHHHHHHH escapes.
func (g *gen) dollarQuoted(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\'':
			b.WriteString(g.pick(`\'`, `\x27`, `\047`))
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c >= 0x80 || c < 0x20:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			switch g.r.IntN(8) {
			case 0:
				fmt.Fprintf(&b, `\x%02x`, c)
			case 1:
				fmt.Fprintf(&b, `\%03o`, c)
			case 2:
				fmt.Fprintf(&b, `\u%04x`, c)
			case 3:
				fmt.Fprintf(&b, `\U%08x`, c)
			default:
				b.WriteByte(c)
			}
		}
	}
	b.WriteString("'")
	return b.String()
}

// backslashed returns s unquoted, each byte but letters and digits
// after a backslash (a newline as $'\n', which a backslash would join).
func (g *gen) backslashed(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			b.WriteString(`$'\n'`)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			if g.r.IntN(6) == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

// plainWord returns w as it would be typed: bare when that is the
// same word, else single-quoted.
func plainWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`;&|<>(){}*?[]#~=") {
		return w
	}
	return singleQuoted(w)
}

// hexEscapes returns s as \xHH escapes.
func hexEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\x%02x`, s[i])
	}
	return b.String()
}

// backquoted escapes s for the inside of `…`.
func backquoted(s string) string {
	return strings.NewReplacer(`\`, `\\`, "`", "\\`", "$", `\$`).Replace(s)
}

// TestGen_Deterministic proves the generator makes the same commands
// from the same seed, so that a finding can be found again by its seed
// and position, and that it makes a variety of them.
func TestGen_Deterministic(t *testing.T) {
	seeds := seedSamples(t)
	if len(seeds) < 300 {
		t.Errorf("%d seed commands, want at least 300", len(seeds))
	}
	a, b := newGen(7, seeds), newGen(7, seeds)
	distinct := map[string]bool{}
	for i := range 500 {
		x, y := a.next(), b.next()
		if x != y {
			t.Fatalf("command %d differs for one seed: %q and %q", i, x.Cmd, y.Cmd)
		}
		distinct[x.Cmd] = true
	}
	if len(distinct) < 450 {
		t.Errorf("%d distinct commands of 500, want at least 450", len(distinct))
	}
}
