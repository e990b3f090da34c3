package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/events"
)

// systemServer runs s on a system socket in a new directory every user
// may reach, and returns the socket's path.
func systemServer(t *testing.T, s *System) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lbsys")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock, err := ListenSystem(filepath.Join(dir, "run"), -1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, sock.UnixListener, t.Logf)
	}()
	t.Cleanup(func() { cancel(); <-done; sock.Close() })
	return sock.Path
}

// echo answers with the request as it came and the peer it came from.
func echo(ctx context.Context, data []byte) (any, error) {
	p, _ := PeerOf(ctx)
	return map[string]any{"peer": p, "request": json.RawMessage(data)}, nil
}

// TestSystem_PersonVerbTakesThePeer: a verdict's actor is the peer's,
// whatever the request says, in any letter case, duplicated or not; the
// peer a handler sees is the kernel's.
func TestSystem_PersonVerbTakesThePeer(t *testing.T) {
	path := systemServer(t, &System{
		Verbs:  map[string]func(context.Context, []byte) (any, error){"read": echo},
		People: map[string]func(context.Context, []byte) (any, error){"decide": echo},
		Host:   "h",
	})
	call := SocketCaller(path)
	var out struct {
		Peer    Peer            `json:"peer"`
		Request json.RawMessage `json:"request"`
	}
	body := json.RawMessage(`{"id":"r1","actor":"person:alice@h","Actor":"person:bob","BY":"carol","by":"dave","actor":"person:eve"}`)
	if err := call(t.Context(), "decide", body, &out); err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Geteuid())
	if out.Peer.UID != uid || out.Peer.PID != int32(os.Getpid()) {
		t.Errorf("peer %+v, want uid %d pid %d", out.Peer, uid, os.Getpid())
	}
	var got map[string]string
	if err := json.Unmarshal(out.Request, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id": "r1", "actor": out.Peer.Actor("h")}
	if len(got) != len(want) || got["id"] != want["id"] || got["actor"] != want["actor"] {
		t.Errorf("request as handled %v, want %v", got, want)
	}
	if !strings.HasSuffix(got["actor"], "@h uid="+strconv.Itoa(int(uid))) {
		t.Errorf("actor %q does not end with the uid", got["actor"])
	}
	for _, bad := range []string{`[1]`, `null`, `"x"`} {
		err := call(t.Context(), "decide", json.RawMessage(bad), nil)
		if !errors.Is(err, events.ErrMalformed) {
			t.Errorf("body %s: %v, want malformed", bad, err)
		}
	}
	err := call(t.Context(), "nosuch", struct{}{}, nil)
	if !errors.Is(err, ErrNotOnSocket) || !strings.Contains(err.Error(), `verb "nosuch" is not asked here (it answers decide, read)`) {
		t.Errorf("unknown verb: %v", err)
	}
}

// TestSystem_NoSocket: a client finds no socket, or a dead one, and says
// so naming the path.
func TestSystem_NoSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, SystemSocketName)
	err := SocketCaller(path)(t.Context(), "read", struct{}{}, nil)
	if err == nil || !strings.Contains(err.Error(), path+": no socket there") {
		t.Errorf("no socket: %v", err)
	}
	s, err := ListenSystem(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	s.UnixListener.Close()
	err = SocketCaller(path)(t.Context(), "read", struct{}{}, nil)
	if err == nil || !strings.Contains(err.Error(), "nothing listens on the socket") {
		t.Errorf("dead socket: %v", err)
	}
	// A socket a live server answers on is not taken over.
	s, err = ListenSystem(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := ListenSystem(dir, -1); err == nil || !strings.Contains(err.Error(), "another server answers on it") {
		t.Errorf("second listen: %v", err)
	}
}

// TestListenSystem_Dir: a directory others may write in, or a file in
// the socket's place, is refused.
func TestListenSystem_Dir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenSystem(dir, -1); err == nil || !strings.Contains(err.Error(), "others may write in it") {
		t.Errorf("0777 dir: %v", err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SystemSocketName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenSystem(dir, -1); err == nil || !strings.Contains(err.Error(), "a regular file is in the socket's place") {
		t.Errorf("file in place: %v", err)
	}
}

// TestListenSystem_MadeDirsReachable: the socket's directory, and each
// parent ListenSystem makes for it, is 0755 whatever the umask (serve's
// unit runs with UMask=0077), so the users let in can reach the socket.
func TestListenSystem_MadeDirsReachable(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	base := t.TempDir()
	dir := filepath.Join(base, "a", "run")
	s, err := ListenSystem(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []string{filepath.Join(base, "a"), dir} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s made with mode %04o, want 0755", d, st.Mode().Perm())
		}
	}
}

// callAs calls verb on the socket at path from a thread whose effective
// uid and gid are uid and gid, as the kernel records them at connect
// (SO_PEERCRED): the thread is thrown away after. It needs root.
func callAs(t *testing.T, uid, gid int, path, verb string, req, resp any) error {
	t.Helper()
	type result struct{ err error }
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
			ch <- result{e}
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			ch <- result{e}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ch <- result{SocketCaller(path)(ctx, verb, req, resp)}
	}()
	return (<-ch).err
}

// nobodyAccess skips the test unless it runs as root, which can connect
// as other users, and returns the access list that lets in uid 65534
// (nobody).
func nobodyAccess(t *testing.T) Access {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as other users")
	}
	access, err := ParseAccess("65534")
	if err != nil {
		t.Fatal(err)
	}
	return access
}

// TestSystem_PeersByCredentials: with root, peers of other uids: one the
// access list names is answered and seen as itself; one it does not is
// refused before its request is read, naming it and who is let in; a
// peer let in but not among the deciders is refused a person's verb.
func TestSystem_PeersByCredentials(t *testing.T) {
	access := nobodyAccess(t)
	path := systemServer(t, &System{
		Verbs:  map[string]func(context.Context, []byte) (any, error){"read": echo},
		People: map[string]func(context.Context, []byte) (any, error){"decide": echo},
		Access: access, Host: "h",
	})
	var out struct {
		Peer Peer `json:"peer"`
	}
	if err := callAs(t, 65534, 65534, path, "read", struct{}{}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Peer.UID != 65534 || out.Peer.GID != 65534 {
		t.Errorf("peer %+v, want uid and gid 65534", out.Peer)
	}
	err := callAs(t, 65534, 65534, path, "decide", map[string]string{"actor": "person:root"}, nil)
	if !errors.Is(err, ErrPeerRefused) || !strings.Contains(err.Error(), "may not answer for a person on this socket (serve --socket-decide lets in nobody else)") {
		t.Errorf("decide by a peer not a decider: %v", err)
	}
	err = callAs(t, 65533, 65533, path, "read", struct{}{}, nil)
	if !errors.Is(err, ErrPeerRefused) || !strings.Contains(err.Error(), "connection refused: uid 65533 may not use this socket (serve --socket-allow lets in 65534)") {
		t.Errorf("peer not let in: %v", err)
	}
	// A group lets its members in.
	ga, err := ParseAccess("group:" + strconv.Itoa(65534))
	if err != nil {
		t.Fatal(err)
	}
	if !ga.Permits(Peer{UID: 65533, GID: 65534}) || ga.Permits(Peer{UID: 65533, GID: 65533}) {
		t.Errorf("group access %v: wrong", ga)
	}
	if _, err := ParseAccess("nosuchuser-lb"); err == nil || !strings.Contains(err.Error(), `no user "nosuchuser-lb" on this host`) {
		t.Errorf("unknown user: %v", err)
	}
}

// dialAs opens n connections to the socket at path from a thread whose
// effective uid and gid are uid and gid, and leaves them idle; they are
// closed when the test ends. It needs root.
func dialAs(t *testing.T, uid, gid, n int, path string) {
	t.Helper()
	type result struct {
		cs  []net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
			ch <- result{err: e}
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			ch <- result{err: e}
			return
		}
		var r result
		for range n {
			c, err := net.Dial("unix", path)
			if err != nil {
				r.err = err
				break
			}
			r.cs = append(r.cs, c)
		}
		ch <- r
	}()
	r := <-ch
	t.Cleanup(func() {
		for _, c := range r.cs {
			c.Close()
		}
	})
	if r.err != nil {
		t.Fatalf("dial as uid %d: %v", uid, r.err)
	}
}

// TestSystem_IdleConnectionsStarveNoOne: hundreds of idle connections of
// a user not let in, and of one let in, keep no other user's request
// waiting; those refused are counted, not logged one line each.
func TestSystem_IdleConnectionsStarveNoOne(t *testing.T) {
	access := nobodyAccess(t)
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	dir, err := os.MkdirTemp("", "lbsys")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sock, err := ListenSystem(filepath.Join(dir, "run"), -1)
	if err != nil {
		t.Fatal(err)
	}
	s := &System{Verbs: map[string]func(context.Context, []byte) (any, error){"read": echo}, Access: access, Host: "h"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, sock.UnixListener, logf)
	}()
	t.Cleanup(func() { cancel(); <-done; sock.Close() })

	for _, who := range []struct {
		name     string
		uid, gid int
	}{{"not let in", 65533, 65533}, {"let in", 65534, 65534}} {
		dialAs(t, who.uid, who.gid, 300, sock.Path)
		// Starved, root would wait for an idle connection's read
		// deadline (SocketReadTimeout, 5 s): a bound below it tells
		// starvation from a loaded machine's slowness.
		start := time.Now()
		cctx, ccancel := context.WithTimeout(t.Context(), SocketReadTimeout*3/5)
		err := SocketCaller(sock.Path)(cctx, "read", struct{}{}, nil)
		ccancel()
		if err != nil {
			t.Errorf("root's request beside 300 idle connections of a user %s: %v after %s", who.name, err, time.Since(start))
		}
	}
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(lines) > 3 {
		t.Errorf("%d log lines, want a summary:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
