package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/logbook-dev/logbook/events"
)

// MetricsOptions are the figures Metrics reads at scrape time from parts
// the HTTP server does not own; each may be nil.
type MetricsOptions struct {
	// SpoolDepth returns how many hook payloads wait in the spool.
	SpoolDepth func() (int, error)
	// ConsumersPending returns, per JetStream consumer of the stream, how
	// many messages it has not yet been delivered.
	ConsumersPending func(ctx context.Context) (map[string]uint64, error)
	// LastSeq returns the log's last sequence (the projection lag's
	// reference); nil: the Server's log.
	LastSeq func(ctx context.Context) (uint64, error)
	// PausedSince returns since when appends are paused because a part
	// of the data dir is full or read-only, and the zero time while they
	// go on; nil: never paused.
	PausedSince func() time.Time
	// Quarantined returns how many distinct stored events the server's
	// reads have left out of every fold as unattested (bad or missing
	// signatures, unknown or revoked keys, out of role); nil counts 0.
	Quarantined func() uint64
}

// Metrics is Logbook's Prometheus registry: names logbook_*, base units
// (seconds, bytes), counters ending in _total, plus the Go runtime's
// memory and scheduler figures (go_*) and the process's (process_*:
// resident memory, CPU seconds, open fds). Create it with NewMetrics; the
// counters of stored events are fed by the Server's Hub, the rest by the
// Observe* methods, which are safe for concurrent use.
type Metrics struct {
	reg  *prometheus.Registry
	opts MetricsOptions

	appends       *prometheus.CounterVec // type, outcome
	appendSeconds *prometheus.HistogramVec
	stored        *prometheus.CounterVec // type
	apiSeconds    *prometheus.HistogramVec
	spoolDeliv    *prometheus.CounterVec // outcome
	commands      *prometheus.CounterVec // status
	reviews       *prometheus.CounterVec // outcome
	abandoned     *prometheus.CounterVec // aggregate, reason
	observations  *prometheus.CounterVec // outcome
	streams       prometheus.Gauge
	checkpoints   *prometheus.CounterVec // outcome

	mu  sync.Mutex
	srv *Server
}

// Buckets of the latency histograms, in seconds: 0.5 ms to 10 s.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewMetrics returns a registry with every Logbook metric and the Go
// runtime and process collectors registered.
func NewMetrics(opts MetricsOptions) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), opts: opts}
	f := promauto{m.reg}
	m.appends = f.counters("logbook_appends_total", "Batches appended through this process, by the first event's type and outcome (ok, duplicate, conflict, refused, error).", "type", "outcome")
	m.appendSeconds = f.histograms("logbook_append_seconds", "Time to append one batch through this process, by outcome.", "outcome")
	m.checkpoints = f.counters("logbook_checkpoints_total", "Checkpoints of the log's Merkle tree this process published (outcome published), or as a witness co-signed or refused (cosigned, refused).", "outcome")
	m.stored = f.counters("logbook_events_total", "Events stored on the log (by any process) since this server started, by type.", "type")
	m.apiSeconds = f.histograms("logbook_api_request_seconds", "Time to answer one API request, by verb (hook is the hook's delivery) and outcome (ok, error).", "verb", "outcome")
	m.spoolDeliv = f.counters("logbook_spool_deliveries_total", "Spooled hook payloads the server's drain took, by outcome (delivered).", "outcome")
	m.commands = f.counters("logbook_commands_total", "Commands that reached a status since this server started (requested, started, exited, abandoned, refused, evicted, …).", "status")
	m.reviews = f.counters("logbook_reviews_total", "Review decisions since this server started, by outcome (approved, rejected, timed_out, unavailable).", "outcome")
	m.abandoned = f.counters("logbook_abandonment_marks_total", "Abandonment marks since this server started, by aggregate kind (session entry, command) and reason.", "aggregate", "reason")
	m.observations = f.counters("logbook_http_observations_total", "Observations posted to /v1/observations, by outcome (ok, refused, error).", "outcome")
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "logbook_http_streams", Help: "Open SSE streams."})
	m.reg.MustRegister(m.streams)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "logbook_events_quarantined_total", Help: "Stored events the server's reads left out of every fold as unattested, since it started.",
	}, func() float64 {
		if opts.Quarantined == nil {
			return 0
		}
		return float64(opts.Quarantined())
	}))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_projection_lag_events", Help: "Stream sequences the log holds past the projection's checkpoint.",
	}, m.lagEvents))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_projection_lag_seconds", Help: "Age of the oldest event the projection has not applied (0 when caught up).",
	}, m.lagSeconds))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_spool_depth", Help: "Hook payloads waiting in the spool.",
	}, func() float64 {
		if opts.SpoolDepth == nil {
			return 0
		}
		n, _ := opts.SpoolDepth()
		return float64(n)
	}))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_commands_active", Help: "Commands requested or running now, by the projection.",
	}, m.activeCommands))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logbook_appends_paused_since_seconds",
		Help: "Appends paused: disk full since this Unix time (a part of the data dir full or read-only); 0 while appends go on.",
	}, func() float64 {
		if opts.PausedSince == nil {
			return 0
		}
		since := opts.PausedSince()
		if since.IsZero() {
			return 0
		}
		return float64(since.UnixNano()) / 1e9
	}))
	m.reg.MustRegister(consumersCollector{m})
	return m
}

// promauto makes and registers vectors.
type promauto struct{ reg *prometheus.Registry }

func (p promauto) counters(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	p.reg.MustRegister(c)
	return c
}

func (p promauto) histograms(name, help string, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
	p.reg.MustRegister(h)
	return h
}

// Registry returns the registry, to register more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) bind(s *Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.srv = s
}

func (m *Metrics) server() *Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}

// record counts one stored event (called by the Hub, in order).
func (m *Metrics) record(r events.Record) {
	m.stored.WithLabelValues(r.Type).Inc()
	switch d := r.Data.(type) {
	case events.SessionEntryAbandoned:
		m.abandoned.WithLabelValues(events.KindSession, label(d.Reason)).Inc()
	case events.CommandAbandoned:
		m.abandoned.WithLabelValues(events.KindCommand, label(d.Reason)).Inc()
	case events.ReviewDecided:
		m.reviews.WithLabelValues(label(d.Outcome)).Inc()
	}
	if status, ok := strings.CutPrefix(r.Type, events.KindCommand+"."); ok {
		m.commands.WithLabelValues(status).Inc()
	}
}

// label bounds a label value taken from an event: the reason and outcome
// vocabularies are short words; anything else is "other".
func label(s string) string {
	if s == "" {
		return "none"
	}
	if len(s) > 32 || strings.ContainsAny(s, " \t\n\"\\") {
		return "other"
	}
	return s
}

// ObserveAPI records one API request of verb (e.g. "hook") that took d
// and failed when err is not nil.
func (m *Metrics) ObserveAPI(verb string, d time.Duration, err error) {
	m.apiSeconds.WithLabelValues(verb, outcome(err)).Observe(d.Seconds())
}

// ObserveCheckpoint counts one checkpoint: "published" by serve, or
// "cosigned" or "refused" by a witness.
func (m *Metrics) ObserveCheckpoint(outcome string) {
	m.checkpoints.WithLabelValues(outcome).Inc()
}

// ObserveSpool records n spooled payloads delivered by a drain.
func (m *Metrics) ObserveSpool(n int) {
	if n > 0 {
		m.spoolDeliv.WithLabelValues("delivered").Add(float64(n))
	}
}

func (m *Metrics) observed(err error) { m.observations.WithLabelValues(outcome(err)).Inc() }

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, events.ErrRejected), errors.Is(err, events.ErrMalformed), errors.Is(err, errBadRequest):
		return "refused"
	case errors.Is(err, events.ErrConflict):
		return "conflict"
	default:
		return "error"
	}
}

func (m *Metrics) lastSeq(ctx context.Context) (uint64, bool) {
	f := m.opts.LastSeq
	if f == nil {
		s := m.server()
		if s == nil {
			return 0, false
		}
		f = s.log.LastSeq
	}
	n, err := f(ctx)
	return n, err == nil
}

func (m *Metrics) lagEvents() float64 {
	s := m.server()
	if s == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	last, ok := m.lastSeq(ctx)
	if !ok {
		return 0
	}
	return float64(last - min(last, s.store.Checkpoint()))
}

func (m *Metrics) lagSeconds() float64 {
	s := m.server()
	if s == nil {
		return 0
	}
	at, ok := s.hub.timeAfter(s.store.Checkpoint())
	if !ok {
		return 0
	}
	return max(time.Since(at).Seconds(), 0)
}

func (m *Metrics) activeCommands() float64 {
	s := m.server()
	if s == nil {
		return 0
	}
	cs, err := s.store.Commands("", true)
	if err != nil {
		return 0
	}
	return float64(len(cs))
}

// consumersCollector reports logbook_consumer_pending{consumer} at scrape
// time.
type consumersCollector struct{ m *Metrics }

var consumerPendingDesc = prometheus.NewDesc("logbook_consumer_pending", "Messages of the stream a JetStream consumer has not yet been delivered.", []string{"consumer"}, nil)

func (c consumersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- consumerPendingDesc }

func (c consumersCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m.opts.ConsumersPending == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pend, err := c.m.opts.ConsumersPending(ctx)
	if err != nil {
		return
	}
	for name, n := range pend {
		ch <- prometheus.MustNewConstMetric(consumerPendingDesc, prometheus.GaugeValue, float64(n), name)
	}
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metrics == nil {
		http.NotFound(w, r)
		return
	}
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// InstrumentLog returns log with its appends counted and timed in m
// (logbook_appends_total, logbook_append_seconds). The other methods,
// and LoadAfter and LastEventSeq when log has them, pass through.
func (m *Metrics) InstrumentLog(log events.Log) events.Log { return &instrumented{log, m} }

type instrumented struct {
	events.Log
	m *Metrics
}

func (l *instrumented) Append(ctx context.Context, b events.Batch) (events.Appended, error) {
	start := time.Now()
	ap, err := l.Log.Append(ctx, b)
	out := outcome(err)
	if err == nil && ap.Duplicate {
		out = "duplicate"
	}
	typ := "none"
	if len(b.Events) > 0 {
		typ = b.Events[0].Type
	}
	l.m.appends.WithLabelValues(typ, out).Inc()
	l.m.appendSeconds.WithLabelValues(out).Observe(time.Since(start).Seconds())
	return ap, err
}

func (l *instrumented) LoadAfter(ctx context.Context, agg events.Aggregate, after uint64) ([]events.Record, uint64, error) {
	if la, ok := l.Log.(events.LoaderAfter); ok {
		return la.LoadAfter(ctx, agg, after)
	}
	recs, last, err := l.Log.Load(ctx, agg)
	var out []events.Record
	for _, r := range recs {
		if r.Seq > after {
			out = append(out, r)
		}
	}
	return out, last, err
}
