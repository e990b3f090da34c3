package otel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// ExportDurable is the durable consumer every exporter on the stream
// shares: each event goes to one of them, and what was acknowledged is
// not sent again after a restart.
const ExportDurable = "logbook-otlp-export"

// ExportFilters are the subjects the exporter's consumer follows.
var ExportFilters = []string{
	events.SubjectEvents + "." + events.KindSession + ".*",
	events.SubjectEvents + "." + events.KindCommand + ".*",
}

// DefaultExportBatch is how many events an Exporter takes at once when
// it names no Batch.
const DefaultExportBatch = 256

// DefaultExportAckWait is an Exporter's AckWait when it names none.
const DefaultExportAckWait = 10 * time.Second

// Exporter sends the log's sessions to an OTLP/HTTP traces endpoint as
// traces (Spans). It takes events off the durable consumer
// ExportDurable, from the log's first event, in batches of up to Batch;
// makes the spans they close, reading each aggregate once a batch from
// the log; POSTs them as one ExportTraceServiceRequest (protobuf); and
// only once the endpoint answered 2xx acknowledges the batch, waiting for
// the server to confirm the acknowledgement. A restart, even after a
// SIGKILL, so loses no span; the one batch between the endpoint's answer
// and the stored acknowledgement is sent again after a crash, with the
// same trace and span ids (derived from the log), which back ends take as
// the same spans.
//
// A failed send (no answer, 429, 5xx) is retried with a backoff of 1 s
// doubling to 1 min, the batch kept; a 4xx other than 429 is the
// endpoint refusing the spans for good (OTLP/HTTP: not retryable): it is
// said on Say and the batch acknowledged.
type Exporter struct {
	Log      *natslog.Log     // where aggregates are read
	Registry *events.Registry // the log's
	JS       jetstream.JetStream
	// URL is the traces endpoint, such as http://127.0.0.1:4318/v1/traces.
	URL string
	// Headers are sent with every request (a back end's API key); nil:
	// none.
	Headers http.Header
	// Client sends the requests (nil: one with a 30 s timeout).
	Client *http.Client
	// Batch is the most events taken at once (0: DefaultExportBatch).
	Batch int
	// AckWait is how long a batch taken stays this exporter's without
	// word (it says it is still at work every AckWait/3 while it sends);
	// 0: DefaultExportAckWait. A crashed exporter's batch is sent again
	// after it.
	AckWait time.Duration
	// Service is the resource's service.name (""): "logbook".
	Service string
	// Say receives what the exporter says (format, args), from Run's
	// goroutine.
	Say func(format string, args ...any)
	// Sent, when set, is told how many spans each accepted request held.
	Sent func(spans int)
}

// ShownURL returns u as it may be shown in a log line: a password in it
// as "xxxxx" (net/url's Redacted); u unchanged when it does not parse.
func ShownURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

func (x *Exporter) say(format string, args ...any) {
	if x.Say != nil {
		x.Say(format, args...)
	}
}

// Run consumes until ctx is done. It returns nil when ctx is done, and an
// error naming the consumer when its feed is closed (the stream deleted).
func (x *Exporter) Run(ctx context.Context) error {
	if x.Client == nil {
		x.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if x.Batch <= 0 {
		x.Batch = DefaultExportBatch
	}
	if x.AckWait <= 0 {
		x.AckWait = DefaultExportAckWait
	}
	cons, err := natslog.EnsureDurable(ctx, x.JS, jetstream.ConsumerConfig{
		Durable:        ExportDurable,
		Description:    "Logbook sessions as OpenTelemetry traces (serve --otlp-export)",
		FilterSubjects: ExportFilters,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        x.AckWait,
		MaxAckPending:  x.Batch * 4,
		MaxDeliver:     -1,
	}, func(err error) {
		x.say("otlp export: consumer %s: %v; trying again", ExportDurable, err)
	})
	if err != nil {
		return nil // ctx is done
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(x.Batch, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) {
				return fmt.Errorf("otlp export: feed %s closed: %w", ExportDurable, err)
			}
			x.say("otlp export: fetch: %v", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil && len(msgs) == 0 {
			x.say("otlp export: fetch: %v", err)
		}
		if len(msgs) == 0 {
			continue
		}
		if err := x.handle(ctx, msgs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}

// handle sends the spans msgs close and acknowledges them; it returns
// only when they are acknowledged or ctx is done.
func (x *Exporter) handle(ctx context.Context, msgs []jetstream.Msg) error {
	done := make(chan struct{})
	defer close(done)
	go func() { // keep the batch ours while the endpoint answers
		t := time.NewTicker(x.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", cmpOr(x.Service, "logbook"))
	sc := rs.ScopeSpans().AppendEmpty()
	sc.Scope().SetName(Scope)
	ss := sc.Spans()
	history := map[events.Aggregate][]events.Record{}
	for wait := time.Second; ; wait = min(wait*2, time.Minute) {
		err := x.spans(ctx, msgs, ss, history)
		if err == nil {
			break
		}
		x.say("otlp export: %v; trying again in %s", err, wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		ss.RemoveIf(func(ptrace.Span) bool { return true })
	}
	if n := ss.Len(); n > 0 {
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			return fmt.Errorf("otlp export: encode: %w", err)
		}
		for wait := time.Second; ; wait = min(wait*2, time.Minute) {
			retry, err := x.post(ctx, body)
			if err == nil {
				if x.Sent != nil {
					x.Sent(n)
				}
				break
			}
			if !retry {
				x.say("otlp export: %d spans refused for good: %v", n, err)
				break
			}
			x.say("otlp export: %v; trying again in %s", err, wait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	for _, m := range msgs {
		if err := m.DoubleAck(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			x.say("otlp export: ack: %v", err)
		}
	}
	return nil
}

// spans appends the spans of msgs to ss, reading each aggregate they
// close a span of once (history caches them). An error is the log's.
func (x *Exporter) spans(ctx context.Context, msgs []jetstream.Msg, ss ptrace.SpanSlice, history map[events.Aggregate][]events.Record) error {
	for _, m := range msgs {
		if !SpanTypes[m.Headers().Get(natslog.HeaderType)] {
			continue
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		env, err := x.Registry.Decode(m.Data())
		if err != nil {
			x.say("otlp export: event at seq %d does not decode, no span: %v", meta.Sequence.Stream, err)
			continue
		}
		rec := events.Record{Seq: meta.Sequence.Stream, Subject: m.Subject(), Envelope: env}
		var h []events.Record
		if _, ok := rec.Data.(events.SessionStarted); !ok {
			if h, ok = history[rec.Agg]; !ok || len(h) == 0 || h[len(h)-1].Seq < rec.Seq {
				recs, _, err := x.Log.Load(ctx, rec.Agg)
				if err != nil {
					return fmt.Errorf("read %s: %w", rec.Agg, err)
				}
				history[rec.Agg], h = recs, recs
			}
		}
		Spans(ss, rec, h)
	}
	return nil
}

// post sends body to the endpoint; retry tells whether a failure may
// pass.
func (x *Exporter) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, vs := range x.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", typeProto)
	resp, err := x.Client.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	switch {
	case resp.StatusCode/100 == 2:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5:
		return true, fmt.Errorf("%s: %s: %s", ShownURL(x.URL), resp.Status, bytes.TrimSpace(msg))
	}
	return false, fmt.Errorf("%s: %s: %s", ShownURL(x.URL), resp.Status, bytes.TrimSpace(msg))
}
