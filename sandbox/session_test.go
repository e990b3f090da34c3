package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// sessionHelperEnv names the part a run of the test binary plays in
// TestPipeCommand_Session: "outer" starts "inner", which starts the
// commands and reports what they got.
const sessionHelperEnv = "LOGBOOK_TEST_SESSION_HELPER"

// TestPipeCommand_Session starts pipe commands (FullAccess, and ReadOnly
// where bubblewrap is installed) from a worker that leads no session, with
// and without a controlling terminal, and checks what each got: without
// one, the worker's session and scheduling group where its tree is held
// otherwise (its sandbox; a FullAccess command's cgroup v2, where the
// worker can make one), since a new session would be a scheduling group
// of its own, which a busy machine runs last; else, and with a terminal,
// a session of its own, where /dev/tty does not open. The worker is
// this test binary run again ("inner"), started by another run of it
// ("outer") that leads a new session, on a pseudo-terminal it makes its
// controlling terminal or on none, so that what the test's own terminal
// is does not matter.
func TestPipeCommand_Session(t *testing.T) {
	if role := os.Getenv(sessionHelperEnv); role != "" {
		sessionHelper(t, role)
		return
	}
	for _, withTTY := range []bool{false, true} {
		name := "no terminal"
		if withTTY {
			name = "worker's terminal"
		}
		t.Run(name, func(t *testing.T) {
			out := runSessionOuter(t, withTTY)
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if l, ok := strings.CutPrefix(strings.TrimSpace(l), "helper: "); ok {
					lines = append(lines, l)
				}
			}
			// The worker's session and scheduling group where the
			// command's tree is held otherwise (held: a restricted
			// command's sandbox, a FullAccess command's cgroup v2) and
			// there is no terminal; else a session of its own.
			group := func(same bool) string {
				switch _, err := os.Stat("/proc/self/autogroup"); {
				case err != nil:
					return "group=n/a"
				case same:
					return "group=same"
				}
				return "group=other"
			}
			modes := []Mode{FullAccess}
			if _, err := exec.LookPath("bwrap"); err == nil {
				modes = append(modes, ReadOnly)
			}
			var want []string
			for i, m := range modes {
				held := m.restricted()
				if !held && i < len(lines) {
					held = strings.Contains(lines[i], " held=yes ")
				}
				same := held && !withTTY
				session := map[bool]string{true: "session=same", false: "session=own"}[same]
				want = append(want, fmt.Sprintf("%s held=%s %s tty=no %s", m, map[bool]string{true: "yes", false: "no"}[held], session, group(same)))
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("the commands got:\n%s\nwant:\n%s\nthe helpers' output:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"), out)
			}
		})
	}
}

// runSessionOuter runs the test binary as the outer helper in a new
// session, on a fresh pseudo-terminal that is its controlling terminal
// if withTTY, and returns what it and the inner helper wrote.
func runSessionOuter(t *testing.T, withTTY bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPipeCommand_Session$", "-test.count=1")
	cmd.Env = append(os.Environ(), sessionHelperEnv+"=outer")
	if !withTTY {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("outer helper: %v\n%s", err, out)
		}
		return string(out)
	}
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&buf, master) // EIO once the terminal's last holder is gone
	}()
	werr := cmd.Wait()
	<-copied
	if werr != nil {
		t.Fatalf("outer helper: %v\n%s", werr, buf.String())
	}
	return buf.String()
}

// sessionHelper plays role (see sessionHelperEnv).
func sessionHelper(t *testing.T, role string) {
	if role == "outer" {
		// The inner helper: in this session (and on its terminal, if
		// any), not its leader.
		cmd := exec.Command(os.Args[0], "-test.run=^TestPipeCommand_Session$", "-test.count=1")
		cmd.Env = append(os.Environ(), sessionHelperEnv+"=inner")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			t.Fatalf("inner helper: %v", err)
		}
		return
	}
	modes := []Mode{FullAccess}
	if _, err := exec.LookPath("bwrap"); err == nil {
		modes = append(modes, ReadOnly)
	}
	mySid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	myGroup, _ := os.ReadFile("/proc/self/autogroup")
	for _, mode := range modes {
		// Whether /dev/tty opens, from within the command (in a
		// subshell, a process of its session); then it waits on stdin.
		s := Spec{Argv: []string{"/bin/sh", "-c", `if (exec 3</dev/tty) 2>/dev/null; then echo tty=yes; else echo tty=no; fi; read x`},
			Env: testEnv(), Workspace: t.TempDir(), Mode: mode, Grace: testGrace}
		r := newRecorder("tty=")
		p := start(t, s, r)
		r.awaitOutput(t, "the terminal check")
		session := "own"
		if sid, err := unix.Getsid(p.Pid()); err == nil && sid == mySid {
			session = "same"
		}
		group := "n/a" // no scheduling autogroups in this kernel
		if g, err := os.ReadFile(fmt.Sprintf("/proc/%d/autogroup", p.Pid())); err == nil && myGroup != nil {
			group = "other"
			if bytes.Equal(g, myGroup) {
				group = "same"
			}
		}
		if err := p.CloseStdin(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		tty := "tty=?"
		if sc := bufio.NewScanner(strings.NewReader(r.text(Stdout))); sc.Scan() {
			tty = sc.Text()
		}
		held := "no"
		if mode.restricted() || p.Cgroup() != "" {
			held = "yes"
		}
		fmt.Printf("helper: %s held=%s session=%s %s group=%s\n", mode, held, session, tty, group)
	}
}

// The exit of a FullAccess command whose cgroup v2 holds its whole tree
// lists no /proc: what is left of the tree is killed in the cgroup. Not
// parallel: other tests' exits list /proc too.
func TestExit_CgroupSparesTheScan(t *testing.T) {
	s := newSpec(t, FullAccess, false, "true")
	r := newRecorder("")
	before := procScans.Load()
	p := start(t, s, r)
	if p.Cgroup() == "" {
		t.Skip("no cgroup v2 for the command here (an unprivileged worker on cgroup v1, most often)")
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := procScans.Load() - before; n != 0 {
		t.Errorf("the exit listed /proc %d times", n)
	}
}
