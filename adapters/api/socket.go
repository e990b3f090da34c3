package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/hooksock"
)

// Limits of the hook socket's connections (see ServeSocket).
const (
	// SocketReadTimeout is how long a connection has to send its whole
	// request and shut down its writing half.
	SocketReadTimeout = 5 * time.Second
	// socketWriteTimeout is how long the answer may take to be taken.
	socketWriteTimeout = 5 * time.Second
)

// Socket is a Unix domain socket listening at Path, made by ListenSocket.
// Close stops it and removes its file.
type Socket struct {
	*net.UnixListener
	Path string // the socket's path as given to ListenSocket
}

// ListenSocket listens on a Unix domain socket at path, with mode 0600,
// for ServeSocket. It is made for a directory only its owner writes in,
// whose lock the caller holds: a socket already at path is stale (the
// server that made it is gone) and is replaced; any other file there
// is an error naming it. A path longer than a socket address holds (108
// bytes) is bound through its directory (/proc/self/fd/<n>/<base
// name>).
func ListenSocket(path string) (*Socket, error) {
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("listen on %s: a %s is in the socket's place; move it away", path, fileKind(st.Mode()))
	case err == nil:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	addr := path
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", path, err)
		}
		defer dir.Close()
		addr = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + filepath.Base(path)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false) // addr may name a descriptor closed by then
	s := &Socket{UnixListener: l, Path: path}
	if err := os.Chmod(path, 0o600); err != nil {
		s.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return s, nil
}

// Close stops listening and removes the socket's file (a socket at Path:
// with the lock the caller holds, no other server made one there since).
// It is safe to call more than once.
func (s *Socket) Close() error {
	err := s.UnixListener.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	if st, serr := os.Lstat(s.Path); serr == nil && st.Mode().Type() == fs.ModeSocket {
		if rerr := os.Remove(s.Path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	return err
}

// fileKind names the kind of file of mode m, for errors.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "file that is not a socket"
}

// ServeSocket answers requests of verb on l with handle until ctx is
// done, then closes l and returns once every connection is over (their
// handlers' contexts are canceled). Each connection carries one request
// (see adapters/hooksock) and gets the answer the NATS API gives it
// (Serve): the same wire bytes, error codes, HandleTimeout and MaxReply.
// At most MaxInFlight connections are worked on at once; others wait in
// the listener's backlog.
//
// A connection is refused, with an error answer naming the rule, unless
// its peer runs as this process's effective user or as root
// (SO_PEERCRED). The request must end (the peer shuts down its writing
// half) within SocketReadTimeout and hold at most hooksock.MaxRequest
// bytes: a longer one is read to its end and answered with code
// "too_large"; one that does not end in time is answered with code
// "malformed" and closed. Failures to answer are written to logf.
func ServeSocket(ctx context.Context, l *net.UnixListener, verb string, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	uid := os.Geteuid()
	AcceptEach(ctx, l, MaxInFlight, "api "+verb+": socket", logf, func(c *net.UnixConn) {
		c.SetReadDeadline(time.Now().Add(SocketReadTimeout))
		stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
		defer stop()
		b := serveConn(ctx, c, uid, verb, handle, logf)
		c.SetWriteDeadline(time.Now().Add(socketWriteTimeout))
		if _, err := c.Write(b); err != nil {
			logf("WARN: api %s: socket: answer of %d bytes not sent: %v", verb, len(b), err)
		}
	})
}

// AcceptEach accepts connections on l until ctx ends and serves each
// with serve on a goroutine of its own, at most limit at once (further
// peers wait in the listen queue), closing each connection once serve
// returns. It closes l when ctx ends and returns once every serve has
// returned. An accept error other than l's close is written to logf
// after what (e.g. "exec socket"), and accepting resumes 100 ms later:
// out of descriptors, say, it is no busy loop.
func AcceptEach(ctx context.Context, l *net.UnixListener, limit int, what string, logf func(format string, args ...any), serve func(c *net.UnixConn)) {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, limit)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c, err := l.AcceptUnix()
		if err != nil {
			<-slots
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			logf("WARN: %s: %v", what, err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer c.Close()
			serve(c)
		})
	}
}

// serveConn reads the request on c (its read deadline set), from a peer
// that must run as uid or root, and returns the answer to send.
func serveConn(ctx context.Context, c *net.UnixConn, uid int, verb string, handle func(ctx context.Context, data []byte) (any, error), logf func(format string, args ...any)) []byte {
	peer, err := peerUID(c)
	if err != nil {
		return Reply{Error: fmt.Sprintf("%s: peer credentials: %v", verb, err)}.wire()
	}
	if peer != uid && peer != 0 {
		return Reply{Error: fmt.Sprintf("%s: connection refused: the hook socket answers only its server's user (uid %d) and root, not uid %d", verb, uid, peer)}.wire()
	}
	data, ans := readRequest(ctx, c, verb, hooksock.MaxRequest)
	if ans != nil {
		return ans
	}
	return work(ctx, verb, data, handle, logf, nil)
}

// readRequest reads the request on c (its read deadline set) to its end,
// at most limit bytes. When it cannot, it returns the error answer to
// send instead, named by verb.
func readRequest(ctx context.Context, c *net.UnixConn, verb string, limit int) ([]byte, []byte) {
	data, err := io.ReadAll(io.LimitReader(c, int64(limit)+1))
	if err == nil && len(data) > limit {
		n, derr := io.Copy(io.Discard, c)
		if derr == nil {
			return nil, Reply{Error: fmt.Sprintf("%s: request of %d bytes, over the limit of %d", verb, int64(len(data))+n, limit), Code: "too_large"}.wire()
		}
		err = derr
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, Reply{Error: fmt.Sprintf("%s: the server is stopping", verb)}.wire()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, Reply{Error: fmt.Sprintf("%s: the request did not end within %s (shut down the connection's writing half after it)", verb, SocketReadTimeout), Code: "malformed"}.wire()
		}
		return nil, Reply{Error: fmt.Sprintf("%s: read the request: %v", verb, err)}.wire()
	}
	return data, nil
}

// peerUID returns the user id of c's peer process.
func peerUID(c *net.UnixConn) (int, error) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}

// peerCred returns the credentials of c's peer process (SO_PEERCRED): as
// they were when it connected.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return cred, nil
}
