package main

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/logbook-dev/logbook/adapters/host"
)

// httpFlags are serve's HTTP flags.
type httpFlags struct {
	addr, cert, key string
}

// check refuses an address that is not loopback unless TLS files are
// given, before anything starts.
func (f httpFlags) check() error {
	if f.addr == "" {
		return nil
	}
	h, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return usageErrorf("--http %s: want host:port, e.g. 127.0.0.1:7070", f.addr)
	}
	if (f.cert == "") != (f.key == "") {
		return usageErrorf("--http-cert and --http-key go together")
	}
	if !host.IsLoopback(h) && f.cert == "" {
		return usageErrorf("--http %s is not a loopback address: give --http-cert and --http-key (TLS); clients then need a token from http-tokens.json in the data dir", f.addr)
	}
	if f.cert != "" {
		if _, err := tls.LoadX509KeyPair(f.cert, f.key); err != nil {
			return fmt.Errorf("--http-cert %s, --http-key %s: %w", f.cert, f.key, err)
		}
	}
	return nil
}
