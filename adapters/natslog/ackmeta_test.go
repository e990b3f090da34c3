package natslog

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// TestAckMetaAgreesWithMetadata reads every message of a log through an
// ordered consumer, as consume does, and checks that ackMeta reads from
// each reply subject what jetstream's Metadata reads.
func TestAckMetaAgreesWithMetadata(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	var expect uint64
	for ver := uint64(1); ver <= 30; ver += 10 {
		expect = mustAppend(t, l, decision(reg, session("a"), expect, ver, 10)).Last
	}
	js, err := jetstream.New(s.Conn())
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(t.Context(), StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventFilter}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages(ReadPull(s.Conn().MaxPayload()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for i := range 30 {
		m, err := it.Next(jetstream.NextContext(t.Context()))
		if err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		seq, pending, at, err := ackMeta(m.Reply())
		if err != nil {
			t.Fatalf("ackMeta(%q): %v", m.Reply(), err)
		}
		if seq != md.Sequence.Stream || pending != md.NumPending || !at.Equal(md.Timestamp) {
			t.Errorf("ackMeta(%q) = seq %d, pending %d, %v; Metadata: seq %d, pending %d, %v", m.Reply(), seq, pending, at, md.Sequence.Stream, md.NumPending, md.Timestamp)
		}
	}
}

// TestAckMeta reads both forms of the ack subject, and refuses a subject
// of another shape with an error that names it.
func TestAckMeta(t *testing.T) {
	t.Parallel()
	ns := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC).UnixNano()
	for _, tc := range []struct {
		name, reply  string
		seq, pending uint64
		wantErr      bool
		wantNano     int64
	}{
		{name: "v1", reply: "$JS.ACK.LB.c1.1.42.7.1796032800123456789.5", seq: 42, pending: 5, wantNano: ns},
		{name: "v2", reply: "$JS.ACK._.hash.LB.c1.1.42.7.1796032800123456789.5.rnd", seq: 42, pending: 5, wantNano: ns},
		{name: "v2 without the last token", reply: "$JS.ACK.dom.hash.LB.c1.1.42.7.1796032800123456789.0", seq: 42, pending: 0, wantNano: ns},
		{name: "not a number reads 0", reply: "$JS.ACK.LB.c1.1.4x.7.1796032800123456789.5", seq: 0, pending: 5, wantNano: ns},
		{name: "no reply", reply: "", wantErr: true},
		{name: "an inbox", reply: "_INBOX.abc.def", wantErr: true},
		{name: "too few tokens", reply: "$JS.ACK.LB.c1.1.42.7.5", wantErr: true},
		{name: "ten tokens", reply: "$JS.ACK.d.LB.c1.1.42.7.1796032800123456789.5", wantErr: true},
		{name: "another prefix", reply: "$JS.NAK.LB.c1.1.42.7.1796032800123456789.5", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq, pending, at, err := ackMeta(tc.reply)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "reply subject \""+tc.reply+"\"") {
					t.Fatalf("ackMeta(%q) error = %v, want one naming the subject", tc.reply, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if seq != tc.seq || pending != tc.pending || at.UnixNano() != tc.wantNano {
				t.Errorf("ackMeta(%q) = %d, %d, %d; want %d, %d, %d", tc.reply, seq, pending, at.UnixNano(), tc.seq, tc.pending, tc.wantNano)
			}
		})
	}
}
