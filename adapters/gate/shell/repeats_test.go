package shell

import (
	"slices"
	"testing"
)

// TestRead_Repeats checks which commands may run more than once in the
// same shell: a loop's (its condition too) and a function's body, not
// those of a subshell inside them, nor those before or after.
func TestRead_Repeats(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string // the programs of the commands that repeat
	}{
		{`cd a; cd b`, nil},
		{`for i in 1 2; do cd ..; done; ls`, []string{"cd"}},
		{`while test -d x; do cd x; done`, []string{"test", "cd"}},
		{`until false; do cd ..; done`, []string{"false", "cd"}},
		{`for ((i=0;i<2;i++)); do cd ..; done`, []string{"cd"}},
		{`select x in a b; do cd $x; done`, []string{"cd"}},
		{`f() { cd ..; }; f; f`, []string{"cd"}},
		{`for i in 1; do (cd a; ls); done`, nil},
		{`for i in 1; do cd a | cat; done`, nil},
		{`for i in 1; do (for j in 1; do cd a; done); done`, []string{"cd"}},
		{`for i in 1; do eval 'cd ..'; done`, []string{"eval", "cd"}},
		{`trap 'cd ..' DEBUG; true`, []string{"cd"}},
		{`alias x='cd ..'`, []string{"cd"}},
	} {
		var got []string
		for _, c := range Read(tc.src).Commands {
			if c.Repeats {
				got = append(got, c.Args[0].Value)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: repeats %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestRead_Unheld checks that a name merely used before the input gives
// it a value is Unsure but not Unheld (its value there is the
// environment's), and that one read into, given in a subshell, before a
// command or appended to is both.
func TestRead_Unheld(t *testing.T) {
	for _, tc := range []struct {
		src            string
		unsure, unheld bool
	}{
		{`echo $HOME`, true, false},
		{`cd "$HOME"`, true, false},
		{`read HOME`, true, true},
		{`printf -v HOME %s x`, true, true},
		{`(HOME=/x); ls`, true, true},
		{`HOME=/x ls`, true, true},
		{`HOME=/x; HOME+=/y`, true, true},
		{`HOME=/x; echo $HOME`, false, false},
	} {
		s := Read(tc.src)
		if s.Unsure["HOME"] != tc.unsure || s.Unheld["HOME"] != tc.unheld {
			t.Errorf("%q: unsure %v, unheld %v; want %v, %v", tc.src, s.Unsure["HOME"], s.Unheld["HOME"], tc.unsure, tc.unheld)
		}
	}
}
