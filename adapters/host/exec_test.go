package host

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/execsock"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// serveExecAt serves an exec socket in a fresh directory with run and
// returns the directory.
func serveExecAt(t *testing.T, run ExecRunner) string {
	t.Helper()
	dir := t.TempDir()
	stop, err := ServeExec(t.Context(), filepath.Join(dir, execsock.Name), run, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return dir
}

// rawExec sends req on a new connection to dir's exec socket, shuts
// down its writing half, and returns the answer's stdout, stderr and
// exit status (-1: no exit frame).
func rawExec(t *testing.T, dir string, req []byte) (string, string, int) {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, execsock.Name), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A server that refuses a request over its limit answers before it
	// has read it all: the write fails, the answer is there.
	if _, err := c.Write(req); err == nil {
		c.CloseWrite()
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 { // after the answer, a reset of the unread request
		t.Fatal(err)
	}
	var out, errs strings.Builder
	for len(b) >= 5 {
		n := int(binary.BigEndian.Uint32(b[1:5]))
		body := string(b[5 : 5+n])
		switch b[0] {
		case execsock.KindStdout:
			out.WriteString(body)
		case execsock.KindStderr:
			errs.WriteString(body)
		case execsock.KindExit:
			code, _ := strconv.Atoi(body)
			return out.String(), errs.String(), code
		}
		b = b[5+n:]
	}
	return out.String(), errs.String(), -1
}

// TestServeExec_Malformed: a request that is not one line of a Request
// is answered with an error naming what is wrong, exit status 2, and
// nothing is run.
func TestServeExec_Malformed(t *testing.T) {
	var ran atomic.Int32
	dir := serveExecAt(t, func(context.Context, execsock.Request, unix.Ucred, io.Writer, io.Writer) int {
		ran.Add(1)
		return 0
	})
	for _, c := range []struct{ name, req, want string }{
		{"NotJSON", "exec --session S\n", "malformed request: invalid character"},
		{"UnknownField", `{"args":["--","true"],"cwd":"/","env":[],"user":"root"}` + "\n", `unknown field "user"`},
		{"NoArgs", `{"cwd":"/","env":[]}` + "\n", `no "args"`},
		{"NoNewline", `{"args":["--","true"],"cwd":"/","env":[]}`, "before the request line's newline"},
		{"Empty", "", "the connection ended after 0 bytes"},
		{"TwoValues", `{"args":["true"],"cwd":"/","env":[]} {}` + "\n", "malformed request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := rawExec(t, dir, []byte(c.req))
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("ran %d requests, want none", n)
	}
}

// TestServeExec_TooLong: a request line over execsock.MaxRequest is
// refused unread and unrun.
func TestServeExec_TooLong(t *testing.T) {
	var ran atomic.Int32
	dir := serveExecAt(t, func(context.Context, execsock.Request, unix.Ucred, io.Writer, io.Writer) int {
		ran.Add(1)
		return 0
	})
	req := append([]byte(`{"args":["`), bytes.Repeat([]byte("a"), execsock.MaxRequest)...)
	_, stderr, code := rawExec(t, dir, append(req, "\"]}\n"...))
	if want := "over 1048576 bytes"; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("ran %d requests, want none", n)
	}
}

// TestServeExec_Call: execsock.Call's request reaches the runner as
// sent, with the caller's credentials, and the runner's output and exit
// status come back to the caller's streams.
func TestServeExec_Call(t *testing.T) {
	// The runner hands what it was given over a channel: a socket's
	// bytes order nothing for the race detector.
	type given struct {
		req  execsock.Request
		peer unix.Ucred
	}
	gave := make(chan given, 1)
	dir := serveExecAt(t, func(_ context.Context, req execsock.Request, p unix.Ucred, stdout, stderr io.Writer) int {
		gave <- given{req, p}
		io.WriteString(stdout, "out\n")
		stdout.Write(bytes.Repeat([]byte("x"), 100<<10)) // several frames
		io.WriteString(stderr, "err\n")
		return 7
	})
	req := execsock.Request{Args: []string{"--session", "S", "--", "printf", "a\"b\\\n\u2028"}, Cwd: "/w", Env: []string{"TZ=UTC"}}
	var stdout, stderr bytes.Buffer
	code, err := execsock.Call(dir, req, &stdout, &stderr)
	if err != nil || code != 7 {
		t.Fatalf("Call = %d, %v; want 7, nil", code, err)
	}
	if want := "out\n" + strings.Repeat("x", 100<<10); stdout.String() != want || stderr.String() != "err\n" {
		t.Errorf("stdout %d bytes, stderr %q; want %d bytes and \"err\\n\"", stdout.Len(), stderr.String(), len(want))
	}
	g := <-gave
	got, peer := g.req, g.peer
	if strings.Join(got.Args, "|") != strings.Join(req.Args, "|") || got.Cwd != req.Cwd || strings.Join(got.Env, "|") != "TZ=UTC" {
		t.Errorf("runner got %+v, want %+v", got, req)
	}
	if peer.Uid != uint32(os.Geteuid()) || peer.Pid != int32(os.Getpid()) {
		t.Errorf("peer %+v, want this process (uid %d, pid %d)", peer, os.Geteuid(), os.Getpid())
	}
}

// TestServeExec_Interrupt: a client that shuts down its writing half
// interrupts the exec (its context ends), and still gets the answer.
func TestServeExec_Interrupt(t *testing.T) {
	dir := serveExecAt(t, func(ctx context.Context, _ execsock.Request, _ unix.Ucred, stdout, _ io.Writer) int {
		<-ctx.Done()
		io.WriteString(stdout, "interrupted\n")
		return 130
	})
	stdout, _, code := rawExec(t, dir, []byte(`{"args":["--","sleep","60"],"cwd":"/","env":[]}`+"\n"))
	if code != 130 || stdout != "interrupted\n" {
		t.Errorf("exit %d, stdout %q; want 130 and \"interrupted\\n\"", code, stdout)
	}
}

// TestServeExec_NoSocket: Call says when no server listens, so that
// the client may hand the exec over.
func TestServeExec_NoSocket(t *testing.T) {
	dir := t.TempDir()
	if _, err := execsock.Call(dir, execsock.Request{Args: []string{"true"}}, io.Discard, io.Discard); !errors.Is(err, execsock.ErrNoSocket) {
		t.Errorf("Call on no socket: %v, want ErrNoSocket", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, execsock.Name), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := execsock.Call(dir, execsock.Request{Args: []string{"true"}}, io.Discard, io.Discard); !errors.Is(err, execsock.ErrRefused) {
		t.Errorf("Call on a dead socket: %v, want ErrRefused", err)
	}
}

// TestServeExec_OtherUser: a peer running as another user than the
// server's (nor root) is refused, and nothing runs. It runs only as
// root, which may start a process as uid 65534.
func TestServeExec_OtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	if os.Getenv("EXECSOCK_CLIENT_DIR") != "" {
		t.Skip("the client's own run")
	}
	var ran atomic.Int32
	dir := serveExecAt(t, func(context.Context, execsock.Request, unix.Ucred, io.Writer, io.Writer) int {
		ran.Add(1)
		return 0
	})
	// The socket and this test binary where that user may reach them.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, execsock.Name), 0o666); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "host.test")
	if err := sandboxtest.CopyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/"; d = filepath.Dir(d) { // t.TempDir's parents are 0700
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o011)
			t.Cleanup(func() { os.Chmod(d, st.Mode().Perm()) })
		}
	}
	var out bytes.Buffer
	c := exec.Command(bin, "-test.run", "^TestExecSockClient$")
	c.Env = []string{"EXECSOCK_CLIENT_DIR=" + dir}
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := c.Run(); err != nil {
		t.Fatalf("client as uid 65534: %v\n%s", err, out.String())
	}
	if want := "it answers only its server's user (uid 0) and root, not uid 65534"; !strings.Contains(out.String(), want) {
		t.Errorf("client said %q, want %q", out.String(), want)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("ran %d requests of another user, want none", n)
	}
}

// TestExecSockClient is TestServeExec_OtherUser's client: with
// $EXECSOCK_CLIENT_DIR it calls that exec socket and prints the answer
// and exit status; otherwise it does nothing.
func TestExecSockClient(t *testing.T) {
	dir := os.Getenv("EXECSOCK_CLIENT_DIR")
	if dir == "" {
		return
	}
	var out bytes.Buffer
	code, err := execsock.Call(dir, execsock.Request{Args: []string{"--", "true"}, Cwd: "/"}, &out, &out)
	t.Logf("exit %d, err %v: %s", code, err, out.String())
	if err != nil || code != 1 {
		t.Errorf("Call = %d, %v; want 1 (refused)", code, err)
	}
	os.Stdout.Write(out.Bytes())
}
