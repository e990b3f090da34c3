package merkle

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// A byte changed in a header of an event the statement covers, in a
// value or in a name (the name's Lb- prefix too, which takes the header
// out of what the leaf covers), makes it another leaf than the signed
// root binds: a read on the fast path (whose raw read hashes the leaf
// from the header block as the server sent it) stops there, naming its
// sequence, and so does a streamed load of its subject (audit's read).
func TestFastPath_ChangedHeaderByteNamedAtItsSequence(t *testing.T) {
	flip := func(s string, i int) string { b := []byte(s); b[i] ^= 0x01; return string(b) }
	rename := func(h nats.Header, from, to string) {
		h[to] = h[from]
		delete(h, from)
	}
	for _, tc := range []struct {
		name string
		edit func(*nats.Msg)
	}{
		{"value", func(m *nats.Msg) {
			v := m.Header.Get(attestation.HeaderSig)
			m.Header.Set(attestation.HeaderSig, flip(v, len(v)/2))
		}},
		{"value of a header that is not a signature", func(m *nats.Msg) {
			m.Header.Set(natslog.HeaderType, flip(m.Header.Get(natslog.HeaderType), 0))
		}},
		{"name", func(m *nats.Msg) { rename(m.Header, attestation.HeaderKey, flip(attestation.HeaderKey, 4)) }},
		{"name's prefix", func(m *nats.Msg) { rename(m.Header, natslog.HeaderType, flip(natslog.HeaderType, 1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSigned(t)
			fillSigned(t, s)
			cp := judging(t, s)
			if _, _, err := cp.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
			rewrittenMsg(t, s, cp, 6, tc.edit)
			l := reader(t, s)
			fastPath(t, s, l)
			got, err := readAll(t.Context(), l)
			if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") {
				t.Fatalf("read %+v: %v, want seq 6 named", got, err)
			}
			for _, r := range got {
				if r.Seq >= 6 {
					t.Errorf("read yielded seq %d past the changed message", r.Seq)
				}
			}
			recs, _, err := l.LoadStreamed(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s3"})
			if err == nil || !strings.Contains(err.Error(), "seq 6: the stored message hashes to") || recs != nil {
				t.Fatalf("streamed load of s3: %d records, %v; want none, seq 6 named", len(recs), err)
			}
		})
	}
}
