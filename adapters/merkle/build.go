package merkle

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// GapError reports a stream sequence the stream no longer holds: the
// message at Seq is missing (deleted, or lost under the server) and the
// next one stored is Next (0: none). A tree never skips a sequence.
type GapError struct {
	Seq  uint64 // the first missing sequence
	Next uint64 // the next sequence the stream holds; 0 if none
	// Found, when not "", is what a walk of the whole stream found
	// missing (natslog.Missing's text), which Error says instead.
	Found string
}

// Error names the missing sequence.
func (e *GapError) Error() string {
	if e.Found != "" {
		return e.Found
	}
	if e.Next == 0 {
		return fmt.Sprintf("seq %d: missing from stream %s (the stream's last sequence is later, but it holds nothing from here)", e.Seq, natslog.StreamName)
	}
	return fmt.Sprintf("seq %d: missing from stream %s (deleted or lost; the next message it holds is seq %d)", e.Seq, natslog.StreamName, e.Next)
}

// Extend appends to t every message of l's stream after t's last leaf,
// in sequence order, calling grew (if not nil) after each. With follow
// it then waits for new messages until ctx is done and returns nil;
// otherwise it returns once it reached the stream's last sequence at the
// time of the call. A sequence the stream does not hold stops it with a
// *GapError: the tree is left at the leaf before.
func Extend(ctx context.Context, l *natslog.Log, t *Tree, follow bool, grew func(size int64)) error {
	var last uint64
	if !follow {
		// Taken before reading: the read goes at least this far.
		var err error
		if last, err = l.LastSeq(ctx); err != nil {
			return fmt.Errorf("tree: %w", err)
		}
	}
	from := uint64(t.Size()) + 1
	msgs := l.ReadRaw(ctx, natslog.StreamSubjects, from)
	if follow {
		msgs = l.FollowRaw(ctx, natslog.StreamSubjects, from)
	}
	for m, err := range msgs {
		if err != nil {
			if follow && ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tree: %w", err)
		}
		want := uint64(t.Size()) + 1
		if m.Seq != want {
			return &GapError{Seq: want, Next: m.Seq}
		}
		if err := t.AppendHash(LeafHash(m)); err != nil {
			return err
		}
		if grew != nil {
			grew(t.Size())
		}
	}
	if follow {
		return nil
	}
	// A lost tail does not show in the messages read: the stream's last
	// sequence says where it should end.
	if n := uint64(t.Size()); n < last {
		return &GapError{Seq: n + 1}
	}
	return nil
}
