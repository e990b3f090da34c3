package natslog

// Benchmarks of what signing costs, each signed path beside its unsigned
// twin in the same run (read the ratios):
//
//	BenchmarkAttestAppend/unsigned, /signed   BenchmarkAppend's 64 writers,
//	                                          without and with an Ed25519
//	                                          signature on every message
//	BenchmarkAttestRead/unverified, /verified Log.Read of 50k signed
//	                                          events, without and with a
//	                                          Verifier judging each
//
// Run:
//
//	go test -run '^$' -bench Attest -benchtime 3s -count 5 ./adapters/natslog/

import (
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

func BenchmarkAttestAppend(b *testing.B) {
	reg := events.NewRegistry()
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		if signed {
			name = "signed"
		}
		b.Run(name, func(b *testing.B) {
			l, _ := newLog(b)
			if signed {
				k, err := attestation.NewKey("serve@bench", attestation.RoleServe)
				if err != nil {
					b.Fatal(err)
				}
				l.SetSigner(k)
			}
			appendWriters(b, l, reg)
		})
	}
}

func BenchmarkAttestRead(b *testing.B) {
	const n = 50_000
	reg := events.NewRegistry()
	s := startServer(b, b.TempDir())
	admin, err := attestation.NewKey("admin@bench", attestation.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	k, err := attestation.NewKey("serve@bench", attestation.RoleServe)
	if err != nil {
		b.Fatal(err)
	}
	w := openLog(b, s)
	if _, err := w.BeginSigning(b.Context(), admin, "bench", testTime); err != nil {
		b.Fatal(err)
	}
	if _, err := w.RegisterKey(b.Context(), admin, k, "bench", testTime); err != nil {
		b.Fatal(err)
	}
	w.SetSigner(k)
	for i := 0; i < n; i += events.MaxBatch {
		mustAppend(b, w, decision(reg, session(fmt.Sprintf("r%d", i)), 0, 1, min(events.MaxBatch, n-i)))
	}
	for _, verified := range []bool{false, true} {
		name := "unverified"
		if verified {
			name = "verified"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cfg := Config{}
				if verified {
					cfg.Verifier = attestation.NewVerifier(admin.Public())
				}
				l, err := Open(b.Context(), s.Conn(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for _, err := range l.Read(b.Context(), 0) {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				l.Close()
				if got != n+2 {
					b.Fatalf("read %d events, want %d", got, n+2)
				}
				if _, q := l.Quarantined(); q != 0 {
					b.Fatalf("%d quarantined", q)
				}
			}
			reportRate(b, b.N*n)
		})
	}
}
