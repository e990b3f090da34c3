package attestation

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/logbook-dev/logbook/events"
)

// Siblings share the verdicts on the signatures they check: an event one
// verified is taken by the other without a second Ed25519 check, but only
// for the same key, signature and bytes at the same sequence; any other
// message there is verified on its own.
func TestSiblingSharesChecks(t *testing.T) {
	admin, err := NewKey("admin", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(admin.Public())
	s := v.Sibling()
	msg := func(seq uint64, data string) Message {
		m := Message{Seq: seq, Subject: "lb.ev.session.s1", Expect: "3", Data: []byte(data)}
		m.KeyID, m.Sig = admin.Sign(m.Subject, m.Expect, m.Data)
		return m
	}
	good := msg(7, `{"a":1}`)
	forged := good
	forged.Data = []byte(`{"a":2}`) // the signature of other bytes
	other := msg(7+checkSlots, `{"a":1}`)

	steps := []struct {
		name  string
		v     *Verifier
		m     Message
		want  Pre
		count uint64 // Ed25519 verifications made so far, by both
	}{
		{"first check", v, good, preGood, 1},
		{"the sibling takes it", s, good, preGood, 1},
		{"the same Verifier takes it", v, good, preGood, 1},
		{"other bytes, same sequence and signature", s, forged, preBad, 2},
		{"the good one again after the forgery took the slot", v, good, preGood, 3},
		{"the same bytes at a sequence of the same slot", s, other, preGood, 4},
		{"the first sequence, its slot now another's", v, good, preGood, 5},
	}
	for _, st := range steps {
		if got := st.v.Precheck(st.m); got != st.want {
			t.Errorf("%s: Precheck = %d, want %d", st.name, got, st.want)
		}
		if got := v.Checked(); got != st.count {
			t.Errorf("%s: %d verifications, want %d", st.name, got, st.count)
		}
	}
	if s.checks.Load() != v.checks.Load() || s.checked != v.checked {
		t.Error("a Sibling shares its Verifier's checks and their count")
	}
	if !s.Admin().Equal(ed25519.PublicKey(admin.Public())) {
		t.Error("a Sibling trusts its Verifier's admin key")
	}
}

// Siblings that meet the same signature at once verify it once: the one
// that comes second waits for the first one's verdict.
func TestSiblingsCheckOnceAtOnce(t *testing.T) {
	admin, err := NewKey("admin", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(admin.Public())
	vs := []*Verifier{v, v.Sibling(), v.Sibling(), v}
	for seq := uint64(1); seq <= 50; seq++ {
		m := Message{Seq: seq, Subject: "lb.ev.session.s1", Data: fmt.Appendf(nil, `{"n":%d}`, seq)}
		m.KeyID, m.Sig = admin.Sign(m.Subject, m.Expect, m.Data)
		var wg sync.WaitGroup
		pres := make([]Pre, len(vs))
		for i, w := range vs {
			wg.Go(func() { pres[i] = w.Precheck(m) })
		}
		wg.Wait()
		for i, p := range pres {
			if p != preGood {
				t.Fatalf("seq %d: Verifier %d: Precheck = %d, want %d", seq, i, p, preGood)
			}
		}
		if got := v.Checked(); got != seq {
			t.Fatalf("after seq %d: %d verifications, want %d", seq, got, seq)
		}
	}
}

// A Verifier without siblings keeps no record of its checks (no slots
// allocated, no hash before each verification) and still counts them;
// its first Sibling gives it one, which the two share from then on.
func TestLoneVerifierKeepsNoRecord(t *testing.T) {
	admin, err := NewKey("admin", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(admin.Public())
	m := Message{Seq: 7, Subject: "lb.ev.session.s1", Data: []byte(`{"a":1}`)}
	m.KeyID, m.Sig = admin.Sign(m.Subject, m.Expect, m.Data)
	for i := range 2 {
		if got := v.Precheck(m); got != preGood {
			t.Fatalf("check %d: Precheck = %d, want %d", i, got, preGood)
		}
	}
	if v.checks.Load() != nil {
		t.Error("a lone Verifier keeps a record of its checks")
	}
	if got := v.Checked(); got != 2 {
		t.Errorf("a lone Verifier that checked one signature twice counts %d verifications, want 2", got)
	}
	s := v.Sibling()
	if v.checks.Load() == nil || s.checks.Load() != v.checks.Load() {
		t.Fatal("Sibling gives its Verifier a record of checks and shares it")
	}
	s.Precheck(m)
	v.Precheck(m)
	if got := v.Checked(); got != 3 {
		t.Errorf("after the Sibling checked it and its Verifier took the verdict: %d verifications, want 3", got)
	}
}

// A Verifier's refusal is Refusal for every role, type and cause, asked
// in any order and again: what it permitted once (kept by role, type,
// and cause kind and event) never answers for another role, type or
// cause, those that share a slot included, nor for a cause whose
// strings change after it was kept (a read's reused bytes).
func TestVerifierRefusalIsRefusal(t *testing.T) {
	admin, err := NewKey("admin", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(admin.Public())
	types := []string{"", "key.registered", "signing.began", "session.started", "session.activity_changed",
		"command.started", "command.stop_requested", "review.decided", "notification.sent", TypeTick, "task.created"}
	causes := []*events.Cause{nil}
	for _, r := range Causes {
		causes = append(causes, &events.Cause{Kind: r.Kind, Event: r.Event}, &events.Cause{Kind: r.Kind, Event: r.Event + "x"})
	}
	causes = append(causes, &events.Cause{Kind: "unknown"}, &events.Cause{})
	type ask struct {
		role Role
		typ  string
		c    *events.Cause
	}
	var asks []ask
	for _, r := range Roles {
		for _, typ := range types {
			for _, c := range causes {
				asks = append(asks, ask{r, typ, c})
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		rng.Shuffle(len(asks), func(i, j int) { asks[i], asks[j] = asks[j], asks[i] })
		for _, a := range asks {
			if got, want := v.refusal(a.role, "p", a.typ, a.c), Refusal(a.role, "p", a.typ, a.c); got != want {
				t.Fatalf("round %d: refusal(%s, %q, %+v) = %q, Refusal %q", round, a.role, a.typ, a.c, got, want)
			}
		}
	}
	// A cause made of bytes that change after it was permitted.
	b := []byte("hook")
	c := &events.Cause{Kind: unsafe.String(&b[0], len(b)), Event: "PreToolUse"}
	if why := v.refusal(RoleWriter, "p", "session.started", c); why != "" {
		t.Fatalf("a hook's session.started by a writer refused: %s", why)
	}
	copy(b, "gate")
	if got, want := v.refusal(RoleWriter, "p", "session.started", c), Refusal(RoleWriter, "p", "session.started", c); got != want || got == "" {
		t.Fatalf("after the cause's bytes changed: refusal %q, Refusal %q", got, want)
	}
}
