package session_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/logbook-dev/logbook/projections/synth"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestEvolveInPlace folds generated histories both ways, State.Evolve in
// place and Evolve by value, and checks after every event that the two
// agree and that the in-place fold wrote no memory a copy taken before
// the event shares: the copy still equals the by-value state of the step
// before.
func TestEvolveInPlace(t *testing.T) {
	for seed := range uint64(8) {
		h, err := synth.Generate(rand.New(rand.NewPCG(seed, 7)), 400, 6)
		if err != nil {
			t.Fatal(err)
		}
		byValue := map[string]session.State{}
		inPlace := map[string]*session.State{}
		for _, r := range h.Records {
			want, ok := byValue[r.Agg.ID]
			if !ok {
				want = session.Init(r.Agg)
			}
			var before session.State
			if got := inPlace[r.Agg.ID]; got != nil {
				before = *got
			} else {
				before = session.Init(r.Agg)
			}
			session.EvolveIn(inPlace, r.Envelope)
			got := inPlace[r.Agg.ID]
			if !reflect.DeepEqual(before, want) {
				t.Fatalf("seed %d, seq %d (%s): State.Evolve changed memory a copy taken before shares", seed, r.Seq, r.Type)
			}
			want = session.Evolve(want, r.Envelope)
			byValue[r.Agg.ID] = want
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("seed %d, seq %d (%s): State.Evolve and Evolve disagree:\nin place %+v\nby value %+v", seed, r.Seq, r.Type, *got, want)
			}
		}
	}
}
