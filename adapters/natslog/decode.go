package natslog

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// decodeChunk is how many messages one decoding goroutine takes at once.
const decodeChunk = 256

// chunk is a run of consecutive messages and their decoded records.
type chunk struct {
	msgs []Msg
	recs []events.Record
	errs []error
	pres []attestation.Pre // signatures checked ahead, when the Log has a Verifier
	// ams holds each message as the Verifier reads it (attestMsg), made
	// once by the decoding goroutine, when the Log has a Verifier.
	ams []attestation.Message
	// stated marks the events a trusted checkpoint statement
	// quarantined (Judged); tampered those that are not its tree's
	// leaves, their error in errs.
	stated, tampered []bool
	judged           *Judged       // the fast path the chunk was judged with
	err              error         // from the source, after msgs; ends the sequence
	done             chan struct{} // closed when recs and errs are filled
}

// decodeParallel yields, in order, the records of the messages src
// produces, decoding them on up to GOMAXPROCS goroutines: strict JSON
// decoding costs more than reading. src runs on a goroutine of its own
// and must return soon after its ctx is done; an error it yields ends
// the sequence after the messages before it. Every goroutine started
// here has returned when decodeParallel returns. It reports false if the
// sequence ended early (yield returned false or src failed). When ctx
// ends first, the sequence ends with an error (src's, or ctx's): a read
// cut short never ends as if it had reached its end. With a Verifier,
// each event is judged in its aggregate's order with ord.
func (l *Log) decodeParallel(ctx context.Context, ord *order, src func(context.Context, func(Msg, error) bool), yield func(events.Record, error) bool) bool {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	workers := runtime.GOMAXPROCS(0)
	work := make(chan *chunk, workers)
	ordered := make(chan *chunk, 2*workers)
	// Chunks the loop below has yielded go back to src's goroutine through
	// free, so a long read reuses their buffers instead of allocating
	// 256 messages' and records' worth for every 256 messages.
	free := make(chan *chunk, 3*workers+1)
	newChunk := func() *chunk {
		select {
		case c := <-free:
			c.msgs, c.err, c.done = c.msgs[:0], nil, make(chan struct{})
			return c
		default:
			return &chunk{msgs: make([]Msg, 0, decodeChunk), done: make(chan struct{})}
		}
	}
	for range workers {
		wg.Go(func() {
			d := l.reg.NewDecoder()
			// The judged headers of the message at hand, parsed from its
			// raw header block in place: no map, no copy.
			var rh RawHeader
			for c := range work {
				if cap(c.recs) < len(c.msgs) {
					c.recs = make([]events.Record, len(c.msgs))
					c.errs = make([]error, len(c.msgs))
				}
				c.recs, c.errs = c.recs[:len(c.msgs)], c.errs[:len(c.msgs)]
				for i, m := range c.msgs {
					c.recs[i], c.errs[i] = l.decode(d, m.Seq, m.Subject, m.Data)
				}
				if v := l.cfg.Verifier; v != nil {
					// Ed25519 verification costs more than decoding:
					// done here, in parallel, Judge only decides.
					if cap(c.pres) < len(c.msgs) {
						c.pres = make([]attestation.Pre, len(c.msgs))
						c.ams = make([]attestation.Message, len(c.msgs))
					}
					c.pres, c.ams = c.pres[:len(c.msgs)], c.ams[:len(c.msgs)]
					j := l.judged.Load()
					c.judged = j
					if cap(c.stated) < len(c.msgs) {
						c.stated = make([]bool, len(c.msgs))
						c.tampered = make([]bool, len(c.msgs))
					}
					c.stated, c.tampered = c.stated[:len(c.msgs)], c.tampered[:len(c.msgs)]
					for i := range c.msgs {
						m := &c.msgs[i]
						c.stated[i], c.tampered[i] = false, false
						parsed := (*RawHeader)(nil)
						if m.hdr != nil && rh.Parse(m.hdr) {
							// One walk of the block gives the
							// fields judged here and the leaf
							// checked (Judged.CheckHeader).
							c.ams[i] = attestRaw(m.Seq, m.Subject, &rh, m.Data)
							parsed = &rh
						} else {
							*m = m.Decoded()
							c.ams[i] = attestMsg(m.Seq, m.Subject, m.Header, m.Data)
						}
						if j != nil && m.Seq <= j.Through {
							pre, stated, err := j.vouchedParsed(*m, parsed)
							if err != nil {
								c.tampered[i], c.errs[i] = true, err
								continue
							}
							c.pres[i], c.stated[i] = pre, stated
							continue
						}
						c.pres[i] = v.Precheck(c.ams[i])
					}
				}
				close(c.done)
			}
		})
	}
	var (
		cut     bool  // ctx ended before src's last chunk went out
		lostErr error // src's error in that chunk, if any
	)
	wg.Go(func() {
		defer close(ordered)
		defer close(work)
		c := newChunk()
		stopped := false // a send gave up: c may be queued already, never send it again
		send := func() bool {
			select {
			case work <- c:
			case <-ctx.Done():
				stopped = true
				return false
			}
			select {
			case ordered <- c:
			case <-ctx.Done():
				stopped = true
				return false
			}
			c = newChunk()
			return true
		}
		src(ctx, func(m Msg, err error) bool {
			if err != nil {
				c.err = err
				return false
			}
			c.msgs = append(c.msgs, m)
			return len(c.msgs) < decodeChunk || send()
		})
		if !stopped && (len(c.msgs) > 0 || c.err != nil) {
			send()
		}
		cut, lostErr = stopped, c.err
	})

	marked := events.WantsQuarantined(parent)
	// The order states the events judged so far moved are kept in the
	// Log's cache (l.orders) once a chunk's events are judged, each
	// aggregate's once, under one lock, rather than one put per event:
	// a cache, it only lags a chunk meanwhile.
	var moved orderMoves
	defer moved.flush(&l.orders)
	for c := range ordered {
		<-c.done
		for i := range c.msgs {
			if l.cfg.Verifier != nil && c.tampered[i] {
				// Not the leaf the trusted checkpoint holds: nothing
				// from here on is folded.
				yield(events.Record{}, c.errs[i])
				return false
			}
			if l.cfg.Verifier != nil && ord.keys && !c.tampered[i] {
				if err := l.catchUpKeysKnown(ctx, c.msgs[i].Seq-1, ord.end); err != nil {
					yield(events.Record{}, err)
					return false
				}
			}
			if l.cfg.Verifier != nil && c.stated[i] {
				m := &c.msgs[i]
				var st *attestation.AggState
				if c.errs[i] == nil {
					var err error
					if st, err = ord.state(ctx, m.Subject, m.Seq); err != nil {
						yield(events.Record{}, fmt.Errorf("read: the order of %s before seq %d: %w", m.Subject, m.Seq, err))
						return false
					}
				}
				rec := c.recs[i]
				if c.errs[i] != nil {
					rec = events.Record{}
				}
				signer := l.quarantineStated(c.judged, c.ams[i], rec, st)
				l.cfg.Verifier.Advance(m.Seq)
				if st != nil {
					moved.add(m.Seq, m.Subject, st)
				}
				if !marked {
					continue
				}
				c.recs[i] = events.Record{Seq: m.Seq, Subject: m.Subject, Quarantined: true}
				if c.errs[i] == nil {
					c.recs[i], c.recs[i].Signer, c.recs[i].Quarantined = rec, signer, true
				}
				c.errs[i] = nil
			} else if c.errs[i] != nil {
				// Quarantined once signing began, with a Verifier
				// or without (undecodable).
				m := &c.msgs[i]
				var pre attestation.Pre
				if l.cfg.Verifier != nil {
					pre = c.pres[i]
				}
				q, err := l.undecodable(ctx, m.Seq, m.Subject, m.Decoded().Header, m.Data, pre, c.errs[i])
				switch {
				case err != nil:
					c.errs[i] = err
				case q && !marked:
					continue
				case q:
					c.recs[i] = events.Record{Seq: m.Seq, Subject: m.Subject, Quarantined: true}
					c.errs[i] = nil
				}
			} else if c.errs[i] == nil && l.cfg.Verifier != nil {
				m := &c.msgs[i]
				st, err := ord.state(ctx, m.Subject, m.Seq)
				if err != nil {
					yield(events.Record{}, fmt.Errorf("read: the order of %s before seq %d: %w", m.Subject, m.Seq, err))
					return false
				}
				vd, fold := l.judge(c.ams[i], c.recs[i], c.pres[i], st)
				c.recs[i].Signer = signerOf(vd)
				moved.add(m.Seq, m.Subject, st)
				l.cfg.Verifier.Advance(m.Seq)
				if !fold {
					if !marked {
						continue
					}
					c.recs[i].Quarantined = true
				}
			}
			if !yield(c.recs[i], c.errs[i]) {
				return false
			}
		}
		moved.flush(&l.orders)
		if c.err != nil {
			yield(events.Record{}, c.err)
			return false
		}
		select {
		case free <- c:
		default:
		}
	}
	if err := parent.Err(); err != nil {
		wg.Wait() // src has returned: cut and lostErr are set
		if !cut {
			return true // src went to its end first
		}
		if lostErr == nil {
			lostErr = fmt.Errorf("read: %w", err)
		}
		yield(events.Record{}, lostErr)
		return false
	}
	return ctx.Err() == nil
}

// orderMoves is the order states a read's judging moved since they were
// last kept in the Log's cache: for each event judged, its sequence,
// subject and its aggregate's state in the read (order.aggs), which
// later events of the aggregate move on.
type orderMoves []orderMove

type orderMove struct {
	seq     uint64
	subject string
	st      *attestation.AggState
}

// add records that judging the event at seq on subject moved st.
func (o *orderMoves) add(seq uint64, subject string, st *attestation.AggState) {
	*o = append(*o, orderMove{seq, subject, st})
}

// flush keeps in a each state o holds, once per aggregate (at its last
// event recorded: the state then is what judging all of them left), as
// aggStates.put keeps it, and empties o.
func (o *orderMoves) flush(a *aggStates) {
	if len(*o) == 0 {
		return
	}
	a.mu.Lock()
	for _, mv := range *o {
		if mv.st.Through == mv.seq {
			a.putLocked(mv.subject, *mv.st)
		}
	}
	a.mu.Unlock()
	clear(*o)
	*o = (*o)[:0]
}
