package natslog

import (
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestRead_BlocksUsedAgain reads a signed log long enough that its read
// goes through many blocks, which Read cuts messages from and uses
// again, keeping every record it yields (looked at only once the read
// is over): each session's records are those LoadStreamed returns,
// payloads and signers alike. The first session holds an event stored
// before signing under a key nobody registered, whose verdict names
// that key by its header's bytes, and, past the middle, a forgery
// quarantined the same way by both.
func TestRead_BlocksUsedAgain(t *testing.T) {
	t.Parallel()
	s, admin, l := judgedLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a, b := session("a"), session("b")

	last := mustAppend(t, l, decision(reg, a, 0, 1, 100)).Last // unsigned, before signing
	stranger := mustKey(t, "stranger@h", attestation.RoleServe)
	last = forge(t, s.Conn(), envelope(reg, a, 101, events.SessionActivityChanged{From: "x", To: "y"}), last, stranger, nil)
	if ok, err := l.BeginSigning(ctx, admin, "h", testTime); !ok || err != nil {
		t.Fatalf("BeginSigning = %v, %v", ok, err)
	}
	serve := mustKey(t, "serve@h", attestation.RoleServe)
	if ok, err := l.RegisterKey(ctx, admin, serve, "h", testTime); !ok || err != nil {
		t.Fatalf("RegisterKey = %v, %v", ok, err)
	}
	l.SetSigner(serve)
	ver, bLast, bVer := uint64(102), uint64(0), uint64(0)
	for i := range 40 {
		last = mustAppend(t, l, decision(reg, a, last, ver, 250)).Last
		ver += 250
		if i%10 == 0 {
			bVer++
			bLast = mustAppend(t, l, decision(reg, b, bLast, bVer, 1)).Last
		}
		if i == 25 {
			last = forge(t, s.Conn(), verdict(reg, a, ver), last, stranger, nil)
		}
	}

	streamed := signedLog(t, s, admin)
	reader := signedLog(t, s, admin)
	got := map[events.Aggregate][]events.Record{}
	for r, err := range reader.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		got[r.Agg] = append(got[r.Agg], r)
	}
	for _, agg := range []events.Aggregate{a, b} {
		want, _, err := streamed.LoadStreamed(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[agg]) != len(want) {
			t.Fatalf("%s: Read yielded %d records, LoadStreamed returned %d", agg, len(got[agg]), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[agg][i], want[i]) {
				t.Fatalf("%s: record %d: Read %+v, LoadStreamed %+v", agg, i, got[agg][i], want[i])
			}
		}
	}
	if len(got[a]) != 100+1+40*250 {
		t.Fatalf("Read yielded %d records of %s, want %d", len(got[a]), a, 100+1+40*250)
	}
	if got[a][100].Signer.Key != stranger.ID {
		t.Errorf("the event before signing is signed by %q, want the stranger's key %q", got[a][100].Signer.Key, stranger.ID)
	}
	wq, _ := streamed.Quarantined()
	gq, _ := reader.Quarantined()
	if len(wq) != 1 || !reflect.DeepEqual(wq, gq) {
		t.Errorf("quarantined: LoadStreamed %+v, Read %+v; want the forgery alike", wq, gq)
	}
}
