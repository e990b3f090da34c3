package natslog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// noEventCause is a session.ended whose cause lacks its event: it does
// not decode (events.ErrMissingCause).
const noEventCause = `{"id":"01M93N00000000000000000001","type":"session.ended","v":1,"agg":{"kind":"session","id":"a"},"ver":99,"at":"2026-12-05T17:44:00Z","cause":{"kind":"worker","ref":"w1"},"host":"vm","actor":"worker","data":{"from":"ready","reason":"x"}}`

// readSeqs reads l from from and returns the sequences it yields and
// the sequences of the *DecodeErrors it yields; any other error fails
// the test.
func readSeqs(t *testing.T, l *Log, from uint64) (seqs, bad []uint64) {
	t.Helper()
	for r, err := range l.Read(t.Context(), from) {
		if de, ok := errors.AsType[*DecodeError](err); ok {
			bad = append(bad, de.Seq)
			continue
		}
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		seqs = append(seqs, r.Seq)
	}
	return seqs, bad
}

// TestUndecodable_UnpinnedFoldsAsPinned: once signing began, messages a
// holder of the stream's credentials publishes that do not decode (a
// cause without its event, not JSON, another subject's event, one
// carrying a signature) stop no reader that pins no admin key either:
// every read path of such a Log (Read from the start and the middle,
// Follow, Load, LoadAfter, LoadStreamed, a projection caught up and
// following) quarantines them as the origin and a pinned follower do,
// and its projection reaches the same state hash at the same sequence.
func TestUndecodable_UnpinnedFoldsAsPinned(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, origin := startSigning(t, serve)
	origin.SetSigner(serve)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")
	first := mustAppend(t, origin, decision(reg, a, 0, 1, 2))
	mustAppend(t, origin, decision(reg, b, 0, 1, 1))

	valid, err := decision(reg, session("c"), 0, 1, 1).Events[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	junk := []*nats.Msg{
		{Subject: a.Subject(), Data: []byte(noEventCause)},
		{Subject: b.Subject(), Data: []byte("not json at all")},
		{Subject: "lb.ev.session.d", Data: valid}, // c's event on d's subject
		{Subject: a.Subject(), Header: nats.Header{}, Data: []byte(`{"id":"x"}`)},
	}
	sign(serve, junk[3]) // signed by a registered key: still no type
	var junkSeqs []uint64
	for _, m := range junk {
		junkSeqs = append(junkSeqs, publishMsg(t, s.Conn(), m, "publish junk on "+m.Subject))
	}
	more := mustAppend(t, origin, decision(reg, a, junkSeqs[3], 3, 1))

	unpinned := openLog(t, s) // a follower that pins no admin key
	logs := []struct {
		name string
		l    *Log
	}{{"origin", origin}, {"pinned", signedLog(t, s, admin)}, {"unpinned", unpinned}}
	type result struct {
		read, mid, loadA, afterA, streamedA []uint64
		hash                                string
		cp                                  uint64
	}
	seqsOf := func(recs []events.Record) []uint64 {
		out := []uint64{}
		for _, r := range recs {
			out = append(out, r.Seq)
		}
		return out
	}
	var want result
	for i, x := range logs {
		var got result
		var bad []uint64
		if got.read, bad = readSeqs(t, x.l, 1); len(bad) != 0 {
			t.Errorf("%s: Read from the start stopped at %v", x.name, bad)
		}
		if got.mid, bad = readSeqs(t, x.l, junkSeqs[0]-1); len(bad) != 0 {
			t.Errorf("%s: Read from the middle stopped at %v", x.name, bad)
		}
		for name, load := range map[string]func() ([]events.Record, uint64, error){
			"Load":         func() ([]events.Record, uint64, error) { return x.l.Load(ctx, a) },
			"LoadAfter":    func() ([]events.Record, uint64, error) { return x.l.LoadAfter(ctx, a, first.First) },
			"LoadStreamed": func() ([]events.Record, uint64, error) { return x.l.LoadStreamed(ctx, a) },
		} {
			recs, last, err := load()
			if err != nil || last != more.Last {
				t.Errorf("%s: %s(a) = %d records up to %d, %v; want the real ones up to %d", x.name, name, len(recs), last, err, more.Last)
			}
			switch name {
			case "Load":
				got.loadA = seqsOf(recs)
			case "LoadAfter":
				got.afterA = seqsOf(recs)
			default:
				got.streamedA = seqsOf(recs)
			}
		}
		store := memStore(t)
		r := &projections.Runner{Log: x.l, Store: store}
		if _, err := r.RunToEnd(ctx); err != nil {
			t.Fatalf("%s: projection stopped: %v", x.name, err)
		}
		if got.hash, got.cp, err = store.Hash(); err != nil {
			t.Fatal(err)
		}
		if got.cp != more.Last {
			t.Errorf("%s: projection at %d, want %d", x.name, got.cp, more.Last)
		}
		if _, n := x.l.Quarantined(); n != uint64(len(junk)) {
			t.Errorf("%s: %d quarantined, want %d", x.name, n, len(junk))
		}
		if i == 0 {
			want = got
			if fmt.Sprint(want.loadA) != fmt.Sprint([]uint64{first.First, first.Last, more.First}) {
				t.Errorf("origin: Load(a) = %v, want a's three real events", want.loadA)
			}
			continue
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s read\n%+v\nthe origin read\n%+v", x.name, got, want)
		}
	}
	for _, q := range func() []Quarantined { qs, _ := unpinned.Quarantined(); return qs }() {
		if q.Verdict.Status != attestation.Undecodable {
			t.Errorf("unpinned: seq %d quarantined as %s, want %s", q.Seq, q.Verdict.Status, attestation.Undecodable)
		}
	}

	// Following: a projection of a fresh unpinned Log, caught up, meets
	// a message that does not decode as the log's newest one.
	follower := openLog(t, s)
	store := memStore(t)
	r := &projections.Runner{Log: follower, Store: store}
	if _, err := r.RunToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	run, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(run) }()
	defer func() { cancel(); <-done }()
	m := &nats.Msg{Subject: b.Subject(), Data: []byte(`{"id":"y"}`)}
	last := publishMsg(t, s.Conn(), m, "publish junk while following")
	wait, stop := context.WithTimeout(ctx, 20*time.Second) // a hang guard
	defer stop()
	if err := store.WaitFor(wait, last); err != nil {
		select {
		case err := <-done:
			t.Fatalf("following stopped: %v", err)
		default:
		}
		t.Fatalf("following: %v", err)
	}
	if hash, cp, err := store.Hash(); err != nil || hash != want.hash || cp != last {
		t.Errorf("following: hash %s at %d, %v; want %s at %d", hash, cp, err, want.hash, last)
	}
}

// TestUndecodable_BeforeSigningIsAnError: a message that does not decode
// stored before signing began is an error to every reader, pinned or
// not; one stored after is quarantined by both, so both yield the same
// records and errors.
func TestUndecodable_BeforeSigningIsAnError(t *testing.T) {
	t.Parallel()
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	s, admin, origin := judgedLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	mustAppend(t, origin, decision(reg, session("a"), 0, 1, 1))
	before := publishRaw(t, s, "lb.ev.session.x", noEventCause)
	if ok, err := origin.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	if ok, err := origin.RegisterKey(ctx, admin, serve, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey = %v, %v", ok, err)
	}
	origin.SetSigner(serve)
	publishRaw(t, s, "lb.ev.session.y", noEventCause)
	mustAppend(t, origin, decision(reg, session("b"), 0, 1, 1))

	var want string
	for i, l := range []*Log{signedLog(t, s, admin), openLog(t, s)} {
		seqs, bad := readSeqs(t, l, 1)
		if fmt.Sprint(bad) != fmt.Sprint([]uint64{before}) {
			t.Errorf("Log %d: decode errors at %v, want only at %d, before signing", i, bad, before)
		}
		if got := fmt.Sprint(seqs); i == 0 {
			want = got
		} else if got != want {
			t.Errorf("unpinned Read = %s, pinned %s", got, want)
		}
	}
}
