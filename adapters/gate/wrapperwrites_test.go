package gate

import (
	"cmp"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecide_WrappersAndGitWrite checks what a second attacker found
// allowed that bash or the program ran into a denied folder or the data
// dir: a wrapper's own log or output file (strace -o, time -o, script's
// file, flock's lock file …), a login shell whose flag comes after -c
// (su and runuser reorder their options), sandbox and multiplexer
// programs that run their command where its paths mean other files
// (bwrap, firejail, proot, tmux, screen), nsenter into another mount
// namespace, parallel --wd, git submodule foreach (each submodule's
// folder), core.worktree, and the files git's subcommands write by
// their options and operands.
func TestDecide_WrappersAndGitWrite(t *testing.T) {
	progs := []string{"strace", "ltrace", "valgrind", "time", "env", "command", "script", "flock", "true", "cd", "xvfb-run",
		"su", "runuser", "echo", "touch", "cat", "bwrap", "sh", "firejail", "proot", "tmux", "screen", "nsenter", "parallel", "git", "cp"}
	allow := make([]string, 0, len(progs)+1)
	for _, p := range progs {
		allow = append(allow, `"Bash(`+p+`:*)"`)
	}
	root, pols := gateLayout(t, []string{"proj/.git", "proj/a/b", "secret"}, `allow = [`+strings.Join(allow, ", ")+`, "Write(@R/proj/**)"]
deny = ["Write(@R/secret/**)", "Read(@R/secret/**)", "Write(/root/**)", "Read(/root/**)"]`)
	for _, tc := range []struct{ cmd, want string }{
		{`strace -o @R/secret/y true`, ActionDeny},
		{`strace -f -o@R/secret/y true`, ActionDeny},
		{`ltrace --output=@R/secret/y true`, ActionDeny},
		{`valgrind --log-file=@R/secret/y true`, ActionDeny},
		{`env time -o @R/secret/y true`, ActionDeny},
		{`\time -o @R/secret/y true`, ActionDeny},
		{`command time -o @R/secret/y true`, ActionDeny},
		{`script -qc true @R/secret/y`, ActionDeny},
		{`script -O @R/secret/y -c true`, ActionDeny},
		{`cd @R/secret && script -qc true`, ActionDeny},
		{`flock @R/secret/lock true`, ActionDeny},
		{`xvfb-run -e @R/secret/y true`, ActionDeny},
		{`su -c 'echo x > zz/y1' -`, ""},
		{`su root -c 'touch zz/y2' --login`, ""},
		{`su -c 'touch zz/y3' -l root`, ""},
		{`runuser root -c 'touch zz/y4' -l`, ""},
		{`su -c 'cat .local/share/logbook/creds.json' -`, ""},
		{`bwrap --bind / / --chdir @R/secret sh -c 'echo x > y'`, ""},
		{`firejail --private=@R/secret sh -c 'echo x > y'`, ""},
		{`proot -w @R/secret sh -c 'echo x > y'`, ""},
		{`tmux new-session -d -c @R/secret 'touch y'`, ""},
		{`tmux new -d 'touch @R/secret/y'`, ""},
		{`screen -dm sh -c 'echo x > y'`, ""},
		{`parallel --will-cite --wd @R/secret 'echo x > y' ::: 1`, ""},
		{`nsenter -m -t 1 touch tmp/secret/y`, ""},
		{`nsenter --mount=/proc/1/ns/mnt sh -c 'echo x > y'`, ""},
		{`git submodule foreach cp /etc/hostname ../../../secret/y`, ""},
		{`git config core.worktree @R/secret && git checkout -f -- .`, ""},
		{`git -c core.worktree=@R/secret checkout -f -- .`, ""},
		{`git merge-file @R/secret/mf.txt base.txt other.txt`, ActionDeny},
		{`git checkout-index --prefix=@R/secret/ci_ -- f`, ActionDeny},
		{`git format-patch -o @R/secret HEAD~1`, ActionDeny},
		{`git format-patch -o@R/secret HEAD~1`, ActionDeny},
		{`git format-patch --output-directory=@R/secret HEAD~1`, ActionDeny},
		{`git archive -o @R/secret/y.tar HEAD`, ActionDeny},
		{`git bundle create @R/secret/y.bundle HEAD`, ActionDeny},
		{`git config --file @R/secret/cfg user.name x`, ActionDeny},
		{`git config -f @R/secret/cfg user.name x`, ActionDeny},
		{`git init --separate-git-dir=@R/secret/g`, ActionDeny},
		{`git fast-export --export-marks=@R/secret/marks HEAD`, ActionDeny},
		{`git bugreport -o @R/secret/br`, ActionDeny},
		{`git credential-store --file=@R/secret/cred store`, ActionDeny},
		{`git worktree move wt2 @R/secret/wt2`, ActionDeny},
		{`git diff --output=@R/secret/d HEAD`, ActionDeny},
		// Everyday forms stay allowed.
		{`strace -o out.txt true`, ActionAllow},
		{`time true`, ActionAllow},
		{`tmux ls`, ActionAllow},
		{`su root -c true`, ActionAllow},
		{`git format-patch --stdout HEAD~1`, ActionAllow},
		{`git archive -o out.tar HEAD`, ActionAllow},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, "proj")
		m := Decide(pols, c)
		if tc.want == "" && m.Action == ActionAllow || tc.want != "" && m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, cmp.Or(tc.want, "anything but allow"))
		}
	}
	// git runs a bisect run's, a rebase --exec's and a shell alias's
	// command from the top of the work tree (proj), not from proj/a/b.
	for _, cmd := range []string{
		`git bisect run sh -c 'echo x > ../secret/y'`,
		`git rebase -x 'echo x > ../secret/y' HEAD~1`,
		`git rebase --exec='cp /etc/hostname ../secret/y' HEAD~1`,
	} {
		c := bash(cmd)
		c.Dir = filepath.Join(root, "proj/a/b")
		if m := Decide(pols, c); m.Action != ActionDeny {
			t.Errorf("%q in proj/a/b: %+v, want deny", cmd, m)
		}
	}
}
