package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExited blocks until process pid has exited, without reaping it: the
// zombie keeps pid, and so the process group pid, from being reused until
// exec.Cmd.Wait reaps it. Signals sent to the group before then cannot reach
// a stranger.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("waitid %d: %w", pid, err)
		}
		return nil
	}
}

// signalMembers sends sig to every process of process group pgid except the
// leader pgid itself. It finds them in /proc; each is signalled through a
// pidfd taken before its group is checked a second time, so a pid reused in
// between is never signalled. It returns an error only if /proc cannot be
// listed.
func signalMembers(pgid int, sig unix.Signal) error {
	d, err := os.Open("/proc")
	if err != nil {
		return fmt.Errorf("signal group %d: %w", pgid, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("signal group %d: %w", pgid, err)
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == pgid {
			continue
		}
		if g, err := processGroup(pid); err != nil || g != pgid {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ENOSYS) {
			_ = unix.Kill(pid, sig) // kernel < 5.3: no pidfd; the race window is tiny
			continue
		}
		if err != nil {
			continue // gone already
		}
		if g, err := processGroup(pid); err == nil && g == pgid {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
	return nil
}

// processGroup returns the process group of pid, read from /proc/<pid>/stat
// (readStat).
func processGroup(pid int) (int, error) {
	st, err := readStat(pid)
	return st.pgrp, err
}

// pipeAttr returns the process attributes of a command on pipes (not
// Spec.TTY): SIGKILL as its parent-death signal, and a process group of
// its own, in a new session (setsid), but where the command's whole tree
// is held otherwise (held: a restricted command's sandbox, whose PID
// namespace it is; a FullAccess command's cgroup v2, which clone3 puts
// it in) and this process has no controlling terminal and cannot get one
// (terminalFree): that command's group stays in this process's session
// (setpgid). A new session keeps a terminal of the worker's out of the
// command's reach (/dev/tty, TIOCSTI, its signals), and is how the exit
// of a FullAccess command without a cgroup finds what it left (a
// job-control shell's jobs lead groups of their own). Where neither is
// needed, a new session only costs the command its start: with
// sched_autogroup_enabled=1 a new session is a scheduling group of its
// own, which a busy machine's scheduler lets run only once the groups
// already running have had their turn, at each wake-up of the command's
// processes (bubblewrap's and the reporter's too): tens of milliseconds
// for a restricted command on a loaded 2-CPU machine. The attributes are
// decided at each start.
func pipeAttr(held bool) *syscall.SysProcAttr {
	if held && terminalFree() {
		return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// terminalFree reports whether this process has no controlling terminal
// and cannot get one: it does not lead its session (only a session
// leader acquires a controlling terminal, by opening one), and opening
// /dev/tty fails with ENXIO (no controlling terminal). Any other answer,
// an error of either check included, is false.
func terminalFree() bool {
	if sid, err := unix.Getsid(0); err != nil || sid == os.Getpid() {
		return false
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return false
	}
	return errors.Is(err, unix.ENXIO)
}

// closeInheritedOnExec marks every descriptor of this process above 2
// close-on-exec, so that no command inherits one the worker itself
// inherited (Go opens its own descriptors close-on-exec, and passes a
// command only the ones it is given, which it duplicates first). It uses
// close_range(2) (Linux 5.11), else it walks /proc/self/fd.
func closeInheritedOnExec() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
