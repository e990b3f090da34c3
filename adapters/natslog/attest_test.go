package natslog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// signedLog opens a Log on s that judges reads against admin's pin.
func signedLog(t *testing.T, s *Server, admin *attestation.Key) *Log {
	t.Helper()
	return openLogWith(t, s, Config{Verifier: attestation.NewVerifier(admin.Public())})
}

func mustKey(t *testing.T, principal string, role attestation.Role) *attestation.Key {
	t.Helper()
	k, err := attestation.NewKey(principal, role)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// forge publishes e on its aggregate's subject straight to the stream, as
// a holder of NATS credentials can, with the expected-sequence check
// expect, signed by k (nil: unsigned); edit, if set, changes the body
// after signing.
func forge(t *testing.T, nc *nats.Conn, e events.Envelope, expect uint64, k *attestation.Key, edit func([]byte) []byte) uint64 {
	t.Helper()
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: e.Agg.Subject(), Header: nats.Header{}, Data: data}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	m.Header.Set(HeaderType, e.Type)
	if k != nil {
		sign(k, m)
	}
	if edit != nil {
		m.Data = edit(m.Data)
	}
	return publishMsg(t, nc, m, "forge "+e.Type)
}

func verdict(reg *events.Registry, agg events.Aggregate, ver uint64) events.Envelope {
	return envelope(reg, agg, ver, events.ReviewDecided{ReviewID: "r1", Verdict: events.VerdictAllow, Outcome: events.ReviewApproved,
		DecidedBy: &events.DecidedBy{Kind: "person", Name: "alice@example.com"}, Reason: "fine"})
}

// TestAttest_QuarantineForgeries appends a log that is unsigned at
// first, then signed, and forges verdicts on it every way a holder of
// the stream's credentials can: unsigned, signed by a key whose role may
// not decide, signed and then edited, signed by an unregistered key. No
// forgery is folded by Read or Load, each is named with its status, and
// the next real append on the aggregate still succeeds.
func TestAttest_QuarantineForgeries(t *testing.T) {
	t.Parallel()
	s, admin, l := judgedLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := session("a")

	old := mustAppend(t, l, decision(reg, a, 0, 1, 1)) // unsigned, before signing
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); ok || err != nil {
		t.Fatalf("second BeginSigning = %v, %v; want false, nil", ok, err)
	}
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	writer := mustKey(t, "writer@h", attestation.RoleWriter)
	stranger := mustKey(t, "serve@elsewhere", attestation.RoleServe)
	for _, k := range []*attestation.Key{serve, writer} {
		if ok, err := l.RegisterKey(ctx, admin, k, "h", testTime); !ok || err != nil {
			t.Fatalf("RegisterKey(%s) = %v, %v", k.Principal, ok, err)
		}
	}
	l.SetSigner(serve)
	real := mustAppend(t, l, decision(reg, a, old.Last, 2, 1))

	want := map[uint64]attestation.Status{}
	last := real.Last
	for _, f := range []struct {
		k      *attestation.Key
		edit   func([]byte) []byte
		status attestation.Status
	}{
		{nil, nil, attestation.Unsigned},
		{writer, nil, attestation.OutOfRole},
		{serve, func(b []byte) []byte {
			var m map[string]any
			json.Unmarshal(b, &m)
			m["actor"] = "x"
			b, _ = json.Marshal(m)
			return b
		}, attestation.BadSignature},
		{stranger, nil, attestation.UnknownKey},
	} {
		last = forge(t, s.Conn(), verdict(reg, a, 3), last, f.k, f.edit)
		want[last] = f.status
	}

	recs, lastSeq, err := l.Load(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || lastSeq != last {
		t.Fatalf("Load = %d records, last %d; want the 2 real ones, last %d (the last forgery)", len(recs), lastSeq, last)
	}
	for _, r := range readAll(t, l, 1) {
		if _, bad := want[r.Seq]; bad {
			t.Errorf("Read yielded forged seq %d (%s)", r.Seq, r.Type)
		}
	}
	qs, n := l.Quarantined()
	if n != uint64(len(want)) {
		t.Errorf("quarantined %d, want %d: %+v", n, len(want), qs)
	}
	for _, q := range qs {
		if q.Verdict.Status != want[q.Seq] {
			t.Errorf("seq %d: status %s, want %s (%s)", q.Seq, q.Verdict.Status, want[q.Seq], q.Verdict.Why)
		}
	}
	// The next real decision appends after the forgeries.
	if _, err := l.Append(ctx, decision(reg, a, last, 3, 1)); err != nil {
		t.Fatalf("append after the forgeries: %v", err)
	}
	recs, _, err = l.Load(ctx, a)
	if err != nil || len(recs) != 3 {
		t.Fatalf("Load = %d records, %v; want 3", len(recs), err)
	}

	// A fresh reader, from the start and from the middle, judges alike.
	for _, from := range []uint64{1, real.Last} {
		l2 := signedLog(t, s, admin)
		n := 0
		for r := range l2.Read(ctx, from) {
			if _, bad := want[r.Seq]; bad {
				t.Errorf("fresh Read(%d) yielded forged seq %d", from, r.Seq)
			}
			n++
		}
		if _, q := l2.Quarantined(); q != uint64(len(want)) {
			t.Errorf("fresh Read(%d): quarantined %d, want %d", from, q, len(want))
		}
	}
}

// TestAttest_Revocation revokes a key: what it signed before stays
// attested, what it signs after is refused.
func TestAttest_Revocation(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t, "serve@h", attestation.RoleServe), mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k1, k2)
	reg := events.NewRegistry()
	ctx := t.Context()
	l.SetSigner(k1)
	before := mustAppend(t, l, decision(reg, session("a"), 0, 1, 2))
	if err := l.RevokeKey(ctx, admin, k1.ID, "rotated", "h", testTime); err != nil {
		t.Fatal(err)
	}
	if err := l.RevokeKey(ctx, admin, k1.ID, "again", "h", testTime); !errors.Is(err, events.ErrConflict) {
		t.Errorf("second RevokeKey = %v, want ErrConflict", err)
	}
	if err := l.RevokeKey(ctx, admin, "0123456789abcdef", "none", "h", testTime); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	// A judged Log refuses to send what k1 signs now; a process that
	// does not judge (a forger holding k1) can still store it, and
	// every reader refuses it.
	if _, err := l.Append(ctx, decision(reg, session("b"), 0, 1, 1)); !errors.Is(err, ErrKeyRefused) {
		t.Fatalf("Append signed by the revoked k1 = %v, want ErrKeyRefused", err)
	}
	raw := openLog(t, s)
	raw.SetSigner(k1)
	after := mustAppend(t, raw, decision(reg, session("b"), 0, 1, 1)) // still k1: refused
	l.SetSigner(k2)
	rotated := mustAppend(t, l, decision(reg, session("c"), 0, 1, 1))

	l2 := signedLog(t, s, admin)
	got := map[uint64]bool{}
	for r, err := range l2.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		got[r.Seq] = true
	}
	if !got[before.First] || !got[before.Last] || !got[rotated.Last] || got[after.Last] {
		t.Errorf("read %v: want %d..%d and %d, not %d", got, before.First, before.Last, rotated.Last, after.Last)
	}
	qs, _ := l2.Quarantined()
	if len(qs) != 1 || qs[0].Verdict.Status != attestation.UnknownKey {
		t.Errorf("quarantined %+v, want seq %d unknown-or-revoked-key", qs, after.Last)
	}
}

// TestAttest_RefusesRevokedSigner revokes, through another Log (another
// process), the key a Log signs with: the Log's next append, a lone
// decision, a large one sent directly and decisions merged into one
// batch alike, is refused before it is sent with an error naming the key,
// its principal and the revocation's sequence, and nothing is stored; an
// unregistered key and an unsigned append are refused the same way, and
// a registered key goes on.
func TestAttest_RefusesRevokedSigner(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t, "writer@h", attestation.RoleWriter), mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k1, k2)
	reg := events.NewRegistry()
	ctx := t.Context()
	l.SetSigner(k1)
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 2))
	other := signedLog(t, s, admin)
	if err := other.RevokeKey(ctx, admin, k1.ID, "leaked", "h", testTime); err != nil {
		t.Fatal(err)
	}
	rev, err := other.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitObserved(t, l, k1.ID, rev)
	check := func(what string, err error, want ...string) {
		t.Helper()
		var ke *KeyRefusedError
		if !errors.As(err, &ke) {
			t.Fatalf("%s: %v, want a KeyRefusedError", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", what, err, w)
			}
		}
	}
	want := []string{k1.ID, "writer@h", fmt.Sprintf("revoked at seq %d", rev), "keys register"}
	_, err = l.Append(ctx, decision(reg, session("b"), 0, 1, 1))
	check("lone", err, want...)
	_, err = l.Append(ctx, decision(reg, session("big"), 0, 1, DirectMin))
	check("direct", err, want...)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = l.Append(ctx, decision(reg, session(fmt.Sprintf("m%d", i)), 0, 1, 1)) })
	}
	wg.Wait()
	for i, err := range errs {
		check(fmt.Sprintf("merged %d", i), err, want...)
	}
	if last, err := l.LastSeq(ctx); err != nil || last != rev {
		t.Fatalf("last seq %d (%v) after the refused appends, want %d: nothing stored", last, err, rev)
	}
	stranger := mustKey(t, "x@h", attestation.RoleWriter)
	l.SetSigner(stranger)
	_, err = l.Append(ctx, decision(reg, session("c"), 0, 1, 1))
	check("unregistered", err, stranger.ID, "not registered")
	l.SetSigner(nil)
	_, err = l.Append(ctx, decision(reg, session("c"), 0, 1, 1))
	check("unsigned", err, "unsigned")
	l.SetSigner(k2)
	mustAppend(t, l, decision(reg, session("c"), 0, 1, 1))
}

// waitObserved waits until l's Verifier has observed the revocation of
// the key id at seq, as l's watch of the key events delivers it.
func waitObserved(t *testing.T, l *Log, id string, seq uint64) {
	t.Helper()
	for {
		if k, _ := l.Verifier().Key(id); k.Revoked == seq {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("the revocation of %s at seq %d was never observed", id, seq)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestAttest_KeyWatch appends through a Log that signs and judges: once
// its watch of the key events runs, its appends ask the server for no
// key event; a revocation another Log (another process) stores is
// observed by the watch, and this Log's next append is refused, lone or
// merged, nothing of it stored; a key another Log registers a moment
// before it is used is never refused; a Log opened after the revocation
// refuses its very first append.
func TestAttest_KeyWatch(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t, "serve@h", attestation.RoleServe), mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k1)
	reg := events.NewRegistry()
	ctx := t.Context()
	l.SetSigner(k1)
	gets, flush := countGets(t, s)
	// Each Log judges its first appends by a catch-up; the watch is live
	// after the second.
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 1))
	mustAppend(t, l, decision(reg, session("b"), 0, 1, 1))
	flush()
	before := gets.Load()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			agg := session(fmt.Sprintf("w%d", i))
			var last uint64
			for v := range uint64(4) {
				ap, err := l.Append(ctx, decision(reg, agg, last, v+1, 1))
				if err != nil {
					t.Errorf("writer %d: %v", i, err)
					return
				}
				last = ap.Last
			}
		})
	}
	wg.Wait()
	flush()
	if g := gets.Load() - before; g != 0 {
		t.Errorf("64 appends with the key watch live made %d gets; want none", g)
	}

	other := signedLog(t, s, admin)
	if ok, err := other.RegisterKey(ctx, admin, k2, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey(k2) = %v, %v", ok, err)
	}
	if err := other.RevokeKey(ctx, admin, k1.ID, "leaked", "h", testTime); err != nil {
		t.Fatal(err)
	}
	rev := lastSeq(t, other)
	waitObserved(t, l, k1.ID, rev)
	refused := func(what string, err error) {
		t.Helper()
		if ke, ok := errors.AsType[*KeyRefusedError](err); !ok || ke.Info.Revoked != rev {
			t.Errorf("%s after the revocation at seq %d: %v, want a KeyRefusedError naming it", what, rev, err)
		}
	}
	_, err := l.Append(ctx, decision(reg, session("c"), 0, 1, 1))
	refused("lone append", err)
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = l.Append(ctx, decision(reg, session(fmt.Sprintf("m%d", i)), 0, 1, 1)) })
	}
	wg.Wait()
	for i, err := range errs {
		refused(fmt.Sprintf("merged append %d", i), err)
	}
	if last := lastSeq(t, l); last != rev {
		t.Fatalf("last seq %d after the refused appends, want %d: nothing stored", last, rev)
	}

	// k2 was registered by the other Log; whether or not the watch has
	// delivered that yet, an append signed by it goes.
	l.SetSigner(k2)
	mustAppend(t, l, decision(reg, session("c"), 0, 1, 1))

	fresh := signedLog(t, s, admin)
	fresh.SetSigner(k1)
	_, err = fresh.Append(ctx, decision(reg, session("d"), 0, 1, 1))
	refused("a new Log's first append", err)
}

// TestAttest_KeyWatchStartsAgain deletes the consumer of a Log's watch
// of the key events on the server: the Log's next append catches the key
// events up and starts a new watch, through which a revocation stored
// later is observed and refuses the append after it; appends between ask
// for no key event.
func TestAttest_KeyWatchStartsAgain(t *testing.T) {
	t.Parallel()
	k1 := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, k1)
	reg := events.NewRegistry()
	ctx := t.Context()
	l.SetSigner(k1)
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 1))
	watch := func() string {
		t.Helper()
		l.keys.mu.Lock()
		defer l.keys.mu.Unlock()
		if l.keys.cons == nil {
			t.Fatal("no key watch after two key checks")
		}
		return l.keys.cons.CachedInfo().Name
	}
	first := watch()
	if err := l.js.DeleteConsumer(ctx, StreamName, first); err != nil {
		t.Fatal(err)
	}
	for !l.keys.broken.Load() {
		select {
		case <-ctx.Done():
			t.Fatal("the watch never reported its consumer deleted")
		case <-time.After(time.Millisecond):
		}
	}
	mustAppend(t, l, decision(reg, session("b"), 0, 1, 1))
	if again := watch(); again == first || !l.keys.live.Load() {
		t.Fatalf("after the deletion: watch %s (was %s), live %v; want a new live one", again, first, l.keys.live.Load())
	}
	gets, flush := countGets(t, s)
	mustAppend(t, l, decision(reg, session("c"), 0, 1, 1))
	flush()
	if g := gets.Load(); g != 0 {
		t.Errorf("an append through the new watch made %d gets; want none", g)
	}
	if err := signedLog(t, s, admin).RevokeKey(ctx, admin, k1.ID, "leaked", "h", testTime); err != nil {
		t.Fatal(err)
	}
	rev := lastSeq(t, l)
	waitObserved(t, l, k1.ID, rev)
	if _, err := l.Append(ctx, decision(reg, session("d"), 0, 1, 1)); !errors.Is(err, ErrKeyRefused) {
		t.Errorf("append after the revocation the new watch observed: %v, want ErrKeyRefused", err)
	}
}

// judgedLog starts a server and opens a Log on it that judges reads
// against a fresh admin key, returned with it.
func judgedLog(t *testing.T) (*Server, *attestation.Key, *Log) {
	t.Helper()
	s := startServer(t, t.TempDir())
	admin := mustKey(t, "admin@h", attestation.RoleAdmin)
	return s, admin, signedLog(t, s, admin)
}

// startSigning starts a server and opens a Log on it that judges reads
// against a fresh admin key (returned) and has begun signing, with keys
// registered by the admin. The Log signs nothing until SetSigner.
func startSigning(t *testing.T, keys ...*attestation.Key) (*Server, *attestation.Key, *Log) {
	t.Helper()
	s, admin, l := judgedLog(t)
	if ok, err := l.BeginSigning(t.Context(), admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	for _, k := range keys {
		if ok, err := l.RegisterKey(t.Context(), admin, k, "h", testTime); !ok || err != nil {
			t.Fatalf("RegisterKey(%s) = %v, %v", k.Principal, ok, err)
		}
	}
	return s, admin, l
}

// signingLog is startSigning with one registered serve key the Log signs
// its appends with.
func signingLog(t *testing.T) (*Server, *Log) {
	t.Helper()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, _, l := startSigning(t, serve)
	l.SetSigner(serve)
	return s, l
}

// memStore opens a projection store in memory, closed when the test ends.
func memStore(t *testing.T) *projections.Store {
	t.Helper()
	store, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// TestAttest_ProjectionMovesPastAForgery: a forgery that is the log's
// newest event holds no wait for the log's end: a projection's runner,
// catching up and following, moves its checkpoint past quarantined
// events without folding them, so a read-your-writes wait for the last
// event sequence returns.
func TestAttest_ProjectionMovesPastAForgery(t *testing.T) {
	t.Parallel()
	s, l := signingLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := session("a")
	real := mustAppend(t, l, decision(reg, a, 0, 1, 1))
	forged := forge(t, s.Conn(), verdict(reg, a, 2), real.Last, nil, nil)

	store := memStore(t)
	r := &projections.Runner{Log: l, Store: store}
	if _, err := r.RunToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if cp := store.Checkpoint(); cp != forged {
		t.Fatalf("caught up to %d, want past the forgery at %d", cp, forged)
	}
	run, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(run) }()
	defer func() { cancel(); <-done }()
	forged = forge(t, s.Conn(), verdict(reg, a, 2), forged, nil, nil)
	wait, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if err := store.WaitFor(wait, forged); err != nil {
		t.Fatalf("following: %v", err)
	}
	if _, n := l.Quarantined(); n != 2 {
		t.Errorf("%d quarantined, want 2", n)
	}
}

// TestAttest_JunkStopsNothing: once signing began, a message a holder of
// the stream's credentials publishes that does not even decode (not
// JSON, no cause, ver 0, another subject's event), even signed by a
// registered key, is quarantined like any unattested event: no read,
// load or projection stops at it.
func TestAttest_JunkStopsNothing(t *testing.T) {
	t.Parallel()
	s, l := signingLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := session("a")
	real := mustAppend(t, l, decision(reg, a, 0, 1, 1))
	valid, err := decision(reg, session("b"), 0, 1, 1).Events[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	junk := map[string][]byte{
		"lb.ev.session.a":   []byte("not json at all"),
		"lb.ev.session.zzz": []byte(`{"id":"x"}`),
		"lb.ev.session.c":   valid, // session b's event on c's subject
	}
	var last uint64
	for subj, body := range junk {
		m := &nats.Msg{Subject: subj, Header: nats.Header{HeaderType: []string{"session.started"}}, Data: body}
		last = max(last, publishMsg(t, s.Conn(), m, "publish junk on "+subj))
	}
	// Junk signed by a registered key whose role may append any type:
	// what does not decode has no type, which no role may append.
	m := &nats.Msg{Subject: "lb.ev.session.signed", Header: nats.Header{HeaderType: []string{"session.started"}}, Data: []byte(`{"id":"x"}`)}
	sign(l.currentSigner(), m)
	junk[m.Subject], last = m.Data, publishMsg(t, s.Conn(), m, "publish signed junk")
	for r, err := range l.Read(ctx, 1) {
		if err != nil {
			t.Fatalf("Read stopped at junk: %v", err)
		}
		if r.Seq > real.Last {
			t.Errorf("Read yielded junk seq %d", r.Seq)
		}
	}
	if recs, _, err := l.Load(ctx, a); err != nil || len(recs) != 1 {
		t.Errorf("Load(a) = %d records, %v; want the real one", len(recs), err)
	}
	store := memStore(t)
	if _, err := (&projections.Runner{Log: l, Store: store}).RunToEnd(ctx); err != nil {
		t.Fatalf("projection stopped at junk: %v", err)
	}
	if cp := store.Checkpoint(); cp != last {
		t.Errorf("projection at %d, want past the junk at %d", cp, last)
	}
	if _, n := l.Quarantined(); n != uint64(len(junk)) {
		t.Errorf("%d quarantined, want %d", n, len(junk))
	}
}

// TestAttest_RegisterPublic registers a key of which only the public
// part is known, as an admin does for another host's key: bad input is
// refused with nothing appended, and a second Log on the same stream,
// with only the pin, learns the key from the log (KeyState), and its
// revocation.
func TestAttest_RegisterPublic(t *testing.T) {
	t.Parallel()
	s, admin, l := startSigning(t)
	ctx := t.Context()
	k := mustKey(t, "writer@other", attestation.RoleWriter)
	before, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name      string
		pub       []byte
		principal string
		role      attestation.Role
	}{
		{"short key", k.Public()[:31], "writer@other", attestation.RoleWriter},
		{"no principal", k.Public(), "", attestation.RoleWriter},
		{"admin role", k.Public(), "writer@other", attestation.RoleAdmin},
		{"unknown role", k.Public(), "writer@other", "root"},
	} {
		if _, err := l.RegisterPublic(ctx, admin, bad.pub, bad.principal, bad.role, "h", testTime); err == nil {
			t.Errorf("%s: registered", bad.name)
		}
	}
	if after, _ := l.LastSeq(ctx); after != before {
		t.Fatalf("refused registrations moved the log from %d to %d", before, after)
	}
	if ok, err := l.RegisterPublic(ctx, admin, k.Public(), k.Principal, k.Role, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterPublic = %v, %v", ok, err)
	}
	other := signedLog(t, s, admin)
	info, ok, err := other.KeyState(ctx, k.ID)
	if err != nil || !ok || info.Role != attestation.RoleWriter || info.Principal != k.Principal || info.Registered == 0 || info.Revoked != 0 {
		t.Fatalf("KeyState on another Log = %+v, %v, %v", info, ok, err)
	}
	if err := l.RevokeKey(ctx, admin, k.ID, "retired", "h", testTime); err != nil {
		t.Fatal(err)
	}
	if info, ok, err = other.KeyState(ctx, k.ID); err != nil || !ok || info.Revoked == 0 {
		t.Fatalf("KeyState after revocation = %+v, %v, %v", info, ok, err)
	}
	// A key.registered signed by anyone but the admin binds nothing.
	mallory := mustKey(t, "mallory@h", attestation.RoleServe)
	if _, err := l.RegisterKey(ctx, mallory, mallory, "h", testTime); !errors.Is(err, ErrKeyRefused) {
		t.Fatalf("a judged Log appended a key.registered mallory signed: %v", err)
	}
	if _, err := openLog(t, s).RegisterKey(ctx, mallory, mallory, "h", testTime); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := other.KeyState(ctx, mallory.ID); err != nil || ok {
		t.Fatalf("KeyState of a self-registered key = %v, %v; want not registered", ok, err)
	}
	if _, _, err := (&Log{}).KeyState(ctx, k.ID); err == nil {
		t.Error("KeyState on a Log without a Verifier: no error")
	}
}

// TestAttest_ForgedKeyEventsSquatNothing: a holder of the stream's
// credentials publishes, before the admin, an unsigned signing.began and
// a key.registered for a key it knows the public part of, signed by its
// own key. Neither counts: BeginSigning and RegisterPublic append the
// admin's events after them, signing begins at the admin's, and the key
// is bound as the admin registered it.
func TestAttest_ForgedKeyEventsSquatNothing(t *testing.T) {
	t.Parallel()
	s, admin, l := judgedLog(t)
	ctx := t.Context()
	reg := events.NewRegistry()
	mallory := mustKey(t, "mallory@h", attestation.RoleServe)
	k := mustKey(t, "writer@other", attestation.RoleWriter)
	sb := reg.New(events.SigningBegan{Host: "h"})
	sb.ID, sb.Agg, sb.Ver, sb.At = ulid.Make(), events.Aggregate{Kind: events.KindKey, ID: events.SigningAggregate}, 1, testTime
	forgedBegin := forge(t, s.Conn(), sb, 0, nil, nil)
	kr := reg.New(events.KeyRegistered{Public: k.PublicText(), Principal: "mallory's pick", Role: string(attestation.RoleServe)})
	kr.ID, kr.Agg, kr.Ver, kr.At = ulid.Make(), events.Aggregate{Kind: events.KindKey, ID: k.ID}, 1, testTime
	forge(t, s.Conn(), kr, 0, mallory, nil)

	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning over a forged signing.began = %v, %v", ok, err)
	}
	if _, _, err := l.Load(ctx, sb.Agg); err != nil { // the Verifier observes what it reads
		t.Fatal(err)
	}
	if from := l.Verifier().SigningFrom(); from <= forgedBegin {
		t.Fatalf("signing from %d, want after the forged signing.began at %d", from, forgedBegin)
	}
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); ok || err != nil {
		t.Fatalf("BeginSigning again = %v, %v; want nothing appended", ok, err)
	}
	if ok, err := l.RegisterPublic(ctx, admin, k.Public(), k.Principal, k.Role, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterPublic over a forged key.registered = %v, %v", ok, err)
	}
	other := signedLog(t, s, admin)
	info, ok, err := other.KeyState(ctx, k.ID)
	if err != nil || !ok || info.Role != attestation.RoleWriter || info.Principal != k.Principal {
		t.Fatalf("KeyState = %+v, %v, %v; want the admin's registration", info, ok, err)
	}
	if ok, err := l.RegisterPublic(ctx, admin, k.Public(), k.Principal, k.Role, "h", testTime); ok || err != nil {
		t.Fatalf("RegisterPublic again = %v, %v; want nothing appended", ok, err)
	}
}

// republish publishes the stored message at seq again exactly as stored,
// as a holder of the stream's credentials can: its body and headers,
// signature included, less Nats-Msg-Id and the atomic batch's headers.
func republish(t *testing.T, nc *nats.Conn, l *Log, seq uint64) uint64 {
	t.Helper()
	var orig Msg
	for m, err := range l.ReadRaw(t.Context(), events.SubjectEvents+".>", seq) {
		if err != nil {
			t.Fatal(err)
		}
		orig = m
		break
	}
	if orig.Seq != seq {
		t.Fatalf("no message at seq %d", seq)
	}
	m := &nats.Msg{Subject: orig.Subject, Header: nats.Header{}, Data: orig.Data}
	for k, vs := range orig.Header {
		switch k {
		case "Nats-Msg-Id", "Nats-Batch-Id", "Nats-Batch-Sequence", "Nats-Batch-Commit":
			continue
		}
		m.Header[k] = vs
	}
	return publishMsg(t, nc, m, fmt.Sprintf("republish seq %d", seq))
}

// TestAttest_ReplayedCopyQuarantined: a signed event published again
// exactly as stored (a member of an atomic batch after its first, whose
// signature covers "-", and a plain append's single event, its expected
// sequence still true of nothing) still verifies, but repeats its
// aggregate's history: every read path (Read from the start and the
// middle, Follow, Load, LoadAfter, a fresh reader) quarantines it as
// replayed, naming the original, and the next real decision is attested.
func TestAttest_ReplayedCopyQuarantined(t *testing.T) {
	t.Parallel()
	writer := mustKey(t, "writer@h", attestation.RoleServe)
	s, admin, l := startSigning(t, writer)
	l.SetSigner(writer)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := session("a")
	first := mustAppend(t, l, decision(reg, a, 0, 1, 1))
	batch := mustAppend(t, l, decision(reg, a, first.Last, 2, 3)) // vers 2..4
	member := batch.Last - 1                                      // ver 3: signs "-"
	copies := map[uint64]uint64{}                                 // copy → original
	c1 := republish(t, s.Conn(), l, batch.Last)                   // ver 4, signs "-": the last attested event's copy
	copies[c1] = batch.Last
	// The copy moved the subject: the next real decision expects it.
	after := mustAppend(t, l, decision(reg, a, c1, 5, 1))
	c2 := republish(t, s.Conn(), l, member) // ver 3, after ver 5
	copies[c2] = member
	last := mustAppend(t, l, decision(reg, a, c2, 6, 1))

	check := func(what string, recs []events.Record, wantVers int) {
		t.Helper()
		vers := 0
		for _, r := range recs {
			if r.Agg != a {
				continue
			}
			if _, bad := copies[r.Seq]; bad {
				t.Errorf("%s folded the copy at seq %d (ver %d)", what, r.Seq, r.Ver)
			}
			vers++
			if r.Ver != uint64(vers) {
				t.Errorf("%s: seq %d has ver %d, want %d", what, r.Seq, r.Ver, vers)
			}
		}
		if vers != wantVers {
			t.Errorf("%s: %d events of %s, want %d", what, vers, a, wantVers)
		}
	}
	checkQuar := func(what string, l *Log) {
		t.Helper()
		qs, _ := l.Quarantined()
		got := map[uint64]bool{}
		for _, q := range qs {
			got[q.Seq] = true
			orig, ok := copies[q.Seq]
			if !ok {
				t.Errorf("%s: quarantined seq %d (%s): not a copy", what, q.Seq, q.Verdict.Why)
				continue
			}
			if q.Verdict.Status != attestation.Replayed {
				t.Errorf("%s: seq %d is %s, want %s (%s)", what, q.Seq, q.Verdict.Status, attestation.Replayed, q.Verdict.Why)
			}
			if orig == batch.Last && !strings.Contains(q.Verdict.Why, "seq "+strconv.FormatUint(orig, 10)) {
				t.Errorf("%s: seq %d: %q does not name the original seq %d", what, q.Seq, q.Verdict.Why, orig)
			}
		}
		for c := range copies {
			if !got[c] {
				t.Errorf("%s: the copy at seq %d is not quarantined", what, c)
			}
		}
	}

	noCopy := func(what string, recs []events.Record) {
		t.Helper()
		for _, r := range recs {
			if _, bad := copies[r.Seq]; bad {
				t.Errorf("%s folded the copy at seq %d", what, r.Seq)
			}
		}
	}

	check("Read", readAll(t, l, 1), 6)
	checkQuar("Read", l)
	recs, lastSeq, err := l.Load(ctx, a)
	if err != nil || lastSeq != last.Last {
		t.Fatalf("Load = last %d, %v; want %d", lastSeq, err, last.Last)
	}
	check("Load", recs, 6)

	// Fresh readers, each on its own path, judge alike.
	for _, from := range []uint64{1, member, c1, after.Last} {
		noCopy(fmt.Sprintf("fresh Read(%d)", from), readAll(t, signedLog(t, s, admin), from))
	}
	l3 := signedLog(t, s, admin)
	for _, after := range []uint64{0, first.Last, member, c1, after.Last} {
		recs, _, err := l3.LoadAfter(ctx, a, after)
		if err != nil {
			t.Fatal(err)
		}
		noCopy(fmt.Sprintf("LoadAfter(%d)", after), recs)
	}
	l4 := signedLog(t, s, admin)
	for _, after := range []uint64{c2, c1, member} { // loads back in time, after a later one
		recs, _, err := l4.LoadAfter(ctx, a, after)
		if err != nil {
			t.Fatal(err)
		}
		noCopy(fmt.Sprintf("LoadAfter(%d) after a later one", after), recs)
	}
	checkQuar("LoadAfter", l3)

	// Follow from the start, live too, then from the middle.
	l5 := signedLog(t, s, admin)
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var c3, end uint64
	for r, err := range l5.Follow(fctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, bad := copies[r.Seq]; bad || r.Seq == c3 {
			t.Errorf("Follow(1) folded the copy at seq %d", r.Seq)
		}
		if r.Seq == last.Last {
			c3 = republish(t, s.Conn(), l, member) // one of a plain append would be refused: its expected sequence is past
			end = mustAppend(t, l, decision(reg, a, c3, 7, 1)).Last
		}
		if r.Seq == end {
			break
		}
	}
	if end == 0 {
		t.Fatal("Follow(1) did not reach the live copy")
	}
	if q, ok := quarantinedAt(l5, c3); !ok || q.Verdict.Status != attestation.Replayed {
		t.Errorf("Follow(1): the live copy at seq %d: %+v, want replayed", c3, q)
	}
	copies[c3] = member
	l6 := signedLog(t, s, admin)
	for r, err := range l6.Follow(fctx, c1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, bad := copies[r.Seq]; bad {
			t.Errorf("Follow(%d) folded the copy at seq %d", c1, r.Seq)
		}
		if r.Seq == end {
			break
		}
	}
	checkQuar("Follow", l6)
}

// quarantinedAt returns l's quarantine entry at seq.
func quarantinedAt(l *Log, seq uint64) (Quarantined, bool) {
	qs, _ := l.Quarantined()
	for _, q := range qs {
		if q.Seq == seq {
			return q, true
		}
	}
	return Quarantined{}, false
}

// A Judger of a Log shares the Log's verdicts on signatures: the events
// the Judger verified, a read of the Log does not verify again, and the
// Judger judges them as one that verifies each itself does (a forgery
// signed and then edited among them, quarantined by both).
func TestAttest_JudgerSharesTheLogsChecks(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, l := startSigning(t, serve)
	l.SetSigner(serve)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")
	ap := mustAppend(t, l, decision(reg, a, 0, 1, 5))
	bp := mustAppend(t, l, decision(reg, b, 0, 1, 3))
	forged := forge(t, s.Conn(), verdict(reg, a, 6), ap.Last, serve, func(data []byte) []byte {
		return bytes.Replace(data, []byte(`"fine"`), []byte(`"FINE"`), 1)
	})
	last := max(forged, bp.Last)

	before := l.Verifier().Checked()
	shared := l.NewJudger(admin.Public())
	if err := shared.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	judged := l.Verifier().Checked() - before
	if judged == 0 {
		t.Fatal("the Judger's verifications are not on the Log's record")
	}
	readAll(t, l, 1)
	if got := l.Verifier().Checked() - before - judged; got != 0 {
		t.Errorf("the read made %d verifications of its own after the Judger's %d; want none", got, judged)
	}

	own := signedLog(t, s, admin).NewJudger(admin.Public())
	if err := own.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(own.Quarantined(), shared.Quarantined()); diff != "" {
		t.Errorf("quarantined (-judged alone +sharing the read's checks):\n%s", diff)
	}
	if q, ok := shared.Quarantined()[forged]; !ok || q.Status != attestation.BadSignature {
		t.Errorf("forgery at seq %d: %+v, %v; want it quarantined as %s", forged, q, ok, attestation.BadSignature)
	}
}

// TestAttest_GapQuarantinedAsFollowsMissing: a signed event whose ver
// skips past its aggregate's next (the one between lost from the stream,
// or never appended) is quarantined as following a missing one, naming
// the ver that is missing, not as a copy of an earlier event; so is each
// after it, which cannot be folded onto a state that lacks it. Each is
// told to Config.OnQuarantine once, however often it is read.
func TestAttest_GapQuarantinedAsFollowsMissing(t *testing.T) {
	t.Parallel()
	writer := mustKey(t, "writer@h", attestation.RoleServe)
	_, _, l := startSigning(t, writer)
	l.SetSigner(writer)
	told := map[uint64]int{}
	var toldMu sync.Mutex
	l.cfg.OnQuarantine = func(q Quarantined) {
		toldMu.Lock()
		defer toldMu.Unlock()
		told[q.Seq]++
	}
	reg := events.NewRegistry()
	a := session("gap")
	first := mustAppend(t, l, decision(reg, a, 0, 1, 1))
	skip := mustAppend(t, l, decision(reg, a, first.Last, 3, 1)) // ver 2 never appended
	next := mustAppend(t, l, decision(reg, a, skip.Last, 4, 1))
	recs := readAll(t, l, 1)
	for _, r := range recs {
		if r.Agg == a && r.Ver != 1 {
			t.Errorf("folded ver %d at seq %d past the gap", r.Ver, r.Seq)
		}
	}
	if _, _, err := l.Load(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	toldMu.Lock()
	if want := map[uint64]int{skip.Last: 1, next.Last: 1}; !maps.Equal(told, want) {
		t.Errorf("told OnQuarantine %v, want %v", told, want)
	}
	toldMu.Unlock()
	qs, _ := l.Quarantined()
	got := map[uint64]attestation.Verdict{}
	for _, q := range qs {
		got[q.Seq] = q.Verdict
	}
	for _, seq := range []uint64{skip.Last, next.Last} {
		v, ok := got[seq]
		if !ok || v.Status != attestation.FollowsMissing || !strings.Contains(v.Why, "but ver 2, which must come between, is not in the log as read") {
			t.Errorf("seq %d: %+v (quarantined %v), want %s naming ver 2", seq, v, ok, attestation.FollowsMissing)
		}
	}
}

// TestAttest_HoldWarmsKeyWatch: the first Hold of a Log that signs and
// judges starts its watch of the key events and catches them up beside
// the holder, so the watch is live before any append and the first
// appends under the hold ask the server for no key event; a revocation
// stored afterwards is still observed by the watch and refuses the next
// append, nothing of it stored. A second Hold starts nothing more.
func TestAttest_HoldWarmsKeyWatch(t *testing.T) {
	t.Parallel()
	k1 := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, _ := startSigning(t, k1)
	reg := events.NewRegistry()
	ctx := t.Context()
	l := signedLog(t, s, admin) // a new Log: no key check made yet
	l.SetSigner(k1)
	if l.keys.live.Load() {
		t.Fatal("a new Log's key watch is live before any check")
	}
	release := l.Hold()
	for !l.keys.live.Load() {
		select {
		case <-ctx.Done():
			t.Fatal("the key watch never went live under a Hold")
		case <-time.After(time.Millisecond):
		}
	}
	l.keys.mu.Lock()
	first := l.keys.cons
	l.keys.mu.Unlock()
	if first == nil {
		t.Fatal("live without a watch")
	}
	release()
	gets, flush := countGets(t, s)
	release = l.Hold()
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = l.Append(ctx, decision(reg, session(fmt.Sprintf("h%d", i)), 0, 1, 1)) })
	}
	// The appends queue behind the hold; let them go.
	release()
	wg.Wait()
	flush()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if g := gets.Load(); g != 0 {
		t.Errorf("appends under a warmed watch made %d gets; want none", g)
	}
	l.keys.mu.Lock()
	again := l.keys.cons
	l.keys.mu.Unlock()
	if again != first {
		t.Error("a second Hold started another watch")
	}
	if err := signedLog(t, s, admin).RevokeKey(ctx, admin, k1.ID, "leaked", "h", testTime); err != nil {
		t.Fatal(err)
	}
	rev := lastSeq(t, l)
	waitObserved(t, l, k1.ID, rev)
	if _, err := l.Append(ctx, decision(reg, session("after"), 0, 1, 1)); !errors.Is(err, ErrKeyRefused) {
		t.Fatalf("append after the revocation: %v, want it refused", err)
	}
	if last := lastSeq(t, l); last != rev {
		t.Fatalf("last seq %d after the refused append, want %d", last, rev)
	}
}

// TestAttest_RefusesOutOfRole appends with keys whose role may not
// append what they sign (a worker's decision caused by a person, a
// writer's verdict): each append, lone, sent directly or merged with
// others, is refused before it is sent with an error naming the role,
// the principal and the type or cause, and nothing of it is stored,
// while decisions of the role merged with the refused ones are stored and
// read as attested. A Log on a reader's connection refuses every append
// as the reader's, not as unsigned.
func TestAttest_RefusesOutOfRole(t *testing.T) {
	t.Parallel()
	worker, writer := mustKey(t, "worker@h", attestation.RoleWorker), mustKey(t, "writer@h", attestation.RoleWriter)
	s, admin, l := startSigning(t, worker, writer)
	reg := events.NewRegistry()
	ctx := t.Context()
	start := lastSeq(t, l)
	check := func(what string, err error, want ...string) {
		t.Helper()
		var re *RoleRefusedError
		if !errors.As(err, &re) || !errors.Is(err, ErrRoleRefused) {
			t.Fatalf("%s: %v, want a RoleRefusedError", what, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", what, err, w)
			}
		}
	}
	// The worker's own: its claim on a command (WorkerPermits).
	byWorker := func(id string) events.Batch {
		a := events.Aggregate{Kind: events.KindCommand, ID: id}
		e := envelope(reg, a, 1, events.CommandStarted{Worker: "w1", Host: "h"})
		e.Cause = &events.Cause{Kind: "worker", Event: "command.requested", Detail: "w1", Ref: id}
		return events.Batch{Agg: a, Events: []events.Envelope{e}}
	}
	l.SetSigner(worker)
	notCaused := []string{"role worker", "worker@h", "caused itself", "cli", worker.ID, "nothing appended"}
	_, err := l.Append(ctx, decision(reg, session("a"), 0, 1, 1))
	check("lone", err, notCaused...)
	_, err = l.Append(ctx, decision(reg, session("big"), 0, 1, DirectMin))
	check("direct", err, notCaused...)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			b := decision(reg, session(fmt.Sprintf("m%d", i)), 0, 1, 1)
			if i%2 == 1 {
				b = byWorker(fmt.Sprintf("m%d", i))
			}
			_, errs[i] = l.Append(ctx, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 1 {
			if err != nil {
				t.Errorf("merged %d, the worker's own: %v", i, err)
			}
			continue
		}
		check(fmt.Sprintf("merged %d", i), err, notCaused...)
	}
	if last := lastSeq(t, l); last != start+uint64(len(errs)/2) {
		t.Fatalf("last seq %d after the appends, want %d: only the worker's own stored", last, start+uint64(len(errs)/2))
	}
	l.SetSigner(writer)
	_, err = l.Append(ctx, events.Batch{Agg: session("v"), Events: []events.Envelope{verdict(reg, session("v"), 1)}})
	check("writer's verdict", err, "role writer", "writer@h", "may not append review.decided", writer.ID)
	if last := lastSeq(t, l); last != start+uint64(len(errs)/2) {
		t.Fatalf("last seq %d after the writer's verdict, want %d: nothing stored", last, start+uint64(len(errs)/2))
	}
	// What was stored is the worker's own, and every reader folds it.
	l2 := signedLog(t, s, admin)
	n := 0
	for r, err := range l2.Read(ctx, start+1) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Signer.Status != string(attestation.Attested) || r.Signer.Role != string(attestation.RoleWorker) {
			t.Errorf("seq %d read as %+v, want attested, the worker's", r.Seq, r.Signer)
		}
		n++
	}
	if _, q := l2.Quarantined(); n != len(errs)/2 || q != 0 {
		t.Errorf("read %d events, %d quarantined; want %d, none", n, q, len(errs)/2)
	}
	// A reader's connection appends nothing: its refusal says so.
	reader := openLogWith(t, s, Config{Verifier: attestation.NewVerifier(admin.Public()), ConnRole: RoleReader})
	_, err = reader.Append(ctx, decision(reg, session("r"), 0, 1, 1))
	check("reader", err, "role reader", "may not append")
	if strings.Contains(err.Error(), "unsigned") {
		t.Errorf("reader: %q, want the role's refusal, not an unsigned one", err)
	}
}

// TestAttest_ExecutorDecidesPastQuarantinedStart stores a quarantined
// session.started (unsigned, as a forger or an append out of its key's
// role leaves one) on an empty session: an Executor's next decision
// there is appended, as the session's first folded event, not refused
// as a version 1 on a subject that holds an event, and a fresh reader
// folds it and quarantines the other.
func TestAttest_ExecutorDecidesPastQuarantinedStart(t *testing.T) {
	t.Parallel()
	s, l := signingLog(t)
	reg := events.NewRegistry()
	forged := forge(t, s.Conn(), envelope(reg, session("q"), 1, events.SessionStarted{Agent: "cli", Cwd: "/forged"}), 0, nil, nil)
	x := countingExecutor(l, reg, 0)
	if n := execNext(t, x, reg, "q"); n != 1 {
		t.Fatalf("state after the decision counts %d events, want 1 (the quarantined start is not folded)", n)
	}
	fresh := openLogWith(t, s, Config{Verifier: attestation.NewVerifier(l.Verifier().Admin())})
	recs, last, err := fresh.Load(t.Context(), session("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Seq <= forged || recs[0].Seq != last || recs[0].Signer.Status != string(attestation.Attested) {
		t.Fatalf("a fresh load: %+v (last %d), want the decision alone, attested, after the forgery at seq %d", recs, last, forged)
	}
}

// TestAttest_ReconcilersFindingsAreServes: what only serve's reconciler
// finds — its tick, a decision it caused (kind reconciler, or
// system/reconcile: a check run's vanished runner), its actor, an end or
// a mark whose reason is agent_gone or stale under a cause that is not
// an observation's — signed by a writer's key is refused before it is
// sent, and published straight to the stream with the writer's
// signature (as anything holding keys/writer.key can) it is quarantined
// out-of-role by every reader, while serve's own reconciler decisions
// stay attested and a SessionEnd hook whose payload says agent_gone,
// the agent's word, is the writer's to append.
func TestAttest_ReconcilersFindingsAreServes(t *testing.T) {
	t.Parallel()
	serve, writer := mustKey(t, "serve@h", attestation.RoleServe), mustKey(t, "writer@h", attestation.RoleWriter)
	s, admin, l := startSigning(t, serve, writer)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := session("gone")
	l.SetSigner(serve)
	app := mustAppend(t, l, decision(reg, a, 0, 1, 1))
	tick := envelope(reg, a, 2, events.TickObserved{Observation: events.Observation{Key: "tick:1", Parser: "logbook-reconciler/1", Kind: "tick"}})
	tick.Cause, tick.Actor = nil, attestation.ActorReconciler
	byReconciler := func(ver uint64, p events.Payload) events.Envelope {
		e := envelope(reg, a, ver, p)
		e.Cause = &events.Cause{Kind: attestation.CauseReconciler, Event: "tick", Detail: "agent_gone", Ref: tick.ID.String()}
		e.Actor = attestation.ActorReconciler
		return e
	}
	ended := byReconciler(3, events.SessionEnded{From: events.PhaseWorking, Reason: "agent_gone", Evidence: "pid 1 is gone"})
	app = mustAppend(t, l, events.Batch{Agg: a, Expect: app.Last, Events: []events.Envelope{tick, ended}})

	b := session("b")
	l.SetSigner(writer)
	bapp := mustAppend(t, l, decision(reg, b, 0, 1, 1))
	// The agent's SessionEnd hook says agent_gone: its word, the writer's.
	hookEnd := envelope(reg, b, 2, events.SessionEnded{From: events.PhaseReady, Reason: "agent_gone"})
	hookEnd.Cause = &events.Cause{Kind: "hook", Event: "SessionEnd", Ref: "obs1"}
	bapp = mustAppend(t, l, events.Batch{Agg: b, Expect: bapp.Last, Events: []events.Envelope{hookEnd}})

	c := session("c")
	capp := mustAppend(t, l, decision(reg, c, 0, 1, 1))
	forgeries := []struct {
		name string
		e    func(ver uint64) events.Envelope
		want string
	}{
		{"reconciler's end", func(ver uint64) events.Envelope {
			e := byReconciler(ver, events.SessionEnded{From: events.PhaseWorking, Reason: "agent_gone", Evidence: "pid 1 is gone"})
			e.Agg = c
			return e
		}, "caused by the reconciler"},
		{"tick", func(ver uint64) events.Envelope {
			e := envelope(reg, c, ver, events.TickObserved{Observation: events.Observation{Key: "tick:2", Parser: "logbook-reconciler/1", Kind: "tick"}})
			e.Cause = nil
			return e
		}, "may not append obs.reconciler.tick"},
		{"agent_gone end by a person", func(ver uint64) events.Envelope {
			return envelope(reg, c, ver, events.SessionEnded{From: events.PhaseWorking, Reason: "agent_gone"})
		}, "reason agent_gone"},
		{"stale mark", func(ver uint64) events.Envelope {
			return envelope(reg, c, ver, events.SessionEntryAbandoned{EntryID: "e1", Reason: "stale"})
		}, "reason stale"},
		{"reconciler's actor", func(ver uint64) events.Envelope {
			e := envelope(reg, c, ver, events.SessionEntryAbandoned{EntryID: "e1", Reason: "requested"})
			e.Actor = attestation.ActorReconciler
			return e
		}, "actor logbook-reconciler"},
		{"vanished runner", func(ver uint64) events.Envelope {
			e := envelope(reg, c, ver, events.CheckEnded{Status: "error", Reason: "runner vanished: no verdict"})
			e.Cause = &events.Cause{Kind: "system", Event: "reconcile", Detail: "check runner vanished", Ref: "x"}
			return e
		}, "caused by the reconciler"},
	}
	for _, f := range forgeries {
		_, err := l.Append(ctx, events.Batch{Agg: c, Expect: capp.Last, Events: []events.Envelope{f.e(2)}})
		var re *RoleRefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), f.want) || !strings.Contains(err.Error(), "role writer") {
			t.Errorf("writer appends the %s: %v, want a RoleRefusedError naming role writer and %q", f.name, err, f.want)
		}
	}
	if last := lastSeq(t, l); last != capp.Last {
		t.Fatalf("last seq %d after the refused appends, want %d: nothing stored", last, capp.Last)
	}
	forged := map[uint64]string{}
	last := capp.Last
	for _, f := range forgeries {
		last = forge(t, s.Conn(), f.e(2), last, writer, nil)
		forged[last] = f.want
	}

	l2 := signedLog(t, s, admin)
	for r, err := range l2.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, bad := forged[r.Seq]; bad {
			t.Errorf("Read folded the writer's forgery at seq %d (%s)", r.Seq, r.Type)
		}
		if r.Seq == app.Last && (r.Signer.Status != string(attestation.Attested) || r.Signer.Role != string(attestation.RoleServe)) {
			t.Errorf("serve's reconciler end at seq %d read as %+v, want attested, serve's", r.Seq, r.Signer)
		}
		if r.Seq == bapp.Last && r.Signer.Status != string(attestation.Attested) {
			t.Errorf("the writer's hook end at seq %d read as %+v, want attested", r.Seq, r.Signer)
		}
	}
	qs, n := l2.Quarantined()
	if n != uint64(len(forged)) {
		t.Errorf("quarantined %d, want the %d forgeries: %+v", n, len(forged), qs)
	}
	for _, q := range qs {
		want, ok := forged[q.Seq]
		if !ok || q.Verdict.Status != attestation.OutOfRole || !strings.Contains(q.Verdict.Why, want) {
			t.Errorf("seq %d: %s (%s), want out-of-role naming %q", q.Seq, q.Verdict.Status, q.Verdict.Why, want)
		}
	}
	recs, _, err := l2.Load(ctx, c)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Load(%s) = %d records, %v; want its start alone", c, len(recs), err)
	}
}
