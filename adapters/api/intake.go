package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/journal"
	"github.com/logbook-dev/logbook/events"
)

// Intake is how a server takes Claude Code hook payloads on its socket
// without making the hook wait for the log's atomic batch: Accept checks
// a request as the hook verb would, writes it to a journal
// (adapters/journal: one fdatasync into space written beforehand) and
// answers once it is on disk; Run then ingests the journal's records as
// the hook verb does, in the order they were taken for each session
// (each subagent's own hooks apart from its parent's, as each is an
// aggregate of its own, so that parallel subagents append side by side), and
// marks them done in the journal once their batches are in the log. A
// server that dies in between ingests the records left in the journal
// when it next starts (OpenIntake): none is lost, and one ingested before
// the crash is not ingested twice (its observation id is its hook's
// entry id, which the session has seen).
//
// Everything else that decides on sessions or reads what was decided
// waits for the records taken before it (Wait): the hook verb, the gate,
// the spool's drain and every query behind CaughtUp. A record the
// reducer refuses as bad input is set aside, redacted, in the spool's
// rejected/ folder, as the drain sets aside a spooled payload.
//
// An Intake is safe for concurrent use. Its Service must not be used by
// another Intake.
type Intake struct {
	svc  *Service
	j    *journal.Journal
	logf func(format string, args ...any)

	roundMu   sync.Mutex // one round at a time
	advanceMu sync.Mutex // one advance at a time, in order

	mu       sync.Mutex
	queue    []*intakeItem // taken and not done, in sequence order
	accepted uint64        // sequence of the last record taken
	through  uint64        // every record up to it is done
	changed  chan struct{} // closed (and replaced) when queue, through or a round's failure moves
	lastErr  error         // why the last round left records undone
}

// intakeItem is one record taken: the hook entry it carries, the session
// aggregate whose records are ingested in order (key), and bad, the input error
// that sets it aside unread (a record written by an older server that
// this one refuses).
type intakeItem struct {
	seq   uint64
	key   string
	entry claude.Entry
	bad   error
	done  bool
}

// IntakeMaxBytes caps the intake journal (64 MiB): past it, with the
// log taking no appends, a hook is ingested at once or, failing that,
// waits in its own spool, and the records queued in memory stay bounded.
const IntakeMaxBytes = 64 << 20

// intakeCheckWait bounds how long Accept waits for the log to read the
// hook's session by, for the reducer's verdict (CheckHookNow).
const intakeCheckWait = 250 * time.Millisecond

// IntakeWait bounds how long Wait waits for the records taken before it:
// longer means the log is not taking appends.
const IntakeWait = 5 * time.Second

// OpenIntake opens (or creates) the journal at path for svc and queues
// the records a server before it took but did not finish; Run ingests
// them first. Errors are the journal's (journal.Open): a damaged journal
// stops the server rather than lose the hooks it holds.
func OpenIntake(svc *Service, path string, logf func(format string, args ...any)) (*Intake, error) {
	j, recs, err := journal.Open(path, journal.Options{MaxSize: IntakeMaxBytes})
	if err != nil {
		return nil, err
	}
	in := &Intake{svc: svc, j: j, logf: logf, changed: make(chan struct{})}
	if seq, at := j.Torn(); seq != 0 {
		logf("hook intake: journal %s: record %d at offset %d cannot be read and is left out: a write a crash tore before the hook was answered, or, if serve did not crash, damage that lost that hook", path, seq, at)
	}
	for _, r := range recs {
		it := &intakeItem{seq: r.Seq}
		e, err := hookEntry(r.Data)
		if err == nil {
			it.entry = e
			var agg events.Aggregate
			agg, err = svc.Ing.CheckHook(e)
			it.key = agg.String()
		}
		if err != nil {
			it.entry.ID, it.entry.Payload, it.bad = e.ID, e.Payload, inputError(err)
		}
		in.queue = append(in.queue, it)
	}
	if len(recs) > 0 {
		in.through, in.accepted = recs[0].Seq-1, recs[len(recs)-1].Seq
	}
	svc.intake.Store(in)
	return in, nil
}

// Accept is the hook verb for the socket (HookRequest → HookReply): a
// Claude Code payload that passes the checks HookThen makes before
// deciding, and the reducer's as its session stands now
// (claude.Ingester.CheckHookNow), is written to the journal and answered with its place there
// (HookReply.Queued), for Run to ingest; a Codex notify payload, and a
// request the journal cannot take (full, say), is ingested at once as
// Hook does. A payload that fails the checks is refused with the error
// Hook gives it, nothing taken. A request from the system socket is
// taken with its sender (HookRequest.Sender) set to the peer's user;
// any other request with none, whatever it says. One from the system
// socket for a session another user owns is refused, nothing taken
// (ErrNotOwner; see Service.checkOwner).
func (in *Intake) Accept(ctx context.Context, data []byte) (any, error) {
	data, err := withSender(ctx, data)
	if err != nil {
		return nil, err
	}
	e, err := hookEntry(data)
	if err != nil {
		return nil, err
	}
	if codex.IsNotify(e.Payload) {
		return in.svc.Hook(ctx, data)
	}
	// The reducer's verdict too, as the session stands now: a hook it
	// refuses (a session of another agent's) is refused here, before
	// the answer, not set aside after the hook exited 0. The hooks of
	// this session still queued are all Claude Code's, which change no
	// verdict it gives. A log that does not answer within
	// intakeCheckWait leaves the verdict to the ingest: the hook is
	// journaled as ever.
	cctx, cancel := context.WithTimeout(ctx, intakeCheckWait)
	agg, err := in.svc.Ing.CheckHookNow(cctx, e)
	cancel()
	if err != nil {
		return nil, inputError(err)
	}
	if err := in.svc.checkOwner(ctx, e, agg, in.pendingSender); err != nil {
		return nil, err
	}
	key := agg.String()
	// One lock from the journal's append to the queue: records are
	// queued in sequence order.
	in.mu.Lock()
	seq, err := in.j.Append(data)
	if err != nil {
		in.mu.Unlock()
		in.logf("hook intake: journal write failed: %v; appending the hook at once", err)
		return in.svc.Hook(ctx, data)
	}
	in.queue = append(in.queue, &intakeItem{seq: seq, key: key, entry: e})
	in.accepted = seq
	in.signalLocked()
	in.mu.Unlock()
	return HookReply{Queued: seq}, nil
}

// signalLocked wakes whoever waits on changed. in.mu is held.
func (in *Intake) signalLocked() {
	close(in.changed)
	in.changed = make(chan struct{})
}

// Run ingests the records taken, as they come, until ctx is done. A
// record whose ingest fails for another reason than bad input (the log
// not answering) stays, with the records of its session after it, and
// is tried again after a pause that grows to 5 s; records of other
// sessions go on.
func (in *Intake) Run(ctx context.Context) {
	pause := 50 * time.Millisecond
	var said time.Time // when a failure was last logged
	for ctx.Err() == nil {
		n, err := in.round(ctx)
		if err != nil && ctx.Err() == nil {
			if time.Since(said) >= 30*time.Second {
				said = time.Now()
				in.logf("hook intake: append failed: %v; %d hooks wait in %s (none is lost; trying again, this said at most every 30s)", err, in.Pending(), in.j.Path())
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, 5*time.Second)
			continue
		}
		if !said.IsZero() {
			said = time.Time{}
			in.logf("hook intake: appending again")
		}
		pause = 50 * time.Millisecond
		if n > 0 {
			continue
		}
		in.mu.Lock()
		ch, idle := in.changed, len(in.queue) == 0
		in.mu.Unlock()
		if !idle {
			continue
		}
		select {
		case <-ctx.Done():
		case <-ch:
		}
	}
}

// Flush ingests what is taken until none is left or ctx is done, and
// reports the records still left then: what a stopping server does
// after its socket has closed, before its log does.
func (in *Intake) Flush(ctx context.Context) (left int, err error) {
	for {
		in.mu.Lock()
		left = len(in.queue)
		in.mu.Unlock()
		if left == 0 {
			return 0, nil
		}
		if ctx.Err() != nil {
			return left, ctx.Err()
		}
		if _, err := in.round(ctx); err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// maxSessionsAtOnce bounds the sessions a round ingests at once; their
// decisions meet in the log's group commit.
const maxSessionsAtOnce = 64

// round ingests the records queued now, each session's in order and
// sessions side by side, marking done in the journal, as each record
// goes in, every record up to the first one not yet done (advance). It
// returns how many records it finished and the first error that left
// one undone.
func (in *Intake) round(ctx context.Context) (int, error) {
	in.roundMu.Lock()
	defer in.roundMu.Unlock()
	in.mu.Lock()
	var keys []string
	groups := map[string][]*intakeItem{}
	for _, it := range in.queue {
		if it.done {
			continue
		}
		if _, ok := groups[it.key]; !ok {
			keys = append(keys, it.key)
		}
		groups[it.key] = append(groups[it.key], it)
	}
	in.mu.Unlock()
	if len(keys) == 0 {
		return 0, nil
	}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		finished int
	)
	slots := make(chan struct{}, maxSessionsAtOnce)
	for _, k := range keys {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, it := range groups[k] {
				if err := in.ingest(ctx, it); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					return // the session's later records wait: order holds
				}
				in.mu.Lock()
				it.done = true
				finished++
				in.mu.Unlock()
				// At once, not at the round's end: after a crash only
				// the records in flight are ingested again, and each
				// session's recent keys know those.
				in.advance()
			}
		})
	}
	wg.Wait()
	in.mu.Lock()
	in.lastErr = firstErr
	if firstErr != nil {
		in.signalLocked() // a waiter that gives up on held appends looks (WaitUnlessHeld)
	}
	in.mu.Unlock()
	return finished, firstErr
}

// advance marks done in the journal every record up to the first one
// not yet done, then tells waiters: a record a waiter counts on is in
// the log, and is not ingested again after a crash.
func (in *Intake) advance() {
	in.advanceMu.Lock()
	defer in.advanceMu.Unlock()
	in.mu.Lock()
	i := 0
	for i < len(in.queue) && in.queue[i].done {
		i++
	}
	if i == 0 {
		in.mu.Unlock()
		return
	}
	through := in.queue[i-1].seq
	in.queue = append(in.queue[:0:0], in.queue[i:]...)
	in.mu.Unlock()
	if err := in.j.Done(through); err != nil {
		in.logf("hook intake: journal: marking done failed: %v", err)
	}
	in.mu.Lock()
	in.through = through
	in.signalLocked()
	in.mu.Unlock()
}

// ingest ingests one record: its observation and decisions in one batch,
// or, for bad input, the payload set aside in the spool's rejected/
// folder. An error is the log's: the record stays for the next round.
func (in *Intake) ingest(ctx context.Context, it *intakeItem) error {
	err := it.bad
	if err == nil {
		_, _, err = in.svc.Ing.HookThen(ctx, it.entry, nil)
	}
	if err == nil {
		return nil
	}
	if !IsInputError(err) {
		return fmt.Errorf("hook %s: %w", it.entry.ID, err)
	}
	if it.entry.ID == "" {
		in.logf("hook intake: record %d refused and dropped (no hook id to set it aside under): %v", it.seq, err)
		return nil
	}
	if rerr := in.svc.Spool.Reject(it.entry.ID, it.entry.Payload, err, in.svc.red); rerr != nil {
		return fmt.Errorf("hook %s: set aside: %w", it.entry.ID, rerr)
	}
	in.logf("hook intake: hook %s refused, set aside in %s: %v", it.entry.ID, filepath.Join(in.svc.Spool.Dir(), claude.RejectedDir), in.svc.red.Redact(err.Error()))
	return nil
}

// Wait returns once every record taken before the call is done (in the
// log, or set aside), or with an error naming how many are left and why
// when that takes longer than IntakeWait or ctx ends first.
func (in *Intake) Wait(ctx context.Context) error {
	return in.wait(ctx, false)
}

// WaitUnlessHeld is Wait, but it gives up at once, with an error
// wrapping ErrHeld that says why (Service.held), when the records it
// waits for wait for disk space: the last round failed because serve
// holds its appends (the log's reserve, natslog.HeldError, or serve's
// pause) and serve's appends are paused still (Service.Paused; a
// Service without it trusts the failure). What waits for them then
// waits until the disk is freed, far past what a hook waits for its
// answer.
func (in *Intake) WaitUnlessHeld(ctx context.Context) error {
	return in.wait(ctx, true)
}

// wait is Wait, or WaitUnlessHeld with unlessHeld.
func (in *Intake) wait(ctx context.Context, unlessHeld bool) error {
	in.mu.Lock()
	target := in.accepted
	in.mu.Unlock()
	timer := time.NewTimer(IntakeWait)
	defer timer.Stop()
	for {
		in.mu.Lock()
		through, ch, n, why := in.through, in.changed, len(in.queue), in.lastErr
		in.mu.Unlock()
		if through >= target {
			return nil
		}
		if unlessHeld && why != nil && in.svc.pausedNow() {
			if err := in.svc.held(why); errors.Is(err, ErrHeld) {
				return err
			}
		}
		err := ctx.Err()
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
			err = fmt.Errorf("waited %s", IntakeWait)
		}
		if why != nil {
			err = fmt.Errorf("%w; last: %w", err, why)
		}
		if in.svc.Paused != nil {
			if p := in.svc.Paused(); p != "" {
				err = fmt.Errorf("serve's %s: free space there; %w", p, err)
			}
		}
		return fmt.Errorf("hooks taken on the socket are not all in the log yet (%d left): %w", n, err)
	}
}

// Pending reports how many records are taken and not yet done.
func (in *Intake) Pending() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queue)
}

// Close closes the journal; records not done stay in it for the next
// OpenIntake.
func (in *Intake) Close() error {
	in.svc.intake.CompareAndSwap(in, nil)
	return in.j.Close()
}

// hookEntry decodes a hook request (HookRequest) into the entry the
// ingesters take, or fails with ErrMalformed naming what is wrong.
func hookEntry(data []byte) (claude.Entry, error) {
	req, id, err := decodeHookRequest(data)
	if err != nil {
		return claude.Entry{}, err
	}
	payload := []byte(req.Text)
	if req.Text == "" {
		payload = req.Payload
	}
	return claude.Entry{ID: req.ID, Time: id, Payload: payload, Process: req.Process, Sender: req.Sender}, nil
}

// inputError marks bad input the hook must set aside, not retry, with
// ErrMalformed when it carries no code of its own, as HookThen does.
func inputError(err error) error {
	if IsInputError(err) && !errors.Is(err, events.ErrRejected) && !errors.Is(err, events.ErrMalformed) {
		return fmt.Errorf("%w: %w", events.ErrMalformed, err)
	}
	return err
}

// withSender returns hook request data with its sender set to the peer
// of the system socket request ctx is the context of (PeerOf), or taken
// out when there is none; data as it is when it already says so.
func withSender(ctx context.Context, data []byte) ([]byte, error) {
	var want *events.Sender
	if p, ok := PeerOf(ctx); ok {
		want = &events.Sender{UID: p.UID, User: p.User}
	}
	req, _, err := decodeHookRequest(data)
	if err != nil {
		return nil, err
	}
	if req.Sender == nil && want == nil {
		return data, nil
	}
	req.Sender = want
	return json.Marshal(req)
}
