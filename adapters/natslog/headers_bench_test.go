package natslog

import (
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// BenchmarkBatchHeaders measures what each header an import stores with
// its messages costs the server: the same messages (bodies of a typical
// event) go out in full atomic batches of events.MaxBatch from one
// publisher (LOGBOOK_BENCH_EVENTS of them, default 50000, a multiple of
// events.MaxBatch), each batch made of decisions of
// LOGBOOK_BENCH_DECISION (default 50) events on subjects of their own
// (bodies padded to LOGBOOK_BENCH_BODY bytes when it is set),
// each on a fresh server with fsync always, with
//
//	none     no headers
//	msgid    + Nats-Msg-Id (a fresh ULID per message)
//	expect   + Nats-Expected-Last-Subject-Sequence on each decision's
//	         first message (the subject's true last sequence)
//	lb       + Lb-Type and the batch signature headers (Lb-Key, Lb-Batch,
//	         Lb-Root, Lb-Batch-Sig, Lb-Proof), one signature a batch
//	lb-noproof  lb without Lb-Proof
//	all      msgid, expect and lb together: what the import stores
//
// The headers are built and signed before the timed part: only
// publishing and storing are measured. The variants take turns, round
// after round (LOGBOOK_BENCH_ROUNDS, default 5), and it reports for each
// the median of its events/s (<variant>-ev/s) and of the CPU time (user
// and system, publisher and server, which share this process) per event
// (<variant>-cpu-µs/ev), and each rate against none's (<variant>/none).
// Run:
//
//	go test -run '^$' -bench BatchHeaders -benchtime 1x ./adapters/natslog/
func BenchmarkBatchHeaders(b *testing.B) {
	total := envInt(b, "LOGBOOK_BENCH_EVENTS", 50*events.MaxBatch)
	decision := envInt(b, "LOGBOOK_BENCH_DECISION", 50)
	rounds := envInt(b, "LOGBOOK_BENCH_ROUNDS", 5)
	if total < events.MaxBatch || total%events.MaxBatch != 0 {
		b.Fatalf("LOGBOOK_BENCH_EVENTS=%d: want a multiple of %d", total, events.MaxBatch)
	}
	if decision < 1 || events.MaxBatch%decision != 0 {
		b.Fatalf("LOGBOOK_BENCH_DECISION=%d: want a divisor of %d", decision, events.MaxBatch)
	}
	reg := events.NewRegistry()
	body := payload(b, reg)
	if n := envInt(b, "LOGBOOK_BENCH_BODY", 0); n > len(body) {
		// A body of n bytes: the event's, its last '}' moved past a
		// member that pads it.
		pad := append(body[:len(body)-1:len(body)-1], `,"pad":"`...)
		for len(pad) < n-2 {
			pad = append(pad, 'x')
		}
		body = append(pad, `"}`...)
	}
	key, err := attestation.NewKey("bench", attestation.RoleWriter)
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name                   string
		msgID, expect, lb, prf bool
	}
	variants := []variant{
		{name: "none"},
		{name: "msgid", msgID: true},
		{name: "expect", expect: true},
		{name: "lb", lb: true, prf: true},
		{name: "lb-noproof", lb: true},
		{name: "all", msgID: true, expect: true, lb: true, prf: true},
	}
	rates := make(map[string][]float64)
	cpus := make(map[string][]float64)
	for range b.N {
		for range rounds {
			for _, v := range variants {
				s := startServer(b, b.TempDir())
				l, err := Open(b.Context(), s.Conn(), Config{})
				if err != nil {
					b.Fatal(err)
				}
				base, err := l.LastSeq(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				l.Close()
				batches := headerBatches(b, key, body, total, decision, base, v.msgID, v.expect, v.lb, v.prf)
				js, err := jetstream.New(s.Conn())
				if err != nil {
					b.Fatal(err)
				}
				start, cpu0 := time.Now(), rusageCPU()
				for _, msgs := range batches {
					if _, err := jetstreamext.PublishMsgBatch(b.Context(), js, msgs); err != nil {
						b.Fatalf("%s: %v", v.name, err)
					}
				}
				took, cpu := time.Since(start), rusageCPU()-cpu0
				rates[v.name] = append(rates[v.name], float64(total)/took.Seconds())
				cpus[v.name] = append(cpus[v.name], float64(cpu.Microseconds())/float64(total))
				if err := s.Shutdown(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	none := median(rates["none"])
	for _, v := range variants {
		r := median(rates[v.name])
		b.ReportMetric(r, v.name+"-ev/s")
		b.ReportMetric(median(cpus[v.name]), v.name+"-cpu-µs/ev")
		b.ReportMetric(r/none, v.name+"/none")
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
}

// headerBatches returns total messages of body in atomic batches of
// events.MaxBatch, each made of decisions of decision messages on
// subjects lb.ev.session.h<k> (a batch's decisions on distinct
// subjects, 40 subjects in turn), as stored on a stream whose last
// sequence is base: with a Nats-Msg-Id each (msgID), each decision's
// first message with its subject's expected last sequence (expect), and
// Lb-Type with one batch signature a batch (lb; its proofs only with
// proof).
func headerBatches(b *testing.B, key *attestation.Key, body []byte, total, decision int, base uint64, msgID, expect, lb, proof bool) [][]*nats.Msg {
	const subjects = 40
	last := make(map[string]uint64)
	seq := base
	var out [][]*nats.Msg
	d := 0
	for sent := 0; sent < total; sent += events.MaxBatch {
		msgs := make([]*nats.Msg, 0, events.MaxBatch)
		for len(msgs) < events.MaxBatch {
			subject := "lb.ev.session.h" + strconv.Itoa(d%subjects)
			d++
			for i := range decision {
				m := nats.NewMsg(subject)
				m.Data = body
				seq++
				if msgID {
					m.Header.Set(jetstream.MsgIDHeader, ulid.Make().String())
				}
				if expect && i == 0 {
					m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last[subject], 10))
				}
				if lb {
					m.Header.Set(HeaderType, "session.activity_changed")
				}
				msgs = append(msgs, m)
			}
			last[subject] = seq
		}
		if lb {
			items := make([]attestation.Signable, len(msgs))
			for i, m := range msgs {
				items[i] = attestation.Signable{Subject: m.Subject, Expect: m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), Data: m.Data}
			}
			sigs, err := key.SignBatch(items)
			if err != nil {
				b.Fatal(err)
			}
			for i, m := range msgs {
				g := sigs[i]
				m.Header.Set(attestation.HeaderKey, g.Key)
				m.Header.Set(attestation.HeaderBatch, g.Batch)
				m.Header.Set(attestation.HeaderRoot, g.Root)
				m.Header.Set(attestation.HeaderBatchSig, g.Sig)
				if proof {
					m.Header.Set(attestation.HeaderProof, g.Proof)
				}
			}
		}
		out = append(out, msgs)
	}
	return out
}

// envInt returns the integer in the environment variable name, or def
// when it is unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// rusageCPU returns the user and system CPU time this process has used.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the median of xs (0 for none), the mean of the middle
// two for an even count.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
