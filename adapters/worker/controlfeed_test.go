package worker

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestWorker_ControlFeedRecreated: the control feed's ordered consumer
// is deleted while the stream takes no new consumer (its MaxConsumers
// lowered to the consumers left), so the client's re-creations fail and
// its iterator closes — what a stream without a leader for longer than
// the client's resets does. The worker keeps running, follows the feed
// again once the stream takes consumers, and a stop request made after
// that still stops its command.
func TestWorker_ControlFeedRecreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	var logs natslogtest.Buffer
	cfg := e.workerConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	_, stop := e.startWorker(cfg)
	id := e.submit(e.request(events.ModeFullAccess, "sh", "-c", "echo ready; while :; do sleep 0.05; done"))
	e.waitFor("ready", func() bool { _, o := e.read(id); return strings.Contains(o.all.String(), "ready") })

	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	feeds := func() []string {
		var names []string
		for info := range st.ListConsumers(ctx).Info() {
			if info.Config.Durable == "" && strings.Join(info.Config.FilterSubjects, " ") == CommandFilter+" "+SessionFilter {
				names = append(names, info.Name)
			}
		}
		return names
	}
	var feed string
	if f := feeds(); len(f) == 1 {
		feed = f[0]
	}
	if feed == "" {
		t.Fatalf("control feed consumers %q, want one", feeds())
	}
	was := st.CachedInfo().Config
	limited := was
	limited.MaxConsumers = st.CachedInfo().State.Consumers - 1
	if _, err := js.UpdateStream(ctx, limited); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, natslog.StreamName, feed); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the feed given up by the client", func() bool { return strings.Contains(logs.String(), "following it again") })
	if _, err := js.UpdateStream(ctx, was); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the feed followed again", func() bool { f := feeds(); return len(f) == 1 && f[0] != feed })
	if err := e.client.Stop(ctx, id, "tester", "after the feed came back"); err != nil {
		t.Fatal(err)
	}
	got, _ := e.follow(id, 10*time.Second)
	if got.Status != command.StatusExited || !got.Stopped {
		t.Fatalf("status %s stopped %v; want exited, stopped", got.Status, got.Stopped)
	}
	if err := stop(); err != nil {
		t.Errorf("worker Run: %v, want it running until stopped", err)
	}
}
