package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/profiling"
)

// PprofAddr checks a --pprof value, addr (host:port, the host a loopback
// address or localhost), and returns the address to listen on, the host
// as an IP. The profiles show the process's memory and code paths, so
// any other address is refused. Errors name the flag and the value; the
// caller reports them as usage errors.
func PprofAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--pprof %q: want a loopback host:port such as 127.0.0.1:6060", addr)
	}
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("--pprof %q: the profiling endpoint listens on a loopback address only (127.0.0.1 or ::1), not %q", addr, host)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// ListenPprof serves the profiles on at, an address PprofAddr returned
// for the --pprof value addr, until ctx is done (profiling.Listen). It
// returns the address listened on (port 0 picks one) and a stop function
// that closes the listener. An address it cannot listen on (one in use)
// is an error naming addr.
func ListenPprof(ctx context.Context, addr, at string) (string, func(), error) {
	at, stop, err := profiling.Listen(ctx, at)
	if errors.Is(err, syscall.EADDRINUSE) {
		return "", nil, fmt.Errorf("--pprof %s: the address is in use by another process; pick a free port (or port 0)", addr)
	}
	if err != nil {
		return "", nil, fmt.Errorf("--pprof %s: cannot listen: %w", addr, err)
	}
	return at, stop, nil
}
