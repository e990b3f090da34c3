// Package projectionstest holds test helpers for projections and replay:
// the synthetic histories of projections/synth under their test names,
// a Rand drawing from a pgregory.net/rapid property so failures shrink,
// and in-memory log reads. Tests only: the production binary must not
// link it (cmd/logbook's TestBinaryDeps checks).
package projectionstest

import (
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/projections/synth"
)

// Rand is synth.Rand: the randomness a History draws from.
type Rand = synth.Rand

// History is synth.History: a log being built in memory.
type History = synth.History

// Epoch returns the time of a generated history's first event
// (synth.Epoch).
func Epoch() time.Time { return synth.Epoch() }

// NewHistory returns an empty history whose clock starts at start
// (synth.NewHistory).
func NewHistory(start time.Time) *History { return synth.NewHistory(start) }

// Generate returns a history of steps random inputs over at most sessions
// sessions (synth.Generate).
func Generate(r Rand, steps, sessions int) (*History, error) {
	return synth.Generate(r, steps, sessions)
}

// Seeded returns the history Generate makes of about steps inputs over at
// most sessions sessions, drawn from a PCG source seeded with (seed,
// stream): the same history on every run. An error fails t.
func Seeded(t testing.TB, seed, stream uint64, steps, sessions int) *History {
	t.Helper()
	h, err := Generate(rand.New(rand.NewPCG(seed, stream)), steps, sessions)
	if err != nil {
		t.Fatalf("generate history: %v", err)
	}
	return h
}

// Seq yields recs in order with no error: a log read held in memory
// (synth.Seq).
var Seq = synth.Seq

// SeqFailing is Seq, except that the record with sequence bad is yielded
// with err instead (synth.SeqFailing).
var SeqFailing = synth.SeqFailing

// Rapid returns a Rand drawing from t, so rapid can shrink histories.
func Rapid(t *rapid.T) Rand { return rapidRand{t} }

type rapidRand struct{ t *rapid.T }

func (r rapidRand) IntN(n int) int { return rapid.IntRange(0, n-1).Draw(r.t, "n") }
