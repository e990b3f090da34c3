package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// WatchHub reads every command's events and output from one ordered
// consumer of its own, made at its first use, and hands each message to
// the watch that awaits its command, if any: what a long-lived process
// whose Clients watch many commands (serve, running execs for its exec
// socket) uses in place of a consumer made and deleted per watch, which
// costs the server a good part of a millisecond each time. A Client
// uses it (ClientConfig.Hub) for the watch PrepareWatch prepares when
// that watch follows the command to its end; the others make their own
// consumer as before.
//
// The consumer delivers what is stored after it was made, in stream
// order, and an ordered consumer that loses its place is made again
// from where it was: a watch registered before its command's request is
// appended (PrepareWatch) misses none of the command's messages. Should
// the consumer fail for good (its connection closed, say), the hub
// stops: the watches it served read on their own from where they were,
// and later ones make their consumers as without a hub. A watch that
// falls more than routeMax messages behind is dropped the same way: its
// queue is freed and it reads on with a consumer of its own, so a watch
// that stops reading holds at most routeMax messages. Safe for
// concurrent use.
type WatchHub struct {
	nc  *nats.Conn
	max int // messages a route holds before it is dropped; routeMax

	mu      sync.Mutex
	routes  map[string][]*route // by command id; two watches of one id each get its messages
	running bool                // the consumer is read
	stopped bool                // it failed for good
}

// route is the messages of one command the hub has read for its watch,
// waiting to be taken.
type route struct {
	mu      sync.Mutex
	q       []jetstream.Msg
	wake    chan struct{} // one-buffered: something was queued, or the hub stopped
	stopped bool          // the hub stopped or dropped the route: what is queued is all it will get
}

// routeMax is how many messages a route holds for a watch that has not
// taken them before the hub drops it: a few thousand events and output
// chunks, far more than a watch that reads falls behind by.
const routeMax = 4096

// NewWatchHub returns a hub reading on nc, which it does not own; its
// consumer is made at the first watch.
func NewWatchHub(nc *nats.Conn) *WatchHub {
	return &WatchHub{nc: nc, max: routeMax, routes: map[string][]*route{}}
}

// hubFilters are the subjects the hub reads: every command's events and
// output.
var hubFilters = []string{CommandFilter, events.SubjectOutput + ".>"}

// add registers a watch of command id and returns its route, making and
// starting the consumer first if it is not running; nil when the hub
// cannot serve it (stopped, or the consumer could not be made): the
// caller makes a consumer of its own.
func (h *WatchHub) add(ctx context.Context, id string) *route {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil
	}
	if !h.running {
		// Made under the lock: no watch is registered before the
		// consumer that will read its messages exists.
		js, err := jetstream.New(h.nc)
		if err != nil {
			return nil
		}
		// From the stream's end as it is now, by sequence: an ordered
		// consumer reset before its first delivery (a missed heartbeat,
		// a reconnect) starts again from there, where "new" would skip
		// what was stored meanwhile.
		stream, err := js.Stream(ctx, natslog.StreamName)
		if err != nil {
			return nil
		}
		cons, err := orderedConsumer(ctx, js, jetstream.OrderedConsumerConfig{
			FilterSubjects: hubFilters,
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    stream.CachedInfo().State.LastSeq + 1,
		})
		if err != nil {
			return nil
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(500),
			jetstream.PullExpiry(requestExpiry), jetstream.PullHeartbeat(requestHeartbeat))
		if err != nil {
			return nil
		}
		h.running = true
		go h.run(it)
	}
	r := &route{wake: make(chan struct{}, 1)}
	h.routes[id] = append(h.routes[id], r)
	return r
}

// remove forgets the watch of command id.
func (h *WatchHub) remove(id string, r *route) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := slices.DeleteFunc(h.routes[id], func(o *route) bool { return o == r })
	if len(rs) == 0 {
		delete(h.routes, id)
	} else {
		h.routes[id] = rs
	}
}

// run reads the consumer until it fails for good, handing each message
// to its command's route. A route that would hold more than h.max
// messages is dropped: its watch reads on with a consumer of its own.
func (h *WatchHub) run(it jetstream.MessagesContext) {
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			h.fail()
			return
		}
		subj := msg.Subject()
		id := subj[strings.LastIndexByte(subj, '.')+1:]
		h.mu.Lock()
		rs := h.routes[id]
		full := false
		for _, r := range rs {
			if !r.push(msg, h.max) {
				full = true
			}
		}
		if full {
			rs = slices.DeleteFunc(rs, (*route).isStopped)
			if len(rs) == 0 {
				delete(h.routes, id)
			} else {
				h.routes[id] = rs
			}
		}
		h.mu.Unlock()
	}
}

// fail stops the hub for good: the watches it serves read on their own.
func (h *WatchHub) fail() {
	h.mu.Lock()
	h.stopped = true
	routes := h.routes
	h.routes = map[string][]*route{}
	h.mu.Unlock()
	for _, rs := range routes {
		for _, r := range rs {
			r.stop()
		}
	}
}

// push queues msg for the route's watch and reports true, or, when limit
// messages are queued already, frees the queue, stops the route (its
// watch reads on with a consumer of its own, from where it was) and
// reports false.
func (r *route) push(msg jetstream.Msg, limit int) bool {
	r.mu.Lock()
	ok := len(r.q) < limit
	if ok {
		r.q = append(r.q, msg)
	} else {
		r.q, r.stopped = nil, true
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return ok
}

// isStopped reports whether the route was stopped.
func (r *route) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// stop tells the route's watch that no more messages come.
func (r *route) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// errHubStopped: the hub stopped, or dropped the route of a watch that
// fell too far behind, before the watch was done; it reads on its own.
var errHubStopped = errors.New("watch hub stopped")

// next returns the messages queued (at least one) in stream order,
// waiting for them; errHubStopped once the hub stopped and all it
// queued was taken, or ctx's error.
func (r *route) next(ctx context.Context) ([]jetstream.Msg, error) {
	for {
		r.mu.Lock()
		q, stopped := r.q, r.stopped
		r.q = nil
		r.mu.Unlock()
		if len(q) > 0 {
			return q, nil
		}
		if stopped {
			return nil, errHubStopped
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
