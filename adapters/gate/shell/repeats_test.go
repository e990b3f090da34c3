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

// TestRead_Chdir checks the directories a wrapper's options give its
// command (Command.Chdir): each option's value, short, clustered, long
// or abbreviated; one known only when it runs for find -execdir, a
// login shell and a value not known before; none past the command's
// own words.
func TestRead_Chdir(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string // each directory's Reading
	}{
		{`env -C /a sh -c true`, []string{"/a"}},
		{`env -C/a true`, []string{"/a"}},
		{`env --chdir=/a true`, []string{"/a"}},
		{`env --chdir /a true`, []string{"/a"}},
		{`env --ch=/a true`, []string{"/a"}},
		{`env -i -C /a -C /b true`, []string{"/a", "/b"}},
		{`env true -C /a`, nil},
		{`env make -C /a`, nil},
		{`sudo -u root -D /a true`, []string{"/a"}},
		{`sudo -uroot -D/a true`, []string{"/a"}},
		{`sudo -i true`, []string{WildPart}},
		{`unshare -w /a true`, []string{"/a"}},
		{`nsenter -w -t 1 true`, []string{WildPart}},
		{`nsenter --wd=/a -t 1 true`, []string{"/a"}},
		{`su - -c true`, []string{WildPart}},
		{`su -l root -c true`, []string{WildPart}},
		{`find . -execdir true \;`, []string{WildPart}},
		{`find . -exec true \;`, nil},
		{`systemd-run true`, []string{WildPart}},
		{`systemd-run --scope true`, []string{WildPart}},
		{`su -c 'true' -`, []string{WildPart}},
		{`su root -c 'true' --login`, []string{WildPart}},
		{`su -c 'true' -l root`, []string{WildPart}},
		{`runuser root -c true -l`, []string{WildPart}},
		{`su -c '-l' root`, nil},
		{`su root -c true`, nil},
		{`sudo -D~ true`, []string{WildPart}},
		{`sudo --chdir=~x true`, []string{WildPart}},
		{`pkexec true`, []string{WildPart}},
		{`pkexec --keep-cwd true`, nil},
		{`parallel --wd /a 'true' ::: 1`, []string{"/a"}},
		{`env -C "$D" true`, []string{WildPart}},
	} {
		var got []string
		for _, c := range Read(tc.src).Commands {
			for _, d := range c.Chdir {
				got = append(got, d.Reading)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: chdir %q, want %q", tc.src, got, tc.want)
		}
	}
	for _, src := range []string{`chroot /srv/r true`, `unshare -R /srv/r true`, `sudo --chroot=/srv/r true`, `nsenter -r/srv/r -t 1 true`,
		`nsenter -m -t 1 true`, `nsenter --mount=/proc/1/ns/mnt true`, `nsenter -a -t 1 true`, `bwrap --bind / / --chdir /x true`,
		`firejail --private=/x true`, `proot -r /x true`, `tmux new-session -d -c /x 'true'`, `tmux new -d true`, `screen -dm true`} {
		if !Read(src).Opaque() {
			t.Errorf("%q: not opaque", src)
		}
	}
	for _, src := range []string{`chroot / true`, `tmux ls`, `tmux list-sessions -F x`, `tmux has-session -t x`} {
		if Read(src).Opaque() {
			t.Errorf("%q: opaque", src)
		}
	}
}
