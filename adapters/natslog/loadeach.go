package natslog

import (
	"context"
	"fmt"
	"sync"

	"github.com/logbook-dev/logbook/events"
)

// LoadEach is LoadStreamed for a reader that folds an aggregate's records
// as they come instead of holding them all: it calls each with every
// record LoadStreamed returns, in the same order and judged alike, as
// soon as the record is judged, while the server goes on streaming the
// messages after it. size, when not nil, is called once before the
// first record with how many messages agg's subject holds (at least as
// many as the records to come, so each's caller can size what it keeps).
// It returns what LoadStreamed returns as its last sequence (0 when agg
// has no event). A record handed to each holds no byte of the read's
// buffers, and the read cuts the messages it receives from blocks it
// uses again once every record of their messages has been handed to
// each: a read of 20,000 events holds a few blocks of rawSlab bytes,
// not the whole aggregate's messages. When each returns an error the
// read stops and LoadEach returns that error as it is; its other errors
// are LoadStreamed's, after the records before the failure were handed
// to each. A key aggregate, and any aggregate of a replicated stream, is
// loaded with Load and then handed to each.
func (l *Log) LoadEach(ctx context.Context, agg events.Aggregate, size func(n uint64), each func(r events.Record) error) (last uint64, err error) {
	return l.loadEach(ctx, agg, nil, size, each)
}

// loadEach is LoadEach, from where s (when not nil: StartLoad of agg)
// left it.
func (l *Log) loadEach(ctx context.Context, agg events.Aggregate, s *LoadStart, size func(n uint64), each func(r events.Record) error) (last uint64, err error) {
	if err := agg.Validate(); err != nil {
		return 0, fmt.Errorf("load %s: %w", agg, err)
	}
	if agg.Kind == events.KindKey || l.leaderReads {
		recs, last, err := l.Load(ctx, agg)
		if err != nil {
			return 0, err
		}
		if size != nil {
			size(uint64(len(recs)))
		}
		for _, r := range recs {
			if err := each(r); err != nil {
				return 0, err
			}
		}
		return last, nil
	}
	subject := agg.Subject()
	var end, count uint64
	if s != nil && s.stated {
		end, count, err = s.end, s.count, s.err
	} else {
		end, count, err = l.subjectState(ctx, subject)
	}
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", agg, err)
	}
	if size != nil {
		size(count)
	}
	if end == 0 {
		return 0, nil
	}
	ord := l.newOrder(1)
	ord.keys, ord.end = true, end
	blocks := &blockPool{quarantined: l.quarantinedCount()}
	// The raw read's consumer is deleted while the last messages are
	// decoded and handed over, and is gone when LoadEach returns.
	var closing sync.WaitGroup
	defer closing.Wait()
	src := func(ctx context.Context, y func(Msg, error) bool) {
		if s != nil {
			ctx = withRawOpened(ctx, s)
		}
		ctx = withClosing(ctx, &closing)
		l.consumeRawHeld(withBlocks(ctx, blocks), subject, 1, end, count, func(m Msg, err error) bool {
			if err == nil {
				blocks.cut(m.Seq)
			}
			return y(m, err)
		})
	}
	var (
		ferr, eerr error
		signer     events.Signer // the last signer met, its strings the read's own
		handed     int           // records handed to each
	)
	l.decodeParallel(ctx, ord, src, func(r events.Record, err error) bool {
		if err != nil {
			ferr = err
			return false
		}
		// A verdict names an unregistered key by the bytes of the
		// message's header (attestation.Verifier.Judge): the record
		// gets a copy, which the next block's messages do not overwrite.
		if r.Signer != signer {
			signer = events.Signer{Status: cloneString(r.Signer.Status), Key: cloneString(r.Signer.Key),
				Principal: cloneString(r.Signer.Principal), Role: cloneString(r.Signer.Role)}
		}
		r.Signer = signer
		if eerr = each(r); eerr != nil {
			return false
		}
		last = r.Seq
		if handed++; handed%blockCheck == 0 {
			blocks.done(r.Seq, l.quarantinedCount())
		}
		return true
	})
	if eerr != nil {
		return 0, eerr
	}
	if ferr != nil {
		return 0, fmt.Errorf("load %s: %w", agg, ferr)
	}
	if st, ok := ord.aggs[subject]; ok {
		last = max(last, st.Through)
	}
	return last, nil
}

// blockCheck is how many records LoadEach hands over between two looks
// at which of its blocks it is done with: a block holds several hundred
// messages.
const blockCheck = 64

// cloneString returns a copy of s that shares no memory with it ("" as
// it is).
func cloneString(s string) string {
	if s == "" {
		return ""
	}
	return string(append([]byte(nil), s...))
}

// quarantinedCount returns how many distinct events the Log's reads have
// quarantined so far.
func (l *Log) quarantinedCount() uint64 {
	l.quar.mu.Lock()
	defer l.quar.mu.Unlock()
	return l.quar.n
}

// blockPool hands a raw read (rawConn.alloc) the blocks it cuts message
// bodies from, and takes them back to hand out again once the reader is
// done with every message cut from them: the reader says which messages
// were cut (cut, in stream order, as the read yields them) and which it
// is done with (done, in stream order). A quarantined event may keep
// bytes of its message (the verdict names a key by its header's bytes):
// once one is quarantined while the pool is in use, no block goes back.
// Safe for concurrent use by the read's goroutine and the reader's.
type blockPool struct {
	mu          sync.Mutex
	free        [][]byte    // blocks to hand out again
	used        []usedBlock // handed out, oldest first
	quarantined uint64      // the Log's quarantined count when the pool began
	kept        bool        // blocks are no longer taken back
}

// usedBlock is a block handed out and the stream sequence of the last
// message cut from it so far (0: none yet).
type usedBlock struct {
	b    []byte
	last uint64
}

// get returns a block of rawSlab bytes, one taken back if there is one.
// A nil pool makes a new one.
func (p *blockPool) get() []byte {
	if p == nil {
		return make([]byte, rawSlab)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var b []byte
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1], p.free[:n-1]
	} else {
		b = make([]byte, rawSlab)
	}
	if !p.kept {
		p.used = append(p.used, usedBlock{b: b})
	}
	return b
}

// cut notes that the message at seq was received: its bytes are in the
// block handed out last, unless it was too large for one (then it held
// its own, and the note only keeps that block a little longer).
func (p *blockPool) cut(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.used); n > 0 {
		p.used[n-1].last = seq
	}
}

// done notes that the reader is done with every message up to seq, the
// Log's quarantined count being quarantined: each block but the last
// handed out whose messages are all among them is taken back.
func (p *blockPool) done(seq, quarantined uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if quarantined != p.quarantined {
		p.kept, p.used, p.free = true, nil, nil
	}
	for len(p.used) > 1 && p.used[0].last != 0 && p.used[0].last <= seq {
		p.free = append(p.free, p.used[0].b)
		p.used = p.used[1:]
	}
}

// blocksKey is the context key of a raw read's blockPool.
type blocksKey struct{}

// withBlocks returns ctx with p, the blockPool the raw read made under it
// (rawRead) cuts message bodies from.
func withBlocks(ctx context.Context, p *blockPool) context.Context {
	return context.WithValue(ctx, blocksKey{}, p)
}

// closingKey is the context key of the WaitGroup a raw read's close
// goes on in.
type closingKey struct{}

// withClosing returns ctx with wg: a raw read under it (rawRead) closes
// its connection and deletes its consumer in a goroutine of wg, once
// it has yielded its last message, rather than before it returns; the
// caller waits for wg.
func withClosing(ctx context.Context, wg *sync.WaitGroup) context.Context {
	return context.WithValue(ctx, closingKey{}, wg)
}

// closeRaw closes o (rawOpen.close) in a goroutine of ctx's WaitGroup
// (withClosing), and at once when ctx has none.
func closeRaw(ctx context.Context, o *rawOpen) {
	if wg, _ := ctx.Value(closingKey{}).(*sync.WaitGroup); wg != nil {
		wg.Go(func() { o.close(ctx) })
		return
	}
	o.close(ctx)
}

// blocksOf returns the blockPool of ctx (withBlocks), nil when it has
// none.
func blocksOf(ctx context.Context) *blockPool {
	p, _ := ctx.Value(blocksKey{}).(*blockPool)
	return p
}

// A LoadStart is a LoadEach begun ahead (Log.StartLoad): what it asks
// the server before it reads a message, asked already. Its LoadEach
// goes on from there; Close gives back what it opened and its LoadEach
// did not take. Safe for concurrent use.
type LoadStart struct {
	l     *Log
	agg   events.Aggregate
	valid bool // agg is valid, and is read with a raw read (not Load)
	// stated: end, count and err are subjectState's answer for agg.
	stated     bool
	end, count uint64
	err        error

	mu    sync.Mutex
	raw   *rawOpen // the raw read's connection, consumer and pulls; nil: none (left to the read, or taken)
	gen   uint64   // the embedded Server's restarts (restartsNow) before raw was opened
	taken bool     // the read took raw, or s was closed
}

// StartLoad begins LoadEach(ctx, agg, …) ahead of it, so that the
// server loads and sends agg's first messages while the caller does
// other work (audit proves its fast path meanwhile): it asks for agg's
// subject state (how many messages, the last sequence) and, for a read
// LoadEach makes over a raw connection (an aggregate other than a key,
// a stream of one replica), dials that connection, makes its consumer
// and sends its pulls; a restart of an embedded server's JetStream
// begun since leaves them unused. It reads no message and judges
// nothing: the messages wait in the connection until the LoadStart's
// LoadEach reads and judges them, with the fast path the Log has then,
// every one of them as Log.LoadEach would. What it could not ask or
// open is left to LoadEach, which then asks or opens it itself. The
// caller must Close the LoadStart.
func (l *Log) StartLoad(ctx context.Context, agg events.Aggregate) *LoadStart {
	s := &LoadStart{l: l, agg: agg}
	if agg.Validate() != nil || agg.Kind == events.KindKey || l.leaderReads {
		return s
	}
	s.valid = true
	subject := agg.Subject()
	// The raw connection is dialled while the subject's state is asked.
	s.gen = l.restartsNow()
	type dialed struct {
		rc  *rawConn
		err error
	}
	dc := make(chan dialed, 1)
	go func() {
		rc, err := l.dialRaw(ctx)
		dc <- dialed{rc, err}
	}()
	s.end, s.count, s.err = l.subjectState(ctx, subject)
	s.stated = true
	d := <-dc
	if d.err != nil {
		return s
	}
	if s.err != nil || s.end == 0 {
		d.rc.close()
		return s
	}
	if o, err := l.openRawOn(ctx, d.rc, subject, 1); err == nil {
		s.raw = o
	}
	return s
}

// LoadEach is Log.LoadEach(ctx, agg, size, each) for the aggregate s
// was started for, from where StartLoad left it: the same records,
// judged alike, and the same errors. Call it once.
func (s *LoadStart) LoadEach(ctx context.Context, size func(n uint64), each func(r events.Record) error) (last uint64, err error) {
	if !s.valid {
		return s.l.LoadEach(ctx, s.agg, size, each)
	}
	return s.l.loadEach(ctx, s.agg, s, size, each)
}

// Close deletes the consumer and closes the connection StartLoad
// opened when LoadEach did not take them (it was not called, or ended
// before its read began). Safe to call more than once.
func (s *LoadStart) Close() {
	s.mu.Lock()
	o := s.raw
	s.raw, s.taken = nil, true
	s.mu.Unlock()
	if o != nil {
		o.close(context.Background())
	}
}

// take returns the raw read s opened when it is of filter from from,
// not yet taken, and no restart of the embedded server's JetStream has
// begun since it was opened (its consumer and pulls would be gone), and
// nil otherwise (a nil s included): a read takes it once, a read it
// does not fit opens its own. A read takes it after it began watching
// for restarts (rawRead), so none goes unseen.
func (s *LoadStart) take(filter string, from uint64) *rawOpen {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.raw
	if s.taken || o == nil || o.filter != filter || o.from != from {
		return nil
	}
	if gen := s.l.restartsNow(); gen != s.gen || gen%2 == 1 {
		return nil
	}
	s.raw, s.taken = nil, true
	return o
}

// rawOpenedKey is the context key of a LoadStart whose raw read a read
// under it takes.
type rawOpenedKey struct{}

// withRawOpened returns ctx with s, whose raw read (StartLoad) the raw
// read under it takes when it fits (rawRead).
func withRawOpened(ctx context.Context, s *LoadStart) context.Context {
	return context.WithValue(ctx, rawOpenedKey{}, s)
}

// rawOpenedOf returns the LoadStart of ctx (withRawOpened), nil when it
// has none.
func rawOpenedOf(ctx context.Context) *LoadStart {
	s, _ := ctx.Value(rawOpenedKey{}).(*LoadStart)
	return s
}
