package natslog

import (
	"errors"
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestLoadEach_AgreesWithLoadStreamed loads one session of a signed log,
// long enough that its read goes through many blocks, with LoadStreamed
// and with LoadEach (keeping every record it is handed, looked at only
// once the read is over): the same records, payloads and signers, the
// same last sequence and the same events quarantined. The session holds
// an event stored before signing under a key nobody registered, whose
// verdict names that key by its header's bytes, and, past the middle, a
// forgery quarantined the same way.
func TestLoadEach_AgreesWithLoadStreamed(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	admin, stranger, a := longSignedSession(t, s)
	ctx := t.Context()

	streamed := signedLog(t, s, admin)
	want, wantLast, err := streamed.LoadStreamed(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	each := signedLog(t, s, admin)
	var (
		got  []events.Record
		size uint64
	)
	gotLast, err := each.LoadEach(ctx, a, func(n uint64) { size = n }, func(r events.Record) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 100+1+40*250 {
		t.Fatalf("LoadStreamed = %d records, want %d", len(want), 100+1+40*250)
	}
	if size < uint64(len(want)) {
		t.Errorf("size said %d messages, fewer than the %d records", size, len(want))
	}
	if gotLast != wantLast {
		t.Errorf("LoadEach's last = %d, LoadStreamed's %d", gotLast, wantLast)
	}
	if len(got) != len(want) {
		t.Fatalf("LoadEach handed over %d records, LoadStreamed returned %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d: LoadEach %+v, LoadStreamed %+v", i, got[i], want[i])
		}
	}
	if got[100].Signer.Key != stranger.ID {
		t.Errorf("the event before signing is signed by %q, want the stranger's key %q", got[100].Signer.Key, stranger.ID)
	}
	wq, _ := streamed.Quarantined()
	gq, _ := each.Quarantined()
	if len(wq) != 1 || !reflect.DeepEqual(wq, gq) {
		t.Errorf("quarantined: LoadStreamed %+v, LoadEach %+v; want the forgery alike", wq, gq)
	}

	// each's error ends the read and is returned as it is.
	stop := errors.New("enough")
	n := 0
	if _, err := signedLog(t, s, admin).LoadEach(ctx, a, nil, func(events.Record) error {
		if n++; n == 3000 {
			return stop
		}
		return nil
	}); err != stop || n != 3000 {
		t.Errorf("LoadEach stopped at record %d with %v, want 3000 and %v", n, err, stop)
	}
	// An aggregate with no events has none to hand over.
	if last, err := each.LoadEach(ctx, session("none"), nil, func(events.Record) error {
		t.Error("handed a record of an aggregate with no events")
		return nil
	}); err != nil || last != 0 {
		t.Errorf("LoadEach(none) = %d, %v; want 0, nil", last, err)
	}
	if _, err := each.LoadEach(ctx, events.Aggregate{Kind: events.KindSession, ID: "a b"}, nil, nil); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("LoadEach(invalid) = %v, want ErrMalformed", err)
	}
}

// longSignedSession makes s's log hold session a (returned), judged
// against the admin key returned, long enough that a read of it goes through many blocks, interleaved
// with another session's events: 100 events stored before signing, one
// of them under a key nobody registered (the stranger, returned), whose
// verdict names that key by its header's bytes, then 10,000 signed
// events and, past the middle, a forgery quarantined the same way.
func longSignedSession(t *testing.T, s *Server) (admin, stranger *attestation.Key, a events.Aggregate) {
	t.Helper()
	admin = mustKey(t, "admin@h", attestation.RoleAdmin)
	l := signedLog(t, s, admin)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")
	last := mustAppend(t, l, decision(reg, a, 0, 1, 100)).Last // unsigned, before signing
	stranger = mustKey(t, "stranger@h", attestation.RoleServe)
	last = forge(t, s.Conn(), envelope(reg, a, 101, events.SessionActivityChanged{From: "x", To: "y"}), last, stranger, nil)
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	if ok, err := l.RegisterKey(ctx, admin, serve, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey = %v, %v", ok, err)
	}
	l.SetSigner(serve)
	ver, bLast := uint64(102), uint64(0)
	for i := range 40 {
		last = mustAppend(t, l, decision(reg, a, last, ver, 250)).Last
		ver += 250
		if i%10 == 0 {
			bLast = mustAppend(t, l, decision(reg, b, bLast, uint64(1+i), 1)).Last
		}
		if i == 25 {
			last = forge(t, s.Conn(), verdict(reg, a, ver), last, stranger, nil)
		}
	}
	return admin, stranger, a
}

// TestLoadStart_AgreesWithLoadEach loads the long session with LoadEach
// and with a LoadEach started ahead (StartLoad), the server's messages
// waiting in the started read's connection meanwhile, both over TCP as a
// reader, as audit reads through serve: the same records, signers and last
// sequence, the same forgery quarantined, over the connection and
// consumer the start opened. A start never loaded leaves
// no consumer once closed, and one of a key, of an aggregate with no
// events or of an invalid one loads as LoadEach does.
func TestLoadStart_AgreesWithLoadEach(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	admin, _, a := longSignedSession(t, s)
	ctx := t.Context()
	overTCP := func() *Log {
		t.Helper()
		nc, _ := connectRole(t, s, RoleReader)
		l, err := Open(ctx, nc, Config{Verifier: attestation.NewVerifier(admin.Public())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	collect := func(load func(each func(events.Record) error) (uint64, error)) ([]events.Record, uint64) {
		t.Helper()
		var got []events.Record
		last, err := load(func(r events.Record) error {
			got = append(got, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, last
	}
	plain := overTCP()
	want, wantLast := collect(func(each func(events.Record) error) (uint64, error) {
		return plain.LoadEach(ctx, a, nil, each)
	})
	started := overTCP()
	st := started.StartLoad(ctx, a)
	defer st.Close()
	if st.raw == nil || st.raw.pulls == nil {
		t.Fatal("StartLoad opened no raw read with pulls sent")
	}
	var size uint64
	got, gotLast := collect(func(each func(events.Record) error) (uint64, error) {
		return st.LoadEach(ctx, func(n uint64) { size = n }, each)
	})
	if st.raw != nil || !st.taken {
		t.Error("LoadEach did not take the raw read StartLoad opened")
	}
	if gotLast != wantLast || len(got) != len(want) {
		t.Fatalf("started: %d records, last %d; LoadEach: %d, last %d", len(got), gotLast, len(want), wantLast)
	}
	if size < uint64(len(want)) {
		t.Errorf("size said %d messages, fewer than the %d records", size, len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d: started %+v, LoadEach %+v", i, got[i], want[i])
		}
	}
	wq, _ := plain.Quarantined()
	gq, _ := started.Quarantined()
	if len(wq) != 1 || !reflect.DeepEqual(wq, gq) {
		t.Errorf("quarantined: LoadEach %+v, started %+v; want the forgery alike", wq, gq)
	}

	// A start never loaded leaves no consumer once closed.
	consumers := func() int {
		t.Helper()
		info, err := started.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	before := consumers()
	unused := started.StartLoad(ctx, a)
	if unused.raw == nil || consumers() != before+1 {
		t.Fatalf("StartLoad opened no consumer (%d, were %d)", consumers(), before)
	}
	unused.Close()
	unused.Close()
	if n := consumers(); n != before {
		t.Errorf("%d consumers after Close, want %d", n, before)
	}

	// What LoadEach reads without a raw read, or refuses, it does alike.
	for _, agg := range []events.Aggregate{session("none"), {Kind: events.KindKey, ID: admin.ID}} {
		want, wantLast := collect(func(each func(events.Record) error) (uint64, error) { return plain.LoadEach(ctx, agg, nil, each) })
		st := started.StartLoad(ctx, agg)
		got, gotLast := collect(func(each func(events.Record) error) (uint64, error) { return st.LoadEach(ctx, nil, each) })
		st.Close()
		if gotLast != wantLast || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: started %d records, last %d; LoadEach %d, last %d", agg, len(got), gotLast, len(want), wantLast)
		}
	}
	bad := started.StartLoad(ctx, events.Aggregate{Kind: events.KindSession, ID: "a b"})
	defer bad.Close()
	if _, err := bad.LoadEach(ctx, nil, nil); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("started LoadEach(invalid) = %v, want ErrMalformed", err)
	}
}

// TestBlockPool hands out blocks, cuts messages from them and takes
// back each once the reader is done with all of its messages: never the
// last handed out, never one with a message the reader has not passed,
// and none at all once the Log quarantined an event.
func TestBlockPool(t *testing.T) {
	t.Parallel()
	p := &blockPool{quarantined: 5}
	b1 := p.get()
	p.cut(1)
	p.cut(2)
	b2 := p.get()
	p.cut(3)
	if len(b1) != rawSlab || len(b2) != rawSlab {
		t.Fatalf("blocks of %d and %d bytes, want %d", len(b1), len(b2), rawSlab)
	}
	p.done(1, 5) // b1 still holds seq 2
	if len(p.free) != 0 {
		t.Fatalf("took back %d blocks with seq 2 unread", len(p.free))
	}
	p.done(3, 5) // b1 is done; b2 is the last handed out
	if len(p.free) != 1 || &p.free[0][0] != &b1[0] {
		t.Fatalf("free = %d blocks, want b1 alone", len(p.free))
	}
	if b := p.get(); &b[0] != &b1[0] {
		t.Error("get made a block with one free")
	}
	p.cut(4)
	p.get()
	p.cut(5)
	p.done(5, 6) // one quarantined: none goes back, now or later
	p.get()
	p.cut(6)
	p.done(6, 6)
	if len(p.free) != 0 || len(p.used) != 0 {
		t.Errorf("after a quarantine: %d free, %d in use; want none kept", len(p.free), len(p.used))
	}
	var none *blockPool
	if b := none.get(); len(b) != rawSlab {
		t.Errorf("a nil pool's block has %d bytes, want %d", len(b), rawSlab)
	}
}
