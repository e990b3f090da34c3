package replay

import (
	"fmt"
	"iter"

	"github.com/logbook-dev/logbook/events"
)

// Fold applies the records of seq to init with evolve, in order, and
// returns the final state and the Seq of the last record applied (0 if
// none). It stops at the first error seq yields and returns the state and
// Seq reached before it, with the error wrapped. evolve must be pure:
// folding the same records twice gives equal states.
func Fold[S any](seq iter.Seq2[events.Record, error], init S, evolve func(S, events.Envelope) S) (S, uint64, error) {
	s := init
	var last uint64
	for r, err := range seq {
		if err != nil {
			return s, last, fmt.Errorf("fold after seq %d: %w", last, err)
		}
		s = evolve(s, r.Envelope)
		last = r.Seq
	}
	return s, last, nil
}
