package replay_test

import (
	"math/rand/v2"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/synth"
	"github.com/logbook-dev/logbook/reducers/session"
)

// BenchmarkFoldWork measures, per event and without a server, the two
// parts of a replay that raw reading does not pay: the strict decoding
// of the wire form (decode) and the session reducer's fold (evolve). The
// log is the one `logbook bench` reads: a generated history of 20,000
// events over 100 sessions (synth, seed 4, 2).
//
//	go test -run '^$' -bench FoldWork -count 3 ./replay/
func BenchmarkFoldWork(b *testing.B) {
	h := synth.NewHistory(synth.Epoch())
	rng := rand.New(rand.NewPCG(4, 2))
	for len(h.Records) < 20_000 {
		if err := h.Step(rng, 100); err != nil {
			b.Fatal(err)
		}
	}
	wire := make([][]byte, len(h.Records))
	envs := make([]events.Envelope, len(h.Records))
	for i, r := range h.Records {
		w, err := r.Envelope.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		wire[i], envs[i] = w, r.Envelope
	}
	b.Run("decode", func(b *testing.B) {
		d := events.NewRegistry().NewDecoder()
		b.ReportAllocs()
		for b.Loop() {
			for _, w := range wire {
				if _, err := d.Decode(w); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(wire)), "ns/event")
	})
	b.Run("evolve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			states := map[string]*session.State{}
			for _, e := range envs {
				session.EvolveIn(states, e)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(envs)), "ns/event")
	})
}
