package natslog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
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

// Signer signs an appended message: given its subject, its
// Nats-Expected-Last-Subject-Sequence header ("" when it carries none)
// and its body, it returns the Lb-Key and Lb-Sig header values
// (attestation.Key implements it). It must be safe for concurrent use.
type Signer interface {
	Sign(subject, expect string, data []byte) (keyID, sig string)
}

// BatchSigner is a Signer that also signs several messages with one
// signature over the RFC 6962 root of their leaves, each message given
// its inclusion proof (attestation.Key implements it; see
// attestation.Key.SignBatch for its errors). The committer signs every
// commit of two or more messages with it; a Signer that is not one signs
// each message alone. It must be safe for concurrent use.
type BatchSigner interface {
	Signer
	SignBatch(msgs []attestation.Signable) ([]attestation.BatchSig, error)
}

// signerBox holds a Signer for an atomic.Pointer.
type signerBox struct{ s Signer }

// SetSigner makes s sign every message appended from now on (nil: none).
// Safe for concurrent use with Append.
func (l *Log) SetSigner(s Signer) { l.signer.Store(&signerBox{s}) }

func (l *Log) currentSigner() Signer {
	if b := l.signer.Load(); b != nil {
		return b.s
	}
	return nil
}

// AppendSigned is Append with b's messages signed by s instead of the
// Log's signer: how a key event is appended with the admin key. Its
// outcomes are Append's; b goes out alone (never merged).
func (l *Log) AppendSigned(ctx context.Context, b events.Batch, s Signer) (events.Appended, error) {
	ap, err := l.appendSigned(ctx, b, s)
	if err == nil {
		l.noteEvent(ap.Last)
	}
	return ap, err
}

// appendSigned is AppendSigned.
func (l *Log) appendSigned(ctx context.Context, b events.Batch, s Signer) (events.Appended, error) {
	if err := l.connRefusal(); err != nil {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	if err := l.validate(b); err != nil {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	r, err := newRequest(b, s)
	if err != nil {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, err)
	}
	if !l.enterDirect() {
		return events.Appended{}, fmt.Errorf("append %s: %w", b.Agg, ErrClosed)
	}
	defer l.inflight.Done()
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

// sign adds the Lb-Key and Lb-Sig headers to m with s, and returns the
// key id ("" when s is nil).
func sign(s Signer, m *nats.Msg) string {
	if s == nil {
		return ""
	}
	id, sig := s.Sign(m.Subject, expectOf(m), m.Data)
	v := []string{id, sig}
	m.Header[attestation.HeaderKey] = v[0:1:1]
	m.Header[attestation.HeaderSig] = v[1:2:2]
	return id
}

// expectOf returns m's Nats-Expected-Last-Subject-Sequence header ("" when
// it carries none).
func expectOf(m *nats.Msg) string {
	if v := m.Header[jetstream.ExpectedLastSubjSeqHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// sigHeaders are the headers a signature puts on a message, in either
// form.
var sigHeaders = [...]string{attestation.HeaderKey, attestation.HeaderSig,
	attestation.HeaderBatch, attestation.HeaderRoot, attestation.HeaderBatchSig, attestation.HeaderProof}

// signMsgs signs msgs, which go out together, with s, dropping any
// signature s gave them before: one message alone (attestation.Signed, the
// Lb-Sig form), two or more with one batch signature when s is a
// BatchSigner (the Lb-Batch form), else each alone. It returns the key
// id ("" when s is nil: the messages go out unsigned).
func signMsgs(s Signer, msgs []*nats.Msg) string { return signMsgsOnce(s, msgs, false) }

// signMsgsOnce is signMsgs; fresh says that no message of msgs was
// signed before (none carries a signature header to drop).
func signMsgsOnce(s Signer, msgs []*nats.Msg, fresh bool) string {
	if s == nil || len(msgs) == 0 {
		return "" // a request's Signer never changes: nil, it signed nothing before
	}
	if !fresh {
		for _, m := range msgs {
			for _, h := range sigHeaders {
				delete(m.Header, h)
			}
		}
	}
	bs, ok := s.(BatchSigner)
	if len(msgs) > 1 && ok {
		items := make([]attestation.Signable, len(msgs))
		for i, m := range msgs {
			items[i] = attestation.Signable{Subject: m.Subject, Expect: expectOf(m), Data: m.Data}
		}
		if sigs, err := bs.SignBatch(items); err == nil {
			// The headers' values, allocated together: they live as
			// long as the messages do.
			vals := make([]string, 5*len(msgs))
			for i, m := range msgs {
				g, v := sigs[i], vals[5*i:5*i+5:5*i+5]
				v[0], v[1], v[2], v[3], v[4] = g.Key, g.Batch, g.Root, g.Sig, g.Proof
				m.Header[attestation.HeaderKey] = v[0:1:1]
				m.Header[attestation.HeaderBatch] = v[1:2:2]
				m.Header[attestation.HeaderRoot] = v[2:3:3]
				m.Header[attestation.HeaderBatchSig] = v[3:4:4]
				m.Header[attestation.HeaderProof] = v[4:5:5]
			}
			return sigs[0].Key
		}
		// A batch SignBatch refuses (its size) is signed message by message.
	}
	id := ""
	for _, m := range msgs {
		id = sign(s, m)
	}
	return id
}

// signRequests signs the messages of reqs, which go out together: those
// of the requests that share a Signer with one signature (signMsgs),
// each request's messages in order, the requests in the order given. It
// records on each request its key id and how many messages its
// signature covers (request.covered), so that a request later sent
// alone (commitOne) is signed again for what it sends.
func signRequests(reqs []*request) {
	if len(reqs) == 1 {
		r := reqs[0]
		r.keyID, r.covered = signMsgsOnce(r.signer, r.msgs, r.covered == 0), len(r.msgs)
		return
	}
	done := make([]bool, len(reqs))
	var msgs []*nats.Msg
	var group []*request
	for i, r := range reqs {
		if done[i] {
			continue
		}
		msgs, group = msgs[:0], group[:0]
		fresh := true // no message of the group signed before
		for j := i; j < len(reqs); j++ {
			if !done[j] && reqs[j].signer == r.signer {
				done[j] = true
				group = append(group, reqs[j])
				msgs = append(msgs, reqs[j].msgs...)
				fresh = fresh && reqs[j].covered == 0
			}
		}
		id := signMsgsOnce(r.signer, msgs, fresh)
		for _, g := range group {
			g.keyID, g.covered = id, len(msgs)
		}
	}
}

// Quarantined is a stored event a Verifier refused, or that a Log
// without one found not to decode once signing began (undecodable):
// never folded by a reader of this Log, always shown.
type Quarantined struct {
	Seq     uint64              `json:"seq"`
	Subject string              `json:"subject"`
	Type    string              `json:"type"`
	Agg     events.Aggregate    `json:"agg"`
	ID      string              `json:"id"`
	Verdict attestation.Verdict `json:"verdict"`
	// At is the event's own time, as it claims it. The event itself is
	// not kept: a flood of large forgeries costs a few hundred bytes each.
	At time.Time `json:"at"`
}

// maxQuarantined bounds the quarantined events a Log remembers; the
// count goes on past it.
const maxQuarantined = 10000

// quarantine remembers q (once per sequence).
type quarantine struct {
	mu   sync.Mutex
	seen map[uint64]Quarantined
	n    uint64
}

// maxQuarantinedField bounds each string a quarantine entry keeps of what
// a forger chose (the Lb-Key header, the subject), in bytes.
const maxQuarantinedField = 256

// clip returns s cut to at most n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// add records q and reports whether it is new (its sequence not seen
// before).
func (qs *quarantine) add(q Quarantined) bool {
	q.Subject, q.Type, q.ID = clip(q.Subject, maxQuarantinedField), clip(q.Type, maxQuarantinedField), clip(q.ID, maxQuarantinedField)
	q.Verdict.Key, q.Verdict.Why = clip(q.Verdict.Key, maxQuarantinedField), clip(q.Verdict.Why, 4*maxQuarantinedField)
	q.Agg.ID = clip(q.Agg.ID, maxQuarantinedField)
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if _, ok := qs.seen[q.Seq]; ok {
		return false
	}
	if qs.seen == nil {
		qs.seen = make(map[uint64]Quarantined)
	}
	qs.n++
	if len(qs.seen) < maxQuarantined {
		qs.seen[q.Seq] = q
	}
	return true
}

// quarantine records q and tells Config.OnQuarantine when it is new.
func (l *Log) quarantine(q Quarantined) {
	if l.quar.add(q) && l.cfg.OnQuarantine != nil {
		l.cfg.OnQuarantine(q)
	}
}

// Quarantined returns the events this Log's reads have quarantined so
// far (up to 10000, by sequence) and how many distinct ones there were.
func (l *Log) Quarantined() ([]Quarantined, uint64) {
	l.quar.mu.Lock()
	defer l.quar.mu.Unlock()
	out := make([]Quarantined, 0, len(l.quar.seen))
	for _, q := range l.quar.seen {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b Quarantined) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out, l.quar.n
}

// Verifier returns the Log's Verifier (nil when it reads unjudged).
func (l *Log) Verifier() *attestation.Verifier { return l.cfg.Verifier }

// SignedUnjudged returns the stream sequence of the log's signing.began
// when the log is signed and l reads it unjudged (no admin key pinned),
// and 0 when l judges what it reads or the log was never signed. A log
// read unjudged folds what every host that pins the admin key leaves
// out (unsigned, forged, out-of-role events), so its state may differ
// from theirs at the same sequence: a caller that vouches for the state
// must say so. The error is the log's, reading the signing aggregate.
func (l *Log) SignedUnjudged(ctx context.Context) (uint64, error) {
	if l.cfg.Verifier != nil {
		return 0, nil
	}
	recs, _, err := l.Load(ctx, events.Aggregate{Kind: events.KindKey, ID: events.SigningAggregate})
	if err != nil {
		return 0, fmt.Errorf("read %s.%s: %w", events.KindKey, events.SigningAggregate, err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	return recs[0].Seq, nil
}

// attestMsg is what the Verifier judges of a stored message.
func attestMsg(seq uint64, subject string, h nats.Header, data []byte) attestation.Message {
	return attestation.Message{Seq: seq, Subject: subject, Expect: h.Get(jetstream.ExpectedLastSubjSeqHeader),
		KeyID: h.Get(attestation.HeaderKey), Sig: h.Get(attestation.HeaderSig),
		Batch: h.Get(attestation.HeaderBatch), Root: h.Get(attestation.HeaderRoot), BatchSig: h.Get(attestation.HeaderBatchSig), Proof: h.Get(attestation.HeaderProof),
		Data: data}
}

// judge returns whether rec, decoded from m with pre from Precheck, is
// folded, given st, its aggregate's order state before it (see
// attestation.Verifier.Judge), which it moves past rec; a quarantined
// one is remembered.
func (l *Log) judge(m attestation.Message, rec events.Record, pre attestation.Pre, st *attestation.AggState) (attestation.Verdict, bool) {
	v := l.cfg.Verifier
	vd := v.Judge(m, rec.Envelope, pre, st)
	if !vd.Status.Quarantined() {
		return vd, true
	}
	l.quarantine(Quarantined{Seq: rec.Seq, Subject: rec.Subject, Type: rec.Type, Agg: rec.Agg, ID: rec.ID.String(), Verdict: vd, At: rec.At})
	return vd, false
}

// undecodable reports whether a stored message that does not decode (derr)
// is quarantined rather than an error: once signing began, one that is
// unsigned, badly signed or signed by a key the key events do not attest
// (a forger's junk) is never folded and stops no read, and so is one a
// registered key signed, which no role may append (its type unknown). It
// is recorded among the Quarantined, its error in Why. A Log without a
// Verifier, which judges no signature, quarantines alike every one
// stored after a signing.began (signingBefore), as Undecodable: what a
// pinned reader quarantines, so that a host that pins no admin key folds
// what the others fold and is not stopped by one. A message stored
// before signing keeps its decode error.
func (l *Log) undecodable(ctx context.Context, seq uint64, subject string, h nats.Header, data []byte, pre attestation.Pre, derr error) (bool, error) {
	v := l.cfg.Verifier
	if v == nil {
		began, err := l.signingBefore(ctx, seq)
		if err != nil || !began {
			return false, err
		}
		vd := attestation.Verdict{Status: attestation.Undecodable, Key: h.Get(attestation.HeaderKey),
			Why: "does not decode: " + derr.Error()}
		l.quarantine(Quarantined{Seq: seq, Subject: subject, Verdict: vd})
		return true, nil
	}
	if err := l.catchUpKeys(ctx, seq-1); err != nil {
		return false, err
	}
	m := attestMsg(seq, subject, h, data)
	vd := v.Judge(m, events.Envelope{}, pre, nil)
	v.Advance(seq)
	if !vd.Status.Quarantined() {
		return false, nil
	}
	vd.Why = "does not decode: " + derr.Error()
	if vd.Status == attestation.OutOfRole {
		vd.Why = "signed, but " + vd.Why
	}
	l.quarantine(Quarantined{Seq: seq, Subject: subject, Verdict: vd})
	return true, nil
}

// signingSubject is the subject of the log's signing.began.
var signingSubject = events.Aggregate{Kind: events.KindKey, ID: events.SigningAggregate}.Subject()

// signingSeen is what the reads of a Log without a Verifier found of
// the log's signing.began (see signingBefore).
type signingSeen struct {
	began atomic.Uint64 // sequence of the first stored one; 0: none found yet
	none  atomic.Uint64 // the signing subject holds none up to this sequence
}

// signingBefore reports whether a message that decodes as a
// signing.began is stored before seq, a sequence the stream holds: how a
// Log without a Verifier, which checks no signature, tells a message
// that does not decode stored once signing began from one stored
// before. It asks for the signing subject's messages one get each, from
// where an earlier call stopped, until it finds one, and never again
// after. It cannot tell the admin's signing.began from one published
// before it by a holder of the stream's credentials: it counts the
// first.
func (l *Log) signingBefore(ctx context.Context, seq uint64) (bool, error) {
	if b := l.signing.began.Load(); b != 0 {
		return b < seq, nil
	}
	d := l.reg.NewDecoder()
	for from := l.signing.none.Load() + 1; from < seq; {
		m, err := l.getMsg(ctx, from, signingSubject)
		if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoMsg) {
			break
		}
		if err != nil {
			return false, fmt.Errorf("signing.began before seq %d: %w", seq, err)
		}
		if m.Sequence >= seq {
			break
		}
		if rec, err := l.decode(d, m.Sequence, m.Subject, m.Data); err == nil && rec.Type == (events.SigningBegan{}).EventType() {
			l.signing.began.CompareAndSwap(0, m.Sequence)
			return true, nil
		}
		storeMax(&l.signing.none, m.Sequence)
		from = m.Sequence + 1
	}
	storeMax(&l.signing.none, seq-1)
	return false, nil
}

// storeMax sets a to n unless it holds more.
func storeMax(a *atomic.Uint64, n uint64) {
	for {
		old := a.Load()
		if old >= n || a.CompareAndSwap(old, n) {
			return
		}
	}
}

// keySubjects matches every key event.
const keySubjects = events.SubjectEvents + "." + events.KindKey + ".>"

// catchUpKeys makes the Verifier observe every key event up to seq,
// reading them from its horizon on with one get per key event and one
// more that finds none: how a load of one aggregate's subject, which
// sees no key events, knows the keys at its events' sequences.
func (l *Log) catchUpKeys(ctx context.Context, seq uint64) error {
	return l.catchUpKeysKnown(ctx, seq, 0)
}

// catchUpKeysKnown is catchUpKeys given known, a sequence the stream
// held before the call (0: none): when no key event follows the
// Verifier's horizon, none lies up to known either, and the Verifier
// advances to known, so that a read of one subject up to known asks
// once, not once for each of its events that another aggregate's
// events precede.
func (l *Log) catchUpKeysKnown(ctx context.Context, seq, known uint64) error {
	v := l.cfg.Verifier
	if v == nil {
		return nil
	}
	from := v.Horizon() + 1
	if from > seq {
		return nil
	}
	d := l.reg.NewDecoder()
	for from <= seq {
		m, err := l.getMsg(ctx, from, keySubjects)
		if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoMsg) {
			v.Advance(known)
			break
		}
		if err != nil {
			return fmt.Errorf("key events from %d: %w", from, err)
		}
		if m.Sequence > seq {
			// No key event lies between: the next ones need no get.
			v.Advance(m.Sequence - 1)
			return nil
		}
		rec, err := l.decode(d, m.Sequence, m.Subject, m.Data)
		if err == nil {
			v.Judge(attestMsg(m.Sequence, m.Subject, m.Header, m.Data), rec.Envelope, 0, nil)
		}
		v.Advance(m.Sequence)
		from = m.Sequence + 1
	}
	v.Advance(seq)
	return nil
}

// judgeLoaded judges rec, an event a load of one subject read, after
// catching the Verifier's keys up to it (given known, a sequence the
// stream held before the call, 0: none; see catchUpKeysKnown), given st,
// its aggregate's order state before it, and pre
// (attestation.PreVouched on the fast path, else 0); it sets rec's
// Signer and reports whether it is folded.
func (l *Log) judgeLoaded(ctx context.Context, seq uint64, subject string, h nats.Header, data []byte, rec *events.Record, pre attestation.Pre, st *attestation.AggState, known uint64) (bool, error) {
	if l.cfg.Verifier == nil {
		return true, nil
	}
	if err := l.catchUpKeysKnown(ctx, seq-1, known); err != nil {
		return false, err
	}
	vd, fold := l.judge(attestMsg(seq, subject, h, data), *rec, pre, st)
	rec.Signer = signerOf(vd)
	if !strings.HasPrefix(subject, keySubjects[:len(keySubjects)-1]) {
		// Not a key event: every key event up to seq is observed, and
		// the load's next event needs no get for them.
		l.cfg.Verifier.Advance(seq)
	}
	return fold, nil
}

// maxAggStates bounds the aggregates whose order state a Log keeps
// between loads; past it one is forgotten (and loaded from its start
// when next needed).
const maxAggStates = 1 << 16

// aggStates holds, per aggregate subject, the order state the Log's
// reads and loads judged its events up to: where a load that starts mid-history
// (LoadAfter, a read's first event of an aggregate) takes up the
// judgement instead of reading the aggregate from its start. A cache:
// what it forgets is read again.
type aggStates struct {
	mu sync.Mutex
	m  map[string]attestation.AggState
}

func (a *aggStates) get(subject string) (attestation.AggState, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.m[subject]
	return st, ok
}

// put keeps st for subject unless a state judged further is kept.
func (a *aggStates) put(subject string, st attestation.AggState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.putLocked(subject, st)
}

// putLocked is put with a.mu held.
func (a *aggStates) putLocked(subject string, st attestation.AggState) {
	old, ok := a.m[subject]
	if ok && old.Through >= st.Through {
		return
	}
	if a.m == nil {
		a.m = make(map[string]attestation.AggState)
	}
	if !ok && len(a.m) >= maxAggStates {
		for k := range a.m {
			delete(a.m, k)
			break
		}
	}
	a.m[subject] = st
}

// order is one read's order state of each aggregate it met: a read from
// the log's start begins every aggregate with none; one from the middle
// takes each aggregate's state before its first event there from the
// Log's reads and loads (stateBefore), so every read path judges every
// event alike.
type order struct {
	l         *Log
	fromStart bool
	// keys is set for a read of one aggregate's subject (LoadStreamed),
	// which meets no key events: the Verifier is caught up on them
	// before each event is judged (catchUpKeysKnown), knowing the
	// stream held end when the read began.
	keys bool
	end  uint64
	aggs map[string]*attestation.AggState
}

// newOrder returns the order state of a read from stream sequence from.
func (l *Log) newOrder(from uint64) *order {
	return &order{l: l, fromStart: from <= 1, aggs: make(map[string]*attestation.AggState)}
}

// state returns the order state of subject's aggregate before its event
// at seq, the first the read met, or the state it left the last one in.
func (o *order) state(ctx context.Context, subject string, seq uint64) (*attestation.AggState, error) {
	if st := o.aggs[subject]; st != nil {
		return st, nil
	}
	st := new(attestation.AggState)
	if !o.fromStart {
		var err error
		if *st, err = o.l.stateBefore(ctx, subject, seq); err != nil {
			return nil, err
		}
	}
	o.aggs[subject] = st
	return st, nil
}

// stateBefore returns the order state of subject's aggregate as of every
// event of it before seq, judging what the Log's loads have not judged.
func (l *Log) stateBefore(ctx context.Context, subject string, seq uint64) (attestation.AggState, error) {
	if seq <= 1 {
		return attestation.AggState{}, nil
	}
	var recs []events.Record
	st, _, err := l.loadJudged(ctx, subject, seq-1, seq-1, &recs, false)
	return st, err
}

// appendKeyEvent appends p as event ver of the key aggregate id, whose
// last sequence must still be expect, signed by admin, at time at on
// host. It reports false, appending nothing, when the aggregate moved.
func (l *Log) appendKeyEvent(ctx context.Context, admin Signer, id string, ver, expect uint64, p events.Payload, host string, at time.Time) (bool, error) {
	e := l.reg.New(p)
	e.ID = ulid.Make()
	e.Agg = events.Aggregate{Kind: events.KindKey, ID: id}
	e.Ver = ver
	e.At = at.UTC().Truncate(time.Microsecond)
	e.Host = host
	e.Actor = "admin"
	_, err := l.AppendSigned(ctx, events.Batch{Agg: e.Agg, Expect: expect, Events: []events.Envelope{e}}, admin)
	if errors.Is(err, events.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// RegisterKey appends key.registered for k (its public key, principal
// and role), signed by admin, the key whose public part the readers pin.
// It reports false, appending nothing, when k's id is registered already.
func (l *Log) RegisterKey(ctx context.Context, admin Signer, k *attestation.Key, host string, at time.Time) (bool, error) {
	return l.RegisterPublic(ctx, admin, k.Public(), k.Principal, k.Role, host, at)
}

// RegisterPublic is RegisterKey for a key of which only the public part
// (32 bytes) is at hand: how an admin registers the key of another host.
// It refuses, appending nothing, a public key that is not 32 bytes, an
// empty principal, and a role that is not serve, writer or worker.
func (l *Log) RegisterPublic(ctx context.Context, admin Signer, pub ed25519.PublicKey, principal string, role attestation.Role, host string, at time.Time) (bool, error) {
	if len(pub) != ed25519.PublicKeySize {
		return false, fmt.Errorf("register key: public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	id := attestation.KeyID(pub)
	if principal == "" {
		return false, fmt.Errorf("register key %s: no principal", id)
	}
	if _, err := attestation.ParseRole(string(role)); err != nil || role == attestation.RoleAdmin {
		return false, fmt.Errorf("register key %s: role %q: want serve, writer or worker", id, role)
	}
	return l.appendKeyFirst(ctx, admin, id, events.KeyRegistered{Public: base64.StdEncoding.EncodeToString(pub), Principal: principal, Role: string(role)}, host, at,
		func(v *attestation.Verifier) bool { _, ok := v.Key(id); return ok })
}

// appendKeyFirst appends p, signed by admin, to the key aggregate id
// unless it holds one already: with a Verifier, unless done reports
// (after the aggregate's events were read and judged) that it holds an
// attested one, so that events a forger put there first (unsigned, or
// signed by anyone but the admin) are passed over rather than taken
// for it; without one, unless the aggregate has any event. It reports
// whether it appended p; false, nil also when another append moved the
// aggregate meanwhile.
func (l *Log) appendKeyFirst(ctx context.Context, admin Signer, id string, p events.Payload, host string, at time.Time, done func(*attestation.Verifier) bool) (bool, error) {
	v := l.cfg.Verifier
	if v == nil {
		return l.appendKeyEvent(ctx, admin, id, 1, 0, p, host, at)
	}
	recs, last, err := l.Load(ctx, events.Aggregate{Kind: events.KindKey, ID: id})
	if err != nil {
		return false, err
	}
	if done(v) {
		return false, nil
	}
	return l.appendKeyEvent(ctx, admin, id, nextVer(recs, last), last, p, host, at)
}

// nextVer is the version after recs, the folded events of an aggregate
// whose last stream sequence is last: the last folded one's + 1, which is
// what a reader's order check expects (attestation.Verifier.Judge); past
// 1 when only quarantined events are there (an append on a subject that
// holds any is never version 1). A forger's version is a claim nobody
// folds.
func nextVer(recs []events.Record, last uint64) uint64 {
	ver := uint64(1)
	if n := len(recs); n > 0 {
		ver = recs[n-1].Ver + 1
	}
	if last > 0 {
		ver = max(ver, 2)
	}
	return ver
}

// KeyState returns what the log's key events say of the key id, read up
// to the end of its key aggregate and judged by the Log's Verifier: a
// key.registered that the pinned admin key did not sign binds nothing.
// It reports false when no attested key.registered binds id. Errors are
// Load's, or say the Log has no Verifier.
func (l *Log) KeyState(ctx context.Context, id string) (attestation.KeyInfo, bool, error) {
	v := l.cfg.Verifier
	if v == nil {
		return attestation.KeyInfo{}, false, fmt.Errorf("key %s: the log is read without a pinned admin key", id)
	}
	if _, _, err := l.Load(ctx, events.Aggregate{Kind: events.KindKey, ID: id}); err != nil {
		return attestation.KeyInfo{}, false, err
	}
	k, ok := v.Key(id)
	return k, ok, nil
}

// Keys returns every key the log's key events register, judged by the
// Log's Verifier, in the order of their registration: it reads the key
// events up to the log's current end (one get per key event). Errors are
// the reads', or say the Log has no Verifier.
func (l *Log) Keys(ctx context.Context) ([]attestation.KeyInfo, error) {
	v := l.cfg.Verifier
	if v == nil {
		return nil, errors.New("keys: the log is read without a pinned admin key")
	}
	last, err := l.LastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if err := l.catchUpKeys(ctx, last); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return v.Keys(), nil
}

// RevokeKey appends key.revoked for the registered key id, signed by
// admin: events that key signs after it are refused. Errors wrap
// events.ErrNotFound when id was never registered, events.ErrConflict
// when it is revoked already.
func (l *Log) RevokeKey(ctx context.Context, admin Signer, id, reason, host string, at time.Time) error {
	agg := events.Aggregate{Kind: events.KindKey, ID: id}
	recs, last, err := l.Load(ctx, agg)
	if err != nil {
		return err
	}
	if last == 0 {
		return fmt.Errorf("revoke key %s: %w", id, events.ErrNotFound)
	}
	ok, err := l.appendKeyEvent(ctx, admin, id, nextVer(recs, last), last, events.KeyRevoked{Reason: reason}, host, at)
	if err == nil && (!ok || len(recs) > 1) {
		err = fmt.Errorf("revoke key %s: %w: revoked already or changed meanwhile", id, events.ErrConflict)
	}
	return err
}

// BeginSigning appends signing.began, signed by admin, unless the log
// has one (with a Verifier: one the admin signed; a forged one does not
// count): from its sequence on every event must be signed. It reports
// whether it appended it.
func (l *Log) BeginSigning(ctx context.Context, admin Signer, host string, at time.Time) (bool, error) {
	return l.appendKeyFirst(ctx, admin, events.SigningAggregate, events.SigningBegan{Host: host}, host, at,
		func(v *attestation.Verifier) bool { return v.SigningFrom() != 0 })
}
