package sandbox

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A restricted command does not run as bubblewrap's first process: bwrap
// reports a command killed by signal N as exit status 128+N, the same as
// one that called exit(128+N). The worker's own executable runs there
// instead, bound read-only at reporterPath, as the reporter: it runs the
// command as its child, waits for it and writes the child's wait status,
// as bytes only it holds, to reportFD, a pipe the worker reads. Then it
// exits as bwrap would have reported the command (see reporterExit).
//
// The command gets none of that pipe: the reporter marks every descriptor
// above 2 close-on-exec before it forks, so the command starts with only
// 0–2, as without the reporter. It makes itself non-dumpable, so the
// command (same user, no capabilities) can neither open
// /proc/<reporter>/fd/N nor ptrace it. It can kill the reporter: the
// boundary's PID namespace then ends, the command with it, and the
// worker, with no report, records the command killed by SIGKILL, which
// is what ended it. It ignores the signals sent to a group (Stop's
// SIGTERM, a terminal's SIGINT, SIGQUIT, SIGHUP and SIGTSTP), which reach
// the command too.

// reporterTasks is how many tasks beyond Limits.Procs a restricted
// command's process limit allows, for the reporter's threads (the Go
// runtime's, 7 or 8 of them): the command keeps its own Procs. A
// reporter that cannot get a thread it needs dies, and the boundary with
// it.
const reporterTasks = 16

// reporterPath is where the reporter's executable is bound in the
// boundary, and the argv[0] it runs as.
const reporterPath = "/.logbook-reporter"

// Report lines, the first (and only) line on reportFD: "status N" with
// N the command's wait status (wait(2)), or "exec E" with E the errno of
// its failed exec.
const (
	reportStatus = "status"
	reportExec   = "exec"
)

// init runs the reporter when this process is one (argv[0] is
// reporterPath and it is its PID namespace's pid 2, bubblewrap's first
// process), and never returns then. It is the package's only init: the
// reporter must run in whatever executable imports the package (the
// worker, a test binary) before its main does.
func init() {
	if len(os.Args) < 2 || os.Args[0] != reporterPath || os.Getpid() != 2 {
		return
	}
	os.Exit(runReporter(os.Args[1:]))
}

// runReporter runs argv (argv[0] looked up as execvp does, in PATH of
// the environment), reports how it ended on reportFD and returns the exit
// status bubblewrap would have reported for it.
func runReporter(argv []string) int {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		// Kernels before 5.11: the report pipe is the only one the
		// reporter is given above 2.
		unix.CloseOnExec(reportFD)
	}
	signal.Notify(make(chan os.Signal, 1), unix.SIGTERM, unix.SIGINT, unix.SIGQUIT, unix.SIGHUP,
		unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
	report := os.NewFile(reportFD, "report")
	pid, err := forkExecPath(argv)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.ENOENT
		}
		fmt.Fprintf(os.Stderr, "bwrap: execvp %s: %v\n", argv[0], err)
		fmt.Fprintf(report, "%s %d\n", reportExec, int(errno))
		return 1
	}
	var ws unix.WaitStatus
	for {
		_, err = unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 255 // no report: the worker records the command as killed
	}
	fmt.Fprintf(report, "%s %d\n", reportStatus, int(ws))
	return reporterExit(ws)
}

// reporterExit is the exit status bubblewrap reports for a first process
// that ended with ws: its exit status, or 128 + the signal that killed
// it.
func reporterExit(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 255
}

// forkExecPath starts argv as execvp(3) would run it: argv[0] as a path
// if it has a slash, else each entry of PATH (or execvp's default) in
// turn, going on past one it may not run, with the reporter's stdin,
// stdout, stderr, environment and directory.
func forkExecPath(argv []string) (int, error) {
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	if strings.Contains(argv[0], "/") {
		return syscall.ForkExec(argv[0], argv, attr)
	}
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = "/bin:/usr/bin"
	}
	err := error(syscall.ENOENT)
	denied := false
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		pid, e := syscall.ForkExec(dir+"/"+argv[0], argv, attr)
		if e == nil {
			return pid, nil
		}
		switch {
		case errors.Is(e, syscall.EACCES):
			denied, err = true, e
		case errors.Is(e, syscall.ENOENT), errors.Is(e, syscall.ENOTDIR), errors.Is(e, syscall.ESTALE),
			errors.Is(e, syscall.ENODEV), errors.Is(e, syscall.ETIMEDOUT), errors.Is(e, syscall.ELOOP),
			errors.Is(e, syscall.ENAMETOOLONG):
			if !denied {
				err = e
			}
		default:
			return 0, e
		}
	}
	return 0, err
}

// parseReport reads the reporter's line b: the command's wait status
// (ok), or the errno of its failed exec (execErr != 0). Anything else,
// nothing included, is no report.
func parseReport(b []byte) (ws unix.WaitStatus, execErr syscall.Errno, ok bool) {
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
		return unix.WaitStatus(n), 0, true
	case reportExec:
		if n == 0 {
			return 0, 0, false
		}
		return 0, syscall.Errno(n), false
	}
	return 0, 0, false
}
