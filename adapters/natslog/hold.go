package natslog

import (
	"context"
	"sync"

	"github.com/logbook-dev/logbook/events"
)

// Hold tells the committer that its caller is preparing a decision it
// will append soon (an import reading and parsing a transcript's lines):
// until release is called, the committer does not send a batch that is
// not full (fewer than events.MaxBatch messages) but waits for more
// decisions, so that many small decisions of many aggregates go out as
// few atomic batches, each at the server's per-batch cost; and it sends
// the next batch beside the one in flight rather than after its answer
// (see run). Without a hold outstanding the committer sends as before.
//
// The first Hold of a Log with a Verifier also gets its key check ready
// (warmKeys): the watch of the key events starts and catches up beside
// the holder's work, not in the committer before its first commits.
//
// The caller must call release (once; later calls do nothing) before it
// waits for anything an append of its own or of another writer of this
// Log would have to finish first (an append, a lock another appender
// holds while its append waits), or the Log's appends wait for it. Safe
// for concurrent use.
func (l *Log) Hold() (release func()) {
	l.holds.Add(1)
	l.warmKeys()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.holds.Add(-1)
			l.wake()
		})
	}
}

// warmKeys starts, once per Log and on a goroutine of its own, what the
// key check of the commits a Hold announces (refuseKeys) would otherwise
// do in the committer before its first commits: it starts the watch of
// the key events at once (a holder appends many times; see watchAfter)
// and catches the key events up to the log's end, which makes the watch
// live. A get of the last key event filters the whole stream by a
// wildcard, which a busy server takes tens of milliseconds to answer:
// done here it overlaps the holder's reading and parsing. Nothing is
// judged otherwise: a check that finds the watch not live yet catches
// up itself, as before. It does nothing on a Log without a Verifier, once
// the watch is live, or after Close; Close waits for the goroutine.
func (l *Log) warmKeys() {
	if l.cfg.Verifier == nil || l.keys.live.Load() || !l.keys.warmed.CompareAndSwap(false, true) {
		return
	}
	if !l.enterDirect() {
		return // closed
	}
	go func() {
		defer l.inflight.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-l.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		w := &l.keys
		w.mu.Lock()
		w.checks = max(w.checks, watchAfter-1) // this check starts the watch
		w.mu.Unlock()
		if !l.startKeyWatch() || l.CatchUpKeys(ctx) != nil {
			return
		}
		w.live.Store(true)
		if w.broken.Load() {
			// The watch reported an error since it started: the next
			// check starts it again and catches up.
			w.live.Store(false)
		}
	}()
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
