package events_test

import (
	"encoding/json"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// BenchmarkDecode measures the strict decoder on each golden sample's
// wire form: the per-event cost every read, replay and projection pays.
func BenchmarkDecode(b *testing.B) {
	reg := events.NewRegistry()
	for _, p := range samples() {
		wire, err := json.Marshal(envelope(reg, p))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.EventType(), func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Decode(wire); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
