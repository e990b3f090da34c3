// Package execsock is the Unix domain socket a running `logbook serve`
// runs `exec` requests on (<data dir>/exec.sock), both ends of it: the
// client that `logbook-exec` is made of, and Serve, which serve answers
// it with.
//
// One connection carries one exec. The client writes its request, one
// line of JSON (Request) ended by a newline, and keeps its writing half
// open while it waits: shutting it down (or closing the connection) is an
// interrupt, what Ctrl-C is to `logbook exec`. The server answers with
// frames, each a kind byte, a length (4 bytes, big-endian) and that many
// bytes: KindStdout and KindStderr carry what `logbook exec` would have
// written to its standard output and error, KindExit the exit status it
// would have exited with, in decimal, and ends the answer.
//
// The client half links nothing but the standard library's basics and
// golang.org/x/sys/unix — no net, no encoding/json, no os/user — so that
// a binary made of it starts in a millisecond or two.
package execsock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/internal/procstat"
)

// Name is the socket's file name in the data dir.
const Name = "exec.sock"

// Frame kinds of an answer.
const (
	KindStdout byte = 'o' // bytes for the client's standard output
	KindStderr byte = 'e' // bytes for the client's standard error
	KindExit   byte = 'x' // the exit status, decimal ASCII; the last frame
)

// Limits, in bytes.
const (
	// MaxRequest is the longest request line the server reads (newline
	// included): exec's arguments, working directory and environment.
	MaxRequest = 1 << 20
	// MaxFrame is the longest frame the client takes; the server writes
	// at most 32 KiB a frame.
	MaxFrame = 1 << 20
	// frameChunk is the most a frame the server writes carries.
	frameChunk = 32 << 10
)

// MaxCommand is the most a command's arguments and environment may
// take, as JSON strings (CommandSize), in bytes: the command is one
// event on the log, whose messages are at most 1 MiB, and its request
// line here is at most MaxRequest. Both `logbook exec` and logbook-exec
// refuse a larger one (CheckCommand) before anything is sent.
const MaxCommand = 768 << 10

// CommandSize returns how many bytes argv and env take as JSON strings,
// as a request or an event holds them.
func CommandSize(argv, env []string) int {
	n := 0
	var b []byte
	for _, ss := range [][]string{argv, env} {
		for _, s := range ss {
			b = hooksock.AppendString(b[:0], s)
			n += len(b) + 1
		}
	}
	return n
}

// CheckCommand returns a usage error's text when argv and env are over
// MaxCommand (CommandSize), naming both sizes, or when an element of
// either is not UTF-8 (CheckText, naming it "argument N", from 1, or
// "environment entry NAME"); nil otherwise.
func CheckCommand(argv, env []string) error {
	for i, a := range argv {
		if err := CheckText("argument "+strconv.Itoa(i+1), a); err != nil {
			return err
		}
	}
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if err := CheckText("environment entry "+strconv.QuoteToASCII(name), e); err != nil {
			return err
		}
	}
	if n := CommandSize(argv, env); n > MaxCommand {
		return fmt.Errorf("the command is too large: its arguments and environment take %d bytes as JSON, at most %d (a command is one event on the log); pass large input through a file", n, MaxCommand)
	}
	return nil
}

// CheckText returns an error naming what (an argument, a directory) when
// s holds a byte that is not UTF-8, with the byte and its offset: the
// log records a command's words, directories and environment as JSON
// text, which would carry U+FFFD in that byte's place, and the worker
// would run the command on another name than the one given. nil for
// UTF-8.
func CheckText(what, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	return fmt.Errorf("%s %s holds byte %#02x at offset %d, which is not UTF-8: the log records text, and the command would run with U+FFFD in its place, on another name; rename it in UTF-8, or reach it through a script or a glob",
		what, strconv.QuoteToASCII(s), s[i], i)
}

// Errors of Call, for errors.Is. Only these two mean the server never
// got the request, so that running `logbook exec` instead runs nothing
// twice.
var (
	// ErrNoSocket: there is no socket file (or no data dir): no server
	// runs, or the one that runs does not listen on an exec socket.
	ErrNoSocket = errors.New("no exec socket")
	// ErrRefused: the socket file is there but nothing listens on it: the
	// server that made it is gone.
	ErrRefused = errors.New("nothing listens on the exec socket")
)

// Request is what the client sends: `logbook exec`'s arguments and the
// parts of the caller's process the command depends on.
type Request struct {
	// Args are exec's arguments, after "exec" (flags, "--", the command),
	// without --data, which named the socket.
	Args []string `json:"args"`
	// Cwd is the caller's working directory, absolute: exec's default
	// --workspace.
	Cwd string `json:"cwd"`
	// Env holds the caller's environment entries (KEY=VALUE) that exec
	// passes on to the command (worker.InheritedEnv), in that order.
	Env []string `json:"env"`
}

// AppendJSON appends r as one line of JSON, its newline included, as
// encoding/json would encode it (strings as hooksock.AppendString writes
// them, nil slices as []), without encoding/json's reflection, whose
// first use would cost a short-lived client a good part of a
// millisecond.
func (r Request) AppendJSON(b []byte) []byte {
	list := func(b []byte, ss []string) []byte {
		b = append(b, '[')
		for i, s := range ss {
			if i > 0 {
				b = append(b, ',')
			}
			b = hooksock.AppendString(b, s)
		}
		return append(b, ']')
	}
	b = append(b, `{"args":`...)
	b = list(b, r.Args)
	b = append(b, `,"cwd":`...)
	b = hooksock.AppendString(b, r.Cwd)
	b = append(b, `,"env":`...)
	b = list(b, r.Env)
	return append(b, "}\n"...)
}

// maxPath is the longest socket path connect and bind take (sun_path).
const maxPath = len(unix.RawSockaddrUnix{}.Path) - 1

// procPath returns the path of socket Name in the directory open as dfd,
// as this process sees it under /proc: short enough for a socket address
// whatever the directory's own path.
func procPath(dfd int) string {
	return "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + Name
}

// Call runs req on the server listening on socket Name in data dir dir:
// it writes the answer's output frames to stdout and stderr as they come
// and returns the exit status the server sent. A SIGINT, SIGTERM or
// SIGHUP that reaches this process once the request is sent interrupts
// the exec (the writing half is shut down) and Call goes on reading the
// server's answer to its end, which says what became of the command.
// One that comes before has its default action: the process ends, and a
// server that has the request reads the connection's end as the same
// interrupt.
//
// Errors wrap ErrNoSocket or ErrRefused when the server never got the
// request; any other error (a connection lost before the exit status, a
// malformed frame) leaves unknown whether the command ran. They name the
// socket's path. A path longer than a socket address holds (108 bytes)
// is reached through the directory (O_PATH, /proc/self/fd/<n>/exec.sock).
func Call(dir string, req Request, stdout, stderr io.Writer) (int, error) {
	return callIn(dir, req, stdout, stderr, false)
}

// CallExiting is Call for a process that exits as soon as it returns
// (logbook-exec): the signals stay caught when it returns, so that it
// does not wait for the runtime's signal handling to go quiet, as
// stopping them does (a good part of a millisecond of a short-lived
// client's life, spent after the exit status came). A signal that
// comes after the exit status is then ignored rather than ending the
// process: it exits with that status anyway. Not for a process that
// goes on: each call would leave a handler behind.
func CallExiting(dir string, req Request, stdout, stderr io.Writer) (int, error) {
	return callIn(dir, req, stdout, stderr, true)
}

func callIn(dir string, req Request, stdout, stderr io.Writer, exiting bool) (int, error) {
	path := filepath.Join(dir, Name)
	code, err := call(dir, path, req, stdout, stderr, exiting)
	if err != nil {
		return code, fmt.Errorf("exec socket %s: %w", path, err)
	}
	return code, nil
}

func call(dir, path string, req Request, stdout, stderr io.Writer, exiting bool) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 1, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	addr := path
	if len(path) > maxPath {
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return 1, ErrNoSocket
		}
		if err != nil {
			return 1, os.NewSyscallError("open "+dir, err)
		}
		defer unix.Close(dfd)
		addr = procPath(dfd)
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: addr})
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == nil || err == unix.EISCONN:
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return 1, ErrNoSocket
	case err == unix.ECONNREFUSED:
		return 1, ErrRefused
	default:
		return 1, os.NewSyscallError("connect", err)
	}
	// From here on the server may have the request: never ErrNoSocket.
	// A server that answers before reading all (a peer it refuses, a
	// request over its limit) has closed its end, which ends the write
	// with EPIPE: its answer is read all the same.
	werr := writeAll(fd, req.AppendJSON(nil))
	// The signals are caught once the request is sent: the threads the
	// runtime starts for them then start while the server works on it,
	// not before it has it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if !exiting {
		defer signal.Stop(sigs)
	}
	done := make(chan struct{})
	var watching sync.WaitGroup
	defer watching.Wait() // after done closes: nothing is said once the call returned
	defer close(done)
	every := StoppedCheck
	watching.Go(func() { watchStopped(fd, every, done, stderr) })
	caught := make(chan os.Signal, 1)
	var hard atomic.Pointer[string] // why the client stopped waiting for the answer
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
		case <-done:
			return
		}
		caught <- first
		_ = unix.Shutdown(fd, unix.SHUT_WR) // the server's end reads EOF: an interrupt
		// serve answers an interrupt at once; one that does not (stopped,
		// or wedged) is not waited for past a second signal or
		// StopHardAfter, as any logbook command stops.
		at := time.Now()
		timer := time.NewTimer(StopHardAfter)
		defer timer.Stop()
		for {
			var why string
			select {
			case s := <-sigs:
				if s == first && time.Since(at) < sameStop {
					continue // the same stop, sent again (timeout's, to the group too)
				}
				why = "at a second stop signal (" + signalName(s) + ")"
			case <-timer.C:
				why = fmt.Sprintf("serve had not answered %s after %s", StopHardAfter, signalName(first))
			case <-done:
				return
			}
			hard.Store(&why)
			_ = unix.Shutdown(fd, unix.SHUT_RDWR) // the read below ends
			return
		}
	}()
	code, err := readAnswer(fd, stdout, stderr)
	if why := hard.Load(); err != nil && why != nil {
		n, _ := caughtSignal(caught)
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(stderr, "logbook-exec: stopped hard %s: whether serve learned of the interrupt, and whether the command goes on, is unknown: see `logbook commands`\n%s", *why, buf)
		return 128 + n, nil
	}
	if err != nil && werr != nil {
		return code, werr
	}
	if n, ok := caughtSignal(caught); ok && code == InterruptedExit {
		code = 128 + n // the signal this process took, not serve's guess
	}
	return code, err
}

// watchStopped looks at the state of the process at the other end of
// connected socket fd (its peer credentials' pid: serve) each time every
// (StoppedCheck, read by the caller) passes, until done closes, and says
// once on stderr when it is stopped (SIGSTOP, or a debugger:
// procstat.Stat.Stopped), which it answers nothing while, with how to
// let it go on, and once when it goes on. A peer whose state cannot be
// read is not watched. The note goes to stderr alone; it changes nothing
// of the call.
func watchStopped(fd int, every time.Duration, done <-chan struct{}, stderr io.Writer) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	said := false
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		st, err := procstat.Read(int(cred.Pid))
		if err != nil {
			return
		}
		stopped := st.Stopped()
		switch {
		case stopped && !said:
			fmt.Fprintf(stderr, "logbook-exec: serve (pid %d) is stopped (SIGSTOP, or a debugger) and answers nothing until it goes on: `kill -CONT %d`; waiting\n", cred.Pid, cred.Pid)
		case !stopped && said:
			fmt.Fprintf(stderr, "logbook-exec: serve (pid %d) goes on\n", cred.Pid)
		}
		said = stopped
	}
}

// StoppedCheck is how often a client waiting for serve's answer looks at
// whether serve is stopped (watchStopped). A variable for tests.
var StoppedCheck = 2 * time.Second

// StopHardAfter is how long a client that took a stop signal waits for
// serve's answer to the interrupt before it stops hard (exit 128 + the
// signal's number, `stopped hard` on stderr); a second stop signal ends
// the wait at once. A variable for tests.
var StopHardAfter = 30 * time.Second

// sameStop is how soon the same signal again is the same stop (timeout
// sends it to the command and then to its process group).
const sameStop = 250 * time.Millisecond

// signalName names s as the shell does (SIGINT), or by its number.
func signalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		switch n {
		case syscall.SIGINT:
			return "SIGINT"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGHUP:
			return "SIGHUP"
		}
		return "signal " + strconv.Itoa(int(n))
	}
	return s.String()
}

// InterruptedExit is the exit status serve answers for an exec its
// client interrupted (130, 128 plus SIGINT's number); the client exits
// with 128 plus the number of the signal it took instead.
const InterruptedExit = 128 + int(syscall.SIGINT)

// caughtSignal returns the number of the signal on caught, if one came.
func caughtSignal(caught <-chan os.Signal) (int, bool) {
	select {
	case s := <-caught:
		if n, ok := s.(syscall.Signal); ok {
			return int(n), true
		}
		return int(syscall.SIGINT), true
	default:
		return 0, false
	}
}

// writeAll writes all of b to fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.SendmsgN(fd, b, nil, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return nil
}

// fdReader reads a socket descriptor, retrying on EINTR.
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// lostAnswer is the error of an answer whose connection closed before
// its exit status, after output bytes of the command's output on stdout:
// with some, the command ran and it is unknown whether it ended; with
// none, it is unknown whether it was requested or ran.
func lostAnswer(output int64) error {
	if output > 0 {
		return fmt.Errorf("the server closed the connection before the exit status, after %d bytes of the command's output: the command ran; whether it ended is unknown (see `logbook commands --active`, then `logbook command output ID --follow` with its id)", output)
	}
	return errors.New("the server closed the connection before the exit status: whether the command was requested, or ran, is unknown (see `logbook commands`)")
}

// closedEarly reports whether err, of a read of the answer, says the
// server's end of the connection went away: closed (EOF, within a frame
// too) or reset, as a serve killed while it answers leaves it.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, unix.ECONNRESET)
}

// readAnswer copies the answer's output frames on fd to stdout and
// stderr and returns its exit status.
func readAnswer(fd int, stdout, stderr io.Writer) (int, error) {
	var hdr [5]byte
	buf := make([]byte, 4096)
	r := fdReader(fd)
	var output int64 // bytes of stdout frames: the command's output, which only a command that ran has
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if closedEarly(err) {
				return 1, lostAnswer(output)
			}
			return 1, err
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > MaxFrame {
			return 1, fmt.Errorf("a frame of %d bytes, over %d", n, MaxFrame)
		}
		if int(n) > len(buf) {
			buf = make([]byte, n)
		}
		body := buf[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			if closedEarly(err) {
				return 1, lostAnswer(output)
			}
			return 1, fmt.Errorf("read a frame: %w", err)
		}
		switch hdr[0] {
		case KindStdout:
			output += int64(n)
			stdout.Write(body) // a closed output is the caller's; the exit status still comes
		case KindStderr:
			stderr.Write(body)
		case KindExit:
			code, err := strconv.Atoi(string(body))
			if err != nil || code < 0 || code > 255 {
				return 1, fmt.Errorf("exit status %q: want 0 to 255", body)
			}
			return code, nil
		default:
			return 1, fmt.Errorf("a frame of unknown kind %q", hdr[0])
		}
	}
}
