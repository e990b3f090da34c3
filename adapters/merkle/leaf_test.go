package merkle

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// LeafData is the logbook-leaf/v1 format byte for byte: the Lb- headers
// sorted by name (case as stored), each value in stored order, the
// server's headers left out.
func TestLeafDataFormat(t *testing.T) {
	m := natslog.Msg{Seq: 42, Subject: "lb.ev.session.s1", Data: []byte(`{"id":"x"}`),
		Header: nats.Header{
			"Lb-Type": {"a", "b"}, "Nats-Msg-Id": {"x"}, "Lb-Sig": {"c2ln"}, "Lb-Key": {"k1"},
			"Nats-Expected-Last-Subject-Sequence": {"0"}, "Lb-Z": {""}, "Lb-A": {"1"}, "lb-lower": {"no"},
		}}
	want := "logbook-leaf/v1\n42\nlb.ev.session.s1\n" +
		"Lb-A: 1\nLb-Key: k1\nLb-Sig: c2ln\nLb-Type: a\nLb-Type: b\nLb-Z: \n" +
		"\n" + `{"id":"x"}`
	if got := string(LeafData(m)); got != want {
		t.Fatalf("LeafData:\n%q\nwant\n%q", got, want)
	}
	if got, want := LeafHash(m), tlog.RecordHash([]byte(want)); got != want {
		t.Fatalf("LeafHash %s, want %s", got, want)
	}
}

// A message with more Lb- headers than LeafHash keeps on its stack
// hashes the same as its LeafData, its headers sorted by name.
func TestLeafHashManyHeaders(t *testing.T) {
	h := nats.Header{"Nats-Msg-Id": {"x"}}
	var want strings.Builder
	want.WriteString("logbook-leaf/v1\n7\nlb.out.c\n")
	for i := range 40 {
		h[fmt.Sprintf("Lb-H%02d", 39-i)] = []string{fmt.Sprint(39 - i)}
	}
	for i := range 40 {
		fmt.Fprintf(&want, "Lb-H%02d: %d\n", i, i)
	}
	want.WriteString("\nbody")
	m := natslog.Msg{Seq: 7, Subject: "lb.out.c", Header: h, Data: []byte("body")}
	if got := string(LeafData(m)); got != want.String() {
		t.Fatalf("LeafData:\n%q\nwant\n%q", got, want.String())
	}
	if got, want := LeafHash(m), tlog.RecordHash([]byte(want.String())); got != want {
		t.Fatalf("LeafHash %s, want %s", got, want)
	}
}

// The leaf of a raw read's fields sorts names that share the byte after
// the Lb- prefix, or have none, as a string comparison does (Lb-Batch
// before Lb-Batch-Sig, Lb- first, upper case before lower), in every
// stored order; and a value moved from one header to another makes
// another leaf.
func TestLeafHeadFieldsOrder(t *testing.T) {
	names := []string{"Lb-Batch-Sig", "Lb-Batch", "Lb-", "Lb-b", "Lb-B", "Lb-Root", "Lb-Proof", "Lb-Key", "Lb-Type", "Lb-Batch-Sig"}
	for rot := range names {
		fs := make([]natslog.HeaderField, 0, len(names)+1)
		h := nats.Header{}
		for i := range names {
			n := names[(i+rot)%len(names)]
			f := natslog.HeaderField{Name: n, Value: fmt.Sprint(i)}
			fs = append(fs, f)
			h[n] = append(h[n], f.Value)
			if i == 3 {
				fs = append(fs, natslog.HeaderField{Name: "Nats-Expected-Last-Subject-Sequence", Value: "9"})
			}
		}
		m := natslog.Msg{Seq: 3, Subject: "lb.ev.session.s", Header: h, Data: []byte("{}")}
		if got, want := string(appendLeafHeadFields(nil, m.Seq, m.Subject, fs)), string(appendLeafHead(nil, m)); got != want {
			t.Fatalf("rotation %d: leaf head of the fields:\n%q\nof the header:\n%q", rot, got, want)
		}
		moved := slices.Clone(fs)
		moved[0].Value, moved[1].Value = moved[1].Value, moved[0].Value
		if leafHashFields(m.Seq, m.Subject, moved, m.Data) == leafHashFields(m.Seq, m.Subject, fs, m.Data) {
			t.Fatalf("rotation %d: values of %s and %s swapped, the same leaf", rot, fs[0].Name, fs[1].Name)
		}
	}
}

// BenchmarkLeafHash hashes a message shaped as an event is stored: three
// Lb- headers among the server's, a body of about 600 bytes.
func BenchmarkLeafHash(b *testing.B) {
	m := natslog.Msg{Seq: 123456, Subject: "lb.ev.session.5ca1e10e-0000-4000-8000-000000000001",
		Data: []byte(strings.Repeat("x", 600)),
		Header: nats.Header{
			"Lb-Key": {"bef59efe181efab6"}, "Lb-Sig": {strings.Repeat("s", 88)}, "Lb-Type": {"session.activity_changed"},
			"Nats-Batch-Id": {"5AdPTVz444PfRs7ttQki2m"}, "Nats-Batch-Sequence": {"1"},
			"Nats-Expected-Last-Subject-Sequence": {"0"}, "Nats-Msg-Id": {"01M8YD9HEAEZ7FF4BMH18FDEVN"},
		}}
	b.ReportAllocs()
	for b.Loop() {
		LeafHash(m)
	}
}

// BenchmarkLeafHead is BenchmarkLeafHash without the SHA-256: the leaf's
// head made of the message's sequence, subject and Lb- headers.
func BenchmarkLeafHead(b *testing.B) {
	m := natslog.Msg{Seq: 123456, Subject: "lb.ev.session.5ca1e10e-0000-4000-8000-000000000001",
		Header: nats.Header{
			"Lb-Key": {"bef59efe181efab6"}, "Lb-Sig": {strings.Repeat("s", 88)}, "Lb-Type": {"session.activity_changed"},
			"Nats-Batch-Id": {"5AdPTVz444PfRs7ttQki2m"}, "Nats-Batch-Sequence": {"1"},
			"Nats-Expected-Last-Subject-Sequence": {"0"}, "Nats-Msg-Id": {"01M8YD9HEAEZ7FF4BMH18FDEVN"},
		}}
	var buf [512]byte
	b.ReportAllocs()
	for b.Loop() {
		appendLeafHead(buf[:0], m)
	}
}

// The leaf of a message's headers in stored order (a raw read's,
// natslog.RawHeader) is the leaf of the same headers decoded into a
// Header: the Lb- ones sorted by name, the values of one name in stored
// order, however the names come in the block.
func TestLeafHeadOfFieldsIsLeafHeadOfHeader(t *testing.T) {
	fs := []natslog.HeaderField{
		{Name: "Lb-Type", Value: "a"}, {Name: "Nats-Expected-Last-Subject-Sequence", Value: "0"}, {Name: "Lb-Sig", Value: "c2ln"}, {Name: "Lb-Z", Value: ""},
		{Name: "Lb-Type", Value: "b"}, {Name: "Lb-Key", Value: "k1"}, {Name: "Lb-A", Value: "1"}, {Name: "Lb-Type", Value: "c"}, {Name: "Lb-", Value: "empty name"}, {Name: "Lb-A", Value: "0"},
	}
	h := nats.Header{}
	for _, f := range fs {
		h[f.Name] = append(h[f.Name], f.Value)
	}
	m := natslog.Msg{Seq: 42, Subject: "lb.ev.session.s1", Header: h}
	want := string(appendLeafHead(nil, m))
	if got := string(appendLeafHeadFields(nil, m.Seq, m.Subject, fs)); got != want {
		t.Fatalf("leaf head of the fields:\n%q\nof the header:\n%q", got, want)
	}
	m.Data = []byte(`{"id":"x"}`)
	if got, want := leafHashFields(m.Seq, m.Subject, fs, m.Data), LeafHash(m); got != want {
		t.Fatalf("leaf hash of the fields %s, of the header %s", got, want)
	}
	many := make([]natslog.HeaderField, 0, 40)
	mh := nats.Header{}
	for i := range 40 {
		f := natslog.HeaderField{Name: fmt.Sprintf("Lb-H%02d", (i*7)%40), Value: fmt.Sprint(i)}
		many = append(many, f)
		mh[f.Name] = append(mh[f.Name], f.Value)
	}
	m = natslog.Msg{Seq: 7, Subject: "lb.out.c", Header: mh}
	if got, want := string(appendLeafHeadFields(nil, m.Seq, m.Subject, many)), string(appendLeafHead(nil, m)); got != want {
		t.Fatalf("leaf head of 40 fields:\n%q\nof the header:\n%q", got, want)
	}
}
