package natslog

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"

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
	Check func(m Msg) error
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
	if j == nil || m.Seq > j.Through {
		return 0, false, nil
	}
	if err := j.Check(m); err != nil {
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
	l.quar.add(Quarantined{Seq: m.Seq, Subject: m.Subject, Type: rec.Type, Agg: rec.Agg, ID: id, Verdict: vd, At: rec.At})
	return signerOf(vd)
}

// Judger judges every event of a log in stream order from its start,
// with a Verifier of its own, as a reader from the start judges them:
// what serve states in its checkpoints (adapters/merkle.Judgment). It
// keeps a few words per aggregate and each quarantined verdict. It is
// not safe for concurrent use.
type Judger struct {
	l       *Log
	v       *attestation.Verifier
	d       *events.Decoder
	aggs    map[string]*attestation.AggState
	through uint64
	quar    map[uint64]attestation.Verdict
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
	return &Judger{l: l, v: v, d: l.reg.NewDecoder(),
		aggs: map[string]*attestation.AggState{}, quar: map[uint64]attestation.Verdict{}}
}

// Through returns the last stream sequence judged (0: none).
func (j *Judger) Through() uint64 { return j.through }

// Quarantined returns a copy of the verdicts on the events judged so far
// that are quarantined, by stream sequence.
func (j *Judger) Quarantined() map[uint64]attestation.Verdict { return maps.Clone(j.quar) }

// Judge judges m, the message at Through()+1; a message that is not an
// event (command output) is passed over. Messages must come in stream
// order without a gap: another is an error.
func (j *Judger) Judge(m Msg) error { return j.judgePre(m, 0) }

// judgePre is Judge with pre, m's signature checked ahead (Precheck).
func (j *Judger) judgePre(m Msg, pre attestation.Pre) error {
	if m.Seq != j.through+1 {
		return fmt.Errorf("judge: seq %d after seq %d: messages must come in order, each once", m.Seq, j.through)
	}
	j.through = m.Seq
	if !isEvent(m.Subject) {
		return nil
	}
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
// stream does not hold is an error naming it.
func (j *Judger) CatchUp(ctx context.Context, upto uint64) error {
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
			if err := j.judgePre(m, pres[i]); err != nil {
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
		return fmt.Errorf("judge: seq %d: missing from stream %s", j.through+1, StreamName)
	}
	return nil
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
			return fmt.Errorf("seq %d: missing from stream %s (deleted or lost), within seq 1..%d that serve's signed checkpoint statement covers (run `logbook verify`)", seq, StreamName, j.Through)
		}
		stopped := false
		l.consume(ctx, StreamSubjects, from, end, func(m Msg, err error) bool {
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
				if err := j.Check(m); err != nil {
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
