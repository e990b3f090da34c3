package merkle

import (
	"sync"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// BenchmarkLeafCheck measures what the fast path adds to a read for
// each message its statement covers, without the read around it: the
// message's raw header block parsed (natslog.RawHeader.Parse) and its
// leaf hashed and compared with the proven one (Proven.CheckHeader), on
// the header blocks and bodies of 1,024 signed session events as the
// server sent them to a raw read, cycled. Each op is one message;
// cpu-ns/op is the process's CPU time per op (steadier than ns/op on a
// busy machine: the time the benchmark waited for a CPU is left out). The
// first check of a chunk of 256 leaves binds it (255 interior hashes);
// the proven tree is made anew every 1,024 ops, so that each op pays
// its share of binding, as a read does. Run:
//
//	go test -run '^$' -bench LeafCheck -count 5 ./adapters/merkle/
func BenchmarkLeafCheck(b *testing.B) {
	const n = 1024
	s := startSigned(b)
	appendSession(b, s.log, events.NewRegistry(), "long", n)
	cp := judging(b, s)
	if _, _, err := cp.Once(b.Context()); err != nil {
		b.Fatal(err)
	}
	type raw struct {
		m   natslog.Msg
		blk []byte
	}
	var msgs []raw
	l, err := natslog.Open(b.Context(), s.srv.Conn(), natslog.Config{Verifier: attestation.NewVerifier(s.admin.Public())})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	j, why, err := FastPath(b.Context(), l, s.js, keys(b, s.dir), s.dir)
	if err != nil || j == nil {
		b.Fatalf("FastPath: %v, %s", err, why)
	}
	check := j.CheckHeader
	var mu sync.Mutex // the read's decoding goroutines check at once
	j.CheckHeader = func(m natslog.Msg, h *natslog.RawHeader) error {
		r := raw{natslog.Msg{Seq: m.Seq, Subject: m.Subject, Data: append([]byte(nil), m.Data...)}, append([]byte(nil), m.HeaderBlock()...)}
		mu.Lock()
		msgs = append(msgs, r)
		mu.Unlock()
		return check(m, h)
	}
	l.SetJudged(j)
	for _, err := range l.Read(b.Context(), 1) {
		if err != nil {
			b.Fatal(err)
		}
	}
	if len(msgs) < n {
		b.Fatalf("captured %d header blocks, want %d", len(msgs), n)
	}
	t, err := LoadTree(TreePath(s.dir, cp.Origin))
	if err != nil {
		b.Fatal(err)
	}
	size := t.Size()
	root, err := t.Root(size)
	if err != nil {
		b.Fatal(err)
	}
	var p *Proven
	var h natslog.RawHeader
	i := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		if i%n == 0 {
			b.StopTimer()
			if p, err = Prove(t, size, root); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		r := &msgs[i%n]
		i++
		if !h.Parse(r.blk) {
			b.Fatalf("seq %d: the header block does not parse", r.m.Seq)
		}
		if err := p.CheckHeader(r.m, &h); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(i), "cpu-ns/op")
	var bytes int
	for _, r := range msgs[:n] {
		bytes += len(r.blk) + len(r.m.Data)
	}
	b.ReportMetric(float64(bytes)/n, "msg-bytes")
}
