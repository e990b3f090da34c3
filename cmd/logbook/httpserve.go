package main

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/host"
	httpapi "github.com/logbook-dev/logbook/adapters/http"
	"github.com/logbook-dev/logbook/projections"
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

// newHTTP opens the HTTP surface of f (host.NewHTTP) over b's log and
// store, with reviews (the gate) answering a person's verdicts.
// Observations and verdicts posted over HTTP are redacted by the rules
// the hook and the import use: the data dir's redact.txt over the
// built-in ones, as it is at each use.
func newHTTP(f httpFlags, dd dataDir, b *backend, store *projections.Store, svc *api.Service, reviews httpapi.Reviews) (*host.HTTP, error) {
	cl, err := newCommandClient(b)
	if err != nil {
		return nil, err
	}
	parser, err := b.parser()
	if err != nil {
		return nil, err
	}
	return host.NewHTTP(host.HTTPConfig{
		Addr: f.addr, Cert: f.cert, Key: f.key, DataDir: string(dd),
		Log: b.log, Conn: b.nc, Store: store, Reg: b.reg, Service: svc,
		Reviews: reviews, Output: cl, Redactor: parser.Redactor(), PausedSince: b.pausedSince,
	})
}
