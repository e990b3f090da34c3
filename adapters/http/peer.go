package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrPeerNotFound is wrapped by PeerUID when no socket table row is the
// client end of the connection (the client closed it, or the tables are
// not Linux's).
var ErrPeerNotFound = errors.New("peer socket not found")

// PeerUID returns the uid of the process that opened the client end of a
// TCP connection between client and server (both as address:port), as
// Linux's /proc/net/tcp and /proc/net/tcp6 show it: the row whose local
// address is client and whose remote address is server. An IPv4 address
// matches its IPv4-mapped IPv6 form. A listening row, one in TIME_WAIT
// or one with no inode (a socket its process has closed, whose uid the
// kernel may no longer show) does not count. It returns an error wrapping ErrPeerNotFound
// when no row counts, and the tables' read or parse error otherwise.
func PeerUID(client, server netip.AddrPort) (uint32, error) {
	// Linux's IPv4 and IPv6 TCP tables, of this process's network namespace.
	procNetTCP := [...]string{"/proc/net/tcp", "/proc/net/tcp6"}
	for _, p := range procNetTCP {
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, fmt.Errorf("peer uid: %w", err)
		}
		uid, err := findPeerUID(f, client, server)
		f.Close()
		if err == nil {
			return uid, nil
		}
		if !errors.Is(err, ErrPeerNotFound) {
			return 0, fmt.Errorf("peer uid: %s: %w", p, err)
		}
	}
	return 0, fmt.Errorf("peer uid: %w: no row of %s is %s to %s", ErrPeerNotFound, strings.Join(procNetTCP[:], " or "), client, server)
}

// tcpTimeWait is the st column of a socket in TIME_WAIT (and of an
// orphaned FIN_WAIT2 one the kernel keeps as a time-wait socket), whose
// uid column reads 0 whoever opened it.
const tcpTimeWait = 0x06

// tcpListen is the st column of a listening socket, never a client's.
const tcpListen = 0x0a

// findPeerUID scans one socket table (the format of /proc/net/tcp: a
// header line, then "sl local rem st tx:rx tr:when retrnsmt uid timeout
// inode …" rows, addresses as hex in host byte order words and the port
// as hex) for the row of client to server and returns its uid. It
// returns an error wrapping ErrPeerNotFound when no row counts, and one
// naming the line of a row it cannot read.
func findPeerUID(r io.Reader, client, server netip.AddrPort) (uint32, error) {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		if n == 1 {
			continue // the header
		}
		f := bytes.Fields(sc.Bytes())
		if len(f) < 10 {
			return 0, fmt.Errorf("line %d: %d fields, want 10 or more", n, len(f))
		}
		local, err := parseProcAddr(string(f[1]))
		if err != nil {
			return 0, fmt.Errorf("line %d: local address: %w", n, err)
		}
		if local != client {
			continue
		}
		remote, err := parseProcAddr(string(f[2]))
		if err != nil {
			return 0, fmt.Errorf("line %d: remote address: %w", n, err)
		}
		if remote != server {
			continue
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			return 0, fmt.Errorf("line %d: state %q: %w", n, f[3], err)
		}
		if st == tcpTimeWait || st == tcpListen || string(f[9]) == "0" {
			continue
		}
		uid, err := strconv.ParseUint(string(f[7]), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("line %d: uid %q: %w", n, f[7], err)
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, ErrPeerNotFound
}

// parseProcAddr reads an address of /proc/net/tcp ("0100007F:1F90") or
// /proc/net/tcp6 (32 hex digits, then the port): the address in 32-bit
// words of host byte order, the port in hex. An IPv4-mapped address is
// returned unmapped.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: want hex address:port", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("%q: want 8 or 32 hex digits before the port", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// peerKey is the context key of a connection's peer lookup.
type peerKey struct{}

// peerResult is the uid PeerUID found for a connection, or why not.
type peerResult struct {
	uid uint32
	err error
}

// PeerContext is an http.Server's ConnContext for a server with
// Config.TrustedUIDs: it notes c's addresses in ctx, and the uid of the
// process at the client end is looked up (PeerUID) once, when a request
// on c first needs it. A connection that is not TCP gets an error there,
// so its requests need a token.
func PeerContext(ctx context.Context, c net.Conn) context.Context {
	look := sync.OnceValue(func() peerResult {
		client, cerr := tcpAddrPort(c.RemoteAddr())
		server, serr := tcpAddrPort(c.LocalAddr())
		if err := errors.Join(cerr, serr); err != nil {
			return peerResult{err: err}
		}
		uid, err := PeerUID(client, server)
		return peerResult{uid: uid, err: err}
	})
	return context.WithValue(ctx, peerKey{}, look)
}

func tcpAddrPort(a net.Addr) (netip.AddrPort, error) {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("peer uid: address %v is not TCP", a)
	}
	return t.AddrPort(), nil
}

// peerUID returns the uid of the client end of r's connection, as
// PeerContext finds it; an error when the server was not given
// PeerContext or the lookup failed.
func peerUID(r *http.Request) (uint32, error) {
	look, ok := r.Context().Value(peerKey{}).(func() peerResult)
	if !ok {
		return 0, errors.New("peer uid: the connection was not accepted with PeerContext")
	}
	res := look()
	return res.uid, res.err
}
