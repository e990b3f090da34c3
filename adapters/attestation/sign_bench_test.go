package attestation

// What one signature costs, per message, on one core: the share of an
// append and of a verified read that is the signature itself.
//
//	BenchmarkSign/sign    Key.Sign of a 330-byte envelope (a hook's
//	                      activity change, as logbook bench appends it):
//	                      what each appended message pays
//	BenchmarkSign/verify  Verifier.Precheck of the same message: what
//	                      each message a reader verifies pays (past a
//	                      judgment statement, or with none)
//	BenchmarkSignBatch    Key.SignBatch of 64 and of 1,000 such messages, and
//	                      Precheck of each by a fresh Verifier: the
//	                      per-message cost (ns/msg) of a held import
//	                      batch's signature, and of verifying it
//
// Run:
//
//	go test -run '^$' -bench Sign -count 5 ./adapters/attestation/

import (
	"strconv"
	"strings"
	"testing"
)

// benchData is a 330-byte envelope: a hook's activity change, as
// logbook bench appends it.
var benchData = []byte(`{"id":"01KBMZ6T3V1V9YJ6Q1G8M4X2QK","type":"session.activity_changed","agg":{"kind":"session","id":"bench-1-w0"},"ver":2,"at":"2026-12-03T11:00:00.123456Z","cause":{"kind":"hook","event":"PreToolUse","detail":"Bash","ref":"01KBMZ6T3V1V9YJ6Q1G8M4X2QJ"},"corr":"turn-1","host":"bench","actor":"claude-code","data":{"from":"thinking","to":"tool:Bash"}}`)

func BenchmarkSign(b *testing.B) {
	k, err := NewKey("serve@bench", RoleServe)
	if err != nil {
		b.Fatal(err)
	}
	subject := "lb.ev.session.bench-1-w0"
	data := benchData
	if n := len(data); n < 300 || n > 360 {
		b.Fatalf("envelope of %d bytes", n)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			k.Sign(subject, "7", data)
		}
	})
	b.Run("verify", func(b *testing.B) {
		v := NewVerifier(k.Public())
		id, sig := k.Sign(subject, "7", data)
		// The admin key's public part is known to every Verifier: the
		// same verification as a registered key's.
		if id != v.AdminID() || strings.TrimSpace(sig) == "" {
			b.Fatalf("key %s, admin %s", id, v.AdminID())
		}
		m := Message{Seq: 9, Subject: subject, Expect: "7", KeyID: id, Sig: sig, Data: data}
		for b.Loop() {
			if v.Precheck(m) != preGood {
				b.Fatal("signature does not verify")
			}
		}
	})
}

func BenchmarkSignBatch(b *testing.B) {
	for _, n := range []int{64, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchSignBatch(b, n) })
	}
}

// benchSignBatch is BenchmarkSignBatch of a batch of n messages.
func benchSignBatch(b *testing.B, n int) {
	k, err := NewKey("serve@bench", RoleServe)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]Signable, n)
	for i := range msgs {
		msgs[i] = Signable{Subject: "lb.ev.session.bench-1-w" + strconv.Itoa(i%10), Data: benchData}
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.SignBatch(msgs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
	b.Run("verify", func(b *testing.B) {
		sigs, err := k.SignBatch(msgs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			v := NewVerifier(k.Public())
			for i, s := range sigs {
				m := Message{Seq: uint64(i + 1), Subject: msgs[i].Subject, KeyID: s.Key, Batch: s.Batch, Root: s.Root, BatchSig: s.Sig, Proof: s.Proof, Data: benchData}
				if v.Precheck(m) != preGood {
					b.Fatal("does not verify")
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
}
