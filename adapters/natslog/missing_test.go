package natslog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestFindMissing: a whole stream has nothing missing. One byte flipped
// inside a message in the middle of a block file and inside the last
// message, with the server stopped, is in none of the server's counts
// (Msgs, NumDeleted, Lost: the server trusts its index); FindMissing's
// read names both sequences, and String says how many and which.
func TestFindMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.Context(), s.Conn(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	for i := 1; i <= 6; i++ {
		agg := session(fmt.Sprintf("s%d", i))
		mustAppend(t, l, events.Batch{Agg: agg, Events: []events.Envelope{envelope(reg, agg, 1, events.SessionStarted{Agent: "cli", Cwd: fmt.Sprintf("/work/MARK-%d", i)})}})
	}
	if m, err := l.FindMissing(t.Context()); err != nil || !m.Whole() || m.Through != 6 || m.String() != "" {
		t.Fatalf("FindMissing on a whole stream: %+v %q, %v", m, m.String(), err)
	}
	l.Close()
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	blk := filepath.Join(dir, "jetstream", "$G", "streams", StreamName, "msgs", "1.blk")
	b, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range []string{"MARK-3", "MARK-6"} {
		i := bytes.Index(b, []byte(mark))
		if i < 0 {
			t.Fatalf("%s holds no %s", blk, mark)
		}
		b[i] ^= 1
	}
	if err := os.WriteFile(blk, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, startServer(t, dir))
	info, err := l.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st := info.State; st.Msgs != 6 || st.NumDeleted != 0 || st.Lost != nil {
		t.Logf("the server now counts the damage itself: %+v", st)
	}
	m, err := l.FindMissing(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const want = "stream LOGBOOK lost 2 of seq 1..6: seq 3, 6"
	if m.Count != 2 || m.Through != 6 || !slices.Equal(m.Seqs, []uint64{3, 6}) || m.String() != want {
		t.Fatalf("FindMissing: %+v %q, want seq 3 and 6: %q", m, m.String(), want)
	}
}

// Missing names at most MissingNamed sequences, and how many more.
func TestMissingString(t *testing.T) {
	m := Missing{Through: 900, Count: 12, Seqs: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	if got, want := m.String(), "stream LOGBOOK lost 12 of seq 1..900: seq 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more"; got != want {
		t.Fatalf("String: %q, want %q", got, want)
	}
}
