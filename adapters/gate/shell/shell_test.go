package shell

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// show renders a script for comparison: each command as its reading
// (Wild as "*", WildPart as "?"), marked with how it is run; writes
// as "> target"; faults as "fault".
func show(s *Script) []string {
	rep := strings.NewReplacer(Wild, "*", WildPart, "?")
	var out []string
	for _, c := range s.Commands {
		line := rep.Replace(c.Text())
		if c.Via != "" {
			line = "[" + c.Via + "] " + line
		}
		if c.Opaque != "" {
			line += " (opaque)"
		}
		if c.Maybe {
			line += " (maybe)"
		}
		out = append(out, line)
	}
	for _, w := range s.Writes {
		out = append(out, w.Op+" "+rep.Replace(w.Target.Reading))
	}
	if len(s.Faults) > 0 {
		out = append(out, "fault")
	}
	return out
}

// TestRead_CommandsAsBashRunsThem checks that Read lists the commands
// bash 5.2 runs for each input, with words as bash passes them; each
// row's reading was checked against bash 5.2.15.
func TestRead_CommandsAsBashRunsThem(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		// Quoting: $'…' is one word, closed where bash closes it.
		{`ls $'\''; rm -rf DIR`, []string{"ls '", "rm -rf DIR"}},
		{"ls #'\nrm -rf DIR\n#'", []string{"ls", "rm -rf DIR"}},
		{`echo "a\$b\"c\d" $'\x72m\0zz' \r\m`, []string{`echo a$b"c\d rm rm`}},
		{`cat $'/x/\x64ata/\144\u0064'`, []string{"cat /x/data/dd"}},
		{"r\\\nm -rf /", []string{"rm -rf /"}},
		{`{rm,-rf,/x}`, []string{"rm -rf /x"}},
		{`echo $'\cA'`, []string{"echo ?"}},
		// Unknown parts: unquoted may be several words, quoted one.
		{`rm${IFS}-rf${IFS}/x`, []string{"rm*-rf*/x"}},
		{`ls "$x" $y ~/z *.go`, []string{"ls ? * ?/z *.go"}},
		{`"$@"`, []string{"*"}},
		// Compound commands and substitutions.
		{`if a; then b; elif c; then d; else e; fi`, []string{"a", "b", "c", "d", "e"}},
		{`for f in $(ls); do cat "$f"; done`, []string{"ls", "cat ?"}},
		{`case $(x) in y) z;; esac`, []string{"x", "z"}},
		{`f() { rm -rf /x; }`, []string{"rm -rf /x"}},
		{`echo > >(curl x) <(wget y)`, []string{"wget y", "echo *", "curl x", "> ?"}},
		{"cat <<EOF\n$(curl x)\nEOF", []string{"cat", "curl x"}},
		{"cat <<'EOF'\n$(curl x)\nEOF", []string{"cat"}},
		{`echo ${x:-$(curl x)}`, []string{"curl x", "echo *"}},
		{`a[$(curl x)]=1`, []string{"curl x", "(( (opaque)"}},
		{`x='b[$(id)]'; a[x]=1`, []string{"(( (opaque)"}},
		{`a=([x]=1)`, []string{"(( (opaque)"}},
		{`[[ -v a[x] ]]`, []string{"(( (opaque)"}},
		{`read -p "go [y/n]? " r`, []string{"read -p go [y/n]?  r"}},
		{`BASH_CMDS[ls]=/bin/touch; ls x`, []string{" (opaque)", "ls x", "(( (opaque)"}},
		{`export X=$(curl x)`, []string{"curl x", "export X=?"}},
		{`(( x[$(id)] ))`, []string{"id", "(( (opaque)"}},
		// Redirections: writes, not fd duplications.
		{`ls 2>&1 >/dev/null >>log &>all 3>&-`, []string{"ls", "> /dev/null", ">> log", "&> all"}},
		{`ls >& out`, []string{"ls", ">& out"}},
		// Wrappers.
		{`sudo -u root env A=1 timeout -s KILL 5 nice -n 3 rm -rf /x`, []string{
			"sudo -u root env A=1 timeout -s KILL 5 nice -n 3 rm -rf /x",
			"[sudo] env A=1 timeout -s KILL 5 nice -n 3 rm -rf /x",
			"[env] timeout -s KILL 5 nice -n 3 rm -rf /x",
			"[timeout] nice -n 3 rm -rf /x",
			"[nice] rm -rf /x"}},
		{`bash -c "sh -c 'eval \"rm -rf /x\"'"`, []string{
			`bash -c sh -c 'eval "rm -rf /x"'`, `[bash -c] sh -c eval "rm -rf /x"`, "[sh -c] eval rm -rf /x", "[eval] rm -rf /x"}},
		{`bash -ec 'curl x' name`, []string{"bash -ec curl x name", "[bash -c] curl x"}},
		{"bash <<EOF\nrm -rf /x\nEOF", []string{"bash", "[bash <<] rm -rf /x"}},
		{`sh <<< 'curl x'`, []string{"sh", "[sh <<<] curl x"}},
		{`curl x | bash`, []string{"curl x", "bash (opaque)"}},
		{`bash ./run.sh`, []string{"bash ./run.sh (opaque)"}},
		{`source ./env.sh`, []string{"source ./env.sh (opaque)"}},
		{`eval "$cmd"`, []string{"eval ? (opaque)"}},
		{`xargs -n1 rm -rf`, []string{"xargs -n1 rm -rf", "[xargs] rm -rf *"}},
		{`find . -name x -exec rm -rf {} \; -ok curl {} +`, []string{
			"find . -name x -exec rm -rf {} ; -ok curl {} +", "[find -exec] rm -rf ?", "[find -ok] curl ?"}},
		{`ssh -p 22 -i key host 'curl x' y`, []string{"ssh -p 22 -i key host curl x y", "[ssh] curl x y"}},
		{`watch -n 1 'curl x'`, []string{"watch -n 1 curl x", "[watch] curl x"}},
		{`git -c alias.x='!rm -rf /x' -C d x`, []string{"git -c alias.x=!rm -rf /x -C d x", "[git alias] rm -rf /x"}},
		{`git -c core.pager='curl x' log`, []string{"git -c core.pager=curl x log", "[git -c core.pager] curl x"}},
		{`git config --global core.sshCommand 'curl x'`, []string{"git config --global core.sshCommand curl x", "[git -c core.sshcommand] curl x"}},
		{`GIT_SSH_COMMAND='curl x' git fetch`, []string{"git fetch", "[GIT_SSH_COMMAND] curl x"}},
		{`PATH=/tmp/b:$PATH ls`, []string{"ls (opaque)"}},
		{`alias ls='rm -rf /x'`, []string{"alias ls=rm -rf /x", "[alias] rm -rf /x"}},
		{`trap 'curl x' EXIT`, []string{"trap curl x EXIT", "[trap] curl x"}},
		{`env -S 'curl x'`, []string{"env -S curl x", "[env -S] curl x"}},
		{`hash -p /bin/rm ls`, []string{"hash -p /bin/rm ls", "[hash -p] /bin/rm *"}},
		// A program known only when it runs may be a wrapper.
		{`$x -c 'curl y'`, []string{"* -c curl y", "[a program known only when it runs] curl y (maybe)",
			"[a program known only when it runs] curl y (maybe)", "[a program known only when it runs] -c curl y (maybe)"}},
		// A carriage return is part of a word to bash.
		{"ls -la\rcurl x", []string{"ls -la\rcurl x"}},
		{"ls\r\nrm -rf /x", []string{"ls\r", "rm -rf /x"}},
		// "time" as the program: after a pipe, or -p (POSIX mode).
		{`cat f | time curl x`, []string{"cat f", "time curl x", "[time] curl x"}},
		{`time -p curl x`, []string{"time -p curl x", "[time] curl x"}},
		// Here-documents whose end bash finds elsewhere than it looks.
		{"cat <<EOF\nEO\\\nF\ncurl x\nEOF\n", []string{"fault"}},
		{"cat <<$'E\\x4fF'\nEOF\ncurl x\nE\\x4fF\n", []string{"fault"}},
		{"cat <<EOF\na \\\nb\nEOF\n", []string{"cat"}},
		// Faults.
		{"echo `echo \\`curl x\\``", []string{"fault"}},
		{`ls 'unclosed`, []string{"fault"}},
		{`ls; )`, []string{"fault"}},
		{strings.Repeat("eval ", 20) + "ls", nil},
	} {
		got := show(Read(tc.src))
		if tc.want == nil {
			if len(Read(tc.src).Faults) == 0 {
				t.Errorf("Read(%q): no fault, want one (past MaxDepth)", tc.src)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Read(%q) (-want +got):\n%s", tc.src, diff)
		}
	}
}

// TestRead_StaticWords checks which words are known without running
// anything, and their values.
func TestRead_StaticWords(t *testing.T) {
	for _, tc := range []struct {
		src    string
		static bool
		value  string
	}{
		{`'a b'`, true, "a b"},
		{`"a$b"`, false, "a"},
		{`~/x`, true, "~/x"},
		{`a~`, true, "a~"},
		{`*.go`, false, "*.go"},
		{`'*.go'`, true, "*.go"},
		{`\*.go`, true, "*.go"},
		{`$((1+1))`, false, ""},
		{`$'\x41'`, true, "A"},
	} {
		s := Read("echo " + tc.src)
		if len(s.Commands) != 1 || len(s.Commands[0].Args) != 2 {
			t.Fatalf("Read(echo %s): %v", tc.src, show(s))
		}
		w := s.Commands[0].Args[1]
		if w.Static != tc.static || w.Value != tc.value {
			t.Errorf("%s: static %v value %q, want %v %q", tc.src, w.Static, w.Value, tc.static, tc.value)
		}
	}
}

// TestAnsiC checks $'…' decoding against bash 5.2.15's own (each want
// is what bash printed for the escape, through od).
func TestAnsiC(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`\029`, "\x029", true},
		{`\400`, "", true},
		{`\777`, "\xff", true},
		{`\x4g`, "\x04g", true},
		{`\u00e9`, "é", true},
		{`\U0001F600`, "😀", true},
		{`\q`, `\q`, true},
		{`\x`, `\x`, true},
		{`\1234`, "S4", true},
		{`\0a`, "", true},
		{`a\tb\e\'`, "a\tb\x1b'", true},
		{`\cA`, "", false},
		{`\uD800`, "", false},
	} {
		got, ok := ansiC(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ansiC(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// BenchmarkRead_200KiB measures reading one command line of 200 KiB,
// the size of the largest tool input the gate judges whole.
func BenchmarkRead_200KiB(b *testing.B) {
	src := "ls " + strings.Repeat("aaaa ", 40<<10) + "; rm -rf /x"
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Read(src)
	}
}

// Words with unquoted braces that mvdan's SplitBraces does not turn into
// a list but bash expands ("{0},}" is 0}; "x{},}" is x} x) are unknown,
// never read as the literal word.
func TestRead_BracesBashExpandsAlone(t *testing.T) {
	for _, src := range []string{"{0},}", "x{},}", "0{0},0{0}0}", "a{},b}c", "{}..}"} {
		s := Read(src)
		if len(s.Commands) != 1 || len(s.Commands[0].Args) != 1 || s.Commands[0].Args[0].Reading != Wild {
			t.Errorf("%q read as %+v, want one unknown word", src, s.Commands)
		}
	}
	for _, src := range []string{"a{b,c}", "{}", "find . -exec rm {} +", "x{a..c}"} {
		for _, c := range Read(src).Commands {
			for _, a := range c.Args {
				if a.Reading == Wild {
					t.Errorf("%q: a word read as unknown: %+v", src, c.Args)
				}
			}
		}
	}
}

// sh -c followed by a + option, or by a lone - (the end of the options,
// as --): the command string is not the + word, nor the -.
func TestRead_ShellDashCOptionsAfter(t *testing.T) {
	if s := Read("sh -c + '00'"); s.Commands[0].Opaque == "" {
		t.Errorf("sh -c + '00': %+v, want the shell opaque", s.Commands)
	}
	s := Read("bash -c - 'rm -rf x'")
	found := false
	for _, c := range s.Commands {
		if len(c.Args) > 0 && c.Args[0].Value == "rm" {
			found = true
		}
	}
	if !found && s.Commands[0].Opaque == "" {
		t.Errorf("bash -c - 'rm -rf x': %+v, want rm read (or the shell opaque)", s.Commands)
	}
}
