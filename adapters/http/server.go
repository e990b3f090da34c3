package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Errors the handlers map to HTTP statuses (see status).
var (
	errBadRequest   = errors.New("bad request")
	errUnauthorized = errors.New("unauthorized")
	errForbidden    = errors.New("forbidden")
	errBusy         = errors.New("busy")
	errUnavailable  = errors.New("not available")
	errTooLarge     = errors.New("too large")
	errMethod       = errors.New("method not allowed")
)

// OutputReader reads a command's stored output; *worker.Client is one.
// Watch calls fn with each chunk at or after opts.After, in order, and
// returns the command's state; an error fn returns ends it and is
// returned.
type OutputReader interface {
	Watch(ctx context.Context, id string, opts worker.WatchOptions, fn func(worker.Chunk) error) (command.State, error)
}

// Timeline returns the audit timeline of session id and of the commands
// run for it (ids, in request order) as JSON-encodable items, oldest first:
// replay.SessionTimeline in the binary.
type Timeline func(ctx context.Context, id string, commands []string) (any, error)

// Config is what a Server answers from. Log, Store and Reg are required;
// a nil Timeline, Output or Reviews answers its endpoints 501.
type Config struct {
	Log   events.Log         // read for /v1/events and the stream; appended to by observations
	Store *projections.Store // the projections the queries read; kept in step by the caller
	Reg   *events.Registry
	Host  string // stamped on the events observations decide

	Timeline Timeline
	Output   OutputReader
	// Reviews records a person's verdict on an open review; nil until the
	// review gate is wired in.
	Reviews Reviews
	// Prices returns the price table usage is priced with (the data
	// dir's prices.json over the shipped one, read at each request, as
	// the command line does); nil: the shipped table.
	Prices func() (*usage.Table, error)

	// Tokens, when set, are required of every request (reader for GET,
	// writer for POST), except as TrustedUIDs allows. A server on a
	// loopback address may run without.
	Tokens *Tokens
	// TrustedUIDs, when not nil, are the uids whose processes are served
	// without a valid token: a request that carries none (or a wrong
	// one) is served in full when the client end of its TCP connection
	// is a process of one of them, as PeerContext (which the
	// http.Server must have as its ConnContext) finds it; otherwise it
	// gets 403 (no token) or what Tokens answer. A connection whose peer
	// cannot be found is not trusted. For a loopback server only: over
	// a network the peer's uid is not known.
	TrustedUIDs []uint32
	// Loopback makes the server refuse a Host header that is not a
	// loopback name, so a web page cannot reach it by DNS rebinding.
	Loopback bool

	Metrics *Metrics // nil: /metrics answers 404
	Stream  StreamOptions
	// StreamBuffer is how many of the newest events the live stream keeps
	// (0: DefaultStreamBuffer).
	StreamBuffer int
	Clock        func() time.Time // nil: time.Now
	// BodyTimeout bounds how long a write (POST, PUT) may take to send
	// its body once its headers are in; a request that announces a body
	// and never sends it is cut off there. 0: DefaultBodyTimeout. (A
	// server-wide read timeout would also end the event stream's long
	// answers, so it is set per write.)
	BodyTimeout time.Duration
	// Redactor redacts every string a posted observation or review
	// verdict carries before it is decided and appended (the data dir's
	// redact.txt rules over the built-in ones, as the hook and the
	// transcript import use); nil: redact.Default().
	Redactor *redact.Redactor
	// LogState, when set, reports since when the log has not answered
	// (zero time: it answers) and why; safe for concurrent use. While it
	// does not, a GET that would wait for the projection to catch up with
	// the log answers from the projection as it stands, marked stale
	// (HeaderLogUnavailableSince, HeaderAsOfSeq). Nil: every read waits.
	LogState func() (since time.Time, why string)
	// MeasureCards, when set, measures the workspace diffs of a
	// session's subagent cards in place (workspace.MeasureCards) before
	// GET /v1/sessions/{id} answers them; it runs git, on the request's
	// goroutine. Nil: cards carry no diff.
	MeasureCards func(ctx context.Context, cards []session.Card)
}

// Server is the HTTP API, the SSE stream, the board and the metrics of
// one Logbook server. Create it with New, run Run beside the HTTP server
// that serves Handler.
type Server struct {
	cfg     Config
	log     events.Log
	store   *projections.Store
	hub     *Hub
	metrics *Metrics
	opts    StreamOptions
	clients atomic.Int64
	obs     *observer
	mux     *http.ServeMux
	routes  []route
	// summaryTable is the price table summaries were last priced with
	// (summaryPrices), kept for summaryTableFor.
	summaryTable struct {
		sync.Mutex
		t   *usage.Table
		err error
		at  time.Time
	}
}

// route is one endpoint: the method and path pattern the mux matches.
type route struct{ method, path string }

// New returns a Server over cfg. It starts nothing; Run follows the log.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil || cfg.Store == nil || cfg.Reg == nil {
		return nil, errors.New("httpapi: Log, Store and Reg are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default()
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	s := &Server{cfg: cfg, log: cfg.Log, store: cfg.Store, metrics: cfg.Metrics, opts: cfg.Stream.withDefaults()}
	var tap func(events.Record)
	if cfg.Metrics != nil {
		tap = cfg.Metrics.record
		cfg.Metrics.bind(s)
	}
	s.hub = NewHub(cfg.Log, cfg.StreamBuffer, tap)
	ocfg := cfg
	if cfg.Metrics != nil {
		ocfg.Log = cfg.Metrics.InstrumentLog(cfg.Log)
	}
	s.obs = newObserver(ocfg)
	s.mux = http.NewServeMux()
	s.handle("GET", "/v1/sessions", s.sessions)
	s.handle("GET", "/v1/sessions/{id}", s.session)
	s.handle("GET", "/v1/sessions/{id}/audit", s.audit)
	s.handle("GET", "/v1/sessions/{id}/commands", s.sessionCommands)
	s.handle("GET", "/v1/sessions/{id}/at", s.sessionAt)
	s.handle("GET", "/v1/sessions/{id}/rederive", s.rederive)
	s.handle("GET", "/v1/commands/{id}", s.command)
	s.handle("GET", "/v1/commands/{id}/output", s.output)
	s.handle("GET", "/v1/usage", s.usage)
	s.handle("GET", "/v1/pending", s.pending)
	s.handle("GET", "/v1/workspaces", s.workspaces)
	s.handle("POST", "/v1/reviews/{id}", s.review)
	s.handle("GET", "/v1/events", s.events)
	s.handle("GET", "/v1/stream", s.stream)
	s.handle("GET", "/v1/status", s.status)
	s.handle("POST", "/v1/observations", s.observe)
	s.handle("GET", "/v1/openapi.json", s.openAPI)
	s.mux.HandleFunc("GET /metrics", s.guard(false, s.serveMetrics))
	// The board's own files hold no data: they are served without a
	// token, so its page can ask for one.
	s.mux.HandleFunc("GET /", s.hostGuard(s.board))
	return s, nil
}

// methodNotAllowed answers 405 naming the methods allowed.
func methodNotAllowed(allowed []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		code, name := status(errMethod)
		writeJSON(w, code, apiError{Error: fmt.Sprintf("method %s not allowed on %s: it takes %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")), Code: name})
	}
}

func (s *Server) handle(method, path string, h http.HandlerFunc) {
	s.routes = append(s.routes, route{method, path})
	s.mux.HandleFunc(method+" "+path, s.guard(method == "POST", s.knownQuery(method+" "+path, h)))
}

// Run follows the log for the live stream and the metrics until ctx is
// done; it returns nil then.
func (s *Server) Run(ctx context.Context) error { return s.hub.Run(ctx) }

// Handler returns the server's HTTP handler. A method a path does not
// take is answered 405 with Allow, and an API path no endpoint has (any
// path under /v1/, "/v1/" and "/v1/sessions/" included) 404, both in the
// API's error shape (net/http's own answers are plain text).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1"
		// The board's "GET /" answers every other GET path, but no API path.
		routed := func(pattern string) bool { return pattern != "" && !(api && pattern == "GET /") }
		_, pattern := s.mux.Handler(r)
		if routed(pattern) {
			s.mux.ServeHTTP(w, r)
			return
		}
		var allowed []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			r2 := r.Clone(r.Context())
			r2.Method = m
			if _, p := s.mux.Handler(r2); routed(p) {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) == 0 && pattern != "" && !api {
			s.mux.ServeHTTP(w, r) // the board answers an unknown path
			return
		}
		s.guard(false, func(w http.ResponseWriter, r *http.Request) {
			if len(allowed) == 0 {
				s.fail(w, r, errNotFound(r.URL.Path))
				return
			}
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			s.fail(w, r, fmt.Errorf("%w: %s %s: this path takes %s", errMethod, r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		})(w, r)
	})
}

// DefaultBodyTimeout is Config.BodyTimeout's default.
const DefaultBodyTimeout = 30 * time.Second

// guard checks the Host header on a loopback server, the token when one
// is required, and, for writes, that the body is JSON from a page of this
// origin (a cross-site form cannot post).
func (s *Server) guard(write bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Loopback && !LoopbackHost(r.Host) {
			s.fail(w, r, fmt.Errorf("%w: Host %q is not a loopback name", errForbidden, r.Host))
			return
		}
		if err := s.authorize(r, write); err != nil {
			s.fail(w, r, err)
			return
		}
		if write {
			// Best effort: a writer without deadlines (a test's recorder)
			// reads as before.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
			// A media type's name is case-insensitive (RFC 9110 8.3.1):
			// "Application/JSON; charset=utf-8" is JSON, and
			// "application/jsonx" is not.
			if err := jsonContentType(r.Header); err != nil {
				s.fail(w, r, fmt.Errorf("%w: %v", errBadRequest, err))
				return
			}
			if os := r.Header.Values("Origin"); len(os) > 1 {
				s.fail(w, r, fmt.Errorf("%w: Origin given %d times", errForbidden, len(os)))
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !SameOrigin(o, r.Host) {
				s.fail(w, r, fmt.Errorf("%w: Origin %q is not this server", errForbidden, o))
				return
			}
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h(w, r)
	}
}

// hostGuard checks the Host header on a loopback server only.
func (s *Server) hostGuard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Loopback && !LoopbackHost(r.Host) {
			s.fail(w, r, fmt.Errorf("%w: Host %q is not a loopback name", errForbidden, r.Host))
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h(w, r)
	}
}

// authorize returns nil when r may do what it asks: it carries a token
// of a role that may (Tokens), or, with TrustedUIDs, its connection's
// peer is a process of a trusted uid. Else an error wrapping
// errUnauthorized or errForbidden that says what is wanted.
func (s *Server) authorize(r *http.Request, write bool) error {
	var terr error
	if s.cfg.Tokens != nil {
		if terr = s.cfg.Tokens.check(r, write); terr == nil {
			return nil
		}
	}
	if s.cfg.TrustedUIDs == nil {
		return terr
	}
	uid, err := peerUID(r)
	if err == nil && slices.Contains(s.cfg.TrustedUIDs, uid) {
		return nil
	}
	if bearer(r) != "" && terr != nil {
		return terr // a token was sent: what is wrong with it
	}
	peer := fmt.Sprintf("this connection's peer is uid %d", uid)
	if err != nil {
		peer = "this connection's peer uid is not known (" + err.Error() + ")"
	}
	return fmt.Errorf("%w: loopback clients of another user need a token (Authorization: Bearer …, the reader's or writer's from http-tokens.json in the data dir); %s", errForbidden, peer)
}

// loopbackHost reports whether host (a Host header, with or without a
// port) names the loopback interface.
func LoopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin (scheme://host[:port]) is host.
func SameOrigin(origin, host string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(rest, host)
}

// Roles a token grants.
const (
	RoleReader = "reader" // GET everything
	RoleWriter = "writer" // GET and POST
)

// Tokens are the bearer tokens of the HTTP API, one per role, as stored
// in the data dir (LoadTokens). A request carries one in
// "Authorization: Bearer <token>" or in the logbook_token cookie (the
// board's way, as EventSource cannot set headers).
type Tokens struct {
	Reader string `json:"reader"`
	Writer string `json:"writer"`
}

// check returns nil when r carries a token of a role that may do what
// it asks (write: the writer's only), else an error wrapping
// errUnauthorized (no or unknown token) or errForbidden (reader's token
// on a write).
func (t *Tokens) check(r *http.Request, write bool) error {
	tok := bearer(r)
	eq := func(a, b string) bool { return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	switch {
	case tok == "":
		return fmt.Errorf("%w: send Authorization: Bearer <token> (the reader's or writer's token in http-tokens.json in the data dir)", errUnauthorized)
	case eq(tok, t.Writer):
		return nil
	case eq(tok, t.Reader):
		if write {
			return fmt.Errorf("%w: the reader's token cannot write; use the writer's", errForbidden)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown token", errUnauthorized)
	}
}

// bearer returns the token r carries in "Authorization: Bearer" or in
// the logbook_token cookie; "" when none.
func bearer(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		if c, err := r.Cookie("logbook_token"); err == nil {
			tok = c.Value
		}
	}
	return tok
}

// apiError is every error's body.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"` // bad_request, unauthorized, forbidden, not_found, method_not_allowed, too_large, rejected, conflict, busy, not_implemented, unavailable, internal
}

// status returns err's HTTP status and code.
func status(err error) (int, string) {
	switch {
	case errors.Is(err, errBadRequest), errors.Is(err, events.ErrMalformed):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, events.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, events.ErrRejected):
		return http.StatusUnprocessableEntity, "rejected"
	case errors.Is(err, events.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable, "busy"
	case errors.Is(err, errUnavailable):
		return http.StatusNotImplemented, "not_implemented"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "unavailable"
	default:
		return http.StatusInternalServerError, "internal"
	}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, name := status(err)
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="logbook"`)
	}
	// An error may quote what the request carried (a field's value, a
	// JSON member's name): the answer shows it redacted.
	writeJSON(w, code, apiError{Error: s.cfg.Redactor.Redact(message(err)), Code: name})
}

// sentinelWords are the texts of the sentinels errors wrap, which the
// code already says, and what a reader sees in their place ("" when the
// detail after it says it).
var sentinelWords = []struct{ text, say string }{
	{errBadRequest.Error(), ""},
	{errMethod.Error(), ""},
	{errTooLarge.Error(), ""},
	{events.ErrNotFound.Error(), "not found"},
	{events.ErrRejected.Error(), "refused"},
	{events.ErrMalformed.Error(), "malformed"},
	{events.ErrConflict.Error(), "changed meanwhile, try again"},
}

// message is err's text without the package prefixes of the sentinels
// it wraps: "session x: events: not found" reads "session x: not found",
// "bad request: body: …" reads "body: …".
func message(err error) string {
	msg := err.Error()
	for _, p := range sentinelWords {
		if p.say == "" || p.text != events.ErrNotFound.Error() {
			msg = strings.ReplaceAll(msg, p.text+": ", "")
		}
		if p.say != "" {
			msg = strings.ReplaceAll(msg, p.text, p.say)
		}
	}
	return msg
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(apiError{Error: err.Error(), Code: "internal"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// errNotFound reports a path no endpoint answers.
func errNotFound(path string) error {
	return fmt.Errorf("%w: no endpoint %s (see /v1/openapi.json)", events.ErrNotFound, path)
}

// jsonContentType returns why h's Content-Type does not say JSON as the
// API reads it, nil when it does: one Content-Type header, naming the
// media type application/json in any case (RFC 9110 8.3.1), with no
// charset or charset utf-8 (RFC 8259 8.1: JSON between systems is
// UTF-8; a body said to be in another is not read as if it were not).
func jsonContentType(h http.Header) error {
	cts := h.Values("Content-Type")
	if len(cts) > 1 {
		return fmt.Errorf("Content-Type given %d times: want one, application/json", len(cts))
	}
	ct := ""
	if len(cts) == 1 {
		ct = cts[0]
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q: want application/json", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("Content-Type %q: charset %q: JSON is read as UTF-8 only (charset utf-8, or none)", ct, cs)
	}
	return nil
}
