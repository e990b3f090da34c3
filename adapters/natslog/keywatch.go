package natslog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchAfter is the key check (refuseKeys) from which a Log with a
// Verifier watches the key events instead of asking for the last one
// before each commit: a process that appends once (a CLI command) asks
// once and creates no consumer.
const watchAfter = 2

// keyWatchPull is how many key events the watch's consumer asks for at
// once: key events are few, and a pull of this many holds little.
const keyWatchPull = 64

// keyWatch is a Log's watch of its key events: an ordered consumer on
// keySubjects, from the stream's first sequence on, that makes the
// Log's Verifier observe each key event as the server delivers it, so
// that the key check before a commit (refuseKeys) judges by the key
// state observed without a request of its own. Judging a key event twice
// (the watch and a load's catch-up) changes nothing: the key state is a
// function of the key events' sequences.
type keyWatch struct {
	mu     sync.Mutex
	checks int                      // key checks made before the watch started; guarded by mu
	cons   jetstream.Consumer       // the watch's consumer; nil: not started; guarded by mu
	cc     jetstream.ConsumeContext // guarded by mu
	failed bool                     // the watch could not start: every check asks; guarded by mu
	closed bool                     // the Log is closed: no watch starts; guarded by mu

	// broken is set when the consumer reported an error (missed
	// heartbeats, a reset, the stream's leader lost): the watch may lag
	// or have stopped, so the next check stops it, starts a new one and
	// catches up (live is cleared after broken is set).
	broken atomic.Bool

	// live is set once the watch runs and a catch-up (CatchUpKeys) made
	// after it started succeeded: every key event stored before that
	// catch-up is observed, and every one after it is delivered to the
	// watch, which the server does moments after storing it.
	live atomic.Bool
	// observed counts the key events the watch made the Verifier observe.
	observed atomic.Uint64
	// warmed is set once a Hold started the watch's warm-up (warmKeys).
	warmed atomic.Bool
}

// startKeyWatch counts a key check and, from the watchAfter-th on,
// starts the watch if it has not started, or starts it again if it
// broke. A watch that cannot start is not tried again: every check then
// asks for the last key event. It reports whether the watch runs.
func (l *Log) startKeyWatch() bool {
	w := &l.keys
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checks++
	if w.cons != nil && w.broken.Swap(false) {
		w.stop(l)
	}
	switch {
	case w.cons != nil:
		return true
	case w.closed || w.failed || w.checks < watchAfter:
		return false
	}
	cons, err := l.orderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{keySubjects}, MaxResetAttempts: ResetAttempts})
	if err != nil {
		w.failed = true
		return false
	}
	cc, err := cons.Consume(l.observeKeyEvent, jetstream.PullMaxMessages(keyWatchPull),
		jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {
			// Called with the consumer's lock held: only flags here.
			w.broken.Store(true)
			w.live.Store(false)
		}))
	if err != nil {
		w.failed = true
		l.deleteConsumer(cons)
		return false
	}
	w.cons, w.cc = cons, cc
	return true
}

// stop stops the watch's consumer and deletes it; w.mu is held.
func (w *keyWatch) stop(l *Log) {
	w.cc.Stop()
	l.deleteConsumer(w.cons)
	w.cons, w.cc = nil, nil
}

// observeKeyEvent makes the Verifier observe jm, a key event the watch
// delivered; one that does not decode binds nothing and is passed over,
// as every reader passes it over.
func (l *Log) observeKeyEvent(jm jetstream.Msg) {
	md, err := jm.Metadata()
	if err != nil {
		return
	}
	seq := md.Sequence.Stream
	rec, err := l.decode(l.reg.NewDecoder(), seq, jm.Subject(), jm.Data())
	if err != nil {
		return
	}
	l.cfg.Verifier.Judge(attestMsg(seq, jm.Subject(), jm.Headers(), jm.Data()), rec.Envelope, 0, nil)
	l.keys.observed.Add(1)
}

// stopKeyWatch stops the watch, if it runs, and asks the server to
// delete its consumer without waiting for the answer (dropConsumer):
// none starts after it. Called by Close, which a process that is done
// with the log (an import) calls last, and should not wait for a
// deletion it never reads the outcome of.
func (l *Log) stopKeyWatch() {
	w := &l.keys
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.live.Store(false)
	if w.cons != nil {
		w.cc.Stop()
		l.dropConsumer(w.cons)
		w.cons, w.cc = nil, nil
	}
}

// dropConsumer asks the server to delete cons's current consumer and
// does not wait for its answer: the request, sent without a reply
// subject, goes out with the connection's next flush (the client flushes
// moments after a publish, and when the connection is closed or
// drained). Best effort, as deleteConsumer: a consumer whose deletion
// was lost (the process ended first) is ephemeral, held in memory and
// dropped by the server after the inactivity threshold of an ordered
// consumer (5 minutes, nats.go's default), and a refusal (credentials
// that may not delete it) changes nothing.
func (l *Log) dropConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	_ = l.js.Conn().Publish(jsAPI("CONSUMER.DELETE", StreamName, info.Name), nil)
}

// deleteConsumer deletes cons's current consumer on the server, waiting
// at most a second.
func (l *Log) deleteConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.js.DeleteConsumer(ctx, StreamName, info.Name)
}
