package main

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/host"
)

// pprofListenAddr checks a --pprof value (checkAddrFlags, then
// host.PprofAddr) and returns the loopback address to listen on. Errors
// are usage errors naming the flag and the value.
func pprofListenAddr(addr string) (string, error) {
	if err := checkAddrFlags(map[string]string{"pprof": addr}); err != nil {
		return "", err
	}
	at, err := host.PprofAddr(addr)
	if err != nil {
		return "", &usageError{err}
	}
	return at, nil
}

// listenPprof checks addr as pprofListenAddr does, then serves the
// profiles on it until ctx is done (host.ListenPprof).
func listenPprof(ctx context.Context, addr string) (string, func(), error) {
	at, err := pprofListenAddr(addr)
	if err != nil {
		return "", nil, err
	}
	return host.ListenPprof(ctx, addr, at)
}
