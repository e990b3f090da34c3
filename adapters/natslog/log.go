package natslog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// HeaderType is the header holding the event type of an lb.ev message,
// so consumers can filter without decoding the body.
const HeaderType = "Lb-Type"

// Log errors.
var (
	// ErrClosed reports a call on a Log after Close; nothing was sent.
	ErrClosed = errors.New("natslog: log closed")
	// ErrUnknownOutcome reports an append whose batch was sent but whose
	// answer was lost (the caller's ctx ended, a timeout, a broken
	// connection): the batch may or may not be stored. Appending the same
	// batch again (same event ids) is safe: within the stream's dedup
	// window a stored copy makes it succeed with Duplicate set.
	ErrUnknownOutcome = errors.New("natslog: append outcome unknown; retry with the same event ids")
)

// Log is events.Log on a JetStream stream named LOGBOOK. It is safe for
// concurrent use. Appends for different aggregates that arrive together
// share one atomic batch (group commit): one commit, and its fixed fsync
// cost, for all of them.
//
// A Log owns one goroutine, the committer, started by Open and stopped by
// Close, and the goroutines it sends batches on (at most maxSending,
// each ending with its send's answer; Close waits for them); one with a Verifier that appends more than once also owns an
// ordered consumer on the key events (its watch of them, see refuseKeys),
// whose deletion Close asks for without waiting for the answer. It does not own the *nats.Conn it was opened on: close the Log
// first, then the connection (or Server.Shutdown).
type Log struct {
	cfg    Config
	reg    *events.Registry
	js     jetstream.JetStream
	stream jetstream.Stream
	// preverifyOff and preverifyFrom (0: preverifyMin) are a test's
	// settings of this log's pre-verification (read's own tail checks
	// compared with preverify's), set before its first read.
	preverifyOff  bool
	preverifyFrom uint64
	// leaderReads is set on a replicated stream: reads that must see
	// every acknowledged append go to the leader (see leaderGet).
	leaderReads bool
	// eventHint is a stream sequence that held an event when this Log
	// appended it, followed it or found it last (noteEvent,
	// LastEventSeq): where LastEventSeq looks from. eventWalks counts
	// the times LastEventSeq asked the server for the last event
	// instead.
	eventHint  atomic.Uint64
	eventWalks atomic.Uint64
	// srv is the embedded Server of this process the Log's connection
	// is connected to (nil: none), whose JetStream restarts its reads
	// wait out (acrossHeals).
	srv *Server

	reqs      chan *request // to the committer; unbuffered
	quit      chan struct{} // closed by Close
	done      chan struct{} // closed when the committer has returned
	closeOnce sync.Once

	decisions, batches, merged, split, pipes atomic.Uint64

	// entering counts Append calls between entry and handing their
	// request to the committer, which waits for them while gathering.
	entering atomic.Int64

	// holds counts the Holds outstanding; unheld (capacity 1) wakes the
	// committer when one ends or entering drops to 0 (see await).
	holds  atomic.Int64
	unheld chan struct{}

	// sent carries back to the committer each batch it handed to a
	// goroutine of its own once that batch is answered (capacity
	// maxSending: those goroutines never wait on it); sends counts
	// those goroutines, which the committer waits for before it returns.
	sent  chan []*request
	sends sync.WaitGroup

	// direct holds a token per large decision being sent by its own
	// caller (see DirectMin); inflight counts them for Close.
	direct   chan struct{}
	inflight sync.WaitGroup
	closeMu  sync.RWMutex // held for reading by a direct send, for writing by Close
	closed   bool         // guarded by closeMu

	signer atomic.Pointer[signerBox] // signs appended messages; nil box or signer: none
	quar   quarantine                // events the Verifier refused on reads
	judged atomic.Pointer[Judged]    // a trusted checkpoint statement's fast path; nil: none
	orders aggStates                 // aggregate order states loads judged up to, by subject
	keys   keyWatch                  // the key events' watch, with a Verifier (see refuseKeys)
	// signing is what reads without a Verifier found of the log's
	// signing.began (signingBefore).
	signing signingSeen
}

// DirectMin is the fewest events in one decision that its caller sends
// itself, as one atomic batch, instead of handing it to the committer: a
// decision that large gains nothing from merging, and sending it beside
// the committer lets the server stage several large batches at once (an
// import of many transcripts) rather than one after another.
const DirectMin = events.MaxBatch / 4

// maxDirect bounds the large decisions in flight at once, well below the
// server's 50 atomic batches in flight per stream. The server stores a
// stream's batches one after another, so a few queued keep it busy;
// more would only wait there, each within its Config.Timeout, and on a
// loaded machine time out (an import of thousands of transcripts, with
// batches of 1000 events queued behind one another, did at 8).
const maxDirect = 4

var _ events.Log = (*Log)(nil)

// Open returns a Log on nc's JetStream. It creates the LOGBOOK stream
// with cfg.StreamConfig() if absent; if present, it refuses with a
// *StreamConfigError a stream whose settings break the log's guarantees
// (deny flags lost, async persistence, discard old, a max age, wrong
// subjects, no atomic batches, …). It starts the committer goroutine;
// call Close to stop it.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.EnsureDefaults()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("natslog: open: %w", err)
	}
	st, err := openStream(ctx, js, cfg)
	if err != nil {
		return nil, fmt.Errorf("natslog: open stream %s: %w", StreamName, err)
	}
	if err := checkStream(st.CachedInfo().Config); err != nil {
		return nil, err
	}
	l := &Log{
		leaderReads: st.CachedInfo().Config.Replicas > 1,
		srv:         embeddedOf(nc),
		cfg:         cfg,
		reg:         cfg.Registry,
		js:          js,
		stream:      st,
		reqs:        make(chan *request),
		quit:        make(chan struct{}),
		done:        make(chan struct{}),
		direct:      make(chan struct{}, maxDirect),
		unheld:      make(chan struct{}, 1),
		sent:        make(chan []*request, maxSending),
	}
	if cfg.Signer != nil {
		l.SetSigner(cfg.Signer)
	}
	go l.run()
	return l, nil
}

// openStream looks the stream up, or creates it, each attempt bounded by
// cfg.Timeout, and asks again while the cluster cannot serve the request
// (Unserved: a stream or meta leader being elected) for up to
// ElectionWait. When the wait ends first, its error says what it waited
// for and wraps the last attempt's error.
func openStream(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	start, pause := time.Now(), firstPause
	for {
		actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		st, err := js.Stream(actx, StreamName)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = js.CreateStream(actx, cfg.StreamConfig())
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // created meanwhile
				st, err = js.Stream(actx, StreamName)
			}
		}
		cancel()
		if err == nil || !Unserved(ctx, err) {
			return st, err
		}
		if waited := time.Since(start); waited+pause > ElectionWait {
			if down := connDown(js.Conn()); down != "" {
				return nil, fmt.Errorf("no server answered for %s in %v: %s: %w", StreamName, waited.Round(time.Second), down, err)
			}
			return nil, fmt.Errorf("no leader answered for %s (waited %v for an election, at most %v): %w",
				StreamName, waited.Round(time.Second), ElectionWait, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(ctx.Err(), err)
		}
		pause = min(pause*2, maxPause)
	}
}

// connDown says why nc reaches no server, when it does not: it lost its
// server and is reconnecting (a server that is gone, or moved to another
// address, elects nothing), or it is closed; "" while it is connected,
// when a missing answer is the cluster's (an election).
func connDown(nc *nats.Conn) string {
	if nc == nil {
		return ""
	}
	switch st := nc.Status(); st {
	case nats.CONNECTED, nats.DRAINING_SUBS, nats.DRAINING_PUBS:
		return ""
	case nats.CLOSED:
		return "the connection to the server is closed"
	default:
		return fmt.Sprintf("the connection lost its server and is %s (the server is gone, or not at the address it was reached at)", strings.ToLower(st.String()))
	}
}

// Close stops the committer: an append already sent to the server gets
// its outcome, queued ones fail with ErrClosed, later calls to Append
// fail with ErrClosed. Reads in progress end with their own ctx. Close
// blocks until the committer has finished the batches in flight (each send
// is bounded by Config.Timeout), then stops the watch of the key events
// and asks the server to delete its consumer, without waiting for the
// answer (dropConsumer); it is idempotent and does not close the
// connection.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.closeMu.Lock()
		l.closed = true
		l.closeMu.Unlock()
		close(l.quit)
	})
	<-l.done
	l.inflight.Wait()
	l.stopKeyWatch()
	return nil
}

// Stats counts the committer's work since Open.
type Stats struct {
	Decisions uint64 // decisions the committer sent (alone or merged)
	Batches   uint64 // commits sent: atomic batches and one-message publishes, retries included
	Merged    uint64 // batches that carried more than one decision
	Split     uint64 // merged batches refused whole and retried member by member
	Pipelined uint64 // merged one-event decisions sent as back-to-back plain publishes
}

// Stats returns the committer's counters. Safe for concurrent use.
func (l *Log) Stats() Stats {
	return Stats{
		Decisions: l.decisions.Load(),
		Batches:   l.batches.Load(),
		Merged:    l.merged.Load(),
		Pipelined: l.pipes.Load(),
		Split:     l.split.Load(),
	}
}

// Append implements events.Log. It validates b against the registry and
// the batch shape (1..events.MaxBatch events, all of b.Agg, Ver dense,
// Ver 1 exactly when b.Expect is 0, no repeated id) and refuses a bad
// batch with an error wrapping the events sentinel (ErrMalformed,
// ErrUnknownType, ErrUnknownVersion, ErrMissingCause) before sending
// anything. It then hands b to the committer, which stores it as one
// atomic batch, possibly merged with other aggregates' decisions (a lone
// one-event decision goes out as a plain publish with the same headers).
// It blocks until the server answers or ctx ends.
//
// Errors: one wrapping events.ErrConflict if b.Agg's last stream sequence
// is not b.Expect; a *KeyRefusedError (wrapping ErrKeyRefused), nothing
// sent, if the Log's Verifier says the key b is signed with is revoked or
// unknown (or b is unsigned once signing began), judged by the key events
// the Log has observed (see refuseKeys: its first commits catch them up
// to the log's end, later ones take each as the server delivers it, and
// a refusal is confirmed to the log's end); a *RoleRefusedError (wrapping
// ErrRoleRefused), nothing sent, if an event of b is one the signing
// key's role may not append (attestation.Refusal), or the Log's
// connection appends nothing (Config.ConnRole); ErrClosed after Close; ctx's error alone if ctx ended
// before the batch was sent (nothing stored); one wrapping
// ErrUnknownOutcome if the batch was sent and its answer was lost.
//
// A batch committed before (same event ids) succeeds with Duplicate set
// and stores nothing. First and Last then point at the stored copy, found
// from b.Expect with up to two direct gets. Within the stream's dedup
// window the server reports the repeat; outside it a repeat is still
// recognised when it is where b.Expect says, else it is a conflict. First
// and Last are 0 when the server reports a repeat that is not where
// b.Expect says (the batch was changed since).
func (l *Log) Append(ctx context.Context, b events.Batch) (events.Appended, error) {
	ap, err := l.append(ctx, b)
	if err == nil {
		l.noteEvent(ap.Last)
	}
	return ap, err
}

// append is Append.
func (l *Log) append(ctx context.Context, b events.Batch) (events.Appended, error) {
	if len(b.Events) >= DirectMin {
		return l.appendDirect(ctx, b)
	}
	l.entering.Add(1)
	r, err := l.prepare(b)
	sent := false
	if err == nil && ctx.Err() != nil {
		// Done already: never sent, whichever case select would pick.
		err = fmt.Errorf("not sent: %w", ctx.Err())
	}
	if err == nil {
		select {
		case l.reqs <- r:
			sent = true
		case <-ctx.Done():
			err = fmt.Errorf("not sent: %w", ctx.Err())
		case <-l.done:
			err = ErrClosed
		}
	}
	if l.entering.Add(-1) == 0 {
		l.wake()
	}
	if !sent {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	select {
	case o := <-r.done:
		return o.app, o.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, cancelled) {
			return events.Appended{}, fmt.Errorf("append %s: not sent: %w", b.Agg, ctx.Err())
		}
		select {
		case o := <-r.done:
			return o.app, o.err
		default:
			return events.Appended{}, fmt.Errorf("append %s: %w: %w", b.Agg, ErrUnknownOutcome, ctx.Err())
		}
	}
}

// appendDirect sends b, a decision of at least DirectMin events, from the
// caller's goroutine as one atomic batch, once one of maxDirect tokens is
// free. Its outcomes are Append's.
func (l *Log) appendDirect(ctx context.Context, b events.Batch) (events.Appended, error) {
	r, err := l.prepare(b)
	if err != nil {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	select {
	case l.direct <- struct{}{}:
	case <-ctx.Done():
		return events.Appended{}, fmt.Errorf("append %s: not sent: %w", b.Agg, ctx.Err())
	case <-l.quit:
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, ErrClosed)
	}
	defer func() { <-l.direct }()
	if !l.enterDirect() {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, ErrClosed)
	}
	defer l.inflight.Done()
	l.decisions.Add(1)
	signRequests([]*request{r})
	if len(l.refuseKeys([]*request{r})) == 0 {
		o := <-r.done
		return o.app, o.err
	}
	if err := l.roomRefusal(); err != nil {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	o := l.commitOne(r)
	return o.app, o.err
}

// prepare validates b and encodes it into a request for the committer.
func (l *Log) prepare(b events.Batch) (*request, error) {
	if err := l.connRefusal(); err != nil {
		return nil, err
	}
	if err := l.validate(b); err != nil {
		return nil, err
	}
	r, err := newRequest(b, l.currentSigner())
	if err != nil {
		return nil, err
	}
	if err := l.fits(r); err != nil {
		return nil, err
	}
	return r, nil
}

// signatureRoom is what a message's size is given for the signature
// headers added when it goes out (Lb-Key, a signature, a batch's index,
// root and proof): bytes.
const signatureRoom = 1024

// fits returns an error wrapping events.ErrMalformed when a message of r,
// with its headers and signatureRoom, is over the connection's maximum
// payload (the server's max_payload): the client would refuse to send
// it, and no retry could ever store it. Nothing of r is sent then.
func (l *Log) fits(r *request) error {
	if l.js == nil || l.js.Conn() == nil {
		return nil // a Log not connected (tests playing the committer)
	}
	limit := l.js.Conn().MaxPayload()
	if limit <= 0 {
		return nil
	}
	for i, m := range r.msgs {
		size := int64(len(m.Subject) + len(m.Data) + signatureRoom)
		for k, vs := range m.Header {
			for _, v := range vs {
				size += int64(len(k) + len(v) + 4)
			}
		}
		if size > limit {
			return fmt.Errorf("%w: event %d (%s) is %d bytes with its headers, over the server's max_payload of %d bytes", events.ErrMalformed, i, m.Header.Get(HeaderType), size, limit)
		}
	}
	return nil
}

// validate checks b's envelopes and shape; errors wrap events sentinels.
func (l *Log) validate(b events.Batch) error {
	n := len(b.Events)
	if n == 0 {
		return fmt.Errorf("%w: no events", events.ErrMalformed)
	}
	if n > events.MaxBatch {
		return fmt.Errorf("%w: %d events, at most %d per decision", events.ErrMalformed, n, events.MaxBatch)
	}
	if err := b.Agg.Validate(); err != nil {
		return err
	}
	first := b.Events[0].Ver
	var ids map[ulid.ULID]int
	if n > 1 {
		ids = make(map[ulid.ULID]int, n)
	}
	for i := range b.Events {
		e := &b.Events[i]
		if err := l.reg.Validate(*e); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if e.Agg != b.Agg {
			return fmt.Errorf("%w: event %d (%s) belongs to %s", events.ErrMalformed, i, e.ID, e.Agg)
		}
		if want := first + uint64(i); e.Ver != want {
			return fmt.Errorf("%w: ver not dense: event %d (%s) has ver %d, want %d", events.ErrMalformed, i, e.ID, e.Ver, want)
		}
		if ids != nil {
			if j, dup := ids[e.ID]; dup {
				return fmt.Errorf("%w: events %d and %d share id %s", events.ErrMalformed, j, i, e.ID)
			}
			ids[e.ID] = i
		}
	}
	switch {
	case b.Expect == 0 && first != 1:
		return fmt.Errorf("%w: expect 0 (new aggregate) needs ver 1 first, got ver %d", events.ErrMalformed, first)
	case b.Expect != 0 && first == 1:
		return fmt.Errorf("%w: ver 1 needs expect 0 (new aggregate), got expect %d", events.ErrMalformed, b.Expect)
	}
	return nil
}

// Request states; a request moves from queued to taken (the committer
// put it in a batch) or to cancelled (its caller gave up first).
const (
	queued int32 = iota
	taken
	cancelled
)

// request is one decision on its way to the committer.
type request struct {
	agg     events.Aggregate
	subject string
	expect  uint64
	firstID string // Nats-Msg-Id of the first and last message
	lastID  string
	msgs    []*nats.Msg
	size    int    // the bodies of msgs, in bytes (what pick merges by)
	signer  Signer // signs msgs when they go out (signRequests); nil: unsigned
	keyID   string // the Lb-Key its messages are signed with; "" unsigned or not signed yet
	// causes holds, per message of a signed request, its event's cause
	// as the signing key's role rule judges it (refuseRoles); nil when
	// the request is unsigned.
	causes []causeKind
	// covered is how many messages the signature its messages carry
	// covers (0: not signed yet): len(msgs) when they were signed by
	// themselves, more when with other requests' (one batch signature).
	covered int
	state   atomic.Int32
	done    chan outcome // capacity 1; written once by the committer
}

// outcome answers a request.
type outcome struct {
	app events.Appended
	err error
}

// newRequest encodes b's envelopes into messages: subject b.Agg.Subject(),
// body the envelope's JSON, headers Nats-Msg-Id and Lb-Type, and on the
// first message Nats-Expected-Last-Subject-Sequence = b.Expect. They are
// signed by s (nil: none) when they go out (signRequests), with the
// messages they go out with.
func newRequest(b events.Batch, s Signer) (*request, error) {
	subject := b.Agg.Subject()
	n := len(b.Events)
	// The messages, and their headers' values, are allocated together:
	// they live as long as the request does.
	msgs := make([]*nats.Msg, n)
	slab := make([]nats.Msg, n)
	vals := make([]string, 2*n+1)
	// Room for the batch headers (three) and, when signed, the signature
	// headers (five): a map of eight or fewer entries is one group.
	room := 8
	if s != nil {
		room = 13
	}
	datas, err := encodeEvents(b.Events)
	if err != nil {
		return nil, err
	}
	for i := range b.Events {
		e := &b.Events[i]
		data := datas[i]
		h := make(nats.Header, room)
		v := vals[2*i : 2*i+2 : 2*i+2]
		v[0], v[1] = e.ID.String(), e.Type
		h[jetstream.MsgIDHeader] = v[0:1:1]
		h[HeaderType] = v[1:2:2]
		if i == 0 {
			vals[2*n] = strconv.FormatUint(b.Expect, 10)
			h[jetstream.ExpectedLastSubjSeqHeader] = vals[2*n:]
		}
		m := &slab[i]
		m.Subject, m.Header, m.Data = subject, h, data
		msgs[i] = m
	}
	size := 0
	for _, d := range datas {
		size += len(d)
	}
	var causes []causeKind
	if s != nil {
		causes = make([]causeKind, n)
		for i := range b.Events {
			if c := b.Events[i].Cause; c != nil {
				causes[i] = causeKind{kind: c.Kind, event: c.Event, has: true}
			}
			causes[i].actor = b.Events[i].Actor
			causes[i].finding = attestation.ServeFinding(b.Events[i])
		}
	}
	return &request{
		agg:     b.Agg,
		subject: subject,
		expect:  b.Expect,
		firstID: b.Events[0].ID.String(),
		lastID:  b.Events[len(b.Events)-1].ID.String(),
		msgs:    msgs,
		size:    size,
		signer:  s,
		causes:  causes,
		done:    make(chan outcome, 1),
	}, nil
}

// causeKind is what the role rule (attestation.Refusal) reads of an
// event's cause: its kind and event, and whether it has one; its actor,
// which attestation.ActorRefusal reads; and what it claims that only
// serve's reconciler finds (attestation.ServeFinding, "" for nothing),
// which attestation.FindingRefusal reads.
type causeKind struct {
	kind    string
	event   string
	has     bool
	actor   string
	finding string
}

// encodeEvents returns the wire form of each of evs (events.Envelope's
// MarshalJSON bytes), in order: each a slice of one buffer of their
// total size, its capacity its own length, so that appending to one
// never reaches the next. Errors name the event at fault.
func encodeEvents(evs []events.Envelope) ([][]byte, error) {
	bp := encodeScratch.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		if cap(buf) <= maxEncodeScratch {
			*bp = buf[:0]
			encodeScratch.Put(bp)
		}
	}()
	ends := make([]int, len(evs))
	for i := range evs {
		var err error
		if buf, err = evs[i].AppendJSON(buf); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		ends[i] = len(buf)
	}
	all := bytes.Clone(buf)
	out := make([][]byte, len(evs))
	start := 0
	for i, end := range ends {
		out[i] = all[start:end:end]
		start = end
	}
	return out, nil
}

// encodeScratch holds *[]byte buffers encodeEvents writes a decision's
// events into before copying them out at their size; one that grew past
// maxEncodeScratch bytes is let go.
var encodeScratch = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxEncodeScratch is the largest buffer, in bytes, encodeScratch keeps.
const maxEncodeScratch = 4 << 20

// answer delivers o to the request's caller; called once per request.
func (r *request) answer(o outcome) { r.done <- o }

// enterDirect counts a direct send in inflight, which Close waits for,
// unless the Log is closed: then it returns false and counts nothing. A
// true return is paired with one l.inflight.Done().
func (l *Log) enterDirect() bool {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return false
	}
	l.inflight.Add(1)
	return true
}
