package natslog

// Benchmarks of what signing costs, each signed path beside its unsigned
// twin in the same run (read the ratios):
//
//	BenchmarkAttestAppend/unsigned, /signed   BenchmarkAppend's 64 writers,
//	                                          without and with an Ed25519
//	                                          signature on every message
//	BenchmarkAttestAppend/checked             signed, by a Log that judges
//	                                          (a Verifier, signing begun, the
//	                                          key registered) and so checks
//	                                          the key's state before each
//	                                          commit: serve's appends
//	BenchmarkAttestKeyCatchUp                 CatchUpKeys alone (the last
//	                                          key event, by the wildcard
//	                                          lb.ev.key.>), on a log of 1
//	                                          and of 20,000 subjects
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
	for _, name := range []string{"unsigned", "signed", "checked"} {
		b.Run(name, func(b *testing.B) {
			var l *Log
			if name == "checked" {
				l = benchCheckedLog(b)
			} else {
				l, _ = newLog(b)
			}
			if name == "signed" {
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

// benchCheckedLog starts a server and opens a Log on it that judges
// against a new admin key, has begun signing, and signs with a serve key
// the admin registered.
func benchCheckedLog(b *testing.B) *Log {
	s := startServer(b, b.TempDir())
	admin, err := attestation.NewKey("admin@bench", attestation.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	k, err := attestation.NewKey("serve@bench", attestation.RoleServe)
	if err != nil {
		b.Fatal(err)
	}
	l := openLogWith(b, s, Config{Verifier: attestation.NewVerifier(admin.Public())})
	if _, err := l.BeginSigning(b.Context(), admin, "bench", testTime); err != nil {
		b.Fatal(err)
	}
	if _, err := l.RegisterKey(b.Context(), admin, k, "bench", testTime); err != nil {
		b.Fatal(err)
	}
	l.SetSigner(k)
	return l
}

func BenchmarkAttestKeyCatchUp(b *testing.B) {
	reg := events.NewRegistry()
	for _, subjects := range []int{1, 20_000} {
		b.Run(fmt.Sprintf("subjects=%d", subjects), func(b *testing.B) {
			l := benchCheckedLog(b)
			// Raw messages on subjects of their own: the lookup's cost is
			// the subjects', not the events'.
			body := payload(b, reg)
			for i := range subjects {
				if _, err := l.js.PublishAsync(session(fmt.Sprintf("s%d", i)).Subject(), body); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 || i == subjects-1 {
					select {
					case <-l.js.PublishAsyncComplete():
					case <-b.Context().Done():
						b.Fatal(b.Context().Err())
					}
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := l.CatchUpKeys(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
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
