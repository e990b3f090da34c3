package natslog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// ErrKeyRefused is wrapped by every KeyRefusedError: an append its
// readers would quarantine as unsigned or signed by an unknown or revoked
// key, refused before it was sent.
var ErrKeyRefused = errors.New("signing key refused")

// KeyRefusedError is an append refused, nothing of it sent, because the
// log's key state, caught up to its end just before the refusal, says
// the key it is signed with is revoked or not registered by the pinned
// admin key (or it is unsigned on a log that has begun signing): every
// reader would quarantine it, so acknowledging it would lose it from
// every projection.
type KeyRefusedError struct {
	// Key is the id of the key the append is signed with ("" unsigned).
	Key string
	// Info is what the key events say of Key; Info.ID is "" when no
	// attested key.registered binds it.
	Info attestation.KeyInfo
	// Admin is the id of the pinned admin key.
	Admin string
	// Signing is the sequence of the log's signing.began.
	Signing uint64
}

// Error names the key, its principal, the revocation's sequence and the fix.
func (e *KeyRefusedError) Error() string {
	const fix = "nothing appended: sign with a registered key (`logbook keys register` a new one with the admin key; a serve makes and registers a new key of its own when it starts again)"
	switch {
	case e.Key == "":
		return fmt.Sprintf("%s: the append is unsigned and the log has begun signing (signing.began at seq %d); %s", ErrKeyRefused, e.Signing, fix)
	case e.Info.ID == "":
		return fmt.Sprintf("%s: key %s is not registered on the log by the admin key %s; %s", ErrKeyRefused, e.Key, e.Admin, fix)
	default:
		return fmt.Sprintf("%s: key %s (%s, role %s) was revoked at seq %d; %s", ErrKeyRefused, e.Key, e.Info.Principal, e.Info.Role, e.Info.Revoked, fix)
	}
}

// Unwrap returns ErrKeyRefused.
func (e *KeyRefusedError) Unwrap() error { return ErrKeyRefused }

// ErrRoleRefused is wrapped by every RoleRefusedError: an append that
// the role it is made in may not make, refused before it was sent.
var ErrRoleRefused = errors.New("append refused by role")

// RoleRefusedError is an append refused, nothing of it sent, because of
// the role it is made in: either the role its signing key is registered
// for may not append one of its events (attestation.Refusal: the type,
// or the cause, is out of the role), which every reader would quarantine
// as out-of-role, so acknowledging it would lose it from every
// projection; or the connection's role (Config.ConnRole) appends nothing
// at all, which the server would refuse.
type RoleRefusedError struct {
	// Key is the id of the signing key ("" for a connection's refusal).
	Key string
	// Principal and Role are the signing key's, as the key events
	// registered it ("" for a connection's refusal).
	Principal string
	Role      attestation.Role
	// Type is the type of the first event of the append its role may not
	// append, Event its index in the append (0-based; 0 from CheckRole
	// and CheckAppend, which judge one event).
	Type  string
	Event int
	// Why is attestation.Refusal's reason.
	Why string
	// Conn is the connection's role when it is the connection that
	// appends nothing (RoleReader, RoleFollower); "" otherwise.
	Conn Role
}

// Error names the role, what it may not append, and the fix.
func (e *RoleRefusedError) Error() string {
	if e.Conn != "" {
		return fmt.Sprintf("%s: the connection's role %s reads the log and may not append anything; nothing appended: append with writer credentials (`logbook creds issue --role writer`), or none on the data dir's own server", ErrRoleRefused, e.Conn)
	}
	return fmt.Sprintf("%s: %s (signed by key %s): every reader would quarantine it as out-of-role; nothing appended: append with credentials whose role may (a writer's: `logbook creds issue --role writer`), or none on the data dir's own server", ErrRoleRefused, e.Why, e.Key)
}

// Unwrap returns ErrRoleRefused.
func (e *RoleRefusedError) Unwrap() error { return ErrRoleRefused }

// CheckRole returns a *RoleRefusedError when the Log's readers would
// quarantine as out-of-role an event of type typ with cause c (nil: none)
// signed by the key id (attestation.Refusal, by the role the key events
// the Log has observed registered the key for). It returns nil on a Log
// without a Verifier, before signing began, for an unsigned append and
// for a key not registered (CheckSigner refuses those). Call CatchUpKeys
// first to judge by the key events other processes appended.
func (l *Log) CheckRole(id, typ string, c *events.Cause) error {
	return l.checkRole(id, typ, c, "", "")
}

// checkRole is CheckRole for an event by actor (attestation.ActorRefusal)
// that also claims finding, a finding of serve's reconciler
// (attestation.ServeFinding; "" for none), which only serve's key may
// append (attestation.FindingRefusal).
func (l *Log) checkRole(id, typ string, c *events.Cause, actor, finding string) error {
	v := l.cfg.Verifier
	if v == nil || id == "" || v.SigningFrom() == 0 {
		return nil
	}
	role, principal := attestation.RoleAdmin, "admin"
	if id != v.AdminID() {
		k, ok := v.Key(id)
		if !ok {
			return nil
		}
		role, principal = k.Role, k.Principal
	}
	why := attestation.Refusal(role, principal, typ, c)
	if why == "" {
		why = attestation.ActorRefusal(role, principal, actor)
	}
	if why == "" && role != attestation.RoleAdmin {
		why = attestation.FindingRefusal(role, principal, finding)
	}
	if why != "" {
		return &RoleRefusedError{Key: id, Principal: principal, Role: role, Type: typ, Why: why}
	}
	return nil
}

// CheckAppend returns the error an append of an event of type typ with
// cause c (nil: none), signed by the Log's signer, would be refused with
// now, before anything of it is sent: the connection's
// *RoleRefusedError (Config.ConnRole), or, judged by the key events
// caught up to the log's end (CatchUpKeys), CheckSigner's
// *KeyRefusedError or CheckRole's *RoleRefusedError; nil when it would be
// sent. How a command that is about to append many times (an import)
// refuses once, before its first. A signer that is not an
// attestation.Key is not judged; errors reading the key events are
// returned as they are.
func (l *Log) CheckAppend(ctx context.Context, typ string, c *events.Cause) error {
	if err := l.connRefusal(); err != nil {
		return err
	}
	if l.cfg.Verifier == nil {
		return nil
	}
	id := ""
	if s := l.currentSigner(); s != nil {
		k, ok := s.(*attestation.Key)
		if !ok {
			return nil
		}
		id = k.ID
	}
	if err := l.CatchUpKeys(ctx); err != nil {
		return err
	}
	if err := l.CheckSigner(id); err != nil {
		return err
	}
	return l.CheckRole(id, typ, c)
}

// checkRoles is CheckRole for each event of r: the first its key's role
// may not append refuses r.
func (l *Log) checkRoles(r *request) error {
	for i, m := range r.msgs {
		var c *events.Cause
		var actor, finding string
		if i < len(r.causes) {
			if r.causes[i].has {
				c = &events.Cause{Kind: r.causes[i].kind, Event: r.causes[i].event}
			}
			actor, finding = r.causes[i].actor, r.causes[i].finding
		}
		var typ string
		if v := m.Header[HeaderType]; len(v) > 0 {
			typ = v[0]
		}
		if err := l.checkRole(r.keyID, typ, c, actor, finding); err != nil {
			err.(*RoleRefusedError).Event = i
			return err
		}
	}
	return nil
}

// connRefusal returns a *RoleRefusedError when the Log's connection
// appends nothing (Config.ConnRole is RoleReader or RoleFollower), nil
// otherwise.
func (l *Log) connRefusal() error {
	if r := l.cfg.ConnRole; r == RoleReader || r == RoleFollower {
		return &RoleRefusedError{Conn: r}
	}
	return nil
}

// CatchUpKeys makes the Log's Verifier observe every key event stored so
// far: one get of the last key event, and, when it is past the
// Verifier's horizon, one get per key event since. It does nothing on a
// Log without a Verifier.
func (l *Log) CatchUpKeys(ctx context.Context) error {
	v := l.cfg.Verifier
	if v == nil {
		return nil
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	var m *jetstream.RawStreamMsg
	var err error
	if l.leaderReads {
		m, err = l.leaderGet(ctx, msgGetRequest{LastBySubj: keySubjects})
	} else {
		m, err = l.stream.GetLastMsgForSubject(ctx, keySubjects)
		m = served(m)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoMsg) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the last key event: %w", err)
	}
	return l.catchUpKeys(ctx, m.Sequence)
}

// CheckSigner returns a *KeyRefusedError when an append signed by the
// key id (its Lb-Key; "" unsigned) would be quarantined by the Log's
// readers as of the key state it has observed: the key is revoked, or
// not registered by the pinned admin key, or the append is unsigned,
// after signing began. Call CatchUpKeys first to judge by the key events
// other processes appended. It returns nil on a Log without a Verifier
// and before signing began (nothing is judged then).
func (l *Log) CheckSigner(id string) error {
	v := l.cfg.Verifier
	if v == nil {
		return nil
	}
	signing := v.SigningFrom()
	if signing == 0 || id != "" && id == v.AdminID() {
		return nil
	}
	e := &KeyRefusedError{Key: id, Admin: v.AdminID(), Signing: signing}
	if id == "" {
		return e
	}
	k, ok := v.Key(id)
	if ok && k.Revoked == 0 {
		return nil
	}
	if ok {
		e.Info = k
	}
	return e
}

// refuseKeys answers, before anything of batch is sent, each request
// that CheckSigner refuses, or one of whose events CheckRole refuses, and
// returns the others. It judges by the key
// state the Log's watch of the key events (keyWatch) has observed; until
// the watch is live (the first checks of a Log, and the first after the
// watch broke) it catches the key events up to the log's end first. A
// refusal is never made on the watch's word alone: before refusing it
// catches up, and judges again, so that a key registered by another
// process a moment ago is not refused. When the key events cannot be
// read it judges by the key state observed so far.
func (l *Log) refuseKeys(batch []*request) []*request {
	if l.cfg.Verifier == nil || len(batch) == 0 {
		return batch
	}
	caught := false
	if !l.keys.live.Load() {
		watching := l.startKeyWatch()
		caught = l.CatchUpKeys(context.Background()) == nil
		if watching && caught {
			l.keys.live.Store(true)
		}
	}
	out := batch[:0:0]
	for _, r := range batch {
		err := l.CheckSigner(r.keyID)
		if err != nil && !caught {
			caught = l.CatchUpKeys(context.Background()) == nil
			err = l.CheckSigner(r.keyID)
		}
		if err == nil {
			// A key's role never changes once registered: the key state
			// CheckSigner accepted judges it.
			err = l.checkRoles(r)
		}
		if err != nil {
			r.answer(outcome{err: fmt.Errorf("append %s: %w", r.agg, err)})
			continue
		}
		out = append(out, r)
	}
	return out
}
