// Package reporter is the reporter a restricted command runs under: the
// first process of its boundary, bound read-only at Path. It runs the
// command as its child, waits for it and writes the child's wait status,
// as bytes only it holds, to FD, a pipe the worker reads; then it exits
// as bubblewrap would have reported the command (see Exit). bubblewrap
// alone reports a command killed by signal N as exit status 128+N, the
// same as one that called exit(128+N).
//
// The command gets none of that pipe: the reporter marks every descriptor
// above 2 close-on-exec before it forks, so the command starts with only
// 0–2. It makes itself non-dumpable, so the command (same user, no
// capabilities) can neither open /proc/<reporter>/fd/N nor ptrace it. It
// can kill the reporter: the boundary's PID namespace then ends, the
// command with it, and the worker, with no report, records the command
// killed by SIGKILL, which is what ended it. It ignores the signals sent
// to a group (a stop's SIGTERM, a terminal's SIGINT, SIGQUIT, SIGHUP and
// SIGTSTP), which reach the command too.
//
// A command of more arguments than bubblewrap takes (it refuses more
// than 9000 in all, its own options included) comes on a descriptor
// instead: the worker runs the reporter with ArgvFlag alone and the
// command's argv on ArgvFD (see ReadArgv).
//
// It imports only the standard library's errors, os, os/signal,
// strconv, strings, syscall and time (os links them all anyway), so that
// cmd/logbook-reporter, which is this package and a main, starts in
// about a millisecond: it lies on every restricted command's path.
package reporter

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Path is where the reporter's executable is bound in the boundary, and
// the argv[0] it runs as.
const Path = "/.logbook-reporter"

// FD is the descriptor the reporter writes its report to: the write end
// of a pipe the worker gave bubblewrap, which passes it on to its first
// process.
const FD = 6

// ArgvFlag, as the reporter's only argument while ArgvFD is open, has it
// read the command's argv from ArgvFD (ReadArgv). A command named
// "--argv-fd" with no arguments runs as any other when ArgvFD is not
// open: the worker gives that descriptor only with the flag.
const ArgvFlag = "--argv-fd"

// ArgvFD is the descriptor the reporter reads its command's argv from
// when run with ArgvFlag: a file the worker wrote it to (a memfd), each
// argument ended by a NUL byte as in /proc/PID/cmdline, read from offset
// 0 whatever the descriptor's offset. It is closed once read.
const ArgvFD = 7

// MaxArgv is the most bytes ReadArgv reads: more than a Linux exec takes
// (its arguments and environment together may take a quarter of the
// stack limit, 2 MiB by default), so a longer argv fails as its exec
// would, with E2BIG.
const MaxArgv = 64 << 20

// Report lines, the first (and only) line on FD: "status N" with N the
// command's wait status (wait(2)), or "exec E" with E the errno of its
// failed exec.
const (
	reportStatus = "status"
	reportExec   = "exec"
)

// Linux's close_range(2) and its flag, which the syscall package does
// not name. Since Linux 5.x new system calls have the same number on
// every architecture Go runs on; where the number means nothing (mips's
// offset tables, a kernel before 5.11) the call fails with ENOSYS and
// Run falls back on FD alone.
const (
	sysCloseRange     = 436
	closeRangeCloexec = 1 << 2
)

// InBoundary reports whether this process runs as the reporter: argv[0]
// is Path and it is its PID namespace's pid 2, bubblewrap's first
// process.
func InBoundary() bool {
	return len(os.Args) >= 2 && os.Args[0] == Path && os.Getpid() == 2
}

// Run runs argv (argv[0] looked up as execvp does, in PATH of the
// environment), reports how it ended on FD and returns the exit status
// bubblewrap would have reported for it.
//
// With argv ArgvFlag alone and ArgvFD open, the command's argv is read
// from ArgvFD (ReadArgv); one that cannot be read is reported as an exec
// that failed with the error's errno (E2BIG for one over MaxArgv, EINVAL
// for one not made of NUL-ended arguments).
func Run(argv []string) int {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if len(argv) == 1 && argv[0] == ArgvFlag {
		var st syscall.Stat_t
		if syscall.Fstat(ArgvFD, &st) == nil {
			read, err := ReadArgv(ArgvFD)
			_ = syscall.Close(ArgvFD)
			if err != nil {
				errno, ok := errors.AsType[syscall.Errno](err)
				if !ok || errno == 0 {
					errno = syscall.EINVAL
				}
				_, _ = os.Stderr.WriteString("logbook-reporter: the command's arguments: " + err.Error() + "\n")
				write(reportExec, int(errno))
				return 1
			}
			argv = read
		}
	}
	if _, _, errno := syscall.RawSyscall(sysCloseRange, 3, 1<<32-1, closeRangeCloexec); errno != 0 {
		// The report pipe is the only descriptor the reporter is
		// given above 2.
		syscall.CloseOnExec(FD)
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	pid, err := forkExecPath(argv)
	if err != nil {
		errno, ok := err.(syscall.Errno)
		if !ok || errno == 0 {
			errno = syscall.ENOENT
		}
		_, _ = os.Stderr.WriteString("bwrap: execvp " + argv[0] + ": " + err.Error() + "\n")
		write(reportExec, int(errno))
		return 1
	}
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 255 // no report: the worker records the command as killed
	}
	write(reportStatus, int(ws))
	return Exit(ws)
}

// ReadArgv reads an argv from descriptor fd, from offset 0: each
// argument ended by a NUL byte, at least one, MaxArgv bytes at most.
// Errors: the read's errno, E2BIG past MaxArgv, EINVAL for no argument
// or bytes after the last NUL.
func ReadArgv(fd int) ([]string, error) {
	var b []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := syscall.Pread(fd, buf, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		if len(b)+n > MaxArgv {
			return nil, syscall.E2BIG
		}
		b = append(b, buf[:n]...)
		off += int64(n)
	}
	if len(b) == 0 || b[len(b)-1] != 0 {
		return nil, syscall.EINVAL
	}
	return strings.Split(string(b[:len(b)-1]), "\x00"), nil
}

// write writes the report line "kind n" to FD, in one write(2).
func write(kind string, n int) {
	line := kind + " " + strconv.Itoa(n) + "\n"
	_, _ = syscall.Write(FD, []byte(line))
}

// Exit is the exit status bubblewrap reports for a first process that
// ended with ws: its exit status, or 128 + the signal that killed it.
func Exit(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 255
}

// forkExecPath starts argv as glibc's execvp(3), bubblewrap's, would
// run it: argv[0] as a path if it has a slash, else each entry of PATH
// (or execvp's default) in turn, going on past one where the name is
// missing (ENOENT, ENOTDIR, ESTALE, ENODEV, ETIMEDOUT) or may not run
// (EACCES, which is then the error) and stopping at any other error (a
// link loop, too long a name); an empty name is ENOENT. A file the
// kernel will not run (ENOEXEC: a script without "#!") runs as /bin/sh
// file args. The command has the reporter's stdin, stdout, stderr,
// environment and directory. execvp tries each entry in one child; here
// each try is a child of its own (a fork of this process), so an entry
// that names nothing is passed over after a stat(2), which fails as
// execve(2) would (ENOENT, ENOTDIR), without a fork: a PATH of a dozen
// entries costs one fork, not a dozen.
func forkExecPath(argv []string) (int, error) {
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	if strings.Contains(argv[0], "/") {
		return tryExec(argv[0], argv, attr)
	}
	if argv[0] == "" {
		return 0, syscall.ENOENT // as execvp: no PATH entry is tried
	}
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = "/bin:/usr/bin"
	}
	err := error(syscall.ENOENT)
	denied := false
	for _, dir := range strings.Split(path, ":") {
		// An empty entry is the directory: the name alone, as execvp
		// gives it to execve(2) and to /bin/sh ($0).
		file := argv[0]
		if dir != "" {
			file = dir + "/" + argv[0]
		}
		var st syscall.Stat_t
		if e := syscall.Stat(file, &st); e == syscall.ENOENT || e == syscall.ENOTDIR {
			if !denied {
				err = e
			}
			continue
		}
		pid, e := tryExec(file, argv, attr)
		if e == nil {
			return pid, nil
		}
		switch e {
		case syscall.EACCES:
			denied, err = true, e
		case syscall.ENOENT, syscall.ENOTDIR, syscall.ESTALE, syscall.ENODEV, syscall.ETIMEDOUT:
			if !denied {
				err = e
			}
		default:
			return 0, e
		}
	}
	return 0, err
}

// tryExec starts file as execvp's execve(2) of it: a file the kernel
// will not run as a program (ENOEXEC) runs as /bin/sh file argv[1:], as
// execvp runs a script without "#!", and the error is then the shell's.
// A file the kernel refuses as busy is tried again (WhileBusy).
func tryExec(file string, argv []string, attr *syscall.ProcAttr) (pid int, err error) {
	err = WhileBusy(func() error {
		pid, err = forkExec(file, argv, attr)
		return err
	})
	if err != syscall.ENOEXEC {
		return pid, err
	}
	return forkExec("/bin/sh", append([]string{"/bin/sh", file}, argv[1:]...), attr)
}

// BusyWait is how long WhileBusy goes on trying to run a program the
// kernel refuses as "text file busy".
const BusyWait = 2 * time.Second

// WhileBusy calls start, which runs a program, and calls it again while
// it fails with ETXTBSY ("text file busy": a process holds the program
// open for writing): after 1 ms, then twice as long each time, up to
// 100 ms between tries and BusyWait in all. It returns start's last
// error. What holds a program that was just written is most often not
// its writer but a child the writer forked while the file was open (an
// agent writing a script it is about to run while it starts another
// program; golang.org/issue/22315): the child holds the descriptor only
// until its own exec closes it, a moment, if a longer one on a loaded
// machine. A program held open for longer is refused all the same, with
// the kernel's error, as execvp(3) refuses it.
func WhileBusy(start func() error) error {
	err := start()
	for delay, waited := time.Millisecond, time.Duration(0); errors.Is(err, syscall.ETXTBSY) && waited < BusyWait; delay = min(2*delay, 100*time.Millisecond) {
		time.Sleep(delay)
		waited += delay
		err = start()
	}
	return err
}

// forkExec is syscall.ForkExec; a test counts the forks through it.
var forkExec = syscall.ForkExec

// Parse reads the reporter's report b: the command's wait status (ok),
// or the errno of its failed exec (execErr != 0). Anything else, nothing
// or more than one line included, is no report.
func Parse(b []byte) (ws syscall.WaitStatus, execErr syscall.Errno, ok bool) {
	line, found := strings.CutSuffix(string(b), "\n")
	if !found {
		return 0, 0, false
	}
	kind, num, _ := strings.Cut(line, " ")
	n, err := strconv.ParseUint(num, 10, 31)
	if err != nil {
		return 0, 0, false
	}
	switch kind {
	case reportStatus:
		return syscall.WaitStatus(n), 0, true
	case reportExec:
		if n == 0 {
			return 0, 0, false
		}
		return 0, syscall.Errno(n), false
	}
	return 0, 0, false
}
