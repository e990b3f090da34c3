package execsock

import (
	"bytes"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCall_StopsHardWhenServeDoesNotAnswer: a client that took a stop
// signal waits for serve's answer to the interrupt, but not for a serve
// that never answers (stopped with SIGSTOP, or wedged): it stops hard at
// a second stop signal, or StopHardAfter after the first, with exit 128 +
// the first signal's number and `stopped hard` and why on stderr. Not
// parallel: it signals its own process.
func TestCall_StopsHardWhenServeDoesNotAnswer(t *testing.T) {
	// This process takes the signals too, so that one sent before Call
	// catches them (or after it returns) ends nothing.
	own := make(chan os.Signal, 8)
	signal.Notify(own, syscall.SIGINT)
	defer signal.Stop(own)
	defer func(d time.Duration) { StopHardAfter = d }(StopHardAfter)

	for _, tc := range []struct {
		name   string
		after  time.Duration // StopHardAfter
		second bool          // a second SIGINT, 300 ms after the first
		want   string
	}{
		{"timed out", 300 * time.Millisecond, false, "stopped hard serve had not answered 300ms after SIGINT"},
		{"second signal", time.Hour, true, "stopped hard at a second stop signal (SIGINT)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			StopHardAfter = tc.after
			dir := t.TempDir()
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(dir, Name)}); err != nil {
				t.Fatal(err)
			}
			if err := unix.Listen(fd, 1); err != nil {
				t.Fatal(err)
			}
			// A serve that takes the request and then never answers,
			// nor closes.
			got := make(chan int, 1)
			go func() {
				conn, _, err := unix.Accept(fd)
				if err != nil {
					got <- -1
					return
				}
				buf := make([]byte, 4096)
				n, _ := unix.Read(conn, buf)
				got <- n
				time.Sleep(time.Minute)
				unix.Close(conn)
			}()
			type result struct {
				code int
				err  error
			}
			res := make(chan result, 1)
			var stdout, stderr bytes.Buffer
			go func() {
				code, err := Call(dir, Request{Args: []string{"--", "true"}, Cwd: "/"}, &stdout, &stderr)
				res <- result{code, err}
			}()
			if n := <-got; n <= 0 {
				t.Fatalf("the server read %d bytes of the request", n)
			}
			time.Sleep(100 * time.Millisecond) // Call catches the signals once the request is sent
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if tc.second {
				time.Sleep(300 * time.Millisecond)
				if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case r := <-res:
				if r.code != 130 || r.err != nil {
					t.Errorf("Call = %d, %v; want 130 and no error", r.code, r.err)
				}
				if !strings.Contains(stderr.String(), tc.want) {
					t.Errorf("stderr %q; want it to say %q", firstLine(stderr.String()), tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Call still waits for a serve that does not answer")
			}
		})
	}
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
