package worker

import (
	"context"
	"sync"
	"time"
)

// Handoff passes a request a Client has just appended straight to a
// worker of the same process, so that the command's admission begins as
// soon as the append is acknowledged rather than once the workers'
// durable consumer delivers the request. serve makes one, gives it to
// its workers (Config.Handoff) and to the clients of its exec socket
// (ClientConfig.Handoff); a worker given none makes its own. A worker
// also passes itself, through it, the requests that may start now
// (Worker.offerWaiting).
//
// When a worker has a free slot before the append, the client reserves
// it (reserve) and the command's claim is made for that worker while
// the request is appended, so that the two writes' waits overlap
// rather than add up.
//
// It changes who begins a command, not what may run: the worker takes
// the command exactly as it takes a delivered request (claim, the
// command read from the log, admission, command.started appended
// expecting the sequence it read), so a command still starts only after
// its command.started won its optimistic check. The request is still
// delivered by the consumer, and acknowledged there: a worker of this
// process that is delivered a request its Handoff took waits until that
// take ends, then acknowledges it when it was settled (started, refused
// or found ended) and takes it as any delivered request otherwise (put
// back to wait for its workspace, say). A worker of another process is
// delivered it too, finds it claimed, and leaves it. Safe for
// concurrent use; the zero Handoff is not usable: use NewHandoff.
type Handoff struct {
	mu      sync.Mutex
	workers []*Worker
	next    int                      // the worker offered first next time
	taking  map[string]chan struct{} // commands being taken, closed when the take ends
	again   map[string]bool          // commands offered again while being taken
	settled map[string]time.Time     // commands a take settled, until their delivery (or settledFor)
}

// settledFor is how long a Handoff remembers a command it settled whose
// delivery went to a worker of another process (which acknowledges it
// there): then no worker of this one is ever delivered it.
const settledFor = 10 * time.Minute

// NewHandoff returns an empty Handoff.
func NewHandoff() *Handoff {
	return &Handoff{taking: map[string]chan struct{}{}, again: map[string]bool{}, settled: map[string]time.Time{}}
}

// offer passes command id, whose request names session, to a worker of
// h that takes requests and has a free slot, the workers in turn; it
// does nothing when none has.
func (h *Handoff) offer(id, session string) {
	h.inTurn(func(w *Worker) bool { return w.offer(h, id, session) })
}

// inTurn calls try with h's workers in turn, the one after last time's
// first, until it reports true; it reports whether one did (false for
// a nil h).
func (h *Handoff) inTurn(try func(*Worker) bool) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	ws := h.workers
	first := h.next
	h.next++
	h.mu.Unlock()
	for i := range ws {
		if try(ws[(first+i)%len(ws)]) {
			return true
		}
	}
	return false
}

// reserve holds a free slot of a worker of h that takes requests, the
// workers in turn, for command id, whose request naming session is
// about to be appended, and makes the command's claim for that worker
// while the append is under way, rather than after it. The caller
// settles the reservation once it knows whether the request is on the
// log. It returns nil (no reservation, which settles as nothing) when
// no worker has a free slot or id is being taken already.
func (h *Handoff) reserve(id, session string) *reservation {
	var r *reservation
	h.inTurn(func(w *Worker) bool {
		r = w.reserve(h, id, session)
		return r != nil
	})
	return r
}

// A reservation is a worker's slot held for a command whose request is
// being appended (Handoff.reserve). Its take waits, on a goroutine of
// the worker's intake, for settle.
type reservation struct {
	appended chan bool // settle's one value
	once     sync.Once
}

// settle tells r's take whether the request is on the log, with the
// evictions it decided: true begins the take as Handoff.offer would,
// with the claim already made; false lets go of the claim and the
// slot, and the consumer delivers the request as usual. Only the first
// call counts; it reports whether r was there to settle (false for a
// nil r).
func (r *reservation) settle(appended bool) bool {
	if r == nil {
		return false
	}
	r.once.Do(func() { r.appended <- appended })
	return true
}

// add makes w one of the workers h offers requests to.
func (h *Handoff) add(w *Worker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.workers = append(h.workers, w)
}

// begin marks command id as being taken, and reports false when it is
// already: the take under way is then asked to be offered again should
// it end without settling id (end), since what it judged may have
// changed since it began (its workspace freed meanwhile, say).
func (h *Handoff) begin(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.taking[id]; ok {
		h.again[id] = true
		return false
	}
	h.taking[id] = make(chan struct{})
	return true
}

// end marks the take of command id over; settled says it started the
// command, refused it or found it ended (its delivery then needs only an
// acknowledgement). again reports whether id was offered meanwhile
// (begin), which the caller of an unsettled take honours.
func (h *Handoff) end(id string, settled bool) (again bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	again = h.again[id]
	delete(h.again, id)
	now := time.Now()
	if settled {
		for oid, at := range h.settled {
			if now.Sub(at) > settledFor {
				delete(h.settled, oid)
			}
		}
		h.settled[id] = now
	}
	close(h.taking[id])
	delete(h.taking, id)
	return again
}

// delivered is called by a worker delivered command id's request: it
// waits for a take of id under way to end (or ctx), and reports whether
// a take settled id, forgetting it.
func (h *Handoff) delivered(ctx context.Context, id string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	ch := h.taking[id]
	h.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.settled[id]
	delete(h.settled, id)
	return ok
}

// taker is what a worker's intake lends its Handoff while it takes
// requests: the contexts it takes them with and the group its takes
// belong to.
type taker struct {
	ctx, procCtx context.Context
	handlers     *sync.WaitGroup
}

// offer takes command id, whose request names session, as a delivered
// request is taken, on a goroutine of the intake's, if the intake takes
// requests and a slot is free; it reports whether it began.
func (w *Worker) offer(h *Handoff, id, session string) bool {
	w.takerMu.Lock()
	defer w.takerMu.Unlock()
	t := w.slotFor(h, id)
	if t == nil {
		return false
	}
	t.handlers.Go(func() { w.handedTake(h, t, id, session, w.claim) })
	return true
}

// slotFor takes a free slot of w and marks command id as being taken in
// h, when w's intake takes requests, a slot is free and id is not
// being taken already, and returns the intake's taker; nil otherwise,
// with nothing taken. w.takerMu is held, so that a take begun on the
// taker's handlers is one the intake's end waits for.
func (w *Worker) slotFor(h *Handoff, id string) *taker {
	t := w.taker
	if t == nil || t.ctx.Err() != nil {
		return nil
	}
	select {
	case w.slots <- struct{}{}:
	default:
		return nil
	}
	if !h.begin(id) {
		<-w.slots
		return nil
	}
	return t
}

// handedTake takes command id, whose request names session, with claim
// (see takeClaiming) as a delivered request is taken, on the slot and
// the mark slotFor took: it ends the mark, settled when the take
// started, refused or found the command ended, and lets the slot go
// unless the command started (its run lets it go at its end).
func (w *Worker) handedTake(h *Handoff, t *taker, id, session string, claim func(context.Context, string) (verdict, error)) {
	mark(id, StageDelivered)
	v, err := w.takeClaiming(t.ctx, t.procCtx, id, session, claim)
	if err != nil {
		w.log.Warn("take command", "command", id, "err", err)
	}
	settled := v == verdictStarted || v == verdictDone
	again := h.end(id, settled)
	if v != verdictStarted {
		<-w.slots
	}
	if again && !settled {
		// Offered while this take judged it: judged again, on what
		// the offer saw (its workspace freed, say).
		w.offer(h, id, session)
	}
}

// reserve is Handoff.reserve on w: it takes a free slot, if the intake
// takes requests and one is free, marks id as being taken, and starts
// the reservation's take on a goroutine of the intake's: it creates
// id's claim for w, waits for settle (or for the intake's end, which
// settles it as not appended), then takes id with that claim, or lets
// go of the claim and the slot.
//
// The claim exists, for a moment, before the request does. A worker of
// another process delivered id meanwhile (a retried request of a
// command already on the log, waiting for its workspace) finds it
// held by a live worker and looks again later, as it does for any
// claim held.
func (w *Worker) reserve(h *Handoff, id, session string) *reservation {
	w.takerMu.Lock()
	defer w.takerMu.Unlock()
	t := w.slotFor(h, id)
	if t == nil {
		return nil
	}
	r := &reservation{appended: make(chan bool, 1)}
	t.handlers.Go(func() {
		_, err := w.claims.Create(t.ctx, id, []byte(w.id.ID))
		claimed := err == nil
		var appended bool
		select {
		case appended = <-r.appended:
		case <-t.ctx.Done():
		}
		if !appended {
			if claimed {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), unclaimWithin)
				w.unclaim(ctx, id)
				cancel()
			}
			_ = h.end(id, false) // not on the log: nothing to offer again
			<-w.slots
			return
		}
		claim := w.claim
		if claimed {
			claim = func(context.Context, string) (verdict, error) { return verdictStarted, nil }
		}
		w.handedTake(h, t, id, session, claim)
	})
	return r
}

// unclaimWithin bounds letting go of a reservation's claim when its
// request did not land: a claim left behind lapses with its worker.
const unclaimWithin = 5 * time.Second

// lend lets w's Handoff pass it requests taken with ctx and procCtx,
// their takes in handlers, until the returned func is called; that func
// returns once no take can begin any more.
func (w *Worker) lend(ctx, procCtx context.Context, handlers *sync.WaitGroup) func() {
	if w.cfg.Handoff == nil {
		return func() {}
	}
	w.takerMu.Lock()
	w.taker = &taker{ctx: ctx, procCtx: procCtx, handlers: handlers}
	w.takerMu.Unlock()
	return func() {
		w.takerMu.Lock()
		w.taker = nil
		w.takerMu.Unlock()
	}
}
