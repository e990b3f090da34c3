package replay

import (
	"fmt"
	"io"
	"iter"

	"github.com/logbook-dev/logbook/events"
)

// Dump writes one line per record of seq, in a stable format:
//
//	<seq> <type> <kind>/<id> ver=<ver> id=<event id> at=<at>
//
// e.g. "42 session.transitioned session/s1 ver=12 id=01J… at=2026-04-24T19:19:00.393000Z",
// with at in events.TimeFormat and the type and aggregate through Escape. It stops at the first error of seq,
// returning it wrapped with the sequence it follows, or at the first write
// error.
func Dump(w io.Writer, seq iter.Seq2[events.Record, error]) error {
	var last uint64
	for r, err := range seq {
		if err != nil {
			return fmt.Errorf("dump after seq %d: %w", last, err)
		}
		if _, err := fmt.Fprintf(w, "%d %s %s ver=%d id=%s at=%s\n",
			r.Seq, Escape(r.Type), Escape(r.Agg.String()), r.Ver, r.ID, r.At.UTC().Format(events.TimeFormat)); err != nil {
			return fmt.Errorf("dump seq %d: %w", r.Seq, err)
		}
		last = r.Seq
	}
	return nil
}
