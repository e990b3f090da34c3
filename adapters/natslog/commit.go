package natslog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/events"
)

// run is the committer: it takes decisions from l.reqs, merges those that
// are queued together into one atomic batch, commits it and answers each
// caller. It returns when l.quit is closed, after answering every request
// it holds and once every batch it sent is answered, and then closes
// l.done.
//
// A batch is committed on a goroutine of its own, so that the committer
// gathers the next one meanwhile; the next goes out beside it only while
// a Hold is outstanding or was when the batch in flight went (the runs of
// an import, merged batch after batch: the server stages the next while
// it stores the one before, instead of waiting for its answer and for
// the committer to send again), at most maxSending at once, and never
// with a decision of an aggregate a batch in flight holds one of (that
// one waits for the answer, as a lone committer would make it). Without
// holds a batch waits for the one in flight, as before: group commit
// merges what arrives meanwhile.
func (l *Log) run() {
	defer close(l.done)
	defer l.sends.Wait()
	var (
		pending []*request
		flying  = map[string]int{} // requests in flight, by subject
		flights int                // batches in flight
		held    bool               // a Hold was outstanding when the newest batch in flight went
	)
	land := func(b []*request) {
		flights--
		for _, r := range b {
			if flying[r.subject]--; flying[r.subject] <= 0 {
				delete(flying, r.subject)
			}
		}
	}
	landed := func() {
		for {
			select {
			case b := <-l.sent:
				land(b)
			default:
				return
			}
		}
	}
	for {
		landed()
		if len(pending) == 0 {
			select {
			case r := <-l.reqs:
				pending = append(pending, r)
			case <-l.quit:
				return
			}
		}
		// Without a hold the batch in flight is waited for before the
		// next is gathered, so that what arrives meanwhile joins it.
		for flights > 0 && !held && l.holds.Load() == 0 {
			land(<-l.sent)
		}
		pending = l.await(l.gather(pending))
		landed()
		var batch []*request
		batch, pending = pick(pending, flying)
		if len(batch) == 0 && len(pending) > 0 && flights > 0 {
			land(<-l.sent) // every decision waiting is of an aggregate in flight
		}
		if len(batch) > 0 {
			for flights >= maxSending {
				land(<-l.sent)
			}
			held = l.holds.Load() > 0
			flights++
			for _, r := range batch {
				flying[r.subject]++
			}
			l.sends.Add(1)
			go func() {
				defer l.sends.Done()
				l.commit(batch)
				l.sent <- batch
			}()
		}
		select {
		case <-l.quit:
			for _, r := range pending {
				if r.state.CompareAndSwap(queued, taken) {
					r.answer(outcome{err: fmt.Errorf("append %s: %w", r.agg, ErrClosed)})
				}
			}
			return
		default:
		}
	}
}

// maxSending bounds the batches the committer has sent and not yet seen
// answered: one the server stores while the next is staged behind it
// keeps the server busy; more would only queue there.
const maxSending = 2

// maxYields bounds how often one gather yields while waiting for
// callers that are inside Append but have not queued yet.
const maxYields = 256

// gather appends to pending every request already waiting on l.reqs,
// without blocking, until pending holds at least events.MaxBatch messages.
// When l.reqs is empty it yields the processor and looks again: once, so
// that writers just woken by the previous batch's answers can queue
// their next decision, and again (up to maxYields times) while some
// caller is inside Append, validating or encoding. No timer is involved:
// on an idle process a lone decision goes out after one yield, which
// returns at once.
func (l *Log) gather(pending []*request) []*request {
	n := 0
	for _, r := range pending {
		n += len(r.msgs)
	}
	for yields := 0; n < events.MaxBatch; {
		select {
		case r := <-l.reqs:
			pending = append(pending, r)
			n += len(r.msgs)
		default:
			if yields >= maxYields || yields > 0 && l.entering.Load() == 0 {
				return pending
			}
			runtime.Gosched()
			yields++
		}
	}
	return pending
}

// MaxMergeBytes bounds the bodies of the decisions group commit merges
// into one atomic batch, in bytes (4 MiB): a decision larger goes out
// alone. It bounds what a merged batch takes of the disk (staged, then
// stored) and so the reserve of free space serve keeps for commits in
// flight (adapters/diskfull.Guard).
const MaxMergeBytes = 4 << 20

// pick splits pending, in arrival order, into the next batch and the
// rest. A batch holds at most events.MaxBatch messages, bodies of at most
// MaxMergeBytes but for a lone decision, and at most one
// decision per aggregate, and none of an aggregate flying names (by
// subject: those a batch in flight holds); a later decision for an
// aggregate already in the batch or in flight waits for the next round,
// and so does everything after the first decision that does not fit (no
// overtaking). Cancelled requests are dropped; picked ones are marked
// taken.
func pick(pending []*request, flying map[string]int) (batch, rest []*request) {
	seen := make(map[string]struct{}, len(pending))
	n, size := 0, 0
	full := false
	for _, r := range pending {
		if r.state.Load() == cancelled {
			continue
		}
		_, busy := seen[r.subject]
		if busy || full || flying[r.subject] > 0 {
			rest = append(rest, r)
			continue
		}
		if n+len(r.msgs) > events.MaxBatch || n > 0 && size+r.size > MaxMergeBytes {
			full = true
			rest = append(rest, r)
			continue
		}
		if !r.state.CompareAndSwap(queued, taken) {
			continue // cancelled meanwhile
		}
		seen[r.subject] = struct{}{}
		n += len(r.msgs)
		size += r.size
		batch = append(batch, r)
	}
	return batch, rest
}

// commit sends batch as one atomic batch and answers its members; a
// member signed by a key the log's key state refuses (refuseKeys) is
// answered with a *KeyRefusedError, one holding an event its key's role
// may not append with a *RoleRefusedError, and not sent. If the
// server refuses a merged batch (one member conflicts, was committed
// before, …), nothing of it was stored, and each member is sent alone so
// that only the offending one fails. (A single server's store that fails
// a write part way through a commit, a full disk, leaves the batch's
// first messages stored: no commit starts while the disk is under its
// reserve, Config.Room.)
func (l *Log) commit(batch []*request) {
	l.decisions.Add(uint64(len(batch)))
	signRequests(batch)
	n := len(batch)
	if batch = l.refuseKeys(batch); len(batch) == 0 {
		return
	}
	if err := l.roomRefusal(); err != nil {
		for _, r := range batch {
			r.answer(outcome{err: fmt.Errorf("append %s: %w", r.agg, err)})
		}
		return
	}
	if len(batch) < n {
		signRequests(batch) // for what is sent
	}
	if len(batch) == 1 {
		batch[0].answer(l.commitOne(batch[0]))
		return
	}
	if l.pipelined(batch) {
		return
	}
	l.merged.Add(1)
	var msgs []*nats.Msg
	for _, r := range batch {
		msgs = append(msgs, r.msgs...)
	}
	ack, err := l.send(msgs)
	if err == nil {
		seq := ack.Sequence - uint64(len(msgs)) + 1 // the batch's first sequence
		for _, r := range batch {
			n := uint64(len(r.msgs))
			r.answer(outcome{app: events.Appended{First: seq, Last: seq + n - 1}})
			seq += n
		}
		return
	}
	if _, ok := errors.AsType[*jetstream.APIError](err); !ok {
		for _, r := range batch {
			r.answer(l.outcome(r, nil, err))
		}
		return
	}
	l.split.Add(1)
	for _, r := range batch {
		r.answer(l.commitOne(r))
	}
}

// commitOne stores r alone. A one-message decision goes out as a plain
// publish with the same headers: one message is atomic by itself, and on
// a single server a plain publish costs one fsync while an atomic batch
// also stages its messages in a store of its own (several more).
// pipelined commits a merged batch of one-event decisions as plain
// publishes sent back to back, each with its own expected sequence, when
// there are fewer than Config.MergeMin of them: below that count an atomic
// batch's fixed cost (the server stages every batch with fsyncs of its
// own) exceeds one fsync per message. It reports false, having done
// nothing, when the batch does not qualify.
func (l *Log) pipelined(batch []*request) bool {
	if len(batch) >= l.cfg.MergeMin {
		return false
	}
	for _, r := range batch {
		if len(r.msgs) != 1 {
			return false
		}
	}
	l.pipes.Add(1)
	futures := make([]jetstream.PubAckFuture, len(batch))
	errs := make([]error, len(batch))
	for i, r := range batch {
		l.batches.Add(1)
		m := r.msgs[0]
		m.Reply = ""
		futures[i], errs[i] = l.js.PublishMsgAsync(m)
	}
	timeout := time.NewTimer(l.cfg.Timeout)
	defer timeout.Stop()
	// Publishes no server took were not stored: each goes out again
	// alone, once the others are answered, while no server takes it.
	var resend []*request
	defer func() {
		for _, r := range resend {
			r.answer(l.commitOne(r))
		}
	}()
	for i, r := range batch {
		if errs[i] != nil {
			r.answer(l.outcome(r, nil, errs[i]))
			continue
		}
		select {
		case ack := <-futures[i].Ok():
			r.answer(outcome{app: events.Appended{First: ack.Sequence, Last: ack.Sequence, Duplicate: ack.Duplicate}})
		case err := <-futures[i].Err():
			if noResponders(err) || busy(err) {
				resend = append(resend, r)
				continue
			}
			r.answer(l.outcome(r, nil, err))
		case <-timeout.C:
			r.answer(l.outcome(r, nil, fmt.Errorf("no acknowledgement within %s", l.cfg.Timeout)))
			timeout.Reset(0)
		}
	}
	return true
}

func (l *Log) commitOne(r *request) outcome {
	if r.covered != len(r.msgs) {
		// Signed with other requests' messages, which do not go with it.
		signRequests([]*request{r})
	}
	if len(r.msgs) > 1 {
		ack, err := l.send(r.msgs)
		return l.outcome(r, ack, err)
	}
	l.batches.Add(1)
	m := r.msgs[0]
	m.Reply = ""
	// Drop what a merged batch that was refused left on the message.
	delete(m.Header, jetstreamext.BatchIDHeader)
	delete(m.Header, jetstreamext.BatchSeqHeader)
	delete(m.Header, jetstreamext.BatchCommitHeader)
	start, pause := time.Now(), firstPause
	for {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		ack, err := l.js.PublishMsg(ctx, m)
		cancel()
		if err == nil {
			return outcome{app: events.Appended{First: ack.Sequence, Last: ack.Sequence, Duplicate: ack.Duplicate}}
		}
		if !l.again(err, start, &pause) {
			return l.outcome(r, nil, err)
		}
		l.batches.Add(1)
		m.Reply = ""
	}
}

// ElectionWait bounds how long the committer sends a commit again that
// found no responders: no server took it (the stream has no leader
// while it elects one, or the node the connection is on has lost its
// routes), so nothing of it was stored and sending it again, with the
// same event ids, is safe. After ElectionWait the append fails with the
// error. A commit that was sent and not answered (a timeout, a broken
// connection) is never sent again here: its outcome is unknown.
const ElectionWait = 30 * time.Second

// firstPause is the first pause before a commit is sent again; each
// pause doubles, up to maxPause.
const (
	firstPause = 50 * time.Millisecond
	maxPause   = time.Second
)

// noResponders reports whether err says that no server took the request.
func noResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// again reports whether a send that failed with err, first tried at
// start, goes out again: err is noResponders or busy, and ElectionWait
// has not passed. It pauses (pause, then doubled up to maxPause) before saying
// so, and says no at once when the Log is closed.
func (l *Log) again(err error, start time.Time, pause *time.Duration) bool {
	wait := *pause
	if busy(err) {
		wait = busyPause
	} else if !noResponders(err) {
		return false
	}
	if time.Since(start)+wait > ElectionWait {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.quit:
		return false
	}
	*pause = min(*pause*2, maxPause)
	return true
}

// send publishes msgs as one atomic batch, each try bounded by
// Config.Timeout, and sends it again while it finds no responders (see
// ElectionWait).
func (l *Log) send(msgs []*nats.Msg) (*jetstreamext.BatchAck, error) {
	start, pause := time.Now(), firstPause
	for {
		l.batches.Add(1)
		for _, m := range msgs {
			m.Reply = "" // a retry may reuse a message that carried an ack inbox
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		ack, err := jetstreamext.PublishMsgBatch(ctx, l.js, msgs)
		cancel()
		if err == nil || !l.again(err, start, &pause) {
			return ack, err
		}
	}
}

// outcome maps the answer to r's own batch onto what Append returns.
func (l *Log) outcome(r *request, ack *jetstreamext.BatchAck, err error) outcome {
	if err == nil {
		n := uint64(len(r.msgs))
		return outcome{app: events.Appended{First: ack.Sequence - n + 1, Last: ack.Sequence}}
	}
	apiErr, ok := errors.AsType[*jetstream.APIError](err)
	switch {
	case !ok:
		return outcome{err: fmt.Errorf("append %s: %w: %w", r.agg, ErrUnknownOutcome, err)}
	case apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence,
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		// A plain publish checks the expected sequence before Msg-Id
		// dedup, so a re-sent committed event lands here: look for it.
		if app := l.duplicate(r); app.Last != 0 {
			return outcome{app: app}
		}
		return outcome{err: fmt.Errorf("append %s expect %d: %w: %w", r.agg, r.expect, events.ErrConflict, err)}
	case apiErr.ErrorCode == jetstreamext.JSErrCodeBatchPublishDuplicateMsgID:
		// The server refused the whole atomic batch because one of its
		// event ids is in its duplicate window: nothing of this send was
		// stored. It is a duplicate only if the earlier copy is the
		// whole batch, found where r expected it; otherwise (an id
		// re-used with new events, a copy committed elsewhere, a lookup
		// that failed during a leader change) the events may not be in
		// the log at all, and the caller must decide again.
		app := l.duplicate(r)
		if app.Last != 0 {
			return outcome{app: app}
		}
		return outcome{err: fmt.Errorf("append %s expect %d: %w: an event id of the batch is committed already but the batch is not there: %w", r.agg, r.expect, events.ErrConflict, err)}
	default:
		return outcome{err: fmt.Errorf("append %s: %w", r.agg, err)}
	}
}

// duplicate locates the stored copy of r, a batch the server says was
// committed before: its first message should be the first one on r's
// subject after r.expect. Both ends are checked by Nats-Msg-Id; on any
// mismatch or lookup error First and Last stay 0.
func (l *Log) duplicate(r *request) events.Appended {
	app := events.Appended{Duplicate: true}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	m, err := l.getMsg(ctx, r.expect+1, r.subject)
	if err != nil || m.Header.Get(jetstream.MsgIDHeader) != r.firstID {
		return app
	}
	last := m.Sequence + uint64(len(r.msgs)) - 1
	if last != m.Sequence {
		lm, err := l.getMsg(ctx, last, "")
		if err != nil || lm.Subject != r.subject || lm.Header.Get(jetstream.MsgIDHeader) != r.lastID {
			return app
		}
	}
	app.First, app.Last = m.Sequence, last
	return app
}
