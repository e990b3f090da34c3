package merkle

import (
	"strings"
	"testing"
)

// TestCheckpointHoles: the checkpoint stream's sequences from 1 to its
// last that a read did not give are named, at its start, middle and end;
// a message published after the last taken is not a hole.
func TestCheckpointHoles(t *testing.T) {
	at := func(seqs ...uint64) []Stored {
		var out []Stored
		for _, s := range seqs {
			out = append(out, Stored{Seq: s})
		}
		return out
	}
	for _, c := range []struct {
		all  []Stored
		last uint64
		want string // "" for none
	}{
		{nil, 0, ""},
		{at(1, 2, 3), 3, ""},
		{at(1, 2, 3, 4), 3, ""},
		{at(2, 3), 3, "missing 1 of its 3 messages (seq 1)"},
		{at(1, 4, 5), 5, "missing 2 of its 5 messages (seq 2..3)"},
		{at(1, 2), 4, "missing 2 of its 4 messages (seq 3..4)"},
		{nil, 2, "missing 2 of its 2 messages (seq 1..2)"},
	} {
		got := checkpointHoles(c.all, c.last)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("checkpointHoles(%v, %d) = %q, want %q", c.all, c.last, got, c.want)
		}
	}
}
