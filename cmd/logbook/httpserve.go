package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/api"
	httpapi "github.com/logbook-dev/logbook/adapters/http"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/replay"
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
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return usageErrorf("--http %s: want host:port, e.g. 127.0.0.1:7070", f.addr)
	}
	if (f.cert == "") != (f.key == "") {
		return usageErrorf("--http-cert and --http-key go together")
	}
	if !isLoopbackHost(host) && f.cert == "" {
		return usageErrorf("--http %s is not a loopback address: give --http-cert and --http-key (TLS); clients then need a token from http-tokens.json in the data dir", f.addr)
	}
	if f.cert != "" {
		if _, err := tls.LoadX509KeyPair(f.cert, f.key); err != nil {
			return fmt.Errorf("--http-cert %s, --http-key %s: %w", f.cert, f.key, err)
		}
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// httpServer is the HTTP API of a running serve: its Server, its metrics
// and its listener.
type httpServer struct {
	api     *httpapi.Server
	metrics *httpapi.Metrics
	l       net.Listener
	hs      *http.Server
	tls     bool
}

// newHTTP opens the HTTP listener of f and the Server over b's log and
// store, with reviews (the gate) answering a person's verdicts.
func newHTTP(f httpFlags, dd dataDir, b *backend, store *projections.Store, svc *api.Service, reviews httpapi.Reviews) (*httpServer, error) {
	host, _, _ := net.SplitHostPort(f.addr)
	loop := isLoopbackHost(host)
	m := httpapi.NewMetrics(httpapi.MetricsOptions{
		SpoolDepth: func() (int, error) { return spoolDepth(svc.Spool.Dir()) },
		ConsumersPending: func(ctx context.Context) (map[string]uint64, error) {
			return consumersPending(ctx, b)
		},
		PausedSince: b.pausedSince,
		Quarantined: func() uint64 { _, n := b.log.Quarantined(); return n },
	})
	cl, err := newCommandClient(b)
	if err != nil {
		return nil, err
	}
	// Observations and verdicts posted over HTTP are redacted by the
	// rules the hook and the import use: the data dir's redact.txt over
	// the built-in ones, as it is at each use.
	parser, err := b.parser()
	if err != nil {
		return nil, err
	}
	cfg := httpapi.Config{
		Log: b.log, Store: store, Reg: b.reg, Host: hostname(), Output: cl, Metrics: m, Loopback: loop, Reviews: reviews,
		Redactor: parser.Redactor(), LogState: svc.LogState,
		Prices: func() (*usage.Table, error) { return usage.LoadTable(dd.path("prices.json")) },
		Timeline: func(ctx context.Context, id string, cmds []string) (any, error) {
			return replay.SessionTimeline(ctx, b.log, id, cmds)
		},
	}
	// Every address has tokens; on a loopback one, a client of serve's
	// own user or root needs none (the peer's uid, read from the kernel's
	// socket tables once per connection), as on hook.sock: another user
	// is served only with a token given to them.
	if cfg.Tokens, err = httpapi.LoadTokens(dd.path("http-tokens.json")); err != nil {
		return nil, err
	}
	if loop {
		cfg.TrustedUIDs = trustedUIDs()
	}
	api, err := httpapi.New(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", f.addr, err)
	}
	hs := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnContext: httpapi.PeerContext}
	return &httpServer{api: api, metrics: m, l: l, hs: hs, tls: f.cert != ""}, nil
}

// trustedUIDs are the uids whose loopback clients need no token:
// serve's effective uid and root.
func trustedUIDs() []uint32 {
	u := []uint32{0}
	if e := os.Geteuid(); e > 0 {
		u = append(u, uint32(e))
	}
	return u
}

// run serves until ctx is done.
func (h *httpServer) run(ctx context.Context, f httpFlags) error {
	errc := make(chan error, 2)
	go func() { errc <- h.api.Run(ctx) }()
	go func() {
		var err error
		if h.tls {
			err = h.hs.ServeTLS(h.l, f.cert, f.key)
		} else {
			err = h.hs.Serve(h.l)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	h.hs.Shutdown(sctx) // streams never end by themselves: Close cuts them
	h.hs.Close()
	err := errors.Join(<-errc, <-errc)
	return err
}

// url is where the board is.
func (h *httpServer) url() string {
	scheme := "http"
	if h.tls {
		scheme = "https"
	}
	return scheme + "://" + h.l.Addr().String() + "/"
}

// spoolDepth counts the hook payloads waiting in the spool directory.
func spoolDepth(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if name := e.Name(); e.Type().IsRegular() && strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
			n++
		}
	}
	return n, nil
}

// consumersPending returns the pending count of each durable consumer
// of the stream (ephemeral readers come and go and are left out).
func consumersPending(ctx context.Context, b *backend) (map[string]uint64, error) {
	js, err := jetstream.New(b.nc)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	lister := st.ListConsumers(ctx)
	for info := range lister.Info() {
		if info.Config.Durable != "" {
			out[info.Name] = info.NumPending
		}
	}
	return out, lister.Err()
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
