package attestation

import (
	"cmp"
	"crypto/ed25519"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// Status is the verdict on one stored event.
type Status string

// Statuses. Attested and BeforeSigning are folded; the others are
// quarantined: never folded, always shown.
const (
	Attested      Status = "attested"       // a valid signature by a live key whose role may append the type
	BeforeSigning Status = "before-signing" // stored before signing.began; not checked
	Unsigned      Status = "unsigned"       // no Lb-Key or Lb-Sig after signing.began
	BadSignature  Status = "bad-signature"  // the signature does not verify over Signed
	UnknownKey    Status = "unknown-or-revoked-key"
	OutOfRole     Status = "out-of-role" // the key's role may not append the type or cause (Refusal) or, a worker's, the event (WorkerPermits)
	// Replayed is a copy of an attested event stored again: its event
	// id is its aggregate's last attested one, or its ver does not
	// follow the aggregate's last attested ver.
	Replayed Status = "replayed"
	// FollowsMissing is an event whose ver is past the aggregate's last
	// attested ver + 1: the events between are not in the log as read
	// (lost from the stream, a damaged block or a deleted message, or
	// never appended). It cannot be folded onto a state that lacks them.
	FollowsMissing Status = "follows-missing"
	// Undecodable is a message stored after a signing.began that does not
	// decode, as a reader that pins no admin key (judges no signature)
	// finds it: what does not decode has no type, which no role may
	// append, so every pinned reader quarantines it as well.
	Undecodable Status = "undecodable"
)

// Quarantined reports whether s keeps an event out of every fold.
func (s Status) Quarantined() bool { return s != Attested && s != BeforeSigning }

// Message is what a reader has of one stored event to judge it.
type Message struct {
	Seq     uint64 // stream sequence
	Subject string
	Expect  string // the Nats-Expected-Last-Subject-Sequence header, "" when absent
	KeyID   string // the Lb-Key header
	Sig     string // the Lb-Sig header: a single signature ("" in the batch form)
	// The batch form's headers (HeaderBatch, HeaderRoot, HeaderBatchSig,
	// HeaderProof), "" when absent.
	Batch, Root, BatchSig, Proof string
	Data                         []byte // the body as stored; not retained
}

// batchForm reports whether m carries any header of the batch form.
func (m Message) batchForm() bool {
	return m.Batch != "" || m.Root != "" || m.BatchSig != "" || m.Proof != ""
}

// unsigned reports whether m carries no key id or no signature of
// either form.
func (m Message) unsigned() bool { return m.KeyID == "" || m.Sig == "" && !m.batchForm() }

// Pre is a signature checked ahead of Judge, possibly on another
// goroutine: Verifier.Precheck's result.
type Pre uint8

const (
	preNone    Pre = iota // not checked: Judge checks it
	preGood               // verified with the key's public key
	preBad                // did not verify
	preMissing            // no key id or signature
)

// Verdict is a Verifier's judgement of one event.
type Verdict struct {
	Status    Status `json:"status"`
	Key       string `json:"key,omitempty"`       // the Lb-Key header
	Principal string `json:"principal,omitempty"` // the key's principal, when registered
	Role      Role   `json:"role,omitempty"`      // the key's role, when registered
	Why       string `json:"why,omitempty"`       // for a quarantined event, in words
}

// keyState is one key as the key events registered it.
type keyState struct {
	// id is the key's id, the one copy every verdict on its events
	// names (a verdict's Key is read long after the message it came
	// from: a timeline of 20,000 events read each id from its own
	// message's memory, cold by then, in a tenth of its rendering).
	id        string
	pub       ed25519.PublicKey
	principal string
	role      Role
	reg, rev  uint64 // sequences of key.registered and key.revoked (0: none)
}

// keyTable is a Verifier's keys, as of the key events it observed: each
// key's state by its id, and the sequence of signing.began (0: not
// yet). Neither the table nor a keyState it holds changes once stored.
type keyTable struct {
	keys    map[string]*keyState
	signing uint64
	// last is the key of keys Judge found last: a log's events come
	// mostly from one key at a time, and its id compared costs a tenth
	// of the map's lookup.
	last atomic.Pointer[keyState]
}

// key returns the state of the key of id id, nil when t holds none.
func (t *keyTable) key(id string) *keyState {
	if k := t.last.Load(); k != nil && k.id == id {
		return k
	}
	k := t.keys[id]
	if k != nil {
		t.last.Store(k)
	}
	return k
}

// Verifier judges stored events against the key events of the same log
// and the pinned admin key. It is safe for concurrent use. Its key state
// is a function of the key events' sequences, not of the order they are
// observed in, so several readers (a follow, aggregate loads) may feed
// it: every key event at or below Horizon has been observed.
type Verifier struct {
	admin   ed25519.PublicKey
	adminID string

	// mu serializes observe, the only writer of keys.
	mu sync.Mutex
	// keys is what the key events observed say, replaced whole by
	// observe, never changed in place: Judge reads it with no lock (a
	// read lock per event cost a read as much as the judging itself).
	keys atomic.Pointer[keyTable]
	pubs sync.Map // key id → ed25519.PublicKey, for Precheck
	// horizon is the sequence up to which every key event has been
	// observed: moved on, never back, after each event a read judges,
	// with no lock (a read's judging took mu twice per event).
	horizon atomic.Uint64

	// checks is the record of the signatures checked, shared with its
	// siblings; nil until the first Sibling: a lone Verifier keeps none.
	checks atomic.Pointer[checks]
	// roots is the record of the batch statements verified, shared with
	// its siblings (made by NewVerifier: a lone Verifier keeps one too,
	// as each batch's statement is met once per message of it).
	roots *roots
	// checked counts the Ed25519 verifications made by it and its
	// siblings (shared with them).
	checked *atomic.Uint64
	// permits holds what Refusal permitted of the events judged so far
	// (permit), two to a pair of slots (permitSlot): an event whose
	// role, type and cause one holds is not looked up in the tables
	// again.
	permits [permitSlots]atomic.Pointer[permit]
}

// NewVerifier returns a Verifier that trusts admin, the pinned admin
// public key (32 bytes), for key events. It keeps no record of the
// signatures it checks until it has a Sibling.
func NewVerifier(admin ed25519.PublicKey) *Verifier {
	v := &Verifier{admin: admin, adminID: KeyID(admin), checked: new(atomic.Uint64), roots: new(roots)}
	v.keys.Store(&keyTable{keys: map[string]*keyState{}})
	v.pubs.Store(v.adminID, admin)
	return v
}

// Checked returns how many Ed25519 verifications v and its siblings
// (Sibling) have made so far; a verdict one took from another's check is
// not counted. Safe for concurrent use.
func (v *Verifier) Checked() uint64 { return v.checked.Load() }

// Sibling returns a new Verifier that trusts the same admin key as v and
// has observed no key event yet (its key state is its own, fed by its
// own Judge calls), but shares v's record of the signatures checked
// (made by the first Sibling call, about 0.8 MiB): an event one of them
// verified is not verified again by the other when it meets the same
// key, signature and bytes at the same sequence. How several readers of
// one process (serve's projector, its checkpoints' judgement, the board)
// verify each event once between them. Call it before v is in use: what
// v checked before has no record, and is verified again by a sibling.
// Safe for concurrent use.
func (v *Verifier) Sibling() *Verifier {
	c := v.checks.Load()
	if c == nil {
		v.checks.CompareAndSwap(nil, new(checks))
		c = v.checks.Load()
	}
	s := NewVerifier(v.admin)
	s.checks.Store(c)
	s.checked = v.checked
	s.roots = v.roots
	return s
}

// AdminID returns the pinned admin key's id.
func (v *Verifier) AdminID() string { return v.adminID }

// Horizon returns the sequence up to which every key event has been
// observed (Judge or Advance).
func (v *Verifier) Horizon() uint64 { return v.horizon.Load() }

// Advance records that every key event up to seq has been observed.
func (v *Verifier) Advance(seq uint64) {
	for {
		h := v.horizon.Load()
		if seq <= h || v.horizon.CompareAndSwap(h, seq) {
			return
		}
	}
}

// SigningFrom returns the sequence of the log's signing.began (0: none
// observed).
func (v *Verifier) SigningFrom() uint64 { return v.keys.Load().signing }

// Precheck verifies m's signature if its key's public key is known yet;
// it holds no lock for the verification, so decoding goroutines call it
// in parallel and Judge, in order, only decides.
func (v *Verifier) Precheck(m Message) Pre {
	if m.unsigned() {
		return preMissing
	}
	pub, ok := v.pubs.Load(m.KeyID)
	if !ok {
		return preNone
	}
	if v.verify(pub.(ed25519.PublicKey), m) {
		return preGood
	}
	return preBad
}

// verify reports whether m is signed by pub, in the single form (Lb-Sig,
// checked once per sequence among siblings) or the batch form (its proof
// to its root, and the root's statement checked once per key, root and
// signature); a message that carries both forms is not.
func (v *Verifier) verify(pub ed25519.PublicKey, m Message) bool {
	switch {
	case m.Sig != "" && m.batchForm():
		return false
	case m.batchForm():
		return verifyBatch(v.roots, pub, m, v.checked)
	}
	return v.checks.Load().verify(pub, m, v.checked)
}

// AggState is what the judged events of one aggregate, up to a stream
// sequence, say of its order: the last folded (attested, or stored
// before signing) event. It is a few words whatever the aggregate's
// length. The zero AggState is an aggregate with no events.
//
// It also keeps what a worker's role needs of the aggregate
// (WorkerPermits): of a command, the session its request names and the
// key that started it; of a session, the cause of its last folded event
// when that opened or closed an entry.
type AggState struct {
	Through uint64    // every event of the aggregate up to this stream sequence was judged
	Ver     uint64    // ver of the last folded event (0: none)
	Seq     uint64    // its stream sequence
	ID      ulid.ULID // its event id
	// Session is, for a command, the session its folded
	// command.requested names ("" before it).
	Session string
	// Claim is, for a command, the id of the key that signed its folded
	// command.started, ClaimUnsigned when that carries none, "" before
	// it.
	Claim string
	// Entry is the cause of the last folded event when it is a
	// session.entry_opened or session.entry_closed, the zero Cause
	// otherwise.
	Entry events.Cause
}

// Fold moves st past rec, folded at stream sequence seq, signed by the
// key of id key ("" for none). Judge folds each event it does not
// quarantine; a reader that takes up an aggregate's judgement from
// elsewhere (a checkpoint's statement) folds each event it says folded.
func (st *AggState) Fold(seq uint64, rec events.Envelope, key string) {
	st.Ver, st.Seq, st.ID = rec.Ver, seq, rec.ID
	st.Through = max(st.Through, seq)
	st.Entry = events.Cause{}
	switch d := rec.Data.(type) {
	case events.CommandRequested:
		st.Session = strings.Clone(d.Session)
	case events.CommandStarted:
		st.Claim = ClaimUnsigned
		if key != "" {
			st.Claim = strings.Clone(key)
		}
	case events.SessionEntryOpened, events.SessionEntryClosed:
		if c := rec.Cause; c != nil {
			st.Entry = events.Cause{Kind: strings.Clone(c.Kind), Event: strings.Clone(c.Event), Detail: strings.Clone(c.Detail), Ref: strings.Clone(c.Ref)}
		}
	}
}

// Judge returns the verdict on m, the stored event rec (its Type and
// Data decoded), given pre from Precheck (or the zero Pre), and observes
// rec when it is an attested key event. Every key event below m.Seq must
// have been observed first (Horizon ≥ m.Seq-1, or the caller feeds every
// event in stream order); a caller that reads every event in order calls
// Advance after each.
//
// An event a worker's key signed is judged by WorkerPermits, given st
// (the zero AggState when st is nil) too; every role's by Table, Causes
// and Actors. An event that claims a finding of serve's reconciler
// (ServeFinding) is OutOfRole unless serve's key signed it.
//
// With st, the state of rec's aggregate as of every event of it before
// m.Seq, Judge also checks rec's place in its aggregate, and moves st
// past m: an event that is attested by its signature but repeats the
// last folded event's id, or whose ver is at most the last folded ver,
// is Replayed (a signed event published again as stored: its signature
// still verifies); one whose ver is past the last folded ver + 1 is
// FollowsMissing (a copy always follows its original, so it has a ver
// already folded). Only folded events move the expected ver, so a real
// decision that reuses a quarantined forgery's ver is attested. The
// aggregate's first folded event may have any ver (after a forgery on an
// empty subject a real first event has ver 2, as ver 1 needs an empty
// subject): a copy always follows its original. Events stored before
// signing are not checked (nothing tells a copy then) but move st. With st nil the order is not checked (how key events are
// observed out of a read).
func (v *Verifier) Judge(m Message, rec events.Envelope, pre Pre, st *AggState) Verdict {
	vd := v.judge(m, rec.Type, rec.Cause, pre)
	if vd.Status == Attested {
		if why := ActorRefusal(vd.Role, vd.Principal, rec.Actor); why != "" {
			vd.Status, vd.Why = OutOfRole, why
		}
	}
	if vd.Status == Attested && vd.Role != RoleServe && vd.Role != RoleAdmin {
		if why := FindingRefusal(vd.Role, vd.Principal, ServeFinding(rec)); why != "" {
			vd.Status, vd.Why = OutOfRole, why
		}
	}
	if vd.Status == Attested && vd.Role == RoleWorker {
		var prev AggState
		if st != nil {
			prev = *st
		}
		if why := WorkerPermits(rec, vd.Key, prev); why != "" {
			vd.Status, vd.Why = OutOfRole, fmt.Sprintf("role %s (%s): %s", vd.Role, vd.Principal, why)
		}
	}
	if st != nil {
		if vd.Status == Attested {
			switch {
			case st.Seq != 0 && rec.ID == st.ID:
				vd.Status, vd.Why = Replayed, fmt.Sprintf("a copy of event %s, ver %d, stored at seq %d", rec.ID, rec.Ver, st.Seq)
			case st.Seq != 0 && rec.Ver > st.Ver+1:
				vd.Status, vd.Why = FollowsMissing, fmt.Sprintf("ver %d comes after ver %d, the aggregate's last attested event (seq %d), but ver %d, which must come between, is not in the log as read (lost from the stream, a damaged block or a deleted message, or never appended; "+VerifyAdvice+")", rec.Ver, st.Ver, st.Seq, st.Ver+1)
			case st.Seq != 0 && rec.Ver != st.Ver+1:
				vd.Status, vd.Why = Replayed, fmt.Sprintf("ver %d does not follow ver %d, the aggregate's last attested event (seq %d): a copy of an earlier event", rec.Ver, st.Ver, st.Seq)
			}
		}
		if !vd.Status.Quarantined() {
			st.Fold(m.Seq, rec, m.KeyID)
		}
		st.Through = max(st.Through, m.Seq)
	}
	if vd.Status == Attested && rec.Agg.Kind == events.KindKey {
		v.observe(m.Seq, rec)
	}
	return vd
}

func (v *Verifier) judge(m Message, typ string, cause *events.Cause, pre Pre) Verdict {
	t := v.keys.Load()
	signing := t.signing
	k := t.key(m.KeyID)
	var ks keyState
	if k != nil {
		ks = *k
	}
	vd := Verdict{Key: m.KeyID}
	isAdmin := m.KeyID != "" && m.KeyID == v.adminID
	if k != nil {
		vd.Key, vd.Principal, vd.Role = ks.id, ks.principal, ks.role
	} else if isAdmin {
		vd.Key, vd.Principal, vd.Role = v.adminID, "admin", RoleAdmin
	}
	// signing.began opens signing with its own sequence: it must be
	// attested itself, which is checked below.
	if (signing == 0 || m.Seq < signing) && typ != (events.SigningBegan{}).EventType() {
		vd.Status = BeforeSigning
		return vd
	}
	if pre == preMissing || m.unsigned() {
		vd.Status, vd.Why = Unsigned, "no Lb-Key with Lb-Sig or Lb-Batch-Sig headers"
		return vd
	}
	var pub ed25519.PublicKey
	switch {
	case isAdmin:
		pub = v.admin
	case k != nil && ks.reg < m.Seq && (ks.rev == 0 || m.Seq <= ks.rev):
		pub = ks.pub
	case k != nil && ks.reg >= m.Seq:
		vd.Status, vd.Why = UnknownKey, fmt.Sprintf("key %s (%s) was registered at seq %d, after this event", m.KeyID, ks.principal, ks.reg)
		return vd
	case k != nil:
		vd.Status, vd.Why = UnknownKey, fmt.Sprintf("key %s (%s) was revoked at seq %d", m.KeyID, ks.principal, ks.rev)
		return vd
	default:
		vd.Status, vd.Why = UnknownKey, fmt.Sprintf("key %s is not registered by the admin key %s", m.KeyID, v.adminID)
		return vd
	}
	ok := pre == preGood
	if pre == preNone {
		ok = v.verify(pub, m)
	}
	if !ok {
		// Who the key belongs to is a claim the signature does not
		// back: the verdict names no principal.
		vd.Status, vd.Why = BadSignature, fmt.Sprintf("the signature of key %s (%s's) does not verify", m.KeyID, vd.Principal)
		switch {
		case m.Sig != "" && m.batchForm():
			vd.Why = fmt.Sprintf("the message of key %s (%s's) carries both Lb-Sig and batch signature headers", m.KeyID, vd.Principal)
		case m.batchForm():
			if _, err := parseBatch(m); err != nil {
				vd.Why = fmt.Sprintf("the batch signature of key %s (%s's): %v", m.KeyID, vd.Principal, err)
			} else {
				vd.Why = fmt.Sprintf("the batch signature of key %s (%s's) does not verify: the message is not the leaf its proof puts under its root, or the root's signature is not the key's", m.KeyID, vd.Principal)
			}
		}
		vd.Principal, vd.Role = "", ""
		return vd
	}
	if why := v.refusal(vd.Role, vd.Principal, typ, cause); why != "" {
		vd.Status, vd.Why = OutOfRole, why
		return vd
	}
	vd.Status = Attested
	return vd
}

// refusal is Refusal(role, principal, typ, c), taking a permit v keeps
// (permitted) and keeping each it answers "" for.
func (v *Verifier) refusal(role Role, principal, typ string, c *events.Cause) string {
	if v.permitted(role, typ, c) {
		return ""
	}
	why := Refusal(role, principal, typ, c)
	if why == "" {
		v.permit(role, typ, c)
	}
	return why
}

// permit is a role, an event type and a cause (its kind and event, or
// none) that Refusal permits: it does not read the principal to permit,
// and its tables (Table, Causes) do not change, so what it permitted
// once it permits again.
type permit struct {
	role        Role
	typ         string
	caused      bool
	kind, event string
}

// permitSlots is how many permits a Verifier keeps (permitSlot), in
// pairs: several times the roles, types and causes a log's events carry.
const permitSlots = 1024

// permitted reports whether a permit v keeps says Refusal permits role
// to append an event of type typ with cause c; false when it keeps
// none (Refusal then decides).
func (v *Verifier) permitted(role Role, typ string, c *events.Cause) bool {
	s := permitSlot(role, typ, c)
	return v.permits[s].Load().is(role, typ, c) || v.permits[s^1].Load().is(role, typ, c)
}

// is reports whether p, nil for none, is the permit of role, typ and c.
func (p *permit) is(role Role, typ string, c *events.Cause) bool {
	if p == nil || p.role != role || p.typ != typ || p.caused != (c != nil) {
		return false
	}
	return c == nil || p.kind == c.Kind && p.event == c.Event
}

// permit keeps that Refusal permits role to append an event of type typ
// with cause c (its strings copied: they may be a message's bytes, which
// a read reuses), in the pair of slots permitSlot names: in the first
// empty one, or else in place of the one in the first slot.
func (v *Verifier) permit(role Role, typ string, c *events.Cause) {
	p := &permit{role: role, typ: strings.Clone(typ), caused: c != nil}
	if c != nil {
		p.kind, p.event = strings.Clone(c.Kind), strings.Clone(c.Event)
	}
	s := permitSlot(role, typ, c)
	if v.permits[s].Load() != nil && v.permits[s^1].CompareAndSwap(nil, p) {
		return
	}
	v.permits[s].Store(p)
}

// permitSeed seeds permitSlot's hash. It places permits in slots only:
// what a Verifier answers does not depend on it.
var permitSeed = maphash.MakeSeed()

// permitSlot returns the first of the two slots of v.permits (s, s^1)
// that may keep the permit of role, typ and c: a hash of all their
// bytes. A log's events carry a few hundred roles, types and causes
// (205 in a generated history of 20,000 events): a hash of their
// lengths and a few bytes into 64 slots made two in five events miss
// and go to Refusal again.
func permitSlot(role Role, typ string, c *events.Cause) int {
	h := maphash.String(permitSeed, typ) ^ maphash.String(permitSeed, string(role))*31
	if c != nil {
		h = h*31 ^ maphash.String(permitSeed, c.Kind)
		h = h*31 ^ maphash.String(permitSeed, c.Event)
	}
	return int(h%permitSlots) &^ 1
}

// observe folds an attested key event at seq.
// It stores a new key table when the event changes what the table says
// (key events are few: a copy of the table each is cheap).
func (v *Verifier) observe(seq uint64, rec events.Envelope) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.keys.Load()
	next := func() *keyTable {
		return &keyTable{keys: maps.Clone(t.keys), signing: t.signing}
	}
	switch d := rec.Data.(type) {
	case events.KeyRegistered:
		pub, err := ParsePublic(d.Public)
		role, rerr := ParseRole(d.Role)
		if err != nil || rerr != nil || KeyID(pub) != rec.Agg.ID || t.keys[rec.Agg.ID] != nil || role == RoleAdmin {
			return // a registration that binds nothing: not a key
		}
		n := next()
		n.keys[rec.Agg.ID] = &keyState{id: strings.Clone(rec.Agg.ID), pub: pub, principal: d.Principal, role: role, reg: seq}
		v.pubs.Store(rec.Agg.ID, pub)
		v.keys.Store(n)
	case events.KeyRevoked:
		if k := t.keys[rec.Agg.ID]; k != nil && (k.rev == 0 || seq < k.rev) {
			n, revoked := next(), *k
			revoked.rev = seq
			n.keys[rec.Agg.ID] = &revoked
			v.keys.Store(n)
		}
	case events.SigningBegan:
		if t.signing == 0 || seq < t.signing {
			n := next()
			n.signing = seq
			v.keys.Store(n)
		}
	}
}

// KeyInfo is what the key events a Verifier observed say of one key.
type KeyInfo struct {
	ID         string
	Principal  string
	Role       Role
	Registered uint64 // sequence of its key.registered
	Revoked    uint64 // sequence of its key.revoked; 0: live
}

// Key returns what the key events observed so far say of the key id, and
// false when no attested key.registered binds it (yet). The pinned admin
// key is not among them. Observing is Judge's: the answer is as of
// Horizon.
func (v *Verifier) Key(id string) (KeyInfo, bool) {
	k := v.keys.Load().keys[id]
	if k == nil {
		return KeyInfo{}, false
	}
	return KeyInfo{ID: id, Principal: k.principal, Role: k.role, Registered: k.reg, Revoked: k.rev}, true
}

// Keys returns every key the key events observed so far registered, in
// the order of their registration (as of Horizon).
func (v *Verifier) Keys() []KeyInfo {
	t := v.keys.Load()
	out := make([]KeyInfo, 0, len(t.keys))
	for id, k := range t.keys {
		out = append(out, KeyInfo{ID: id, Principal: k.principal, Role: k.role, Registered: k.reg, Revoked: k.rev})
	}
	slices.SortFunc(out, func(a, b KeyInfo) int { return cmp.Compare(a.Registered, b.Registered) })
	return out
}

// PreVouched is the Pre of an event whose signature a trusted
// checkpoint statement (adapters/merkle.Judgment) says serve verified,
// and whose stored bytes the reader has proven to be the leaf the
// statement's tree holds: Judge takes the signature as verified and
// checks the rest (the key's registration and revocation, its role, the
// aggregate's order) itself.
const PreVouched = preGood

// Admin returns the pinned admin public key the Verifier trusts (32
// bytes, shared: do not modify).
func (v *Verifier) Admin() ed25519.PublicKey { return v.admin }

// VerifyAdvice is the advice a reason or an error gives when the stored
// log may have been changed or cut: the command that says where. verify
// itself leaves it out of what it says.
const VerifyAdvice = "run `logbook verify`"
