package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/events"
)

// receiver is a webhook receiver that counts deliveries by idempotency
// key; fail, while above 0, answers that many deliveries 500.
type receiver struct {
	mu    sync.Mutex
	got   map[string]int
	seen  []notify.Payload
	fail  int
	fails int
	bad   []string
	srv   *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p notify.Payload
		err := json.NewDecoder(req.Body).Decode(&p)
		r.mu.Lock()
		defer r.mu.Unlock()
		key := req.Header.Get("Idempotency-Key")
		if err != nil || key == "" || p.Key != key {
			r.bad = append(r.bad, key)
		}
		if r.fail > 0 {
			r.fail--
			r.fails++
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		r.got[key]++
		r.seen = append(r.seen, p)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// deliveries returns the accepted deliveries so far and the keys.
func (r *receiver) deliveries() (int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	keys := map[string]int{}
	for k, v := range r.got {
		n += v
		keys[k] = v
	}
	return n, keys
}

// waitFor polls cond every 20 ms until it holds or the test's context
// ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeConfig writes notify.toml text into a new directory and returns
// its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), notify.File)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startNotifier runs a notifier on l with the config at path until the
// test ends.
func startNotifier(t *testing.T, l *natslog.Log, srv *natslog.Server, path string, out *natslogtest.Buffer) {
	t.Helper()
	startNotifierWith(t, l, srv, path, out, nil)
}

// startNotifierWith is startNotifier with set, when not nil, changing
// the notifier before it runs; it returns a function that stops it
// (also called at the test's end).
func startNotifierWith(t *testing.T, l *natslog.Log, srv *natslog.Server, path string, out *natslogtest.Buffer, set func(*notify.Notifier)) (stop func()) {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	say := func(format string, args ...any) { out.Write([]byte(fmtLine(format, args...) + "\n")) }
	n := &notify.Notifier{Log: l, Registry: events.NewRegistry(), JS: js, Watch: &notify.Watch{Path: path, Say: say}, Host: "h1", Say: say}
	if set != nil {
		set(n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// appendEvents appends ps to agg as one decision after expect, at the
// time at; ids, when given, are the events' ids. It returns the last
// sequence.
func appendEvents(t *testing.T, l *natslog.Log, agg events.Aggregate, expect, ver uint64, at time.Time, ps []events.Payload, ids ...ulid.ULID) uint64 {
	t.Helper()
	reg := events.NewRegistry()
	var es []events.Envelope
	for i, p := range ps {
		e := reg.New(p)
		e.ID, e.Agg, e.Ver, e.At = ulid.Make(), agg, ver+uint64(i), at
		if i < len(ids) {
			e.ID = ids[i]
		}
		e.Cause = &events.Cause{Kind: "hook", Event: "Notification", Ref: ulid.Make().String()}
		es = append(es, e)
	}
	a, err := l.Append(t.Context(), events.Batch{Agg: agg, Expect: expect, Events: es})
	if err != nil {
		t.Fatal(err)
	}
	return a.Last
}

// waitSession appends a session that starts and waits for a person now;
// it returns the wait's sequence and event id.
func waitSession(t *testing.T, l *natslog.Log, id string) (uint64, ulid.ULID) {
	t.Helper()
	wid := ulid.Make()
	seq := appendEvents(t, l, events.Aggregate{Kind: events.KindSession, ID: id}, 0, 1, time.Now().UTC(),
		[]events.Payload{events.SessionStarted{Agent: "claude-code"}, events.SessionTransitioned{From: "ready", To: "waiting", Activity: "question"}},
		ulid.Make(), wid)
	return seq, wid
}

// drained waits until the notifier's consumer has nothing pending or
// unacknowledged up to seq.
func drained(t *testing.T, srv *natslog.Server, seq uint64) {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notifier's consumer to drain", func() bool {
		c, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		if err != nil {
			return false
		}
		in, err := c.Info(t.Context())
		return err == nil && in.NumPending == 0 && in.NumAckPending == 0 && in.AckFloor.Stream >= seq
	})
}

// recorded returns the notification.sent events in l.
func recorded(t *testing.T, l *natslog.Log) []events.NotificationSent {
	t.Helper()
	var out []events.NotificationSent
	for r, err := range l.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := r.Data.(events.NotificationSent); ok {
			out = append(out, s)
		}
	}
	return out
}

func hookConfig(url string, after int) string {
	return "[sinks.hook]\ntype = \"webhook\"\nurl = \"" + url + "\"\n\n[[rule]]\non = \"waiting\"\nafter = " + fmtLine("%d", after) + "\nsinks = [\"hook\"]\n"
}

// TestNotifier_WaitingOnce: a session still waiting after the rule's
// wait is told of once, with the idempotency key in the header and the
// body, and notification.sent names the rule, the sink and the event; a
// session that moved on before is told nothing.
func TestNotifier_WaitingOnce(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	var out natslogtest.Buffer
	startNotifier(t, l, srv, writeConfig(t, hookConfig(rcv.srv.URL, 1)), &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	_, wid := waitSession(t, l, "s-waits")
	moved, _ := waitSession(t, l, "s-moves")
	last := appendEvents(t, l, events.Aggregate{Kind: events.KindSession, ID: "s-moves"}, moved, 3, time.Now().UTC(),
		[]events.Payload{events.SessionTransitioned{From: "waiting", To: "working", Activity: "thinking"}})
	waitFor(t, "one delivery", func() bool { n, _ := rcv.deliveries(); return n >= 1 })
	drained(t, srv, last)
	n, keys := rcv.deliveries()
	key := notify.Key("waiting", "hook", wid.String())
	if n != 1 || keys[key] != 1 {
		t.Errorf("deliveries %d %v, want one of key %s\n%s", n, keys, key, out.String())
	}
	rcv.mu.Lock()
	if len(rcv.bad) > 0 || len(rcv.seen) != 1 || rcv.seen[0].Session != "s-waits" || rcv.seen[0].Event != wid.String() || rcv.seen[0].Title != "session s-waits waits for you: a question" {
		t.Errorf("bad deliveries %v; seen %+v", rcv.bad, rcv.seen)
	}
	rcv.mu.Unlock()
	rec := recorded(t, l)
	if len(rec) != 1 || rec[0].Key != key || rec[0].Rule != "waiting" || rec[0].Sink != "hook" || rec[0].Kind != "webhook" || rec[0].Event != wid.String() || rec[0].Session != "s-waits" {
		t.Errorf("recorded %+v", rec)
	}
}

// TestNotifier_RecordedIsNotSentAgain: a notification whose
// notification.sent is in the log already (a notifier stopped after the
// append and before the ack) is not sent again.
func TestNotifier_RecordedIsNotSentAgain(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	var out natslogtest.Buffer
	path := writeConfig(t, "[sinks.hook]\ntype = \"webhook\"\nurl = \""+rcv.srv.URL+"\"\n\n[[rule]]\non = \"breaker_tripped\"\nsinks = [\"hook\"]\n")
	startNotifier(t, l, srv, path, &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	told, fresh := ulid.Make(), ulid.Make()
	key := notify.Key("breaker_tripped", "hook", told.String())
	appendEvents(t, l, events.Aggregate{Kind: events.KindNotification, ID: key}, 0, 1, time.Now().UTC(),
		[]events.Payload{events.NotificationSent{Rule: "breaker_tripped", Sink: "hook", Kind: "webhook", On: "breaker_tripped", Key: key, Event: told.String(), Title: "told before"}})
	agg := events.Aggregate{Kind: events.KindSession, ID: "s-breaks"}
	seq := appendEvents(t, l, agg, 0, 1, time.Now().UTC(), []events.Payload{events.SessionStarted{Agent: "cli"}, events.ReviewBreakerTripped{Refusals: 3, Window: 3}}, ulid.Make(), told)
	last := appendEvents(t, l, agg, seq, 3, time.Now().UTC(), []events.Payload{events.ReviewBreakerTripped{Refusals: 4, Window: 4}}, fresh)
	drained(t, srv, last)
	n, keys := rcv.deliveries()
	if fk := notify.Key("breaker_tripped", "hook", fresh.String()); n != 1 || keys[fk] != 1 {
		t.Errorf("deliveries %d %v, want only %s\n%s", n, keys, fk, out.String())
	}
	if rec := recorded(t, l); len(rec) != 2 {
		t.Errorf("recorded %+v, want the one before and the fresh one", rec)
	}
}

// TestNotifier_FailedSinkTriesAgain: a webhook that answers 503 gets the
// notification again, with the same key, until it accepts it.
func TestNotifier_FailedSinkTriesAgain(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	rcv.fail = 1
	var out natslogtest.Buffer
	startNotifier(t, l, srv, writeConfig(t, hookConfig(rcv.srv.URL, 0)), &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	last, wid := waitSession(t, l, "s-retry")
	drained(t, srv, last)
	n, keys := rcv.deliveries()
	rcv.mu.Lock()
	fails := rcv.fails
	rcv.mu.Unlock()
	if key := notify.Key("waiting", "hook", wid.String()); n != 1 || keys[key] != 1 || fails != 1 {
		t.Errorf("accepted %d %v after %d failures, want one of %s after one\n%s", n, keys, fails, key, out.String())
	}
	if len(recorded(t, l)) != 1 {
		t.Error("not recorded once")
	}
}

// TestNotifier_TwoShareTheConsumer: two notifiers on one log (as two
// hosts would be) share the durable consumer: every firing is sent once.
func TestNotifier_TwoShareTheConsumer(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	var out natslogtest.Buffer
	path := writeConfig(t, hookConfig(rcv.srv.URL, 0))
	l2 := natslogtest.Open(t, srv.Conn())
	startNotifier(t, l, srv, path, &out)
	startNotifier(t, l2, srv, path, &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	const sessions = 20
	var last uint64
	for i := range sessions {
		last, _ = waitSession(t, l, fmtLine("s-%02d", i))
	}
	drained(t, srv, last)
	n, keys := rcv.deliveries()
	if n != sessions || len(keys) != sessions {
		t.Errorf("deliveries %d of %d keys, want %d once each\n%s", n, len(keys), sessions, out.String())
	}
	if rec := recorded(t, l); len(rec) != sessions {
		t.Errorf("recorded %d, want %d", len(rec), sessions)
	}
}

// TestNotifier_Spend: a session whose cost, priced from its usage, has
// reached the rule's dollars at a turn's end is told of once, however
// many turns end after.
func TestNotifier_Spend(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	var out natslogtest.Buffer
	startNotifier(t, l, srv, writeConfig(t, "[sinks.hook]\ntype = \"webhook\"\nurl = \""+rcv.srv.URL+"\"\n\n[[rule]]\non = \"spend\"\nusd = 5\nsinks = [\"hook\"]\n"), &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	agg := events.Aggregate{Kind: events.KindSession, ID: "s-spends"}
	used := func(key string, in, outTok int64) events.Payload {
		return events.HarnessObserved{Observation: events.Observation{Key: key, Parser: "test/1", Kind: "assistant",
			Signals: []events.Sig{{Kind: events.SigUsage, ID: key, Usage: &events.Usage{Model: "claude-opus-4", Input: in, Output: outTok}}}}}
	}
	now := time.Now().UTC()
	// Turn 1 spends about $1.50 (100k in, 0 out at opus's $15/M): no
	// notification; turn 2 brings it past $5; turn 3 ends past it too.
	seq := appendEvents(t, l, agg, 0, 1, now, []events.Payload{events.SessionStarted{Agent: "cli"}, used("m1", 100_000, 0), events.SessionTurnEnded{Turn: 1, Outcome: "completed"}})
	seq = appendEvents(t, l, agg, seq, 4, now, []events.Payload{used("m2", 300_000, 0)})
	seq = appendEvents(t, l, agg, seq, 5, now, []events.Payload{events.SessionTurnEnded{Turn: 2, Outcome: "completed"}})
	last := appendEvents(t, l, agg, seq, 6, now, []events.Payload{used("m3", 10_000, 0), events.SessionTurnEnded{Turn: 3, Outcome: "completed"}})
	drained(t, srv, last)
	n, keys := rcv.deliveries()
	if key := notify.Key("spend", "hook", agg.ID); n != 1 || keys[key] != 1 {
		t.Errorf("deliveries %d %v, want one of %s\n%s", n, keys, key, out.String())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.seen) == 1 && rcv.seen[0].Title != "session s-spends spent over $5.00" {
		t.Errorf("told %+v", rcv.seen[0])
	}
}

// TestNotifier_ConfigCreatedLater: a notifier started with no
// notify.toml consumes nothing; once the file is written it is picked up
// and events from then on are told of.
func TestNotifier_ConfigCreatedLater(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	rcv := newReceiver(t)
	var out natslogtest.Buffer
	path := filepath.Join(t.TempDir(), notify.File)
	startNotifier(t, l, srv, path, &out)
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName); err == nil {
		t.Fatal("a consumer with no notify.toml")
	}
	if err := os.WriteFile(path, []byte(hookConfig(rcv.srv.URL, 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the consumer", func() bool {
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	last, wid := waitSession(t, l, "s-later")
	drained(t, srv, last)
	if n, keys := rcv.deliveries(); n != 1 || keys[notify.Key("waiting", "hook", wid.String())] != 1 {
		t.Errorf("deliveries %d %v\n%s", n, keys, out.String())
	}
	if !strings.Contains(out.String(), "notifications: rules waiting → hook; sinks hook (webhook json)") {
		t.Errorf("the notifier did not say its config:\n%s", out.String())
	}
}

// sinksConfig is a notify.toml of one waiting rule (after 0) telling
// the webhooks urls (by name) in the order of names.
func sinksConfig(urls map[string]string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "[sinks.%s]\ntype = \"webhook\"\nurl = %q\ntimeout = 2\n\n", n, urls[n])
	}
	fmt.Fprintf(&b, "[[rule]]\non = \"waiting\"\nafter = 0\nsinks = [\"%s\"]\n", strings.Join(names, `", "`))
	return b.String()
}

// quickRetry makes a notifier try a failed sink again after 50 ms.
func quickRetry(n *notify.Notifier) {
	n.Retry = func(int) time.Duration { return 50 * time.Millisecond }
}

// pendingAcks returns how many messages the notifier's consumer holds
// unacknowledged.
func pendingAcks(t *testing.T, srv *natslog.Server) int {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return in.NumAckPending
}

// TestNotifier_SinksApart: in a rule telling hook, failing, nobody and
// after, a webhook that answers 503 and one nobody listens at hold back
// neither hook nor after, each told once at once, while failing is
// tried again, with the same key, until it takes it; the event is
// acknowledged only once every sink has it (nobody leaving the file).
func TestNotifier_SinksApart(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	hook, failing, after := newReceiver(t), newReceiver(t), newReceiver(t)
	failing.mu.Lock()
	failing.fail = 1 << 30
	failing.mu.Unlock()
	urls := map[string]string{"hook": hook.srv.URL, "failing": failing.srv.URL, "nobody": "http://127.0.0.1:1/", "after": after.srv.URL}
	path := writeConfig(t, sinksConfig(urls, "hook", "failing", "nobody", "after"))
	var out natslogtest.Buffer
	startNotifierWith(t, l, srv, path, &out, quickRetry)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	last, wid := waitSession(t, l, "s-apart")
	// failing fails as long as it likes: hook and after are told and
	// recorded all the same.
	waitFor(t, "hook and after told and recorded", func() bool {
		sinks := map[string]bool{}
		for _, r := range recorded(t, l) {
			sinks[r.Sink] = true
		}
		return sinks["hook"] && sinks["after"]
	})
	waitFor(t, "failing tried three times", func() bool {
		failing.mu.Lock()
		defer failing.mu.Unlock()
		return failing.fails >= 3
	})
	if n := pendingAcks(t, srv); n != 1 {
		t.Errorf("%d messages unacknowledged while failing fails, want the event's", n)
	}
	failing.mu.Lock()
	failing.fail = 0
	failing.mu.Unlock()
	waitFor(t, "failing told", func() bool { n, _ := failing.deliveries(); return n == 1 })
	if n := pendingAcks(t, srv); n != 1 {
		t.Errorf("%d messages unacknowledged while nobody is not told, want the event's", n)
	}
	// nobody leaves the file: the event is done.
	if err := os.WriteFile(path, []byte(sinksConfig(urls, "hook", "failing", "after")), 0o600); err != nil {
		t.Fatal(err)
	}
	drained(t, srv, last)
	for name, r := range map[string]*receiver{"hook": hook, "failing": failing, "after": after} {
		n, keys := r.deliveries()
		if key := notify.Key("waiting", name, wid.String()); n != 1 || keys[key] != 1 {
			t.Errorf("%s: deliveries %d %v, want one of %s\n%s", name, n, keys, key, out.String())
		}
		r.mu.Lock()
		if len(r.bad) > 0 {
			t.Errorf("%s: deliveries without their key: %v", name, r.bad)
		}
		r.mu.Unlock()
	}
	sinks := map[string]int{}
	for _, r := range recorded(t, l) {
		sinks[r.Sink]++
	}
	if want := map[string]int{"hook": 1, "failing": 1, "after": 1}; !maps.Equal(sinks, want) {
		t.Errorf("recorded %v, want %v", sinks, want)
	}
	if !strings.Contains(out.String(), "sink nobody (webhook)") || !strings.Contains(out.String(), "sink failing (webhook)") {
		t.Errorf("the failures are not said:\n%s", out.String())
	}
}

// TestNotifier_RestartResumesUnsent: a notifier stopped while one sink
// of an event fails leaves the event unacknowledged; the next notifier
// tells only that sink (the others' notification.sent are in the log).
func TestNotifier_RestartResumesUnsent(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	hook, failing := newReceiver(t), newReceiver(t)
	failing.mu.Lock()
	failing.fail = 1 << 30
	failing.mu.Unlock()
	path := writeConfig(t, sinksConfig(map[string]string{"hook": hook.srv.URL, "failing": failing.srv.URL}, "failing", "hook"))
	var out natslogtest.Buffer
	stop := startNotifierWith(t, l, srv, path, &out, quickRetry)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	last, wid := waitSession(t, l, "s-resume")
	waitFor(t, "hook told and failing tried", func() bool {
		failing.mu.Lock()
		fails := failing.fails
		failing.mu.Unlock()
		return len(recorded(t, l)) == 1 && fails >= 1
	})
	stop()
	failing.mu.Lock()
	failing.fail = 0
	failing.mu.Unlock()
	startNotifierWith(t, l, srv, path, &out, quickRetry)
	drained(t, srv, last)
	for name, r := range map[string]*receiver{"hook": hook, "failing": failing} {
		if n, keys := r.deliveries(); n != 1 || keys[notify.Key("waiting", name, wid.String())] != 1 {
			t.Errorf("%s: deliveries %d %v, want one\n%s", name, n, keys, out.String())
		}
	}
	if rec := recorded(t, l); len(rec) != 2 {
		t.Errorf("recorded %+v, want hook and failing once each", rec)
	}
}

// TestNotifier_NamesTheSession: a notification names the session by its
// title as the log has it (else its working directory), escaped for
// Slack, and says the permission dialog it waits on.
func TestNotifier_NamesTheSession(t *testing.T) {
	t.Parallel()
	l, srv := natslogtest.Start(t, natslog.FsyncInterval)
	var mu sync.Mutex
	var texts []string
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b struct{ Text string }
		json.NewDecoder(req.Body).Decode(&b)
		mu.Lock()
		texts = append(texts, b.Text)
		mu.Unlock()
	}))
	defer slack.Close()
	var out natslogtest.Buffer
	startNotifier(t, l, srv, writeConfig(t, "[sinks.team]\ntype = \"webhook\"\nformat = \"slack\"\nurl = \""+slack.URL+"\"\n\n[[rule]]\non = \"waiting\"\nafter = 0\nsinks = [\"team\"]\n"), &out)
	waitFor(t, "the consumer", func() bool {
		js, _ := jetstream.New(srv.Conn())
		_, err := js.Consumer(t.Context(), natslog.StreamName, notify.DurableName)
		return err == nil
	})
	now := time.Now().UTC()
	named := events.Aggregate{Kind: events.KindSession, ID: "ffff6666-named"}
	appendEvents(t, l, named, 0, 1, now, []events.Payload{
		events.SessionStarted{Agent: "claude-code", Cwd: "/src/app"},
		events.SessionDescribed{Title: "Fix <the>\nparser & co"},
		events.ReviewRequested{ReviewID: "toolu_1", Tool: "Bash", Action: "git push"},
		events.SessionTransitioned{From: "working", To: "waiting", Activity: "review"},
	})
	dir := events.Aggregate{Kind: events.KindSession, ID: "eeee5555-dir"}
	last := appendEvents(t, l, dir, 0, 1, now, []events.Payload{
		events.SessionStarted{Agent: "claude-code", Cwd: "/src/app"},
		events.SessionTransitioned{From: "working", To: "waiting", Activity: "question"},
	})
	drained(t, srv, last)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(texts)
	want := []string{
		"*session eeee5555 (/src/app) waits for you: a question*\nwaiting on a question",
		"*session ffff6666 (Fix &lt;the&gt; parser &amp; co) waits for you: permission for Bash: git push*\nwaiting on permission for Bash: git push",
	}
	if !slices.Equal(texts, want) {
		t.Errorf("told %q\nwant %q\n%s", texts, want, out.String())
	}
}
