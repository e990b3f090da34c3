package replay

import (
	"fmt"
	"time"
)

// Unattested is a stored event the log left out of every fold because
// its signature does not attest it (adapters/attestation): unsigned after
// signing began, badly signed, signed by an unknown or revoked key, or
// out of its key's role. Its JSON field names are stable.
type Unattested struct {
	Seq       uint64    `json:"seq"`
	Subject   string    `json:"subject"`
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	At        time.Time `json:"at"`                  // the time the event claims
	Status    string    `json:"status"`              // e.g. "unsigned", "out-of-role"
	Key       string    `json:"key,omitempty"`       // the signing key's id, if any
	Principal string    `json:"principal,omitempty"` // the key's principal, when registered
	Role      string    `json:"role,omitempty"`
	Why       string    `json:"why"`
}

// Appender names who appended u: the key's principal and id, the key
// alone when unregistered, or "unsigned"; each field through Escape.
func (u Unattested) Appender() string {
	switch {
	case u.Key == "":
		return "unsigned"
	case u.Principal != "":
		return fmt.Sprintf("%s (key %s, role %s)", Escape(u.Principal), Escape(u.Key), Escape(u.Role))
	}
	return "key " + Escape(u.Key)
}

// String returns e.g. "seq 11 review.decided on lb.ev.session.x:
// unattested (unsigned): no Lb-Key and Lb-Sig headers", each field
// through Escape: one line.
func (u Unattested) String() string {
	return fmt.Sprintf("seq %d %s on %s: unattested (%s), appended by %s: %s", u.Seq, Escape(u.Type), Escape(u.Subject), Escape(u.Status), u.Appender(), Escape(u.Why))
}

// WithUnattested returns items with one Item per event of us merged in
// stream order: Type the event's, Detail "UNATTESTED (<status>) appended
// by <who>: <why>", the signer fields and Unattested set.
func WithUnattested(items []Item, us []Unattested) []Item {
	if len(us) == 0 {
		return items
	}
	out := make([]Item, 0, len(items)+len(us))
	i := 0
	for _, u := range us {
		for i < len(items) && items[i].Seq < u.Seq {
			out = append(out, items[i])
			i++
		}
		u := u
		out = append(out, Item{Seq: u.Seq, Type: u.Type, At: u.At,
			Signed: u.Status, KeyID: u.Key, Principal: u.Principal, Role: u.Role,
			Detail:     fmt.Sprintf("UNATTESTED (%s) appended by %s: %s", u.Status, u.Appender(), u.Why),
			Unattested: &u})
	}
	return append(out, items[i:]...)
}

// RederiveReport is what `logbook replay --rederive --json` prints and
// GET /v1/sessions/{id}/rederive answers: the Rederivation, and, as
// `logbook verify --json` says of the whole log, how many of the
// session's events the read left out of the fold as unattested
// (Unattested) and the first of them by sequence (FirstUnattested, nil
// when none).
type RederiveReport struct {
	Rederivation
	Unattested      int         `json:"unattested"`
	FirstUnattested *Unattested `json:"first_unattested,omitempty"`
}

// NewRederiveReport returns the report of r with us, the session's
// unattested events in stream order.
func NewRederiveReport(r Rederivation, us []Unattested) RederiveReport {
	rep := RederiveReport{Rederivation: r, Unattested: len(us)}
	if len(us) > 0 {
		u := us[0]
		rep.FirstUnattested = &u
	}
	return rep
}
