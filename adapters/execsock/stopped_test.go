package execsock

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
)

// listenerEnv, set, makes TestHelperListener the listener of the exec
// socket in the directory it names: a serve of its own process, which
// takes requests and answers none.
const listenerEnv = "LOGBOOK_TEST_EXECSOCK_LISTENER"

// TestHelperListener is no test: run by TestCall_SaysServeIsStopped in a
// process of its own (listenerEnv set), it listens on the exec socket,
// accepts connections and never answers, until killed.
func TestHelperListener(t *testing.T) {
	dir := os.Getenv(listenerEnv)
	if dir == "" {
		t.Skip("the listener of TestCall_SaysServeIsStopped, run by it")
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(dir, Name)}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 4); err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening")
	for {
		if _, _, err := unix.Accept(fd); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
	}
}

// TestCall_SaysServeIsStopped: a client whose serve (the process that
// listens on the socket) is stopped with SIGSTOP says so once on stderr,
// naming serve's pid and how to let it go on, and that serve goes on once
// it is continued; the call itself goes on until serve answers or, here,
// dies.
func TestCall_SaysServeIsStopped(t *testing.T) {
	if os.Getenv(listenerEnv) != "" {
		t.Skip("in the listener's process")
	}
	defer func(d time.Duration) { StoppedCheck = d }(StoppedCheck)
	StoppedCheck = 50 * time.Millisecond
	dir := t.TempDir()
	serve := exec.Command(os.Args[0], "-test.run=^TestHelperListener$")
	serve.Env = append(os.Environ(), listenerEnv+"="+dir)
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Kill()
		serve.Wait()
	}()
	line := make([]byte, len("listening\n"))
	if _, err := out.Read(line); err != nil || string(line) != "listening\n" {
		t.Fatalf("listener: %q, %v", line, err)
	}
	pid := serve.Process.Pid
	if err := serve.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var stderr natslogtest.Buffer
	called := make(chan error, 1)
	go func() {
		_, err := Call(dir, Request{Args: []string{"--session", "s", "--", "true"}, Cwd: "/", Env: []string{}}, &bytes.Buffer{}, &stderr)
		called <- err
	}()
	stopped := fmt.Sprintf("logbook-exec: serve (pid %d) is stopped (SIGSTOP, or a debugger) and answers nothing until it goes on: `kill -CONT %d`; waiting\n", pid, pid)
	waitText(t, &stderr, stopped)
	if err := serve.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	goesOn := fmt.Sprintf("logbook-exec: serve (pid %d) goes on\n", pid)
	waitText(t, &stderr, goesOn)
	serve.Process.Kill()
	select {
	case err := <-called:
		if err == nil {
			t.Errorf("Call returned no error once serve died unanswering")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Call did not return once serve died")
	}
	if got := stderr.String(); got != stopped+goesOn {
		t.Errorf("stderr %q, want the stop said once and the going on once: %q", got, stopped+goesOn)
	}
}

// waitText waits up to 30 s for b to hold want.
func waitText(t *testing.T, b *natslogtest.Buffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("stderr %q: no %q", b.String(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
