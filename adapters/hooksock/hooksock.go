// Package hooksock is the client of the Unix domain socket a running
// `logbook serve` answers hook payloads on (<data dir>/hook.sock), and
// the limits both ends share; adapters/api serves it.
//
// One connection carries one request: the client connects, writes the
// request (an api.HookRequest as JSON), shuts down its writing half, and
// reads the answer (an api.Reply as sent on NATS) to the end. The
// package links nothing but the standard library's basics and
// golang.org/x/sys/unix — no net, no os/user — so a binary that uses it
// stays statically linked and starts fast.
package hooksock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
)

// Name is the socket's file name in the data dir.
const Name = "hook.sock"

// Limits of one exchange, in bytes.
const (
	// MaxRequest is the largest request the server reads: the embedded
	// NATS server's maximum payload (1 MiB), so that a hook request the
	// NATS API would take is taken here and no other. A larger one is
	// answered with an error of code "too_large".
	MaxRequest = 1 << 20
	// MaxReply is the most of an answer Call reads; a hook's answer is a
	// few dozen bytes.
	MaxReply = 64 << 10
)

// Errors of Call, for errors.Is.
var (
	// ErrNoSocket: there is no socket file (or no data dir): no server
	// runs, or the one that runs does not listen on a socket.
	ErrNoSocket = errors.New("no hook socket")
	// ErrRefused: the socket file is there but nothing listens on it: the
	// server that made it is gone.
	ErrRefused = errors.New("nothing listens on the hook socket")
	// ErrTimeout: the deadline passed before the answer ended.
	ErrTimeout = errors.New("no answer in time")
)

// CodeHeld is the code of a hook's answer when serve did not take the
// payload because it holds its appends for want of disk space
// (adapters/api.ErrHeld); the answer's error says why.
const CodeHeld = "appends_held"

// HeldKept ends what a hook says when it kept its payload in the spool
// after an answer of code CodeHeld: serve takes it from there once it
// appends again. logbook-hook and `logbook hook` both say it.
const HeldKept = "delivered when the disk frees"

// maxPath is the longest socket path connect and bind take (sun_path).
const maxPath = len(unix.RawSockaddrUnix{}.Path) - 1

// Call sends request req to the server listening on the socket Name in
// data dir dir and returns its answer, at most MaxReply bytes; all of
// it must end before deadline. Its errors wrap ErrNoSocket, ErrRefused or
// ErrTimeout when they are those, and name the socket's path.
//
// A path longer than a socket address holds (108 bytes) is reached
// through the directory: it is opened (O_PATH) and the socket connected
// as /proc/self/fd/<n>/hook.sock. Call is safe for concurrent use.
func Call(dir string, req []byte, deadline time.Time) ([]byte, error) {
	path := filepath.Join(dir, Name)
	b, err := call(dir, path, req, deadline)
	if err != nil {
		return nil, fmt.Errorf("hook socket %s: %w", path, err)
	}
	return b, nil
}

// UnknownIfKept is what a hook says when serve's system socket gave no
// answer in time: serve may have journaled the payload, so it is not
// sent again, and with no spool in system mode nothing else holds it.
const UnknownIfKept = "whether serve kept the payload is unknown: it may be in the log; in system mode a hook has no spool, and it is not sent again"

// CallSystem sends request req of verb to the system socket at path (a
// serve in system mode, adapters/api.System: the verb and a newline,
// then req) and returns its answer as Call does, with Call's errors.
// path must fit a socket address (107 bytes): a longer one is an error.
func CallSystem(path, verb string, req []byte, deadline time.Time) ([]byte, error) {
	if len(path) > maxPath {
		return nil, fmt.Errorf("system socket %s: a path over %d bytes", path, maxPath)
	}
	msg := make([]byte, 0, len(verb)+1+len(req))
	msg = append(append(append(msg, verb...), '\n'), req...)
	b, err := call(filepath.Dir(path), path, msg, deadline)
	if err != nil {
		return nil, fmt.Errorf("system socket %s: %w", path, err)
	}
	return b, nil
}

func call(dir, path string, req []byte, deadline time.Time) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	addr := path
	if len(path) > maxPath {
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil, ErrNoSocket
		}
		if err != nil {
			return nil, os.NewSyscallError("open "+dir, err)
		}
		defer unix.Close(dfd)
		addr = ProcPath(dfd)
	}
	if err := timeout(fd, unix.SO_SNDTIMEO, deadline); err != nil {
		return nil, err
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: addr})
		if err != unix.EINTR {
			break
		}
		if err := timeout(fd, unix.SO_SNDTIMEO, deadline); err != nil {
			return nil, err
		}
	}
	switch {
	case err == nil || err == unix.EISCONN:
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return nil, ErrNoSocket
	case err == unix.ECONNREFUSED:
		return nil, ErrRefused
	case err == unix.EAGAIN:
		return nil, ErrTimeout // the server's backlog stayed full
	default:
		return nil, os.NewSyscallError("connect", err)
	}
	werr := write(fd, req, deadline)
	if werr == nil {
		werr = os.NewSyscallError("shutdown", unix.Shutdown(fd, unix.SHUT_WR))
	}
	// A server that answers before reading all (a peer it refuses) has
	// closed its end, which ends a write with EPIPE and the answer with
	// ECONNRESET: its answer is read all the same.
	b, rerr := read(fd, deadline)
	if len(b) > 0 && (rerr == nil || werr != nil || errors.Is(rerr, unix.ECONNRESET)) {
		return b, nil
	}
	if werr != nil {
		return nil, werr
	}
	if rerr != nil {
		return nil, rerr
	}
	return nil, errors.New("the server closed the connection without an answer")
}

// Marshal encodes request v as JSON the way both of the server's
// transports take it (this socket and the NATS API): as json.Marshal
// does, but with <, > and & left as they are rather than escaped to six
// bytes each (\u003c), so that a hook payload of markup at the hook's cap
// stays within MaxRequest.
func Marshal(v any) ([]byte, error) {
	return jsonx.MarshalPlain(v)
}

// AppendString appends s to dst as a JSON string, byte for byte as
// Marshal writes a string: quote and backslash escaped, control characters as
// \b, \f, \n, \r, \t or \u00XX, U+2028 and U+2029 as \u2028 and
// \u2029, each byte of invalid UTF-8 as \ufffd, and everything else,
// <, > and & among it, as itself. A client that builds its request with
// it skips encoding/json's reflection, whose first use costs a
// short-lived process a good part of a millisecond.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ProcPath returns the path of socket Name in the directory open as
// dfd (O_PATH is enough), as this process sees it under /proc: short
// enough for a socket address whatever the directory's own path.
func ProcPath(dfd int) string {
	return "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + Name
}

// timeout sets fd's send (opt SO_SNDTIMEO, which connect(2) on a Unix
// socket waits by too) or receive (SO_RCVTIMEO) timeout to what is left
// until deadline: only the one the next call waits by, one system call
// per wait.
func timeout(fd, opt int, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return ErrTimeout
	}
	tv := unix.NsecToTimeval(max(left.Nanoseconds(), int64(time.Microsecond)))
	return os.NewSyscallError("setsockopt", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv))
}

// write writes all of b to fd before deadline.
func write(fd int, b []byte, deadline time.Time) error {
	for len(b) > 0 {
		if err := timeout(fd, unix.SO_SNDTIMEO, deadline); err != nil {
			return err
		}
		n, err := unix.SendmsgN(fd, b, nil, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return ErrTimeout
		case err != nil:
			return os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return nil
}

// read reads fd to its end, at most MaxReply bytes, before deadline.
func read(fd int, deadline time.Time) ([]byte, error) {
	var b []byte
	// An answer is a few dozen bytes: a small buffer on the stack, which a
	// page-sized one would make the calling goroutine's stack grow.
	var buf [512]byte
	for {
		if err := timeout(fd, unix.SO_RCVTIMEO, deadline); err != nil {
			return b, err
		}
		n, err := unix.Read(fd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return b, ErrTimeout
		case err != nil:
			return b, os.NewSyscallError("read", err)
		case n == 0:
			return b, nil
		}
		if len(b)+n > MaxReply {
			return nil, fmt.Errorf("answer over %d bytes", MaxReply)
		}
		b = append(b, buf[:n]...)
	}
}
