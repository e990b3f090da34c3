package shell_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is the box of the differential test: real /bin/bash -c in
// a throwaway bubblewrap sandbox where every program is a recording
// shim (testdata/boxshim). Inside the box:
//
//	/usr/bin        the shim directory: one hard link to the shim per
//	                program name, bash at its real path, sh and dash
//	                symlinks to it; /bin, /sbin, /usr/sbin and
//	                /usr/local/bin lead there too; PATH=/usr/bin
//	/usr/lib*, /lib* read-only, for bash's libraries
//	/.box/driver    the shim binary as PID 1, serving commands
//	/work, /tmp     small tmpfs; each command runs in a fresh /work/<n>
//	/.rec/log       where shims append records (a tmpfs)
//
// with every namespace unshared (no network), --die-with-parent, and a
// time limit per command past which everything in the box is killed.
// Nothing on the host is written but the test's temporary directory.

// boxLimit is how long one command may run in the box before every
// process in it is killed.
const boxLimit = 2 * time.Second

// fixedNames are the program names that always have a shim: common
// programs an agent runs, the wrappers the gate unwraps, and builtins
// (so that /bin/echo or env echo is recorded).
var fixedNames = strings.Fields(`
	rm curl wget ls echo cat git sudo env xargs find ssh scp rsync timeout nice
	nohup stdbuf ionice chrt taskset setsid unshare nsenter chroot doas su
	runuser flock watch time strace ltrace gdb valgrind perf script expect
	parallel entr fswatch inotifywait make cmake ninja go gofmt gopls cargo
	rustc rustup npm npx node yarn pnpm bun deno python python3 pip pip3
	pipx uv poetry ruby gem bundle perl php java javac mvn gradle dotnet
	docker podman kubectl helm terraform aws gcloud az gh jq yq sed awk gawk
	grep egrep fgrep rg ag head tail less more wc sort uniq cut tr tee
	xxd od hexdump base64 sha256sum md5sum cp mv mkdir rmdir touch chmod
	chown ln readlink realpath dirname basename pwd mktemp tar gzip gunzip
	zip unzip diff patch cmp file stat du df ps kill pkill pgrep killall
	top htop lsof which whereis type true false test [ printf sleep date
	seq yes dd vim vi nano emacs code open xdg-open curlie http
	nc ncat netcat socat telnet ftp sftp tsc eslint prettier jest pytest
	tox black ruff mypy sqlite3 psql mysql redis-cli mongo id whoami
	hostname uname clear reset tput stty column fold fmt nl paste join
	split csplit comm tac rev shuf seq bc dc expr factor printenv
	exec eval command builtin source sudoedit pkexec busybox toybox
	coreutils install mkfifo mknod sync shred truncate wall logger
	crontab at batch systemctl service journalctl apt apt-get dnf yum
	brew snap pacman apk
`)

// realShells are names that must be the real bash in the box, not a
// shim, so that bash -c and sh -c nest.
var realShells = map[string]bool{"bash": true, "sh": true, "dash": true}

// ran is one program the box saw run: the base name of the file it
// was executed as, and its argv (Argv[0] as bash passed it).
type ran struct {
	Name string
	Argv []string
}

// String returns the program and its arguments after it, each %q.
func (r ran) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	for _, a := range r.Argv[min(1, len(r.Argv)):] {
		b.WriteByte(' ')
		if plain(a) {
			b.WriteString(a)
		} else {
			b.WriteString(strconv.Quote(a))
		}
	}
	return b.String()
}

// plain reports whether a reads the same unquoted: printable ASCII
// without spaces, quotes or backslashes.
func plain(a string) bool {
	if a == "" {
		return false
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' {
			return false
		}
	}
	return true
}

// Joined returns the name and the arguments joined by spaces, as the
// oracle matches them against rules.
func (r ran) Joined() string {
	return strings.Join(append([]string{r.Name}, r.Argv[min(1, len(r.Argv)):]...), " ")
}

// kit is what every box of one test shares: the shim binary, the shim
// directory and the bwrap arguments. Safe for concurrent use.
type kit struct {
	dir   string // the test's temporary directory
	shim  string // the built shim
	bin   string // the shim directory, /usr/bin in the box
	bwrap string
	args  []string
	limit time.Duration

	mu    sync.Mutex
	names map[string]bool
}

// newKit builds the shim and checks that a box can start and record;
// it skips t, saying why, when it cannot.
func newKit(t testing.TB, limit time.Duration) *kit {
	t.Helper()
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap not found (apt-get install -y bubblewrap): the differential test needs it")
	}
	realBash, err := filepath.EvalSymlinks("/bin/bash")
	if err != nil {
		t.Skipf("no /bin/bash: %v", err)
	}
	k := &kit{dir: t.TempDir(), bwrap: bw, limit: limit, names: map[string]bool{}}
	k.shim = filepath.Join(k.dir, "shim")
	k.bin = filepath.Join(k.dir, "bin")
	if err := buildShim(k.dir, k.shim); err != nil {
		t.Skipf("cannot build the box's shim: %v", err)
	}
	if err := os.Mkdir(k.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// bash's mount point, then sh and dash leading to it.
	if err := os.WriteFile(filepath.Join(k.bin, "bash"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"sh", "dash"} {
		if err := os.Symlink("bash", filepath.Join(k.bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	k.ensure(fixedNames...)

	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1", "--clearenv"}
	for _, d := range []string{"/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, d := range []string{"/lib", "/lib64", "/lib32", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			to, err := os.Readlink(d)
			if err == nil {
				a = append(a, "--symlink", to, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a,
		"--ro-bind", k.bin, "/usr/bin",
		"--ro-bind", realBash, "/usr/bin/bash",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/bin", "/sbin",
		"--symlink", "bin", "/usr/sbin",
		"--dir", "/usr/local",
		"--symlink", "../bin", "/usr/local/bin",
		"--ro-bind", k.shim, "/.box/driver",
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.Itoa(64<<20), "--tmpfs", "/tmp",
		"--size", strconv.Itoa(64<<20), "--tmpfs", "/work",
		"--size", strconv.Itoa(16<<20), "--tmpfs", "/.rec",
		"--chdir", "/work",
		"--setenv", "PATH", "/usr/bin",
		"--setenv", "BOX_LIMIT", limit.String(),
		"/.box/driver",
	)
	k.args = a

	b, err := k.start()
	if err != nil {
		t.Skipf("bwrap cannot make a sandbox here: %v", err)
	}
	defer b.close()
	got, err := b.run("ls -la")
	if err != nil || len(got) != 1 || got[0].Name != "ls" {
		t.Skipf("the box does not record a command (ls -la gave %v, %v)", got, err)
	}
	return k
}

// buildShim builds testdata/boxshim, standalone and static, to out.
func buildShim(dir, out string) error {
	src, err := os.ReadFile(filepath.Join("testdata", "boxshim", "main.go"))
	if err != nil {
		return err
	}
	mod := filepath.Join(dir, "boxshim")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module boxshim\n\ngo 1.22\n"), 0o644); err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, b)
	}
	return nil
}

// ensure gives each of names a shim, unless it has one, cannot be a
// file name, or must be the real bash. Safe for concurrent use.
func (k *kit) ensure(names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range names {
		if k.names[n] || realShells[n] || !shimmable(n) || len(k.names) > 100_000 {
			continue
		}
		k.names[n] = true
		err := os.Link(k.shim, filepath.Join(k.bin, n))
		if err != nil && !errors.Is(err, os.ErrExist) {
			panic(fmt.Sprintf("shim %q: %v", n, err))
		}
	}
}

// shimmable reports whether n can name a file in the shim directory.
func shimmable(n string) bool {
	return n != "" && n != "." && n != ".." && len(n) <= 200 &&
		!strings.ContainsAny(n, "/\x00") && !strings.HasPrefix(n, "-")
}

// box is one running sandbox serving commands one at a time. Not safe
// for concurrent use.
type box struct {
	k    *kit
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errs *bytes.Buffer
}

// start starts a box.
func (k *kit) start() (*box, error) {
	cmd := exec.Command(k.bwrap, k.args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	b := &box{k: k, cmd: cmd, in: in, out: bufio.NewReader(out), errs: &bytes.Buffer{}}
	cmd.Stderr = b.errs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	return b, nil
}

// run runs command in the box and returns what it ran, in order. An
// error means the box broke (it is then closed and must be replaced).
func (b *box) run(command string) ([]ran, error) {
	if strings.ContainsRune(command, 0) {
		return nil, errors.New("a command with a NUL byte cannot reach bash -c")
	}
	// The driver kills the command at k.limit; past that and a margin
	// the box itself is stuck.
	stuck := time.AfterFunc(b.k.limit+10*time.Second, func() { _ = b.cmd.Process.Kill() })
	defer stuck.Stop()
	if _, err := io.WriteString(b.in, strconv.Quote(command)+"\n"); err != nil {
		return nil, b.broke(err)
	}
	head, err := b.out.ReadString('\n')
	if err != nil {
		return nil, b.broke(err)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(head, "\n"))
	if err != nil {
		return nil, b.broke(fmt.Errorf("bad answer %q", head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(b.out, body); err != nil {
		return nil, b.broke(err)
	}
	rs, err := parseRecords(body)
	if err != nil {
		return nil, b.broke(err)
	}
	return rs, nil
}

func (b *box) broke(err error) error {
	b.close()
	return fmt.Errorf("box: %w (bwrap said %q)", err, strings.TrimSpace(b.errs.String()))
}

// close stops the box and waits for it.
func (b *box) close() {
	_ = b.in.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(b.k.limit + 5*time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}

// parseRecords reads the shims' log: a line per run, tab-separated
// strconv.Quote'd fields, the name first.
func parseRecords(body []byte) ([]ran, error) {
	var rs []ran
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			continue
		}
		var fs []string
		for _, f := range strings.Split(line, "\t") {
			s, err := strconv.Unquote(f)
			if err != nil {
				return rs, fmt.Errorf("bad record %q: %v", line, err)
			}
			fs = append(fs, s)
		}
		rs = append(rs, ran{Name: fs[0], Argv: fs[1:]})
	}
	return rs, nil
}

// outcome is what one command ran in the box.
type outcome struct {
	Ran []ran
	Err error // the box broke on it; Ran is then unknown
}

// runAll runs cmds in workers boxes at once and returns their
// outcomes in order. It gives each name in names[i] a shim first.
func (k *kit) runAll(cmds []string, names [][]string, workers int) []outcome {
	for _, ns := range names {
		k.ensure(ns...)
	}
	outs := make([]outcome, len(cmds))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var b *box
			defer func() {
				if b != nil {
					b.close()
				}
			}()
			for i := range next {
				if b == nil {
					var err error
					if b, err = k.start(); err != nil {
						outs[i].Err = err
						continue
					}
				}
				outs[i].Ran, outs[i].Err = b.run(cmds[i])
				if outs[i].Err != nil {
					b = nil // closed by run
				}
			}
		})
	}
	for i := range cmds {
		next <- i
	}
	close(next)
	wg.Wait()
	return outs
}
