package gate

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecide_CdChain checks that a command which changes its directory
// (cd, pushd, in a subshell or not, -P or not) is judged from every
// directory it may run its commands in: a relative word after the cd is
// read from where the cd leads, by the deny and review rules and the
// data dir's guard alike, and an allow holds only where every reading
// allows.
func TestDecide_CdChain(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	for _, d := range []string{"proj", "secret/sub", "home/.cache/a/b", "home/.local/share/logbook"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "proj/sl")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(home, ".local/share/logbook")
	src := strings.ReplaceAll(`allow = ["Bash(cat:*)", "Bash(ls:*)", "Bash(echo:*)", "Bash(cp:*)", "Bash(cd:*)", "Bash(pushd:*)", "Write(@R/proj/**)"]
deny = ["Read(@R/secret/**)", "Write(@R/secret/**)"]`, "@R", root)
	pol, err := ParsePolicy(data+"/"+PolicyFile, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pols := []*Policy{builtinFor(data), pol}
	for _, tc := range []struct{ cmd, want string }{
		{`cd @R/secret && echo pwned > key.txt`, ActionDeny},
		{`cd @R/secret && cp /etc/hostname key.txt`, ActionDeny},
		{`cd @R && echo x > secret/y`, ActionDeny},
		{`(cd sl; echo x > y)`, ActionDeny},
		{`pushd sl; echo x > y`, ActionDeny},
		{`cd @R/secret && cat < key.txt`, ActionDeny},
		{`cd -P sl && echo x > y`, ActionDeny},
		{`builtin cd sl && echo x > y`, ActionDeny},
		{`cd ~/.cache/a/b && cd ../../../.local/share && cat logbook/creds.json`, ActionReview},
		{`cd ~/.local && cat share/logbook/creds.json`, ActionReview},
		{`cd sl/sub && cd ../../../home/.local/share && ls logbook`, ActionReview},
		// Where cd leads is known only when it runs: never allowed.
		{`CDPATH=@R cd secret && echo x > key.txt`, ""},
		{`export CDPATH=@R; cd secret && echo x > key.txt`, ""},
		{`OLDPWD=@R/secret; cd - && echo x > key.txt`, ""},
		{`cd - && echo x > key.txt`, ""},
		{`cd ~- && echo x > key.txt`, ""},
		{`X=@R/secret; cd "$X" && echo x > key.txt`, ""},
		{`cd "$(echo @R/secret)" && echo x > key.txt`, ""},
		{`HOME=@R/secret; cd "$HOME" && echo x > key.txt`, ""},
		{`cd "$HOME/../secret" && echo x > key.txt`, ""},
		{`cd "$HOME" && echo x > y`, ""},
		{`cd @R/proj && echo x > y`, ActionAllow},
		{`printf -v HOME %s @R/secret; cd ~ && echo x > key.txt`, ""},
		{`read HOME; cd && echo x > key.txt`, ""},
		{`echo x > y && cd @R/proj`, ActionAllow},
		{`cd sub2 && echo x > y`, ActionAllow},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj")
		m := Decide(pols, c)
		if tc.want == "" && m.Action == ActionAllow || tc.want != "" && m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, cmp.Or(tc.want, "anything but allow"))
		}
	}
}

// TestDecide_LinkMadeInTheLine checks that a path under a link an ln of
// the same command line makes (symbolic or hard, into a folder or with
// -t) meets the deny and review rules as what the link stands for.
func TestDecide_LinkMadeInTheLine(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proj/d1", "secret"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "secret/key.txt"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(`allow = ["Bash(ln:*)", "Bash(link:*)", "Bash(cp:*)", "Bash(echo:*)", "Bash(mkdir:*)", "Bash(cat:*)", "Write(@R/proj/**)"]
deny = ["Write(@R/secret/**)", "Read(@R/secret/**)"]`, "@R", root)
	pols := linkPolicies(t, src)
	for _, tc := range []struct{ cmd, want string }{
		{`ln -s @R/secret nl && echo x > nl/y`, ActionDeny},
		{`ln -s @R/secret/key.txt kl2 && echo x > kl2`, ActionDeny},
		{`mkdir d2 && ln -s @R/secret d2/l && echo x > d2/l/y`, ActionDeny},
		{`ln @R/secret/key.txt hard && echo x > hard`, ActionDeny},
		{`ln -sf ../secret nl && echo x > nl/y`, ActionDeny},
		{`ln -s @R/secret d1 && echo x > d1/secret/y`, ActionDeny},
		{`ln -st d1 @R/secret && echo x > d1/secret/y`, ActionDeny},
		{`ln -s @R/secret nl && cat < nl/key.txt`, ActionDeny},
		{`cp -s @R/secret/key.txt k && echo x > k`, ActionDeny},
		{`cp -l @R/secret/key.txt h && echo x > h`, ActionDeny},
		{`cp -rs @R/secret t && echo x > t/key.txt`, ActionDeny},
		{`cp --link @R/secret/key.txt h && echo x > h`, ActionDeny},
		{`link @R/secret/key.txt h && echo x > h`, ActionDeny},
		{`ln -s ~+/../secret l2 && echo x > l2/y`, ActionDeny},
		{`cp --sym @R/secret/key.txt l && echo x > l`, ActionDeny},
		{`cp --li @R/secret/key.txt h && echo x > h`, ActionDeny},
		{`ln --target-dir=d1 -s @R/secret && echo x > d1/secret/y`, ActionDeny},
		{`ln -s @R/proj/d1 nl && echo x > nl/y`, ActionAllow},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj")
		if m := Decide(pols, c); m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, tc.want)
		}
	}
}

// TestDecide_LinksPlacedByTheLine checks that a write or a < read of a
// path at or below one a command of the same line may leave a link at
// (cp -r of a symbolic link, mv of a folder holding a relative one, a
// hard link by an abbreviated option) is never allowed where a deny or
// review rule of that kind is in force, and that a relative link's
// climb toward the data dir is read from wherever it may end up.
func TestDecide_LinksPlacedByTheLine(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	for _, d := range []string{"proj/src", "secret", "data"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "proj/sl")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	src := strings.ReplaceAll(`allow = ["Bash(cp:*)", "Bash(mv:*)", "Bash(ln:*)", "Bash(mkdir:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(touch:*)", "Write(@R/proj/**)", "Read"]
deny = ["Write(@R/secret/**)", "Read(@R/secret/**)"]`, "@R", root)
	pol, err := ParsePolicy(data+"/"+PolicyFile, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pols := []*Policy{builtinFor(data), pol}
	for _, tc := range []struct {
		cmd   string
		allow bool
	}{
		{`cp -r sl l2 && echo x > l2/y`, false},
		{`cp -a sl l2 && echo x > l2/y`, false},
		{`cp -d sl src && echo x > src/sl/y`, false},
		{`cp -d sl l2 && cat < l2/key.txt`, false},
		{`mkdir -p a/b && ln -s ../../secret a/b/l && mv a/b t && echo x > t/l/y`, false},
		{`cp --li @R/secret/key.txt h && echo x > h`, false},
		{`mkdir -p a/b && ln -s ../../data a/b/l && mv a/b s2 && cat s2/l/creds.json`, false},
		{`mkdir -p s a/b && ln -s ../../data a/b/l && cp -d a/b/l s/l && cat s/l/creds.json`, false},
		// Everyday lines stay allowed.
		{`cp -r src src2 && echo x > out.txt`, true},
		{`mkdir -p build && echo x > build/out`, true},
		{`cat ../README`, true},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj")
		if m := Decide(pols, c); (m.Action == ActionAllow) != tc.allow {
			t.Errorf("%q: %+v, want allowed %v", tc.cmd, m, tc.allow)
		}
	}
}

// TestDecide_CdRepeats checks that a cd which may run more than once
// (in a loop of any kind, a function called twice) is followed on from
// where it led, so that a relative word after the loop meets the deny
// rules wherever the repeats may have left the shell; that a cd to a
// loop's variable is read as each word of its list; and that a cd in a
// subshell of a loop starts again from the loop's directory.
func TestDecide_CdRepeats(t *testing.T) {
	root, pols := gateLayout(t, []string{"proj/x/y", "secret"}, `allow = ["Bash(cat:*)", "Bash(ls:*)", "Bash(echo:*)", "Bash(cd:*)", "Bash(true:*)", "Bash(false:*)", "Bash(trap:*)", "Bash(set:*)", "Write(@R/proj/**)"]
deny = ["Read(@R/secret/**)", "Write(@R/secret/**)"]`)
	for _, tc := range []struct{ cmd, want string }{
		// From proj/x, two cd .. lead to @R, where secret/y is the
		// denied folder's.
		{`for i in 1 2; do cd ..; done && echo x > secret/y`, ActionDeny},
		{`for ((i=0;i<2;i++)); do cd ..; done; echo x > secret/y`, ActionDeny},
		{`while true; do cd ..; done; echo x > secret/y`, ActionDeny},
		{`until false; do cd .. || break; done; echo x > secret/y`, ActionDeny},
		{`select i in a; do cd ..; done; echo x > secret/y`, ActionDeny},
		{`f() { cd ..; }; f; f; echo x > secret/y`, ActionDeny},
		{`for i in 1 2; do eval 'cd ..'; done; cat < secret/key.txt`, ActionDeny},
		{`trap 'cd ..' DEBUG; true; echo x > secret/y`, ActionDeny},
		{`set -T; trap "cd .." RETURN; f() { true; }; f; f; echo x > secret/y`, ActionDeny},
		{`for d in y ..; do cd "$d"; done; echo x > secret/y`, ActionDeny},
		{`for d in ../..; do cd $d; done; echo x > secret/y`, ActionDeny},
		{`d=../..; cd $d; echo x > secret/y`, ActionDeny},
		// A repeated relative cd that leads ever deeper, a cd to a
		// variable the line appends to or that may split: never allowed.
		{`for d in y; do cd $d; done; echo x > z`, ""},
		{`d=..; d+=/..; cd $d; echo x > secret/y`, ""},
		{`IFS=/; for d in ../..; do cd $d; done; ls`, ""},
		{`for d in -; do cd $d; done; echo x > secret/y`, ""},
		// A cd in a subshell of a loop starts from the loop's directory.
		{`for i in 1 2; do (cd y && echo x > z); done`, ActionAllow},
		{`for i in 1 2; do (cd .. && cd .. && echo x > secret/y); done`, ActionDeny},
		{`cd ~ && ls`, ActionAllow},
		{`echo $HOME; cd ~ && ls`, ""}, // a word known only when it runs, no longer a fault
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj/x")
		m := Decide(pols, c)
		if tc.want == "" && m.Action == ActionAllow || tc.want != "" && m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, cmp.Or(tc.want, "anything but allow"))
		}
	}
}

// TestDecide_WrapperDirectory checks that a wrapper which runs its
// command in another directory (env -C, sudo -D, unshare -w, nsenter
// -w, abbreviated long options too) has its command's relative words
// read from there; that one whose directory the gate cannot know (find
// -execdir, a login shell, systemd-run, a directory in a variable) is
// never allowed; that one which changes the root directory (chroot,
// unshare -R, sudo -R) is never allowed; and that a relative word read
// from an unknown directory is held to the data dir's guard.
func TestDecide_WrapperDirectory(t *testing.T) {
	root, pols := gateLayout(t, []string{"proj/x/y", "secret"}, `allow = ["Bash(cat:*)", "Bash(ls:*)", "Bash(echo:*)", "Bash(env:*)", "Bash(sh:*)", "Bash(sudo:*)", "Bash(unshare:*)", "Bash(nsenter:*)", "Bash(find:*)", "Bash(su:*)", "Bash(chroot:*)", "Bash(systemd-run:*)", "Bash(gofmt:*)", "Write(@R/proj/**)"]
deny = ["Read(@R/secret/**)", "Write(@R/secret/**)"]`)
	for _, tc := range []struct{ cmd, want string }{
		// Each wrote @R/secret/y, allowed before.
		{`env -C @R/secret sh -c 'echo x > y'`, ActionDeny},
		{`env --chdir=@R/secret sh -c 'echo x > y'`, ActionDeny},
		{`env --ch=@R/secret sh -c 'echo x > y'`, ActionDeny},
		{`env -C ../../secret sh -c 'echo x > y'`, ActionDeny},
		{`sudo -D @R/secret sh -c 'echo x > y'`, ActionDeny},
		{`sudo -u root --chdir=@R/secret sh -c 'echo x > y'`, ActionDeny},
		{`unshare -w @R/secret sh -c 'echo x > y'`, ActionDeny},
		{`unshare --wd=@R/secret sh -c 'cat < key.txt'`, ActionDeny},
		{`nsenter -w@R/secret -t 1 sh -c 'echo x > y'`, ActionDeny},
		{`find @R/proj -maxdepth 0 -execdir sh -c 'echo x > secret/y' \;`, ""},
		{`find / -execdir cat creds.json \;`, ""},
		{`find . -name '*.go' -execdir gofmt -l {} \;`, ""},
		{`sudo -i sh -c 'echo x > y'`, ""},
		{`su - -c 'echo x > y'`, ""},
		{`systemd-run --wait sh -c 'echo x > y'`, ""},
		{`env -C "$D" sh -c 'echo x > y'`, ""},
		{`chroot @R sh -c 'echo x > /secret/y'`, ""},
		{`unshare -R @R sh -c 'echo x > /secret/y'`, ""},
		{`sudo --chroot=@R sh -c 'echo x > /secret/y'`, ""},
		// The wrapper's directory is where its command's words lead.
		{`env -C y sh -c 'echo x > z'`, ActionAllow},
		{`env -C y ls`, ActionAllow},
		{`sudo -D @R/proj ls`, ActionAllow},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj/x")
		m := Decide(pols, c)
		if tc.want == "" && m.Action == ActionAllow || tc.want != "" && m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, cmp.Or(tc.want, "anything but allow"))
		}
	}
	// With no directory for the call, a relative word may be read from
	// the data dir itself.
	c := bash(`cat creds.json`)
	c.Dir = ""
	if m := Decide(pols, c); m.Action == ActionAllow {
		t.Errorf("cat creds.json from an unknown directory: %+v", m)
	}
}

// TestDecide_DirStack checks the directory stack and the other ways a
// line changes where cd leads: a DIRSTACK the line gives values (also
// by a nameref), a pushd -n entry read from where the shell is when
// popd, pushd +N or cd ~N uses it, cd +NAME (a folder, not an entry),
// cd -- - and pushd - ($OLDPWD), cdable_vars, and a nameref to OLDPWD
// or CDPATH. Each row wrote or read the denied folder under bash 5.2
// and was allowed before.
func TestDecide_DirStack(t *testing.T) {
	root, pols := gateLayout(t, []string{"proj/sub", "proj/secrets", "secret", "proj/+x"}, `allow = ["Bash(cat:*)", "Bash(echo:*)", "Bash(cd:*)", "Bash(ls:*)", "Bash(pushd:*)", "Bash(popd:*)", "Bash(shopt:*)", "Bash(declare:*)", "Write(@R/proj/**)"]
deny = ["Read(@R/secret/**)", "Write(@R/secret/**)", "Read(@R/proj/secrets/**)", "Write(@R/proj/secrets/**)"]`)
	for old, new := range map[string]string{"secret": "proj/sl", "../../home/.local/share/logbook": "proj/+x/rl"} {
		if err := os.Symlink(strings.Replace(old, "secret", filepath.Join(root, "secret"), 1), filepath.Join(root, new)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret"), filepath.Join(root, "proj/+sl")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, dir string }{
		{`pushd .; DIRSTACK[1]=@R/secret; popd; echo hi > f`, "proj"},
		{`pushd . >/dev/null; DIRSTACK[1]=@R/secret; popd >/dev/null; cat < key.txt`, "proj"},
		{`pushd .; DIRSTACK[1]=@R/secret; pushd +1; echo hi > f`, "proj"},
		{`pushd . && DIRSTACK[1]=@R/secret && cd ~1 && echo hi > f`, "proj"},
		{`pushd .; DIRSTACK=(@R/proj @R/secret); popd; echo hi > f`, "proj"},
		{`pushd -n secrets; cd @R/proj; popd; echo hi > f`, "proj/sub"},
		{`pushd -n secrets; cd @R/proj; cd ~1; echo hi > f`, "proj/sub"},
		{`pushd -n secrets; cd @R/proj; pushd +1; echo hi > f`, "proj/sub"},
		{`pushd -n secrets >/dev/null; cd @R/proj; popd >/dev/null; cat < key.txt`, "proj/sub"},
		{`pushd -n .. ; cd ~1/secrets; echo hi > f`, "proj/sub"},
		{`cd +sl; echo hi > f`, "proj"},
		{`cd +sl && cat < key.txt`, "proj"},
		{`cd +x && cd rl && cat creds.json`, "proj"},
		{`cd +x && cd rl && echo pwned >> creds.json`, "proj"},
		{`cd -- -; echo hi > f`, "proj"},
		{`pushd -; echo hi > f`, "proj"},
		{`pushd -- -; echo hi > f`, "proj"},
		{`cd -- - && cat < key.txt`, "proj"},
		{`shopt -s cdable_vars; s=@R/secret; cd s; echo hi > f`, "proj"},
		{`declare -n r=OLDPWD; r=@R/secret; cd -- -; echo hi > f`, "proj"},
		{`declare -n r=CDPATH; r=@R; cd secret; echo hi > f`, "proj"},
		{`declare -n r=DIRSTACK; pushd .; r[1]=@R/secret; popd; echo hi > f`, "proj"},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, tc.dir)
		if m := Decide(pols, c); m.Action == ActionAllow {
			t.Errorf("%q in %s: %+v, want anything but allow", tc.cmd, tc.dir, m)
		}
	}
	for _, cmd := range []string{`pushd sub && ls && popd`, `cd sub && pushd . && popd && echo x > y`} {
		c := bash(cmd)
		c.Dir = filepath.Join(root, "proj")
		if m := Decide(pols, c); m.Action != ActionAllow {
			t.Errorf("%q: %+v, want allow", cmd, m)
		}
	}
}

// gateLayout makes, under a new temporary root, the folders dirs and
// the data dir of HOME=root/home (home/.local/share/logbook; XDG_DATA_HOME
// unset), and returns root and the policies a call is judged by: the
// built-in ones for that data dir, then src (its "@R" read as root).
func gateLayout(t *testing.T, dirs []string, src string) (string, []*Policy) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	for _, d := range append(dirs, "home/.local/share/logbook") {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(home, ".local/share/logbook")
	pol, err := ParsePolicy(data+"/"+PolicyFile, []byte(strings.ReplaceAll(src, "@R", root)))
	if err != nil {
		t.Fatal(err)
	}
	return root, []*Policy{builtinFor(data), pol}
}
