package events

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Executor runs decisions against one kind of aggregate: it loads the
// aggregate's state (from its cache or by folding the log), asks a decide
// function for events, stamps them (id, ver, host, actor), appends them as
// one batch with optimistic concurrency, and on ErrConflict brings the
// state up to date (the events past the cached one, when the Log is a
// LoaderAfter) and decides again, up to Attempts times.
//
// An Executor is safe for concurrent use. Decisions for one aggregate are
// serialized within the process; across processes the log's optimistic
// concurrency check keeps them consistent.
type Executor[S any] struct {
	Log    Log
	Reg    *Registry
	Init   func(Aggregate) S   // the state before the aggregate's first event
	Evolve func(S, Envelope) S // the aggregate's pure fold
	// EvolveOwned, when set, is Evolve done in place on *s: what Execute
	// uses to fold a decision's own events into its copy of the cached
	// state, under the aggregate's lock. It must leave *s as Evolve would
	// and never write memory that another copy of *s, taken before the
	// call, reads (such a copy keeps its value: slices grow past the end
	// of every state sharing them, or are replaced). nil: Evolve.
	EvolveOwned func(*S, Envelope)
	IDs         IDSource // fresh ids for events whose ID is zero
	Host        string   // stamped on events that have none
	Actor       string   // stamped on events that have none
	// Attempts bounds reload-and-decide rounds after conflicts; 0 means 8.
	Attempts int
	// MaxCached bounds the states kept in memory; 0 means
	// DefaultMaxCached. When full, the least recently used state is
	// dropped (it is reloaded from the log when next needed).
	MaxCached int
	// Settled, when set, reports a state the aggregate is done with (a
	// command that ended): such states are not kept in memory, so the
	// cache holds the aggregates still at work rather than fill with
	// finished ones. A later decision on a settled aggregate folds it
	// from the log again. Settled must be pure.
	Settled func(S) bool

	once sync.Once
	// locks holds a lock per aggregate being decided now, so that
	// decisions on different aggregates never wait for each other (an
	// import's many sessions, each waiting for its own append);
	// guarded by lmu.
	lmu   sync.Mutex
	locks map[Aggregate]*aggLock
	mu    sync.Mutex
	cache map[Aggregate]*list.Element // of *cached[S]; guarded by mu
	lru   list.List                   // most recently used first; guarded by mu
}

// DefaultMaxCached is how many aggregate states an Executor keeps when
// MaxCached is 0: a session's state is a few KiB (up to ~200 KiB for one
// with MaxIDs calls), so a few MiB in the common case.
const DefaultMaxCached = 1024

type cached[S any] struct {
	agg  Aggregate
	s    S
	ver  uint64 // Ver of the last event
	last uint64 // stream sequence of the last event
}

// Decision is what a decide function returns: the events to append (with
// Type, V, Data, At and Cause set; ID may be preset, as for an observation
// that decisions refer to), or none.
type Decision = []Envelope

// One returns the Decision of the single event p (version 1) decided at
// at for cause. It copies cause, so the caller may reuse its value.
func One(p Payload, at time.Time, cause Cause) Decision {
	c := cause
	return Decision{{Type: p.EventType(), V: 1, Data: p, At: at, Cause: &c}}
}

// Execute decides against agg's current state and appends the result. It
// returns where the batch landed and the state after it; with no events
// to append it returns a zero Appended and the current state. decide may
// run several times (once per attempt) and must be pure. Errors: decide's
// own (returned as is), a validation error (ErrMalformed,
// ErrMissingCause, …) with nothing appended, ErrConflict after Attempts
// rounds, or the log's error.
func (x *Executor[S]) Execute(ctx context.Context, agg Aggregate, decide func(S) (Decision, error)) (Appended, S, error) {
	x.once.Do(x.init)
	defer x.lock(agg)()
	attempts := x.Attempts
	if attempts <= 0 {
		attempts = 8
	}
	var zero S
	for range attempts {
		c, err := x.load(ctx, agg)
		if err != nil {
			return Appended{}, zero, err
		}
		evs, err := decide(c.s)
		if err != nil {
			// A cached state another process has since moved past would
			// refuse what the log allows (a command the cache last saw
			// before it was requested): a refusal is of the current state.
			fresh, moved, rerr := x.refresh(ctx, c)
			if rerr != nil {
				return Appended{}, c.s, errors.Join(err, rerr)
			}
			if moved {
				continue
			}
			return Appended{}, fresh.s, err
		}
		if len(evs) == 0 {
			// Appending nothing runs no optimistic check, so a cached
			// state another process has since moved past would decide
			// "nothing" unseen: bring it up to date and decide again.
			fresh, moved, err := x.refresh(ctx, c)
			if err != nil {
				return Appended{}, c.s, err
			}
			if moved {
				continue
			}
			return Appended{}, fresh.s, nil
		}
		s := c.s
		base := nextBase(c)
		for i := range evs {
			e := &evs[i]
			if e.ID.IsZero() {
				e.ID = x.IDs()
			}
			e.Agg = agg
			e.Ver = base + uint64(i) + 1
			if e.Host == "" {
				e.Host = x.Host
			}
			if e.Actor == "" {
				e.Actor = x.Actor
			}
			if err := x.Reg.Validate(*e); err != nil {
				return Appended{}, c.s, fmt.Errorf("decide %s: %w", agg, err)
			}
			if x.EvolveOwned != nil {
				x.EvolveOwned(&s, *e)
			} else {
				s = x.Evolve(s, *e)
			}
		}
		ap, err := x.Log.Append(ctx, Batch{Agg: agg, Expect: c.last, Events: evs})
		switch {
		case errors.Is(err, ErrConflict):
			// Another writer moved the aggregate past the cached state:
			// catch up from where the cache stands rather than fold the
			// whole history again, which for a long-lived aggregate reads
			// every stream block it spans. A conflict with nothing new
			// past the cache means the cache is wrong: reload it whole.
			if _, moved, err := x.refresh(ctx, c); err == nil && !moved {
				x.forget(agg)
			}
			continue
		case err == nil && ap.Duplicate:
			x.forget(agg)
			return ap, s, nil
		case err != nil:
			x.forget(agg)
			return Appended{}, c.s, err
		}
		x.remember(cached[S]{agg: agg, s: s, ver: base + uint64(len(evs)), last: ap.Last})
		return ap, s, nil
	}
	return Appended{}, zero, fmt.Errorf("decide %s: %w after %d attempts", agg, ErrConflict, attempts)
}

// nextBase returns the ver the next decision on c's aggregate follows:
// the last folded event's, or 1 when none was folded but the aggregate's
// subject holds events the log left out (a quarantined copy or forgery):
// version 1 is for an empty subject only (a Log refuses it with an Expect
// past 0), and a reader folds an aggregate's first attested event
// whatever its ver (attestation.Verifier.Judge).
func nextBase[S any](c cached[S]) uint64 {
	if c.ver == 0 && c.last > 0 {
		return 1
	}
	return c.ver
}

func (x *Executor[S]) init() {
	x.cache = make(map[Aggregate]*list.Element)
	x.locks = make(map[Aggregate]*aggLock)
}

// aggLock is one aggregate's lock in Executor.locks: users counts the
// callers holding or waiting for it (guarded by Executor.lmu); the
// last one out removes it.
type aggLock struct {
	mu    sync.Mutex
	users int
}

// lock locks agg for this process's decisions and returns its unlock.
func (x *Executor[S]) lock(agg Aggregate) (unlock func()) {
	x.lmu.Lock()
	l := x.locks[agg]
	if l == nil {
		l = &aggLock{}
		x.locks[agg] = l
	}
	l.users++
	x.lmu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		x.lmu.Lock()
		if l.users--; l.users == 0 {
			delete(x.locks, agg)
		}
		x.lmu.Unlock()
	}
}

// State returns agg's current state as the log has it now: a cached state
// is first brought up to date with the events appended since (by this or
// any other process); one not cached is folded from the log, one read.
func (x *Executor[S]) State(ctx context.Context, agg Aggregate) (S, error) {
	x.once.Do(x.init)
	c, hit, err := x.lookup(ctx, agg)
	if err != nil || !hit {
		// Just read from the log: nothing to bring up to date.
		return c.s, err
	}
	c, _, err = x.refresh(ctx, c)
	return c.s, err
}

// Exists reports whether a log holds an event of agg (or a message on
// its subject that the log leaves out of agg's loads), as
// natslog.Log.AggregateExists does. Errors are the read's.
type Exists func(ctx context.Context, agg Aggregate) (bool, error)

// StateUnlessNew is State, but for an aggregate with no state cached it
// first asks exists: when the log holds nothing of agg, agg's Init state
// is cached (with no last sequence) and returned without reading the
// log. Such an answer is as current as State's read: a decision taken on
// it appends with optimistic concurrency on an empty aggregate, so an
// event another writer appended since conflicts, and Execute decides
// again on the log's state. An aggregate that exists, an error of exists
// (the log is then read as State reads it: its errors are State's), or a
// state cached meanwhile, and the log is read as by State. A nil exists
// makes it State.
func (x *Executor[S]) StateUnlessNew(ctx context.Context, agg Aggregate, exists Exists) (S, error) {
	x.once.Do(x.init)
	x.mu.Lock()
	_, hit := x.cache[agg]
	x.mu.Unlock()
	if !hit && exists != nil {
		if ok, err := exists(ctx, agg); err == nil && !ok {
			c := cached[S]{agg: agg, s: x.Init(agg)}
			if x.rememberNew(c) {
				return c.s, nil
			}
		}
	}
	return x.State(ctx, agg)
}

// refresh brings c, a state from load, up to date with the events the log
// holds past it, remembers the result and reports whether there were any
// (or the aggregate's last sequence moved past events the log left out).
// With a Log that is not a LoaderAfter it reloads the aggregate whole.
func (x *Executor[S]) refresh(ctx context.Context, c cached[S]) (cached[S], bool, error) {
	var recs []Record
	var last uint64
	var err error
	if la, ok := x.Log.(LoaderAfter); ok {
		recs, last, err = la.LoadAfter(ctx, c.agg, c.last)
	} else {
		var all []Record
		all, last, err = x.Log.Load(ctx, c.agg)
		for _, r := range all {
			if r.Seq > c.last {
				recs = append(recs, r)
			}
		}
	}
	if err != nil {
		x.forget(c.agg)
		return c, false, err
	}
	// A log that leaves events out of what it returns (a quarantined
	// forgery) still reports the aggregate's last sequence past them:
	// the next append is checked against it.
	if len(recs) == 0 && last <= c.last {
		return c, false, nil
	}
	for _, r := range recs {
		c.s = x.Evolve(c.s, r.Envelope)
		// The highest ver, not the last one's: an event stored again
		// later (a replayed message, its ver long past) must not set
		// the next decision's ver back below what the fold has seen.
		c.ver, c.last = max(c.ver, r.Ver), r.Seq
	}
	c.last = max(c.last, last)
	x.remember(c)
	return c, true, nil
}

// load returns agg's cached state, or its state folded from the log
// (and caches it).
func (x *Executor[S]) load(ctx context.Context, agg Aggregate) (cached[S], error) {
	c, _, err := x.lookup(ctx, agg)
	return c, err
}

// lookup is load, also reporting whether the state came from the cache
// (hit) rather than the log.
func (x *Executor[S]) lookup(ctx context.Context, agg Aggregate) (c cached[S], hit bool, err error) {
	x.mu.Lock()
	if el, ok := x.cache[agg]; ok {
		x.lru.MoveToFront(el)
		c := *el.Value.(*cached[S])
		x.mu.Unlock()
		return c, true, nil
	}
	x.mu.Unlock()
	recs, last, err := x.Log.Load(ctx, agg)
	if err != nil {
		return cached[S]{}, false, err // the log names the aggregate
	}
	c = cached[S]{agg: agg, s: x.Init(agg), last: last}
	for _, r := range recs {
		c.s = x.Evolve(c.s, r.Envelope)
		c.ver = max(c.ver, r.Ver) // see refresh: a replayed event sets nothing back
	}
	x.remember(c)
	return c, false, nil
}

// remember caches c as its aggregate's state, dropping the least
// recently used states beyond MaxCached; a Settled state is dropped
// instead.
func (x *Executor[S]) remember(c cached[S]) {
	if x.Settled != nil && x.Settled(c.s) {
		x.forget(c.agg)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if el, ok := x.cache[c.agg]; ok {
		*el.Value.(*cached[S]) = c
		x.lru.MoveToFront(el)
		return
	}
	x.pushLocked(c)
}

// Remember caches s as agg's state for the next Execute on agg, which
// then decides without reading the log: for a caller that has just
// appended agg's events itself, without Execute. s must be the fold of
// agg's events up to stream sequence last (the Appended.Last of that
// append), as Execute's own cache is; ver is the highest Ver folded into
// s. x keeps s and hands it to later decisions: the caller must not
// change s, nor anything it references, afterwards. A state cached at
// a later sequence is kept; a Settled s drops agg's cached state
// instead. If another writer has moved agg past last, the next decision
// finds out by its optimistic check, as for any cached state, and reads
// the log then. Safe for concurrent use; it takes no aggregate's lock.
func (x *Executor[S]) Remember(agg Aggregate, s S, ver, last uint64) {
	x.once.Do(x.init)
	if x.Settled != nil && x.Settled(s) {
		x.forget(agg)
		return
	}
	c := cached[S]{agg: agg, s: s, ver: ver, last: last}
	x.mu.Lock()
	defer x.mu.Unlock()
	if el, ok := x.cache[agg]; ok {
		if el.Value.(*cached[S]).last >= last {
			return
		}
		*el.Value.(*cached[S]) = c
		x.lru.MoveToFront(el)
		return
	}
	x.pushLocked(c)
}

// rememberNew caches c, a state of an aggregate found empty, unless a
// state of it is cached already (another decision's, since): it reports
// whether c stands. A Settled c is returned, not cached.
func (x *Executor[S]) rememberNew(c cached[S]) bool {
	if x.Settled != nil && x.Settled(c.s) {
		return true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.cache[c.agg]; ok {
		return false
	}
	x.pushLocked(c)
	return true
}

// pushLocked caches c, not cached yet, as the most recently used state,
// dropping the least recently used beyond MaxCached; x.mu is held.
func (x *Executor[S]) pushLocked(c cached[S]) {
	x.cache[c.agg] = x.lru.PushFront(&c)
	max := x.MaxCached
	if max <= 0 {
		max = DefaultMaxCached
	}
	for x.lru.Len() > max {
		old := x.lru.Back()
		x.lru.Remove(old)
		delete(x.cache, old.Value.(*cached[S]).agg)
	}
}

func (x *Executor[S]) forget(agg Aggregate) {
	x.mu.Lock()
	if el, ok := x.cache[agg]; ok {
		x.lru.Remove(el)
		delete(x.cache, agg)
	}
	x.mu.Unlock()
}

// Cached returns how many aggregate states x holds in memory now.
func (x *Executor[S]) Cached() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lru.Len()
}
