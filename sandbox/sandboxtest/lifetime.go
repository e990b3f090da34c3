package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// starts carries Start's commands to the thread that starts them.
var starts = sync.OnceValue(func() chan startReq {
	ch := make(chan startReq)
	go func() {
		// Locked and never returning: this thread lives as long as the
		// process, so a child it starts gets its parent-death signal
		// only when the process ends.
		runtime.LockOSThread()
		for r := range ch {
			r.done <- r.c.Start()
		}
	}()
	return ch
})

type startReq struct {
	c    *exec.Cmd
	done chan error
}

// Start starts c, made with DieWithTest, from an OS thread that lives as
// long as the test process, so that c gets its parent-death signal when
// the process ends and not when some thread of it does. Its error is
// c.Start's.
func Start(c *exec.Cmd) error {
	r := startReq{c: c, done: make(chan error, 1)}
	starts() <- r
	return <-r.done
}

// DieWithTest makes c, a child process a test starts, get SIGKILL from
// the kernel when the test process ends, however it ends: a go test
// -timeout panic runs no t.Cleanup, and a serve child would otherwise
// run on, holding its data dir and ports. It sets c.SysProcAttr's
// Pdeathsig (Linux's parent-death signal), keeping its other fields, and
// returns c. The signal follows the OS thread that starts c, not the
// process: a thread ends when a goroutine locked to it
// (runtime.LockOSThread) returns, and any goroutine's Start may have run
// on that thread before. Start c with Start, which forks from a thread
// that lives as long as the process, when c should outlive a moment.
func DieWithTest(c *exec.Cmd) *exec.Cmd {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return c
}

// DieWithParent asks the kernel to SIGKILL this process when its parent
// ends (prctl PR_SET_PDEATHSIG): for a test binary run as a command
// (testscript.Main's commands), whose parent is the test process or a
// shell of its script. The error says why it could not be asked, or
// that the parent had ended already (this process was handed to init).
func DieWithParent() error {
	parent := os.Getppid()
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); e != 0 {
		return fmt.Errorf("prctl PR_SET_PDEATHSIG: %w", e)
	}
	if parent == 1 || os.Getppid() != parent {
		return fmt.Errorf("the parent process (%d) has ended already", parent)
	}
	return nil
}

// removers holds the write ends of RemoveWhenGone's pipes, open for the
// life of the process (a finalizer would close an unreferenced one).
var removers struct {
	sync.Mutex
	w []*os.File
}

// RemoveWhenGone starts a process that removes dir (rm -rf) once this
// process has ended, however it ends: a go test -timeout panic runs no
// t.Cleanup and no deferred call of TestMain, and a binary built for the
// tests would stay in /tmp. The process reads a pipe whose only writer
// is this process to its end; it is in a process group of its own, so
// that an interrupt of the test does not stop it first. Removing dir
// earlier, as a test's cleanup does, is harmless. The error is the
// pipe's or the start's.
func RemoveWhenGone(dir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("remove %s when gone: %w", dir, err)
	}
	defer r.Close()
	c := exec.Command("sh", "-c", `cat >/dev/null; rm -rf -- "$0"`, dir)
	c.Stdin = r
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		w.Close()
		return fmt.Errorf("remove %s when gone: %w", dir, err)
	}
	removers.Lock()
	removers.w = append(removers.w, w)
	removers.Unlock()
	return nil
}
