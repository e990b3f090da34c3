package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/api"
	httpapi "github.com/logbook-dev/logbook/adapters/http"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/usage"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// DefaultHTTPAddr is where serve's HTTP surface (the board, the API and
// /metrics) listens when serve --http and $LOGBOOK_HTTP name no other
// address: a loopback port, so only this machine's users reach it.
const DefaultHTTPAddr = "127.0.0.1:7070"

// HTTPConfig is what the HTTP surface of serve (the API, the live board
// and /metrics) is made of. Every field but Cert, Key, Reviews, Output
// and PausedSince is required.
type HTTPConfig struct {
	// Addr is the host:port to listen on (serve --http), checked by the
	// caller: a loopback one, or any with Cert and Key.
	Addr string
	// Cert and Key are the TLS certificate and key files (PEM); both
	// empty: plain HTTP.
	Cert, Key string
	// DataDir holds prices.json and http-tokens.json.
	DataDir string
	Log     *natslog.Log
	Conn    *nats.Conn // for /metrics' consumer figures
	Store   *projections.Store
	Reg     *events.Registry
	// Service is serve's API service: its spool and its log state.
	Service *api.Service
	// Reviews answers a person's verdicts (the gate); nil: 501.
	Reviews httpapi.Reviews
	// Output reads a command's output (a worker client); nil: 501.
	Output httpapi.OutputReader
	// Redactor redacts observations and verdicts posted over HTTP.
	Redactor *redact.Redactor
	// PausedSince is since when appends are paused by a full disk (zero:
	// not paused); nil: never.
	PausedSince func() time.Time
	// Listener, if not nil, is Addr's listener, opened by ListenHTTP
	// before anything else (NewHTTP takes it over); nil: NewHTTP opens
	// it.
	Listener net.Listener
}

// ListenHTTP opens serve's HTTP listener on addr. A port another process
// holds is an error saying so and how to go on ("--http ADDR: the port is
// taken …"); any other is "--http ADDR: ERR".
func ListenHTTP(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--http %s: the port is taken (another logbook serve, or another program, listens there): give serve --http with another address, or --http off", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	return l, nil
}

// HTTP is the HTTP surface of a running serve: its Server, its metrics
// and its listener, open from NewHTTP until Run returns (or, if Run is
// never called, until Close).
type HTTP struct {
	api *httpapi.Server
	// Metrics is the surface's /metrics, where serve's parts count what
	// they do; safe for concurrent use.
	Metrics *httpapi.Metrics
	l       net.Listener
	hs      *http.Server
	cfg     HTTPConfig
}

// IsLoopback reports whether h, a host without a port, is "localhost"
// (in any case) or a loopback IP address.
func IsLoopback(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// NewHTTP opens the listener of cfg.Addr (or takes cfg.Listener) and the Server over cfg's log
// and store. Every address has tokens (http-tokens.json); on a loopback
// one, a client of serve's own user or root needs none (the peer's uid,
// read from the kernel's socket tables once per connection), as on
// hook.sock: another user is served only with a token given to them. A
// listen error is "--http ADDR: ERR".
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	host, _, _ := net.SplitHostPort(cfg.Addr)
	loop := IsLoopback(host)
	pausedSince := cfg.PausedSince
	if pausedSince == nil {
		pausedSince = func() time.Time { return time.Time{} }
	}
	m := httpapi.NewMetrics(httpapi.MetricsOptions{
		SpoolDepth: func() (int, error) { return SpoolDepth(cfg.Service.Spool.Dir()) },
		ConsumersPending: func(ctx context.Context) (map[string]uint64, error) {
			return ConsumersPending(ctx, cfg.Conn)
		},
		PausedSince: pausedSince,
		Quarantined: func() uint64 { _, n := cfg.Log.Quarantined(); return n },
	})
	hostName, _ := os.Hostname()
	hc := httpapi.Config{
		Log: cfg.Log, Store: cfg.Store, Reg: cfg.Reg, Host: hostName, Metrics: m, Loopback: loop, Reviews: cfg.Reviews,
		Redactor: cfg.Redactor, LogState: cfg.Service.LogState,
		Prices: func() (*usage.Table, error) { return usage.LoadTable(filepath.Join(cfg.DataDir, "prices.json")) },
		Timeline: func(ctx context.Context, id string, cmds []string) (any, error) {
			return replay.SessionTimeline(ctx, cfg.Log, id, cmds)
		},
		MeasureCards: func(ctx context.Context, cards []session.Card) {
			// A diff that cannot be measured is left out of its card:
			// the card shows without it.
			wss, err := cfg.Store.Workspaces()
			if err != nil {
				return
			}
			ps, err := cfg.Store.Projects()
			if err != nil {
				return
			}
			wsadapter.MeasureCards(ctx, cards, wss, ps)
		},
	}
	if cfg.Output != nil {
		hc.Output = cfg.Output
	}
	var err error
	if hc.Tokens, err = httpapi.LoadTokens(filepath.Join(cfg.DataDir, "http-tokens.json")); err != nil {
		return nil, err
	}
	if loop {
		hc.TrustedUIDs = TrustedUIDs()
	}
	srv, err := httpapi.New(hc)
	if err != nil {
		return nil, err
	}
	l := cfg.Listener
	if l == nil {
		if l, err = ListenHTTP(cfg.Addr); err != nil {
			return nil, err
		}
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnContext: httpapi.PeerContext}
	return &HTTP{api: srv, Metrics: m, l: l, hs: hs, cfg: cfg}, nil
}

// TrustedUIDs are the uids whose loopback clients need no token:
// the process's effective uid and root.
func TrustedUIDs() []uint32 {
	u := []uint32{0}
	if e := os.Geteuid(); e > 0 {
		u = append(u, uint32(e))
	}
	return u
}

// Run serves until ctx is done, then shuts the server down (2 s for
// requests to finish, then open streams are cut) and returns the
// Server's and the listener's errors, joined.
func (h *HTTP) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- h.api.Run(ctx) }()
	go func() {
		var err error
		if h.cfg.Cert != "" {
			err = h.hs.ServeTLS(h.l, h.cfg.Cert, h.cfg.Key)
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
	return errors.Join(<-errc, <-errc)
}

// Close closes the listener; for a surface whose Run was never called.
func (h *HTTP) Close() error { return h.l.Close() }

// URL is where the board is: "http://ADDR/" or, with TLS, "https://ADDR/".
func (h *HTTP) URL() string {
	scheme := "http"
	if h.cfg.Cert != "" {
		scheme = "https"
	}
	return scheme + "://" + h.l.Addr().String() + "/"
}

// Observe wraps handler, a handler of verb, so that /metrics counts its calls,
// their time and their errors. A nil *HTTP returns h as it is.
func (h *HTTP) Observe(verb string, handler Handler) Handler {
	if h == nil {
		return handler
	}
	return func(ctx context.Context, data []byte) (any, error) {
		start := time.Now()
		v, err := handler(ctx, data)
		h.Metrics.ObserveAPI(verb, time.Since(start), err)
		return v, err
	}
}

// SpoolDepth counts the hook payloads waiting in the spool directory dir
// (regular files named *.json, not hidden). An error is os.ReadDir's.
func SpoolDepth(dir string) (int, error) {
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

// ConsumersPending returns the pending count of each durable consumer
// of the log's stream, by name (ephemeral readers come and go and are
// left out).
func ConsumersPending(ctx context.Context, nc *nats.Conn) (map[string]uint64, error) {
	js, err := jetstream.New(nc)
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

// Handler answers one API verb: a request's payload in, a reply to
// encode as JSON (or an error) out. It is the shape of api.Serve's and
// api.ServeSocket's handle.
type Handler = func(ctx context.Context, data []byte) (any, error)

// ObserveCheckpoint counts a checkpoint outcome ("published", "refused",
// "cosigned") on /metrics; on a nil *HTTP it does nothing.
func (h *HTTP) ObserveCheckpoint(outcome string) {
	if h != nil {
		h.Metrics.ObserveCheckpoint(outcome)
	}
}

// ObserveSpool counts n spooled hook payloads delivered on /metrics; on
// a nil *HTTP it does nothing.
func (h *HTTP) ObserveSpool(n int) {
	if h != nil {
		h.Metrics.ObserveSpool(n)
	}
}
