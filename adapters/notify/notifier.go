package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// DurableName is the durable consumer every notifier on every host
// shares: each event goes to one of them.
const DurableName = "logbook-notify"

// Filters are the subjects the notifier's consumer follows.
var Filters = []string{
	events.SubjectEvents + "." + events.KindSession + ".*",
	events.SubjectEvents + "." + events.KindCommand + ".*",
}

// DefaultAckWait is a Notifier's AckWait when it names none.
const DefaultAckWait = 10 * time.Second

// StaleTrigger is how old, past its due time, a trigger may be when it is
// first seen and still notify: an event imported from an old transcript
// tells nobody.
const StaleTrigger = time.Hour

// CauseKind is the cause kind of notification.sent.
const CauseKind = "notify"

// Notifier tells people of events by the rules of notify.toml: it takes
// the events of Filters off the durable consumer DurableName, shared by
// every notifier on the stream (each message goes to one of them), and
// for each notification due sends it to its sink and then appends
// notification.sent (one aggregate per idempotency key, appended with
// Expect 0) before it acks the message.
//
// Once per event: before sending, the notifier looks whether the
// notification's aggregate holds an event already (a notifier that
// crashed after its append and before its ack); the one notification in
// flight between a sink's acceptance and the append is sent again after
// a crash, with the same idempotency key. A rule that waits (After) puts
// the message back with a delay (NakWithDelay) and, when it comes again,
// fires only if the condition still holds (Holds, over the aggregate's
// events since the trigger): no timer lives in the process.
type Notifier struct {
	Log      *natslog.Log     // where events are read and notification.sent appended; signs as serve
	Registry *events.Registry // the log's
	JS       jetstream.JetStream
	Watch    *Watch // notify.toml; nothing is consumed before it has a good config
	Host     string // recorded in each notification.sent
	// AckWait is how long a message taken stays this notifier's without
	// word (it says it is still at work every AckWait/3 while sending);
	// 0: DefaultAckWait. A crashed notifier's message goes to another
	// after it.
	AckWait time.Duration
	// Now is the clock (0: time.Now).
	Now func() time.Time
	// Say receives what the notifier says (format, args), from Run's
	// goroutines.
	Say func(format string, args ...any)
	// Prices price a spend rule's sessions (nil: usage.Shipped()).
	Prices *usage.Table
	// Sent, when set, is told of each notification sent and recorded.
	Sent func(events.NotificationSent)
}

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now().UTC()
	}
	return time.Now().UTC()
}

// Run checks notify.toml every second (Watch.Check) and, once it has a
// good config, consumes until ctx is done. It returns nil when ctx is
// done, and an error naming the consumer when it cannot be made or its
// feed is closed (the stream deleted).
func (n *Notifier) Run(ctx context.Context) error {
	if n.AckWait <= 0 {
		n.AckWait = DefaultAckWait
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for cfg, _ := n.Watch.Check(); cfg == nil; cfg, _ = n.Watch.Check() {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.Watch.Check()
			}
		}
	}()
	var cons jetstream.Consumer
	var err error
	for {
		cons, err = n.JS.CreateOrUpdateConsumer(ctx, natslog.StreamName, jetstream.ConsumerConfig{
			Durable:        DurableName,
			Description:    "Logbook notifications (notify.toml)",
			FilterSubjects: Filters,
			DeliverPolicy:  jetstream.DeliverNewPolicy,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        n.AckWait,
			MaxAckPending:  10000,
			MaxDeliver:     -1,
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		n.Say("notifications: consumer %s: %v; trying again", DurableName, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1), jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(2*time.Second))
	if err != nil {
		return fmt.Errorf("notifications: consume %s: %w", DurableName, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				return fmt.Errorf("notifications: feed %s closed: %w", DurableName, err)
			}
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				n.Say("notifications: next event: %v", err)
			}
			continue
		}
		n.handle(ctx, msg)
	}
}

// handle decides one message and acks it, or puts it back for later.
func (n *Notifier) handle(ctx context.Context, msg jetstream.Msg) {
	cfg := n.Watch.Current()
	if !Types[msg.Headers().Get(natslog.HeaderType)] || cfg == nil || len(cfg.Rules) == 0 {
		_ = msg.Ack()
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Ack()
		return
	}
	env, err := n.Registry.Decode(msg.Data())
	if err != nil {
		n.Say("notifications: event at seq %d does not decode, told nobody: %v", meta.Sequence.Stream, err)
		_ = msg.Ack()
		return
	}
	rec := events.Record{Seq: meta.Sequence.Stream, Subject: msg.Subject(), Envelope: env}
	done := make(chan struct{})
	defer close(done)
	go func() { // keep the message ours while sinks answer
		t := time.NewTicker(n.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	later, err := n.decide(ctx, *cfg, rec)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return // the message comes again to whoever runs next
		}
		wait := backoff(meta.NumDelivered)
		n.Say("notifications: %v; trying again in %s", err, wait)
		_ = msg.NakWithDelay(wait)
	case later > 0:
		_ = msg.NakWithDelay(later)
	default:
		_ = msg.Ack()
	}
}

// backoff is how long a message whose sink failed waits before its
// delivery number n+1: 5 s doubling to 5 min.
func backoff(n uint64) time.Duration {
	d := 5 * time.Second
	for i := uint64(1); i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// decide sends every notification of cfg that rec makes due now and not
// yet recorded, and returns how long until the next one of rec is due (0:
// none). The first failure stops it: the message comes again, and what
// was recorded is not sent again.
func (n *Notifier) decide(ctx context.Context, cfg Config, rec events.Record) (time.Duration, error) {
	var c Context
	var ctxRead, costRead bool
	now := n.now()
	var next time.Duration
	for _, r := range cfg.Rules {
		if r.On == OnCommandFailed && !ctxRead {
			ctxRead = true
			var err error
			if c, err = n.commandContext(ctx, rec); err != nil {
				return 0, err
			}
		}
		if r.On == OnSpend && !costRead {
			costRead = true
			var err error
			if c.Cost, err = n.sessionCost(ctx, rec); err != nil {
				return 0, err
			}
		}
		t, ok := Match(r, rec, c)
		if !ok {
			continue
		}
		if now.Sub(t.Due) > StaleTrigger {
			continue // an old event, imported: nobody is told
		}
		if wait := t.Due.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if t.Delayed {
			later, _, err := n.Log.LoadAfter(ctx, rec.Agg, rec.Seq)
			if err != nil {
				return 0, fmt.Errorf("rule %s: read %s: %w", r.Name, rec.Agg, err)
			}
			if !Holds(t, rec, later) {
				continue
			}
		}
		for _, sink := range r.Sinks {
			s, ok := cfg.Sinks[sink]
			if !ok {
				continue
			}
			if err := n.tell(ctx, t, s, rec); err != nil {
				return 0, err
			}
		}
	}
	return next, nil
}

// commandContext reads the session and argv of the command rec is about
// (its command.requested); none for an event of another aggregate.
func (n *Notifier) commandContext(ctx context.Context, rec events.Record) (Context, error) {
	if rec.Agg.Kind != events.KindCommand {
		return Context{}, nil
	}
	if _, ok := rec.Data.(events.CommandExited); !ok {
		return Context{}, nil
	}
	recs, _, err := n.Log.Load(ctx, rec.Agg)
	if err != nil {
		return Context{}, fmt.Errorf("read %s: %w", rec.Agg, err)
	}
	for _, r := range recs {
		if q, ok := r.Data.(events.CommandRequested); ok {
			return Context{Session: q.Session, Argv: q.Argv}, nil
		}
	}
	return Context{}, nil
}

// sessionCost returns what the session of rec, a turn end, had spent by
// rec in USD (nil: nothing priced, or not a turn end): its events up to
// rec folded (session.Fold) and priced with Prices (usage.SpendOf).
func (n *Notifier) sessionCost(ctx context.Context, rec events.Record) (*float64, error) {
	if _, ok := rec.Data.(events.SessionTurnEnded); !ok || rec.Agg.Kind != events.KindSession {
		return nil, nil
	}
	recs, _, err := n.Log.Load(ctx, rec.Agg)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rec.Agg, err)
	}
	for i, r := range recs {
		if r.Seq > rec.Seq {
			recs = recs[:i]
			break
		}
	}
	prices := n.Prices
	if prices == nil {
		prices = usage.Shipped()
	}
	st := session.Fold(session.Init(rec.Agg), recs)
	return usage.SpendOf([]session.State{st}, prices).Cost, nil
}

// tell sends t to sink s unless it is recorded, then records it.
func (n *Notifier) tell(ctx context.Context, t Trigger, s Sink, rec events.Record) error {
	key := Key(t.Rule.Name, s.Name, t.ID)
	agg := events.Aggregate{Kind: events.KindNotification, ID: key}
	have, _, err := n.Log.Load(ctx, agg)
	if err != nil {
		return fmt.Errorf("rule %s, sink %s: read %s: %w", t.Rule.Name, s.Name, agg, err)
	}
	if len(have) > 0 {
		return nil // told already, by this notifier before a crash or by another
	}
	p := Payload{Key: key, Rule: t.Rule.Name, On: t.Rule.On, Title: t.Title, Body: t.Body, Session: t.Session,
		Event: rec.ID.String(), Seq: rec.Seq, Type: rec.Type, At: rec.At.UTC(), Host: n.Host}
	if err := Send(ctx, s, p); err != nil {
		return fmt.Errorf("rule %s: %w", t.Rule.Name, err)
	}
	sent := events.NotificationSent{Rule: t.Rule.Name, Sink: s.Name, Kind: s.Type, On: t.Rule.On, Key: key,
		Event: p.Event, Seq: rec.Seq, Type: rec.Type, Session: t.Session, Title: t.Title, Body: t.Body}
	e := n.Registry.New(sent)
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), agg, 1, n.now().Truncate(time.Microsecond)
	e.Cause = &events.Cause{Kind: CauseKind, Event: rec.Type, Detail: t.Rule.Name, Ref: rec.ID.String()}
	e.Host, e.Actor = n.Host, "logbook-notify"
	if _, err := n.Log.Append(ctx, events.Batch{Agg: agg, Expect: 0, Events: []events.Envelope{e}}); err != nil && !errors.Is(err, events.ErrConflict) {
		return fmt.Errorf("rule %s, sink %s: sent, but not recorded: %w", t.Rule.Name, s.Name, err)
	}
	if n.Sent != nil {
		n.Sent(sent)
	}
	return nil
}
