package natslog

import (
	"sync"

	"github.com/logbook-dev/logbook/events"
)

// Hold tells the committer that its caller is preparing a decision it
// will append soon (an import reading and parsing a transcript's lines):
// until release is called, the committer does not send a batch that is
// not full (fewer than events.MaxBatch messages) but waits for more
// decisions, so that many small decisions of many aggregates go out as
// few atomic batches, each at the server's per-batch cost. Without a
// hold outstanding the committer sends as before.
//
// The caller must call release (once; later calls do nothing) before it
// waits for anything an append of its own or of another writer of this
// Log would have to finish first (an append, a lock another appender
// holds while its append waits), or the Log's appends wait for it. Safe
// for concurrent use.
func (l *Log) Hold() (release func()) {
	l.holds.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			l.holds.Add(-1)
			l.wake()
		})
	}
}

// wake tells the committer, if it awaits holders, to look again.
func (l *Log) wake() {
	select {
	case l.unheld <- struct{}{}:
	default: // a wake-up is waiting already
	}
}

// await returns pending once the next batch can go: pending holds
// events.MaxBatch messages or more, or no Hold is outstanding and no
// caller is inside Append (validating, signing, encoding: a holder that
// let go of its hold just before its append), or the Log is closed.
// Meanwhile it takes every request that arrives. Without a Hold
// outstanding when it is called it returns pending at once.
func (l *Log) await(pending []*request) []*request {
	if l.holds.Load() == 0 {
		return pending
	}
	n := 0
	for _, r := range pending {
		n += len(r.msgs)
	}
	for n < events.MaxBatch && (l.holds.Load() > 0 || l.entering.Load() > 0) {
		select {
		case r := <-l.reqs:
			pending = append(pending, r)
			n += len(r.msgs)
		case <-l.unheld:
		case <-l.quit:
			return pending
		}
	}
	return pending
}
