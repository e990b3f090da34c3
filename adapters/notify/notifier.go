package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Actor is the actor of notification.sent.
const Actor = "logbook-notify"

// Notifier tells people of events by the rules of notify.toml: it takes
// the events of Filters off the durable consumer DurableName, shared by
// every notifier on the stream (each message goes to one of them), and
// for each notification due sends it to each of its rule's sinks, all at
// once and each on its own, appending notification.sent for each sink
// that took it (one aggregate per idempotency key, appended with Expect
// 0). A sink that fails holds back no other: it is tried again after
// Backoff (its own count of failures), and the message is put back
// (NakWithDelay) until every sink has it or is given up (still failing
// StaleTrigger past the due time, or gone from notify.toml); only then is
// it acked.
//
// Once per event and sink: before sending, the notifier looks whether
// the notification's aggregate holds an event already (sent by a
// notifier that crashed before its ack, or before another sink took
// it), so a restart tells only the sinks not recorded; the one
// notification in flight between a sink's acceptance and the append is
// sent again after a crash, with the same idempotency key. A rule that
// waits (After) puts the message back with a delay and, when it comes
// again, fires only if the condition still holds (Holds, over the
// aggregate's events since the trigger): no timer lives in the process.
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
	// goroutines: each failure (a sink's, the consumer's) and each sink
	// given up starts "WARN: ", the level marker of serve's log
	// (adapters/servelog).
	Say func(format string, args ...any)
	// Prices price a spend rule's sessions (nil: usage.Shipped()).
	Prices *usage.Table
	// Sent, when set, is told of each notification sent and recorded,
	// from the goroutine that sent it (one per sink).
	Sent func(events.NotificationSent)
	// Retry is how long a delivery to a sink waits after its attempt-th
	// failure (nil: Backoff).
	Retry func(attempt int) time.Duration

	// retries are the failed deliveries of the messages put back, by
	// stream sequence and idempotency key; only Run's goroutine uses it.
	// A restart forgets it: the unsent sinks (no notification.sent) are
	// tried again at once.
	retries map[uint64]map[string]*retry
	// folded holds, per session, its state folded up to a stream
	// sequence, so each event folds only what came after the last one
	// read instead of the session's whole history (a long session's
	// events would each cost all of it). Events come in stream order;
	// one older than what is held (a redelivery) is folded afresh.
	folded map[events.Aggregate]foldedSession
}

// foldedSession is a session's state folded from its events up to and
// including stream sequence seq.
type foldedSession struct {
	st  session.State
	seq uint64
}

// maxFolded bounds Notifier.folded: past it the map starts empty again.
const maxFolded = 1024

// sessionAt returns agg's state folded from its events up to and
// including stream sequence upTo (0: all of them).
func (n *Notifier) sessionAt(ctx context.Context, agg events.Aggregate, upTo uint64) (session.State, bool, error) {
	f, ok := n.folded[agg]
	if !ok || upTo != 0 && f.seq > upTo {
		f = foldedSession{st: session.Init(agg)}
	}
	recs, _, err := n.Log.LoadAfter(ctx, agg, f.seq)
	if err != nil {
		return session.State{}, false, err
	}
	for _, r := range recs {
		if upTo != 0 && r.Seq > upTo {
			break
		}
		f.st.Evolve(r.Envelope)
		f.seq = r.Seq
	}
	if n.folded == nil || len(n.folded) >= maxFolded {
		n.folded = map[events.Aggregate]foldedSession{}
	}
	n.folded[agg] = f
	return f.st, f.seq != 0, nil
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
	cons, err := natslog.EnsureDurable(ctx, n.JS, jetstream.ConsumerConfig{
		Durable:        DurableName,
		Description:    "Logbook notifications (notify.toml)",
		FilterSubjects: Filters,
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        n.AckWait,
		MaxAckPending:  10000,
		MaxDeliver:     -1,
	}, func(err error) {
		n.Say("WARN: notifications: consumer %s: %v; trying again", DurableName, err)
	})
	if err != nil {
		return nil // ctx is done
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
				n.Say("WARN: notifications: next event: %v", err)
			}
			continue
		}
		n.handle(ctx, msg)
	}
}

// retry is what a notifier remembers of one delivery (a rule's
// notification to one sink) that failed: how many times, the last
// error, and when it is tried next.
type retry struct {
	tries int
	err   string
	next  time.Time
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
		n.Say("WARN: notifications: event at seq %d does not decode, told nobody: %v", meta.Sequence.Stream, err)
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
	if n.retries == nil {
		n.retries = map[uint64]map[string]*retry{}
	}
	tries := n.retries[rec.Seq]
	if tries == nil {
		tries = map[string]*retry{}
	}
	later, err := n.decide(ctx, *cfg, rec, tries)
	if ctx.Err() != nil {
		return // the message comes again to whoever runs next
	}
	if err != nil { // the event's context could not be read: all of it again
		r := tries[""]
		if r == nil {
			r = &retry{}
			tries[""] = r
		}
		r.tries++
		later = n.retryAfter(r.tries)
		n.Say("WARN: notifications: %v; trying again in %s", err, later)
	} else {
		delete(tries, "")
	}
	if later > 0 {
		n.retries[rec.Seq] = tries
		_ = msg.NakWithDelay(later)
		return
	}
	delete(n.retries, rec.Seq)
	_ = msg.Ack()
}

// Backoff is how long a delivery to a sink waits after its attempt-th
// failure (attempt ≥ 1) before it is tried again: 5 s, doubling, at most
// 5 min (5 s, 10 s, 20 s, 40 s, 1m20s, 2m40s, 5m0s, 5m0s, …).
func Backoff(attempt int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < attempt && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

func (n *Notifier) retryAfter(attempt int) time.Duration {
	if n.Retry != nil {
		return n.Retry(attempt)
	}
	return Backoff(attempt)
}

// delivery is one notification due to one sink.
type delivery struct {
	t   Trigger
	s   Sink
	key string
}

// decide sends every notification of cfg that rec makes due now and not
// yet recorded, each sink on its own: one failing sink holds back no
// other. tries holds the deliveries of rec that failed (by idempotency
// key); a failed one is tried again once its Backoff passed, and it is
// updated here. decide returns how long until the next of rec's
// notifications is due or to be tried again (0: none: rec is done). Its
// error is a failure to read what a rule needs to know of rec.
func (n *Notifier) decide(ctx context.Context, cfg Config, rec events.Record, tries map[string]*retry) (time.Duration, error) {
	c, err := n.context(ctx, cfg, rec)
	if err != nil {
		return 0, err
	}
	now := n.now()
	var next time.Duration
	soonest := func(wait time.Duration) {
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	var due []delivery
	for _, r := range cfg.Rules {
		t, ok := Match(r, rec, c)
		if !ok {
			continue
		}
		if now.Sub(t.Due) > StaleTrigger {
			// An old event, imported, tells nobody; a sink still
			// failing an hour past the due time is given up.
			for _, sink := range r.Sinks {
				key := Key(r.Name, sink, t.ID)
				if f := tries[key]; f != nil {
					n.Say("WARN: notifications: rule %s, sink %s: gave up after %d tries over %s: %s", r.Name, sink, f.tries, StaleTrigger, f.err)
					delete(tries, key)
				}
			}
			continue
		}
		if wait := t.Due.Sub(now); wait > 0 {
			soonest(wait)
			continue
		}
		if t.Delayed {
			later, _, err := n.Log.LoadAfter(ctx, rec.Agg, rec.Seq)
			if err != nil {
				return 0, fmt.Errorf("rule %s: read %s: %w", r.Name, rec.Agg, err)
			}
			if !Holds(t, rec, later) {
				for _, sink := range r.Sinks {
					delete(tries, Key(r.Name, sink, t.ID))
				}
				continue
			}
		}
		for _, sink := range r.Sinks {
			s, ok := cfg.Sinks[sink]
			if !ok {
				continue
			}
			key := Key(r.Name, s.Name, t.ID)
			if f := tries[key]; f != nil && f.next.After(now) {
				soonest(f.next.Sub(now))
				continue
			}
			due = append(due, delivery{t: t, s: s, key: key})
		}
	}
	errs := make([]error, len(due))
	var wg sync.WaitGroup
	for i, d := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.tell(ctx, d.t, d.s, rec)
		}()
	}
	wg.Wait()
	for i, d := range due {
		if errs[i] == nil {
			delete(tries, d.key)
			continue
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		f := tries[d.key]
		if f == nil {
			f = &retry{}
			tries[d.key] = f
		}
		f.tries++
		f.err = errs[i].Error()
		wait := n.retryAfter(f.tries)
		f.next = n.now().Add(wait)
		soonest(wait)
		n.Say("WARN: notifications: %v; trying again in %s", errs[i], wait)
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

// context reads what cfg's rules need to know of rec beyond rec: a
// command's session and argv (commandContext); the session's title (or
// its working directory) and what it waits on, from its events up to
// rec folded (session.Fold); for a turn end under a spend rule, what the
// session had spent by rec in USD, priced with Prices (usage.SpendOf).
func (n *Notifier) context(ctx context.Context, cfg Config, rec events.Record) (Context, error) {
	spend := false
	for _, r := range cfg.Rules {
		spend = spend || r.On == OnSpend
	}
	c, err := n.commandContext(ctx, rec)
	if err != nil {
		return Context{}, err
	}
	agg := rec.Agg
	if agg.Kind != events.KindSession {
		if c.Session == "" {
			return c, nil
		}
		agg = events.Aggregate{Kind: events.KindSession, ID: c.Session}
	}
	upTo := uint64(0)
	if agg == rec.Agg {
		upTo = rec.Seq
	}
	st, any, err := n.sessionAt(ctx, agg, upTo)
	if err != nil {
		return Context{}, fmt.Errorf("read %s: %w", agg, err)
	}
	if !any {
		return c, nil
	}
	c.Name = st.Title
	if c.Name == "" {
		c.Name = st.Cwd
	}
	switch { // the newest open permission dialog, else gate review
	case len(st.Dialogs) > 0:
		g := st.Dialogs[len(st.Dialogs)-1]
		c.Waits = "permission for " + g.Tool
		if g.Action != "" && !g.Notice { // a notice's action is its message
			c.Waits += ": " + g.Action
		}
	case len(st.Pending) > 0:
		p := st.Pending[len(st.Pending)-1]
		c.Waits = "permission for " + p.Tool
		if p.Action != "" {
			c.Waits += ": " + p.Action
		}
	}
	if _, ok := rec.Data.(events.SessionTurnEnded); ok && spend && agg == rec.Agg {
		prices := n.Prices
		if prices == nil {
			prices = usage.Shipped()
		}
		c.Cost = usage.SpendOf([]session.State{st}, prices).Cost
	}
	return c, nil
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
	e.Host, e.Actor = n.Host, Actor
	if _, err := n.Log.Append(ctx, events.Batch{Agg: agg, Expect: 0, Events: []events.Envelope{e}}); err != nil && !errors.Is(err, events.ErrConflict) {
		return fmt.Errorf("rule %s, sink %s: sent, but not recorded: %w", t.Rule.Name, s.Name, err)
	}
	if n.Sent != nil {
		n.Sent(sent)
	}
	return nil
}
