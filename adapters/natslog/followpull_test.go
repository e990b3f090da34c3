package natslog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A read-your-writes wait waits for the projector, a follower of the
// log's end, to apply the event just appended. A pull of the follower's
// whose server heartbeats but does not deliver a message appended after
// it holds such a wait for the whole expiry, as it held the workers'
// commands (adapters/worker); with readExpiry's 10 s on the follower's
// pulls, an exec was seen to wait 10.4 s before it sent its request. So
// a follower pulls within the workers' bounds, heartbeats every second
// at most and an expiry of 3 s at most, over the raw connection and
// through the ordered consumer alike. The test reads each pull off the
// server as it gets it.
func TestFollow_PullsBounded(t *testing.T) {
	t.Parallel()
	const maxHeartbeat, maxExpiry = time.Second, 3 * time.Second
	l, s := newLog(t)
	pulls := make(chan *nats.Msg, 256)
	sub, err := s.Conn().ChanSubscribe("$JS.API.CONSUMER.MSG.NEXT."+StreamName+".>", pulls)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := s.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(s.Conn())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name, filter string
		follow       func(ctx context.Context, filter string)
	}{
		{"raw follower", "lb.ev.session.>", func(ctx context.Context, filter string) {
			for range l.FollowRaw(ctx, filter, 1) {
			}
		}},
		{"ordered consumer", "lb.ev.command.>", func(ctx context.Context, filter string) {
			l.consume(ctx, filter, 1, 0, func(Msg, error) bool { return true })
		}},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.follow(ctx, f.filter)
		}()
		seen := false
		for !seen {
			var m *nats.Msg
			select {
			case m = <-pulls:
			case <-ctx.Done():
				t.Fatalf("%s: no pull seen", f.name)
			}
			name := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
			cons, err := js.Consumer(ctx, StreamName, name)
			if err != nil {
				continue // gone already: the last follower's
			}
			if cfg := cons.CachedInfo().Config; cfg.FilterSubject != f.filter && (len(cfg.FilterSubjects) != 1 || cfg.FilterSubjects[0] != f.filter) {
				continue
			}
			var req struct {
				Expires   time.Duration `json:"expires"`
				Heartbeat time.Duration `json:"idle_heartbeat"`
			}
			if err := json.Unmarshal(m.Data, &req); err != nil {
				t.Fatalf("%s's pull %q: %v", f.name, m.Data, err)
			}
			if req.Heartbeat == 0 || req.Heartbeat > maxHeartbeat || req.Expires == 0 || req.Expires > maxExpiry {
				t.Errorf("%s pulls with heartbeats every %v and an expiry of %v, want at most %v and %v", f.name, req.Heartbeat, req.Expires, maxHeartbeat, maxExpiry)
			}
			seen = true
		}
		cancel()
		<-done
	}
}
