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
// (ClientConfig.Handoff).
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
	settled map[string]time.Time     // commands a take settled, until their delivery (or settledFor)
}

// settledFor is how long a Handoff remembers a command it settled whose
// delivery went to a worker of another process (which acknowledges it
// there): then no worker of this one is ever delivered it.
const settledFor = 10 * time.Minute

// NewHandoff returns an empty Handoff.
func NewHandoff() *Handoff {
	return &Handoff{taking: map[string]chan struct{}{}, settled: map[string]time.Time{}}
}

// offer passes command id, whose request names session, to a worker of
// h that takes requests and has a free slot, the workers in turn; it
// does nothing when none has.
func (h *Handoff) offer(id, session string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	ws := h.workers
	first := h.next
	h.next++
	h.mu.Unlock()
	for i := range ws {
		if ws[(first+i)%len(ws)].offer(h, id, session) {
			return
		}
	}
}

// add makes w one of the workers h offers requests to.
func (h *Handoff) add(w *Worker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.workers = append(h.workers, w)
}

// begin marks command id as being taken, and reports false when it is
// already.
func (h *Handoff) begin(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.taking[id]; ok {
		return false
	}
	h.taking[id] = make(chan struct{})
	return true
}

// end marks the take of command id over; settled says it started the
// command, refused it or found it ended (its delivery then needs only an
// acknowledgement).
func (h *Handoff) end(id string, settled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
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
	t := w.taker
	if t == nil || t.ctx.Err() != nil {
		return false
	}
	select {
	case w.slots <- struct{}{}:
	default:
		return false
	}
	if !h.begin(id) {
		<-w.slots
		return false
	}
	t.handlers.Go(func() {
		mark(id, StageDelivered)
		v, err := w.takeFor(t.ctx, t.procCtx, id, session)
		if err != nil {
			w.log.Warn("take command", "command", id, "err", err)
		}
		h.end(id, v == verdictStarted || v == verdictDone)
		if v != verdictStarted {
			<-w.slots
		}
	})
	return true
}

// lend lets w's Handoff, if any, pass it requests taken with ctx and
// procCtx, their takes in handlers, until the returned func is called;
// that func returns once no take can begin any more.
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
