package gate

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/sandbox"
)

// drainGrace is how long the rest of a reviewer's output is waited for
// once the program has exited and what it left behind was killed.
const drainGrace = 2 * time.Second

// reviewerProc is one running reviewer program: its pipes held on this
// side only, and its tree's handle.
type reviewerProc struct {
	cmd        *exec.Cmd
	pid        int
	start      uint64 // clock ticks after boot (sandbox.ProcStart)
	boot       string
	pipes      []pipeEnd // the program's ends of its stdin, stdout and stderr
	stdinW     *os.File
	outR, errR *os.File
	exited     chan error    // cmd.Wait's result: the program alone, never its pipes
	overflow   chan struct{} // closed when stdout passed MaxAnswerBytes
	outDone    chan struct{} // closed when stdout is read (out, over set)
	errDone    chan struct{} // closed when stderr is read
	out        []byte
	over       bool
	errb       limited
}

// startReviewer starts command through "/bin/sh -c" in a process group
// of its own, with in on its stdin. Its pipes are os.Pipe pairs whose
// far ends only the program holds, so waiting for it never waits for a
// process it left behind holding them.
func startReviewer(command string, in []byte) (*reviewerProc, error) {
	var fs []*os.File
	closeAll := func() {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			fs = append(fs, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	p := &reviewerProc{stdinW: inW, outR: outR, errR: errR, boot: sandbox.BootID(),
		exited: make(chan error, 1), overflow: make(chan struct{}), outDone: make(chan struct{}), errDone: make(chan struct{})}
	p.errb.n = maxReasonBytes
	for i, f := range []*os.File{inR, outR, errR} {
		// By Stat, not Fd: Fd would put this side in blocking mode, where
		// drain's read deadline has no effect.
		if fi, err := f.Stat(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				p.pipes = append(p.pipes, pipeEnd{link: fmt.Sprintf("pipe:[%d]", st.Ino), write: i > 0})
			}
		}
	}
	p.cmd = exec.Command("/bin/sh", "-c", command)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, errW
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p.pid = p.cmd.Process.Pid
	p.start, _ = sandbox.ProcStart(p.pid) // not reaped before Wait: still listed
	go func() { p.exited <- p.cmd.Wait() }()
	go func() {
		// A program that does not read its stdin fails the write; closing
		// inW at the end unblocks one whose stdin a leftover holds.
		inW.Write(in)
		inW.Close()
	}()
	go func() {
		defer close(p.outDone)
		b, _ := io.ReadAll(io.LimitReader(outR, MaxAnswerBytes+1))
		if len(b) > MaxAnswerBytes {
			p.over = true
			close(p.overflow)
			return // the excess is not read, let alone kept
		}
		p.out = b
	}()
	go func() {
		defer close(p.errDone)
		io.Copy(&p.errb, errR) // kept: the first maxReasonBytes; the rest dropped
	}()
	return p, nil
}

// kill kills, with SIGKILL, what is left of the program's tree: the
// program, its descendants, its session and process group
// (sandbox.KillTree), then every other process holding one of its pipes,
// pass after pass until none is found.
func (p *reviewerProc) kill() {
	_, _ = sandbox.KillTree(p.pid, p.start, p.boot)
	if len(p.pipes) == 0 {
		return
	}
	for pass := 0; pass < 10; pass++ {
		if killPipeHolders(p.pipes) == 0 {
			return
		}
	}
}

// drain waits for the program's stdout and stderr to reach their end, at
// most drainGrace (a holder that could not be killed), and returns what
// was read of stdout and whether it passed MaxAnswerBytes.
func (p *reviewerProc) drain() ([]byte, bool) {
	t := time.NewTimer(drainGrace)
	defer t.Stop()
	for _, done := range []chan struct{}{p.outDone, p.errDone} {
		select {
		case <-done:
		case <-t.C:
			now := time.Now()
			p.outR.SetReadDeadline(now)
			p.errR.SetReadDeadline(now)
			<-p.outDone
			<-p.errDone
		}
	}
	return p.out, p.over
}

// end releases this side of the pipes.
func (p *reviewerProc) end() {
	p.stdinW.Close()
	p.outR.Close()
	p.errR.Close()
}

// pipeEnd is one end of a pipe: its /proc/PID/fd link ("pipe:[inode]")
// and whether it is the write end.
type pipeEnd struct {
	link  string
	write bool
}

// killPipeHolders sends SIGKILL to each process other than this one that
// holds one of the pipe ends (only the program's ends: this side's, which
// a process this one is starting holds until its exec, never count), each through a pidfd taken before the descriptor is looked
// at again, so a recycled pid is never signalled. It returns how many
// it signalled.
func killPipeHolders(pipes []pipeEnd) int {
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		if !holds(d, pipes) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if holds(d, pipes) {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n
}

// holds reports whether the process of /proc directory d has a
// descriptor on one of the pipe ends.
func holds(d string, pipes []pipeEnd) bool {
	fds, err := os.ReadDir(d + "/fd")
	if err != nil {
		return false
	}
	for _, f := range fds {
		l, err := os.Readlink(d + "/fd/" + f.Name())
		if err != nil {
			continue
		}
		for _, p := range pipes {
			if l == p.link && writes(d+"/fdinfo/"+f.Name()) == p.write {
				return true
			}
		}
	}
	return false
}

// writes reports whether the descriptor of fdinfo file path (as
// /proc/PID/fdinfo/N shows it: "flags:\t0100001", octal) was opened for
// writing.
func writes(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && f&unix.O_ACCMODE != unix.O_RDONLY
		}
	}
	return false
}
