package worker

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// A writer's admission waits for the control feed to have read its
// request (earlierWaiting), so the feed's pulls are bounded as the
// intake's: a pull the server loses (a feed made as the worker starts,
// on a loaded cluster) is pulled again after two missed heartbeats of
// requestHeartbeat. With nats.go's defaults for an ordered consumer
// (5 s heartbeats, a 30 s expiry) a workspace_write command requested
// just after a worker started waited about 10 s, put back every second
// (TestSigningAcrossHosts's exec, whose --wait is 10 s, went into the
// background). The test reads each pull off the server as it gets it.
func TestWorker_FeedPullsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	pulls := make(chan *nats.Msg, 256)
	sub, err := e.srv.Conn().ChanSubscribe("$JS.API.CONSUMER.MSG.NEXT."+natslog.StreamName+".>", pulls)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	e.startWorker(e.workerConfig())
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	feeds := map[string]bool{"intake": false, "control feed": false}
	for !feeds["intake"] || !feeds["control feed"] {
		var m *nats.Msg
		select {
		case m = <-pulls:
		case <-ctx.Done():
			t.Fatalf("pulls seen of the worker's feeds: %v", feeds)
		}
		name := m.Subject[len("$JS.API.CONSUMER.MSG.NEXT."+natslog.StreamName+"."):]
		cons, err := js.Consumer(ctx, natslog.StreamName, name)
		if err != nil {
			continue // a consumer gone already: another reader's
		}
		var feed string
		switch cfg := cons.CachedInfo().Config; {
		case cfg.Durable == DurableName:
			feed = "intake"
		case slices.Equal(cfg.FilterSubjects, []string{CommandFilter, SessionFilter}):
			feed = "control feed"
		default:
			continue
		}
		var req struct {
			Expires   time.Duration `json:"expires"`
			Heartbeat time.Duration `json:"idle_heartbeat"`
		}
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Fatalf("%s's pull %q: %v", feed, m.Data, err)
		}
		if req.Heartbeat == 0 || req.Heartbeat > requestHeartbeat || req.Expires == 0 || req.Expires > requestExpiry {
			t.Errorf("%s pulls with heartbeats every %v and an expiry of %v, want at most %v and %v", feed, req.Heartbeat, req.Expires, requestHeartbeat, requestExpiry)
		}
		feeds[feed] = true
	}
}
