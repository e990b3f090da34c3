// Command boxshim is the one program inside the differential test's
// bubblewrap box (see differential_test.go). It is built once per test
// run and has two roles, chosen by the path it runs as:
//
//   - /.box/driver, the box's PID 1: it reads commands from standard
//     input, one strconv.Quote'd command a line, runs each with
//     /usr/bin/bash -c in a fresh directory, waits until every process
//     in the box has ended (killing all past the time limit), and
//     answers "<n>\n" followed by n bytes: the records of that command.
//   - any other name (a hard link per program name in /usr/bin): a
//     recording shim that appends one record, the base name of the path
//     it was executed as (from /proc/self/exe, so exec -a cannot lie)
//     and its argv, to /.rec/log and exits 0. A record is a line of
//     strconv.Quote'd fields joined by tabs. As cat with no operand it
//     also copies its input to its output, so `cat <<EOF | bash` runs.
//
// It imports only the standard library and is built with CGO_ENABLED=0,
// so the box needs no library for it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	logPath = "/.rec/log"
	bash    = "/usr/bin/bash"
)

func main() {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	if exe == "/.box/driver" {
		drive()
		return
	}
	record(filepath.Base(exe))
}

// record appends this invocation to the log in one write.
func record(name string) {
	fields := []string{strconv.Quote(name)}
	for _, a := range os.Args {
		fields = append(fields, strconv.Quote(a))
	}
	line := strings.Join(fields, "\t") + "\n"
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxshim: %v\n", err)
		os.Exit(0)
	}
	_, _ = f.Write([]byte(line))
	_ = f.Close()
	if name == "cat" && (len(os.Args) == 1 || len(os.Args) == 2 && os.Args[1] == "-") {
		_, _ = io.Copy(os.Stdout, os.Stdin)
	}
}

// drive serves commands until its input ends.
func drive() {
	// PID 1 receives only the signals it handles: handle (and drop) the
	// ones a command could send it, so that only the host can stop it.
	// Notify, not Ignore: an ignored signal would stay ignored in bash.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGVTALRM, syscall.SIGPROF)
	limit := 2 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BOX_LIMIT")); err == nil {
		limit = d
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for n := 0; ; n++ {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		cmd, err := strconv.Unquote(strings.TrimSuffix(line, "\n"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "boxshim: bad command line %q\n", line)
			os.Exit(2)
		}
		recs := runOne(cmd, n, limit)
		fmt.Fprintf(out, "%d\n", len(recs))
		_, _ = out.Write(recs)
		if err := out.Flush(); err != nil {
			os.Exit(2)
		}
	}
}

// runOne runs cmd and returns its records.
func runOne(cmd string, n int, limit time.Duration) []byte {
	dir := fmt.Sprintf("/work/%d", n)
	_ = os.Remove(logPath)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		fmt.Fprintf(os.Stderr, "boxshim: %v\n", err)
		os.Exit(2)
	}
	null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxshim: %v\n", err)
		os.Exit(2)
	}
	fd := null.Fd()
	env := []string{"PATH=/usr/bin", "HOME=" + dir, "LANG=C.UTF-8", "TMPDIR=/tmp"}
	pid, err := syscall.ForkExec(bash, []string{"bash", "-c", cmd}, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{fd, fd, fd},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	_ = null.Close()
	if err == nil {
		reapAll(pid, time.Now().Add(limit))
	}
	recs, _ := os.ReadFile(logPath)
	_ = os.Remove(logPath)
	_ = os.RemoveAll(dir)
	clearDir("/tmp")
	return recs
}

// reapAll waits until no process but this one is left in the box (as
// PID 1, every orphan becomes its child), killing them all at deadline.
func reapAll(pid int, deadline time.Time) {
	killed := false
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.ECHILD:
			return
		case err == syscall.EINTR || got > 0:
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "boxshim: wait: %v\n", err)
			os.Exit(2)
		}
		if !killed && time.Now().After(deadline) {
			killed = true
		}
		if killed {
			// kill(-1) reaches every process in the PID namespace but
			// the caller; repeat until none is left.
			_ = syscall.Kill(-1, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// clearDir removes what is in dir, keeping dir.
func clearDir(dir string) {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
