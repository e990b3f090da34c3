package otel

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	httpapi "github.com/logbook-dev/logbook/adapters/http"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// DefaultMaxBody is a Receiver's cap on a request's body when it names
// none: 16 MiB, compressed and again decompressed. Claude Code exports
// its events every 5 s (OTEL_LOGS_EXPORT_INTERVAL [MON]); a batch is far
// below it.
const DefaultMaxBody = 16 << 20

// readTimeout bounds how long a request may take to send its headers and
// body: an exporter on the same machine sends DefaultMaxBody in far less;
// a request that announces a body and never sends it is cut off.
const readTimeout = time.Minute

// Paths the Receiver answers (OTLP/HTTP's default paths).
const (
	PathLogs    = "/v1/logs"
	PathMetrics = "/v1/metrics"
	PathTraces  = "/v1/traces"
)

// Content types of OTLP/HTTP.
const (
	typeProto = "application/x-protobuf"
	typeJSON  = "application/json"
)

// Receiver takes OTLP exports of Claude Code's and Codex CLI's telemetry
// (OTLP/HTTP: POST /v1/logs and /v1/traces, Handler and Serve; OTLP/gRPC:
// ServeGRPC) and appends
// each usable log record, and each span of Claude Code, as one
// observation (events.OTelObserved) and the decisions it causes on the
// session it names, a run of one session's records in one atomic batch,
// through the agent's ingester. The same record or span sent again
// appends nothing (its key, see Parser.Logs and Parser.Traces).
//
// A request is refused whole, appending nothing, with 400 when its body
// does not decode as an ExportLogsServiceRequest (or, on /v1/traces, an
// ExportTraceServiceRequest; protobuf or JSON, by its Content-Type) or
// holds over MaxRecords records, 413 when it is over MaxBody (compressed
// or not), 415 for another content type or encoding. A record that cannot
// be placed on a session (Rejected) or that the reducer refuses is left
// out, counted in the answer's partial_success with the first one's place
// and reason; the others are appended. A failure of the log answers 503,
// and the exporter's retry appends only what is missing.
//
// POST /v1/metrics is taken and dropped (200): the events carry what the
// metrics count.
type Receiver struct {
	Parser *Parser
	// Claude and Codex decide and append the observations of each
	// agent's sessions; a nil one refuses its agent's records.
	Claude, Codex *ingest.Ingester
	// MaxBody is the cap on a body in bytes (0: DefaultMaxBody).
	MaxBody int64
	// Clock is the receipt clock (nil: time.Now).
	Clock func() time.Time
	// Say receives what the receiver says (format, args), from request
	// goroutines; nil: nothing is said.
	Say func(format string, args ...any)
	// TrustedUIDs, when not nil, are the only users whose processes may
	// send: a request whose connection's peer (adapters/http's PeerUID,
	// by the kernel's socket table) is another user's, or cannot be
	// told, is refused (HTTP 403, gRPC PermissionDenied), as the board
	// refuses another user's loopback client without a token. nil takes
	// any loopback client (tests over httptest).
	TrustedUIDs []uint32
}

// peerAllowed returns nil when TrustedUIDs is nil or the peer of a
// connection from client to server is one of them; else why not.
func (r *Receiver) peerAllowed(client, server net.Addr) error {
	if r.TrustedUIDs == nil {
		return nil
	}
	c, cerr := addrPort(client)
	s, serr := addrPort(server)
	if err := errors.Join(cerr, serr); err != nil {
		return fmt.Errorf("the sender's user is not known (%v): OpenTelemetry is taken only from serve's own user", err)
	}
	uid, err := httpapi.PeerUID(c, s)
	if err != nil {
		return fmt.Errorf("the sender's user is not known (%v): OpenTelemetry is taken only from serve's own user", err)
	}
	if !slices.Contains(r.TrustedUIDs, uid) {
		return fmt.Errorf("the sender is uid %d, another user: OpenTelemetry is taken only from serve's own user (and root)", uid)
	}
	return nil
}

func addrPort(a net.Addr) (netip.AddrPort, error) {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %v is not TCP", a)
	}
	return t.AddrPort(), nil
}

func (r *Receiver) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

func (r *Receiver) maxBody() int64 {
	if r.MaxBody <= 0 {
		return DefaultMaxBody
	}
	return r.MaxBody
}

func (r *Receiver) say(format string, args ...any) {
	if r.Say != nil {
		r.Say(format, args...)
	}
}

// Handler returns the receiver's HTTP handler. A request whose Host is
// not a loopback name is refused with 403.
func (r *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathLogs, r.export(r.logs))
	mux.HandleFunc("POST "+PathTraces, r.export(r.traces))
	mux.HandleFunc("POST "+PathMetrics, r.drop(func(b []byte, json bool) ([]byte, error) {
		req := pmetricotlp.NewExportRequest()
		if err := unmarshal(req.UnmarshalProto, req.UnmarshalJSON, b, json); err != nil {
			return nil, err
		}
		return marshal(pmetricotlp.NewExportResponse().MarshalProto, pmetricotlp.NewExportResponse().MarshalJSON, json)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The receiver listens on loopback only: a request naming another
		// host is a page that had its name re-pointed here (DNS
		// rebinding), never an exporter.
		if !httpapi.LoopbackHost(req.Host) {
			r.fail(w, req, &httpError{http.StatusForbidden, fmt.Errorf("Host %q is not a loopback name", req.Host)})
			return
		}
		if r.TrustedUIDs != nil {
			local, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
			remote, _ := net.ResolveTCPAddr("tcp", req.RemoteAddr)
			var ra net.Addr
			if remote != nil {
				ra = remote
			}
			if err := r.peerAllowed(ra, local); err != nil {
				r.fail(w, req, &httpError{http.StatusForbidden, err})
				return
			}
		}
		mux.ServeHTTP(w, req)
	})
}

// Listen opens addr (host:port, "127.0.0.1:4318") for Serve; the error
// names the flag (--otlp) and the address, and says so when the port is
// taken.
func Listen(addr string) (net.Listener, error) { return listen("otlp", addr) }

// ListenGRPC opens addr (host:port, "127.0.0.1:4317") for ServeGRPC, with
// errors as Listen's naming --otlp-grpc.
func ListenGRPC(addr string) (net.Listener, error) { return listen("otlp-grpc", addr) }

func listen(flag, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--%s %s: the port is taken (an OpenTelemetry collector, or another program, listens there): give serve --%s another address", flag, addr, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flag, addr, err)
	}
	return l, nil
}

// Serve answers OTLP/HTTP on l until ctx is done, then closes it and
// waits up to 5 s for the requests under way. It returns nil once ctx is
// done, else the server's error.
func (r *Receiver) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("otlp: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-done
	return nil
}

// httpError is a refusal with its status.
type httpError struct {
	code int
	err  error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// body reads req's body within the cap, gunzipped when its encoding says
// gzip, and tells whether it is JSON (else protobuf).
func (r *Receiver) body(w http.ResponseWriter, req *http.Request) ([]byte, bool, error) {
	limit := r.maxBody()
	if n := len(req.Header.Values("Content-Type")); n > 1 {
		return nil, false, &httpError{http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type given %d times: want one, %s or %s", n, typeProto, typeJSON)}
	}
	ct, params, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	var isJSON bool
	switch ct {
	case typeProto:
	case typeJSON:
		isJSON = true
		// OTLP/JSON is UTF-8 (RFC 8259 8.1): a body said to be in
		// another charset is not read as if it were not.
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return nil, false, &httpError{http.StatusUnsupportedMediaType, fmt.Errorf("content type %s; charset %q: want utf-8 or none", ct, cs)}
		}
	default:
		return nil, false, &httpError{http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: want %s or %s", ct, typeProto, typeJSON)}
	}
	tooLarge := &httpError{http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", limit)}
	if req.ContentLength > limit {
		return nil, false, tooLarge
	}
	var rd io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, false, &httpError{http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)}
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, false, &httpError{http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", enc)}
	}
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if _, over := errors.AsType[*http.MaxBytesError](err); over || int64(len(b)) > limit {
		return nil, false, tooLarge
	}
	if err != nil {
		return nil, false, &httpError{http.StatusBadRequest, fmt.Errorf("read body: %w", err)}
	}
	return b, isJSON, nil
}

func unmarshal(proto, json func([]byte) error, b []byte, isJSON bool) error {
	var err error
	if isJSON {
		err = json(b)
	} else {
		err = proto(b)
	}
	if err != nil {
		kind := "protobuf"
		if isJSON {
			kind = "JSON"
		}
		return &httpError{http.StatusBadRequest, fmt.Errorf("body is not an OTLP export request in %s: %s", kind, decodeFault(err))}
	}
	return nil
}

// decodeFault returns a decoder's error without the excerpt of the body
// some decoders quote ("error found in #N byte of ...|…|, bigger context
// …"): a body may hold secrets, and its bytes belong neither in serve's
// log nor in the answer. What is left is cut to 120 bytes, with every
// byte that is not printable ASCII shown as \xNN.
func decodeFault(err error) string {
	m := err.Error()
	for _, cut := range []string{", error found in", "error found in", "|", "bigger context"} {
		if i := strings.Index(m, cut); i >= 0 {
			m = m[:i]
		}
	}
	var b strings.Builder
	for i := 0; i < len(m) && b.Len() < 120; i++ {
		if c := m[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	return strings.TrimRight(b.String(), " ,:")
}

func marshal(proto, json func() ([]byte, error), isJSON bool) ([]byte, error) {
	if isJSON {
		return json()
	}
	return proto()
}

// fail answers err: its status when it is an *httpError, else 503.
func (r *Receiver) fail(w http.ResponseWriter, req *http.Request, err error) {
	code := http.StatusServiceUnavailable
	if he, ok := errors.AsType[*httpError](err); ok {
		code = he.code
	}
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	r.say("otlp: %s %s: %v", req.Method, req.URL.Path, err)
	http.Error(w, "logbook otlp: "+err.Error(), code)
}

func reply(w http.ResponseWriter, b []byte, isJSON bool) {
	ct := typeProto
	if isJSON {
		ct = typeJSON
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// drop answers a signal Logbook takes and does not keep: it checks the
// body decodes, then answers an empty success.
func (r *Receiver) drop(answer func(b []byte, json bool) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		b, isJSON, err := r.body(w, req)
		if err != nil {
			r.fail(w, req, err)
			return
		}
		out, err := answer(b, isJSON)
		if err != nil {
			r.fail(w, req, err)
			return
		}
		reply(w, out, isJSON)
	}
}

// export answers an OTLP/HTTP export of one signal: it reads the body,
// then answer decodes it, takes it and returns the response's bytes in
// the request's encoding.
func (r *Receiver) export(answer func(ctx context.Context, b []byte, isJSON bool) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		b, isJSON, err := r.body(w, req)
		if err != nil {
			r.fail(w, req, err)
			return
		}
		out, err := answer(req.Context(), b, isJSON)
		if err != nil {
			r.fail(w, req, err)
			return
		}
		reply(w, out, isJSON)
	}
}

func (r *Receiver) logs(ctx context.Context, b []byte, isJSON bool) ([]byte, error) {
	er := plogotlp.NewExportRequest()
	if err := unmarshal(er.UnmarshalProto, er.UnmarshalJSON, b, isJSON); err != nil {
		return nil, err
	}
	resp, err := r.ExportLogs(ctx, er)
	if err != nil {
		return nil, err
	}
	return marshal(resp.MarshalProto, resp.MarshalJSON, isJSON)
}

func (r *Receiver) traces(ctx context.Context, b []byte, isJSON bool) ([]byte, error) {
	er := ptraceotlp.NewExportRequest()
	if err := unmarshal(er.UnmarshalProto, er.UnmarshalJSON, b, isJSON); err != nil {
		return nil, err
	}
	resp, err := r.ExportTraces(ctx, er)
	if err != nil {
		return nil, err
	}
	return marshal(resp.MarshalProto, resp.MarshalJSON, isJSON)
}

// ExportLogs takes the log records of er (Parser.Logs) and appends what
// is new of them (take), whatever the transport. The response's partial
// success counts the records left out, with the first one's place and
// reason. Errors: an *httpError of 400 for a request over MaxRecords;
// the log's failure (503), after which a retry appends only what is
// missing.
func (r *Receiver) ExportLogs(ctx context.Context, er plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	resp := plogotlp.NewExportResponse()
	items, rejected, err := r.Parser.Logs(er.Logs())
	if err != nil {
		return resp, &httpError{http.StatusBadRequest, err}
	}
	if rejected, err = r.take(ctx, items, rejected); err != nil {
		return resp, err
	}
	if len(rejected) > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedLogRecords(int64(len(rejected)))
		ps.SetErrorMessage(fmt.Sprintf("%d log records refused; first: %s: %v", len(rejected), rejected[0].Where, rejected[0].Err))
		r.say("otlp: %s", ps.ErrorMessage())
	}
	return resp, nil
}

// ExportTraces takes the spans of er (Parser.Traces) as ExportLogs takes
// log records, with the same errors; the partial success counts spans.
func (r *Receiver) ExportTraces(ctx context.Context, er ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	resp := ptraceotlp.NewExportResponse()
	items, rejected, err := r.Parser.Traces(er.Traces())
	if err != nil {
		return resp, &httpError{http.StatusBadRequest, err}
	}
	if rejected, err = r.take(ctx, items, rejected); err != nil {
		return resp, err
	}
	if len(rejected) > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(len(rejected)))
		ps.SetErrorMessage(fmt.Sprintf("%d spans refused; first: %s: %v", len(rejected), rejected[0].Where, rejected[0].Err))
		r.say("otlp: %s", ps.ErrorMessage())
	}
	return resp, nil
}

// take appends items in order, a run of one session's items (up to
// maxRun) as one batch (ObserveRun); when the reducer refuses one of a
// run, each of the run alone (Observe), so the others go in. It returns
// rejected with the items refused added, or the log's failure naming
// the item it came at: what came before is in, and a retry appends only
// what is missing.
func (r *Receiver) take(ctx context.Context, items []Item, rejected []Rejected) ([]Rejected, error) {
	for len(items) > 0 {
		// A run of one session's records is one batch.
		n := 1
		for n < len(items) && n < maxRun && items[n].Agg == items[0].Agg && items[n].Agent == items[0].Agent {
			n++
		}
		run := items[:n]
		items = items[n:]
		err := r.ObserveRun(ctx, run)
		if errors.Is(err, events.ErrRejected) || errors.Is(err, events.ErrMalformed) {
			// One of them is refused: each alone, so the others go in.
			for _, it := range run {
				err := r.Observe(ctx, it)
				if errors.Is(err, events.ErrRejected) || errors.Is(err, events.ErrMalformed) {
					rejected = append(rejected, Rejected{Where: it.Where, Err: err})
					continue
				}
				if err != nil {
					return rejected, fmt.Errorf("%s: %w", it.Where, err)
				}
			}
			continue
		}
		if err != nil {
			return rejected, fmt.Errorf("%s: %w", run[0].Where, err)
		}
	}
	return rejected, nil
}

// maxRun is the most records of one session appended as one batch: each
// record's observation and the decisions it causes (a few events) stay
// within events.MaxBatch.
const maxRun = 100

// reg makes the observations' envelopes: made on first use, not when
// the package loads, so that a process that receives nothing (every
// command of the logbook binary but serve) does not compile one.
var reg = sync.OnceValue(events.NewRegistry)

// ObserveRun appends the observations of run, records of one session
// (run[i].Agg and Agent all equal) in order, each with the decisions it
// causes, as one atomic batch: as Observe does each, but a record the
// session has seen, or one seen earlier in run, appends nothing. A
// failure of the log appends nothing of run; the reducer's refusal of a
// record (wrapping events.ErrRejected) appends nothing of run, or, of a
// record after the first, only the first's batch: the caller then takes
// each record alone, and the first is seen.
func (r *Receiver) ObserveRun(ctx context.Context, run []Item) error {
	if len(run) == 0 {
		return nil
	}
	in := r.Claude
	if run[0].Agent == AgentCodex {
		in = r.Codex
	}
	if in == nil {
		return fmt.Errorf("%w: no ingester for %s", events.ErrRejected, run[0].Agent)
	}
	now := r.now()
	first, firstAt := r.payload(run[0], now)
	then := func(st session.State) (events.Decision, error) {
		var out events.Decision
		for _, it := range run[1:] {
			p, at := r.payload(it, now)
			o, _ := events.Observed(p)
			if st.Seen(o) {
				continue
			}
			env := reg().New(p)
			bound, _ := events.BoundTime(at, now)
			env.ID, env.Agg, env.At = ulid.Make(), it.Agg, bound.UTC().Truncate(time.Microsecond)
			env = st.Account(env) // its usage's evidence, from st
			decs, err := session.Decide(st, session.Observe{Obs: env})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", it.Where, err)
			}
			for _, e := range append([]events.Envelope{env}, decs...) {
				e.Ver = st.Ver + 1
				st = session.Evolve(st, e)
				out = append(out, e)
			}
		}
		return out, nil
	}
	_, _, err := in.ObserveThen(ctx, run[0].Agg, ulid.Make(), firstAt, first, then)
	return err
}

// payload returns it.Obs, received at now, as the payload
// stored, and the time it is dated by.
func (r *Receiver) payload(it Item, now time.Time) (events.Payload, time.Time) {
	at := it.At
	if at.IsZero() {
		at = now
	}
	o := it.Obs
	o.Received, o.Live = now.UTC().Truncate(time.Microsecond), true
	return events.OTelObserved{Observation: o}, at
}

// Observe appends it.Obs, dated by the record's own time
// (bounded by the clock, events.BoundTime; its receipt when it has none)
// and marked received now and Live, with the decisions it causes, as one
// batch on it.Agg through the agent's ingester (ingest.Ingester.Observe).
// A record the session has seen appends nothing. Errors: the ingester's
// (events.ErrRejected for a refusal), or one naming an agent with no
// ingester.
func (r *Receiver) Observe(ctx context.Context, it Item) error {
	in := r.Claude
	if it.Agent == AgentCodex {
		in = r.Codex
	}
	if in == nil {
		return fmt.Errorf("%w: no ingester for %s", events.ErrRejected, it.Agent)
	}
	p, at := r.payload(it, r.now())
	_, _, err := in.Observe(ctx, it.Agg, ulid.Make(), at, p)
	return err
}
