package natslog

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// Judged is the fast path of a reader that trusts serve's checkpoint
// key: what a signed checkpoint statement (adapters/merkle.Judgment)
// says serve judged, with the means to tie each stored message to the
// statement's Merkle tree. For an event at a sequence up to Through the
// Log takes, instead of verifying its Ed25519 signature, either the
// statement's verdict (Quarantined) or its word that the signature
// verified (attestation.PreVouched), after Check proved the message is
// byte for byte the leaf the statement's tree holds; the key's
// registration, its role and the aggregate's order are judged as ever.
// Past Through every event is verified by its signature.
type Judged struct {
	// Through is the last stream sequence the statement covers (its
	// tree size): serve judged every event of seq 1..Through.
	Through uint64
	// Quarantined holds serve's verdict on each event of 1..Through it
	// quarantined, by stream sequence; owned by the Judged, not changed
	// once set.
	Quarantined map[uint64]attestation.Verdict
	// Check returns nil when m (at a sequence ≤ Through) is the leaf
	// of the statement's tree at its sequence, and otherwise an error
	// naming m's sequence. It is called from several goroutines at once.
	// m's Header may be nil with its header block still undecoded
	// (Msg.HeaderBlock, as a raw read leaves it): its headers are then
	// those RawHeader.Parse (or, when that fails, Msg.Decoded) makes of
	// the block, which m's leaf covers as it covers a decoded Header's.
	Check func(m Msg) error
	// CheckHeader, when set, is Check of a message m a raw read left
	// undecoded (m.HeaderBlock() not nil) whose judged headers h holds,
	// parsed from that block by h.Parse, which reported true: the same
	// answer as Check(m), with the block not walked again. A read that
	// parsed the block to judge the message calls it instead of Check;
	// nil: Check is called. It is called from several goroutines at
	// once, each with its own h.
	CheckHeader func(m Msg, h *RawHeader) error
}

// SetJudged makes the Log's reads take j's fast path from now on (nil:
// none, every signature verified). It needs a Verifier; safe for
// concurrent use with reads (a read takes it when it starts a chunk).
func (l *Log) SetJudged(j *Judged) { l.judged.Store(j) }

// Judgment returns the fast path the Log's reads take (nil: none).
func (l *Log) Judgment() *Judged { return l.judged.Load() }

// vouched returns, for the message m, the Pre a read judges it with
// under j, or an error when m is not the leaf j's tree holds. stated
// reports an event j's statement quarantined.
func (j *Judged) vouched(m Msg) (pre attestation.Pre, stated bool, err error) {
	return j.vouchedParsed(m, nil)
}

// vouchedParsed is vouched of m whose header block h holds parsed (nil:
// not parsed), as Judged.CheckHeader takes it.
func (j *Judged) vouchedParsed(m Msg, h *RawHeader) (pre attestation.Pre, stated bool, err error) {
	if j == nil || m.Seq > j.Through {
		return 0, false, nil
	}
	if h != nil && j.CheckHeader != nil && m.HeaderBlock() != nil {
		err = j.CheckHeader(m, h)
	} else {
		err = j.Check(m)
	}
	if err != nil {
		return 0, false, err
	}
	if _, ok := j.Quarantined[m.Seq]; ok {
		return 0, true, nil
	}
	return attestation.PreVouched, false, nil
}

// quarantineStated records the event at m (rec, decoded from it, or the
// zero Record when it does not decode) quarantined as j's statement
// says, and moves st (nil for none) past it without folding it. The
// caller advances the Verifier.
func (l *Log) quarantineStated(j *Judged, m attestation.Message, rec events.Record, st *attestation.AggState) events.Signer {
	vd := j.Quarantined[m.Seq]
	if st != nil {
		st.Through = max(st.Through, m.Seq)
	}
	id := ""
	if rec.Seq != 0 {
		id = rec.ID.String()
	}
	l.quarantine(Quarantined{Seq: m.Seq, Subject: m.Subject, Type: rec.Type, Agg: rec.Agg, ID: id, Verdict: vd, At: rec.At})
	return signerOf(vd)
}

// Judger judges every event of a log in stream order from its start,
// with a Verifier of its own, as a reader from the start judges them:
// what serve states in its checkpoints (adapters/merkle.Judgment). It
// keeps a few words per aggregate and each quarantined verdict. It is
// not safe for concurrent use.
type Judger struct {
	l       *Log
	admin   ed25519.PublicKey
	v       *attestation.Verifier
	d       *events.Decoder
	aggs    map[string]*attestation.AggState
	through uint64
	quar    map[uint64]attestation.Verdict
	from    *Judged // the statement taken up from (ResumeJudger); nil: judged from the start
	judged  uint64  // messages judged here, not taken from a statement
	dropped string  // why a statement taken up from was dropped
}

// NewJudger returns a Judger of l's events trusting admin, the pinned
// admin public key, that has judged nothing yet. When l's own Verifier
// pins the same admin key, the Judger's Verifier is its Sibling: an
// event l's reads verified (serve's projector following the log) is not
// verified again by the Judger, nor the other way round.
func (l *Log) NewJudger(admin ed25519.PublicKey) *Judger {
	v := attestation.NewVerifier(admin)
	if lv := l.cfg.Verifier; lv != nil && lv.Admin().Equal(admin) {
		v = lv.Sibling()
	}
	return &Judger{l: l, admin: admin, v: v, d: l.reg.NewDecoder(),
		aggs: map[string]*attestation.AggState{}, quar: map[uint64]attestation.Verdict{}}
}

// ResumeJudger returns a Judger of l's events trusting admin that takes
// up from s, serve's last judgment statement, proven as a reader proves
// it (adapters/merkle.FastPath: a trusted key signed it, and the stored
// tree hashes make its root): it holds seq 1..s.Through judged as s says
// (its quarantined verdicts are the Judger's) and judges only what
// follows. It first observes the key events up to s.Through (one read of
// the key subjects), each checked against s's tree and, unless s
// quarantined it, taken as attested; the order state of an aggregate it
// meets past s.Through is read from that aggregate's events up to
// s.Through, each checked likewise (none when the first event past
// carries Nats-Expected-Last-Subject-Sequence 0, which the server held
// it to). When one of those messages is not the leaf s's tree holds, or
// s folds a key event or an aggregate's event that does not decode or
// that the key events refuse, the Judger drops s and judges the log from
// its start (Resumed says why). A changed message of an aggregate
// nothing touches past s is not read here: readers check every message
// they read against its leaf (Judged), and `logbook verify` names it.
// With s nil it is NewJudger's. Errors are the reads'.
func (l *Log) ResumeJudger(ctx context.Context, admin ed25519.PublicKey, s *Judged) (*Judger, error) {
	j := l.NewJudger(admin)
	if s == nil || s.Through == 0 {
		return j, nil
	}
	err := j.resume(ctx, s)
	if d, ok := errors.AsType[*distrustError](err); ok {
		j.restart(d)
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Through returns the last stream sequence judged (0: none).
func (j *Judger) Through() uint64 { return j.through }

// Judged returns how many messages (events, and command output passed
// over) this Judger judged itself, not taken from a statement.
func (j *Judger) Judged() uint64 { return j.judged }

// Resumed returns the last sequence of the statement the Judger took up
// from (0: it judges from the log's start) and, when it dropped one
// (ResumeJudger), why.
func (j *Judger) Resumed() (through uint64, dropped string) {
	if j.from != nil {
		through = j.from.Through
	}
	return through, j.dropped
}

// distrustError says a statement taken up from does not hold: a message
// it covers is not its leaf, or it folds what does not decode or what
// the key events refuse.
type distrustError struct{ err error }

func (e *distrustError) Error() string { return e.err.Error() }

// restart drops the statement taken up from, for why, and judges from
// the log's start again.
func (j *Judger) restart(why *distrustError) {
	*j = *j.l.NewJudger(j.admin)
	j.dropped = fmt.Sprintf("the last judgment statement was not taken up: %v; the log is judged from its start", why)
}

// resume takes s's judgment of seq 1..s.Through and observes the key
// events up to it.
func (j *Judger) resume(ctx context.Context, s *Judged) error {
	j.from, j.through = s, s.Through
	j.quar = maps.Clone(s.Quarantined)
	if j.quar == nil {
		j.quar = map[uint64]attestation.Verdict{}
	}
	for m, err := range j.l.ReadRaw(ctx, keySubjects, 1) {
		if err != nil {
			return fmt.Errorf("judge from seq %d: key events: %w", s.Through+1, err)
		}
		if m.Seq > s.Through {
			break
		}
		if err := s.Check(m); err != nil {
			return &distrustError{err}
		}
		if _, ok := s.Quarantined[m.Seq]; ok {
			continue
		}
		rec, err := j.l.decode(j.d, m.Seq, m.Subject, m.Data)
		if err != nil {
			return &distrustError{fmt.Errorf("seq %d: the statement folds a key event that does not decode: %w", m.Seq, err)}
		}
		vd := j.v.Judge(attestMsg(m.Seq, m.Subject, m.Header, m.Data), rec.Envelope, attestation.PreVouched, nil)
		j.v.Advance(m.Seq)
		if vd.Status.Quarantined() {
			return &distrustError{fmt.Errorf("seq %d: the statement folds a key event the key events before it refuse (%s: %s)", m.Seq, vd.Status, vd.Why)}
		}
	}
	j.v.Advance(s.Through)
	return nil
}

// stateAt returns the order state of m's aggregate as of every event of
// it up to the statement taken up from, m being its first event past it.
func (j *Judger) stateAt(ctx context.Context, m Msg) (attestation.AggState, error) {
	var st attestation.AggState
	s := j.from
	if m.Header.Get(jetstream.ExpectedLastSubjSeqHeader) == "0" {
		return st, nil // stored on an empty subject
	}
	for p, err := range j.l.ReadRaw(ctx, m.Subject, 1) {
		if err != nil {
			return st, fmt.Errorf("judge seq %d: its aggregate's events up to seq %d: %w", m.Seq, s.Through, err)
		}
		if p.Seq > s.Through {
			break
		}
		if err := s.Check(p); err != nil {
			return st, &distrustError{err}
		}
		st.Through = p.Seq
		if _, ok := s.Quarantined[p.Seq]; ok {
			continue
		}
		rec, err := j.l.decode(j.d, p.Seq, p.Subject, p.Data)
		if err != nil {
			return st, &distrustError{fmt.Errorf("seq %d: the statement folds an event that does not decode: %w", p.Seq, err)}
		}
		st.Fold(p.Seq, rec.Envelope, p.Header.Get(attestation.HeaderKey))
	}
	return st, nil
}

// Quarantined returns a copy of the verdicts on the events judged so far
// that are quarantined, by stream sequence.
func (j *Judger) Quarantined() map[uint64]attestation.Verdict { return maps.Clone(j.quar) }

// Judge judges m, the message at Through()+1; a message that is not an
// event (command output) is passed over. Messages must come in stream
// order without a gap: another is an error. On a Judger that took up
// from a statement, an error may be a *distrustError (CatchUp then
// judges from the start).
func (j *Judger) Judge(ctx context.Context, m Msg) error { return j.judgePre(ctx, m, 0) }

// judgePre is Judge with pre, m's signature checked ahead (Precheck).
func (j *Judger) judgePre(ctx context.Context, m Msg, pre attestation.Pre) error {
	if m.Seq > j.through+1 {
		return &MissingError{Seq: j.through + 1, Next: m.Seq}
	}
	if m.Seq != j.through+1 {
		return fmt.Errorf("judge: seq %d after seq %d: messages must come in order, each once", m.Seq, j.through)
	}
	if !isEvent(m.Subject) {
		j.through = m.Seq
		j.judged++
		return nil
	}
	if j.from != nil && j.aggs[m.Subject] == nil {
		st, err := j.stateAt(ctx, m)
		if err != nil {
			return err
		}
		j.aggs[m.Subject] = &st
	}
	j.through = m.Seq
	j.judged++
	am := attestMsg(m.Seq, m.Subject, m.Header, m.Data)
	rec, err := j.l.decode(j.d, m.Seq, m.Subject, m.Data)
	if err != nil {
		// As a reader's undecodable: quarantined once signing began.
		vd := j.v.Judge(am, events.Envelope{}, pre, nil)
		j.v.Advance(m.Seq)
		if vd.Status.Quarantined() {
			vd.Why = "does not decode: " + err.Error()
			if vd.Status == attestation.OutOfRole {
				vd.Why = "signed, but " + vd.Why
			}
			j.quar[m.Seq] = vd
		}
		return nil
	}
	st := j.aggs[m.Subject]
	if st == nil {
		st = new(attestation.AggState)
		j.aggs[m.Subject] = st
	}
	vd := j.v.Judge(am, rec.Envelope, pre, st)
	j.v.Advance(m.Seq)
	if vd.Status.Quarantined() {
		j.quar[m.Seq] = vd
	}
	return nil
}

func isEvent(subject string) bool { return strings.HasPrefix(subject, events.SubjectEvents+".") }

// judgeBatch is how many messages CatchUp checks the signatures of at
// once, on GOMAXPROCS goroutines, before judging them in order.
const judgeBatch = 1024

// CatchUp judges every message of the log after Through() up to and
// including upto, reading them in order; it verifies their signatures
// on up to GOMAXPROCS goroutines and decides in order. A sequence the
// stream does not hold is an error naming it. On a Judger that took up
// from a statement (ResumeJudger) that does not hold for what it reads,
// it drops the statement and judges from the log's start.
func (j *Judger) CatchUp(ctx context.Context, upto uint64) error {
	err := j.catchUp(ctx, upto)
	if d, ok := errors.AsType[*distrustError](err); ok {
		j.restart(d)
		return j.catchUp(ctx, upto)
	}
	return err
}

func (j *Judger) catchUp(ctx context.Context, upto uint64) error {
	if j.through >= upto {
		return nil
	}
	batch := make([]Msg, 0, judgeBatch)
	pres := make([]attestation.Pre, judgeBatch)
	flush := func() error {
		workers := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < len(batch); i += workers {
					pres[i] = 0
					if m := batch[i]; isEvent(m.Subject) {
						pres[i] = j.v.Precheck(attestMsg(m.Seq, m.Subject, m.Header, m.Data))
					}
				}
			})
		}
		wg.Wait()
		for i, m := range batch {
			if err := j.judgePre(ctx, m, pres[i]); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for m, err := range j.l.ReadRaw(ctx, StreamSubjects, j.through+1) {
		if err != nil {
			return fmt.Errorf("judge from seq %d: %w", j.through+1, err)
		}
		if m.Seq > upto {
			break
		}
		batch = append(batch, m)
		if len(batch) == judgeBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		if m.Seq == upto {
			break
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if j.through < upto {
		return &MissingError{Seq: j.through + 1}
	}
	return nil
}

// MissingError reports a sequence missing from the stream where a
// Judger needs every message (a hole: deleted, or lost and the loss
// accepted): Seq is the first one missing, Next the next one the stream
// holds (0: none up to where the Judger was asked to judge).
type MissingError struct {
	Seq, Next uint64
}

// Error names the sequence missing and, when known, the next one held.
func (e *MissingError) Error() string {
	if e.Next == 0 {
		return fmt.Sprintf("judge: seq %d: missing from stream %s", e.Seq, StreamName)
	}
	return fmt.Sprintf("judge: seq %d: missing from stream %s (the next message it holds is seq %d)", e.Seq, StreamName, e.Next)
}

// whole returns the source of a read of l from from to end on j's fast
// path: every message, not only the events, up to j.Through, so that a
// message missing there (deleted, or dropped by the server as damaged)
// is an error naming its sequence, and each message that is not an event
// is checked against j's tree and passed over; the events go on to be
// decoded.
func (j *Judged) whole(l *Log, from, end uint64) func(context.Context, func(Msg, error) bool) {
	return func(ctx context.Context, y func(Msg, error) bool) {
		next := max(from, 1)
		missing := func(seq uint64) error {
			return fmt.Errorf("seq %d: missing from stream %s (deleted or lost), within seq 1..%d that serve's signed checkpoint statement covers"+VerifyHint, seq, StreamName, j.Through)
		}
		stopped := false
		read := l.consume
		if !l.leaderReads {
			read = l.consumeRaw // header blocks left to the decoding goroutines
		}
		read(ctx, StreamSubjects, from, end, func(m Msg, err error) bool {
			if err != nil {
				stopped = true
				return y(m, err)
			}
			if next <= j.Through && m.Seq != next {
				stopped = true
				y(Msg{}, missing(next))
				return false
			}
			next = m.Seq + 1
			if isEvent(m.Subject) {
				if !y(m, nil) {
					stopped = true
					return false
				}
				return true
			}
			if m.Seq <= j.Through {
				if err := j.Check(m); err != nil { // a raw read's block as it is
					stopped = true
					y(Msg{}, err)
					return false
				}
			}
			return true
		})
		if !stopped && ctx.Err() == nil && next <= min(j.Through, end) {
			y(Msg{}, missing(next))
		}
	}
}

// VerifyHint closes the errors of a read that found the stored log
// changed or cut, pointing to the command that says where: `logbook
// verify`, whose own report leaves it out.
const VerifyHint = " (" + attestation.VerifyAdvice + ")"
