package natslog

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestLoadStreamed_AgreesWithLoad loads one session of a signed log,
// interleaved with another session's events, a key registered midway
// (whose events only a catch-up of the keys attests) and forgeries of
// every kind, with Load and with LoadStreamed on fresh readers: the same
// records, signers and last sequence, and the same events quarantined.
func TestLoadStreamed_AgreesWithLoad(t *testing.T) {
	t.Parallel()
	s, admin, l := judgedLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")

	last := mustAppend(t, l, decision(reg, a, 0, 1, 300)).Last // unsigned, before signing
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	later := mustKey(t, "later@h", attestation.RoleServe)
	writer := mustKey(t, "writer@h", attestation.RoleWriter)
	for _, k := range []*attestation.Key{serve, writer} {
		if ok, err := l.RegisterKey(ctx, admin, k, "h", testTime); !ok || err != nil {
			t.Fatalf("RegisterKey(%s) = %v, %v", k.Principal, ok, err)
		}
	}
	l.SetSigner(serve)
	ver, bLast := uint64(301), uint64(0)
	for i := range 4 {
		last = mustAppend(t, l, decision(reg, a, last, ver, 150)).Last
		ver += 150
		bLast = mustAppend(t, l, decision(reg, b, bLast, uint64(1+i*10), 10)).Last
	}
	// A forged verdict of each kind, then a key registered after them
	// that signs the rest.
	for _, k := range []*attestation.Key{nil, writer} {
		last = forge(t, s.Conn(), verdict(reg, a, ver), last, k, nil)
	}
	if ok, err := l.RegisterKey(ctx, admin, later, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey(later) = %v, %v", ok, err)
	}
	l.SetSigner(later)
	mustAppend(t, l, decision(reg, b, bLast, 41, 5))
	last = mustAppend(t, l, decision(reg, a, last, ver, 100)).Last

	load := signedLog(t, s, admin)
	want, wantLast, err := load.Load(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	streamed := signedLog(t, s, admin)
	got, gotLast, err := streamed.LoadStreamed(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 300+600+100 {
		t.Fatalf("Load = %d records, want %d", len(want), 300+600+100)
	}
	if gotLast != wantLast {
		t.Errorf("LoadStreamed's last = %d, Load's %d", gotLast, wantLast)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y events.Record) bool {
		return x.Seq == y.Seq && x.ID == y.ID && x.Type == y.Type && x.Signer == y.Signer
	})); diff != "" {
		t.Errorf("LoadStreamed differs from Load (-Load +LoadStreamed):\n%s", diff)
	}
	if got[len(got)-1].Signer.Key != later.ID {
		t.Errorf("last event signed by %q, want the key registered midway, %q", got[len(got)-1].Signer.Key, later.ID)
	}
	wq, _ := load.Quarantined()
	gq, _ := streamed.Quarantined()
	if len(wq) != 2 || !cmp.Equal(wq, gq) {
		t.Errorf("quarantined: Load %+v, LoadStreamed %+v; want the 2 forgeries alike", wq, gq)
	}

	// An aggregate with no events loads as none.
	if recs, last, err := streamed.LoadStreamed(ctx, session("none")); err != nil || len(recs) != 0 || last != 0 {
		t.Errorf("LoadStreamed(none) = %d records, last %d, %v; want none", len(recs), last, err)
	}
	if _, _, err := streamed.LoadStreamed(ctx, events.Aggregate{Kind: events.KindSession, ID: "a b"}); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("LoadStreamed(invalid) = %v, want ErrMalformed", err)
	}
}

// TestLoadStreamed_UndecodableIsAnError stores a message on a session's
// subject that does not decode, on a log that does not sign: LoadStreamed
// fails with a *DecodeError naming its sequence, as Load does, and
// returns no records.
func TestLoadStreamed_UndecodableIsAnError(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	a := session("a")
	mustAppend(t, l, decision(reg, a, 0, 1, 3))
	bad := publishMsg(t, s.Conn(), &nats.Msg{Subject: a.Subject(), Data: []byte(`{"not":"an event"}`)}, "junk")
	mustAppend(t, l, decision(reg, a, bad, 4, 1))
	for name, load := range map[string]func() ([]events.Record, uint64, error){
		"Load":         func() ([]events.Record, uint64, error) { return l.Load(t.Context(), a) },
		"LoadStreamed": func() ([]events.Record, uint64, error) { return l.LoadStreamed(t.Context(), a) },
	} {
		recs, _, err := load()
		de, ok := errors.AsType[*DecodeError](err)
		if !ok || de.Seq != bad || recs != nil {
			t.Errorf("%s = %d records, %v; want none and a *DecodeError at seq %d", name, len(recs), err, bad)
		}
	}
}

// TestLoad_AsksForKeysOnce loads a signed session whose every event
// follows another session's, with LoadStreamed and with Load: the key
// events are asked for once (and once more for the load's first event),
// not once per event, and the loads agree.
func TestLoad_AsksForKeysOnce(t *testing.T) {
	t.Parallel()
	s, admin, l := judgedLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	if ok, err := l.RegisterKey(ctx, admin, serve, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey = %v, %v", ok, err)
	}
	l.SetSigner(serve)
	a, b := session("a"), session("b")
	var aLast, bLast uint64
	const n = 300
	for i := range n {
		bLast = mustAppend(t, l, decision(reg, b, bLast, uint64(i+1), 1)).Last
		aLast = mustAppend(t, l, decision(reg, a, aLast, uint64(i+1), 1)).Last
	}

	gets, flush := countGets(t, s)
	var loads [][]events.Record
	for _, load := range []struct {
		name string
		f    func(*Log) ([]events.Record, uint64, error)
	}{
		{"LoadStreamed", func(l *Log) ([]events.Record, uint64, error) { return l.LoadStreamed(ctx, a) }},
		{"Load", func(l *Log) ([]events.Record, uint64, error) { return l.Load(ctx, a) }},
	} {
		flush()
		before := gets.Load()
		got, _, err := load.f(signedLog(t, s, admin))
		if err != nil {
			t.Fatal(err)
		}
		flush()
		if len(got) != n {
			t.Fatalf("%s = %d records, want %d", load.name, len(got), n)
		}
		// Load's own page is one get more than LoadStreamed's.
		if g := gets.Load() - before; g > 5 {
			t.Errorf("%s of %d events, each after another session's, made %d gets; want a few, not one per event", load.name, n, g)
		}
		loads = append(loads, got)
	}
	if !cmp.Equal(loads[0], loads[1], cmp.Comparer(func(x, y events.Record) bool {
		return x.Seq == y.Seq && x.ID == y.ID && x.Signer == y.Signer
	})) {
		t.Error("LoadStreamed differs from Load")
	}
}

// countGets counts, on a connection of its own to s, every get of
// messages by sequence or subject (direct gets, batched or not, and the
// stream's message gets) that any client of s asks the server for. Call
// flush before reading the count: it returns once the server has
// delivered every request sent before it to the counter.
func countGets(t *testing.T, s *Server) (gets *atomic.Int64, flush func()) {
	t.Helper()
	watch, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)
	gets = new(atomic.Int64)
	for _, subj := range []string{"$JS.API.DIRECT.GET." + StreamName + ".>", "$JS.API.DIRECT.GET." + StreamName, "$JS.API.STREAM.MSG.GET." + StreamName} {
		if _, err := watch.Subscribe(subj, func(*nats.Msg) { gets.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	flush = func() {
		t.Helper()
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	return gets, flush
}
