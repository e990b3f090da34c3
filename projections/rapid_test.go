package projections_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

// rapidStore opens the store in dir of fs; the returned func closes it.
// Rapid runs keep their stores in a Pebble in-memory file system: a
// hundred runs open four hundred databases, which on disk would dominate
// the test's time; the disk path is covered by the other tests.
func rapidStore(t *rapid.T, fs vfs.FS, dir string) (*projections.Store, func()) {
	s, err := projections.Open(dir, projections.Options{FS: fs})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// chunks applies recs in random chunks, each committed as one batch.
func chunks(t *rapid.T, s *projections.Store, recs []events.Record, label string) {
	for i := 0; i < len(recs); {
		n := rapid.IntRange(1, len(recs)-i).Draw(t, label)
		if _, err := s.Apply(context.Background(), projectionstest.Seq(recs[i:i+n]), n); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		i += n
	}
}

// TestStore_Rapid: over random valid session histories, folding from
// scratch in one batch, in random batch sizes, and across a restart at a
// random point give the same hash on independent stores, and the rows
// equal the reducer's plain fold.
func TestStore_Rapid(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		h, err := projectionstest.Generate(projectionstest.Rapid(t), steps, 4)
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		recs := h.Records
		if len(recs) == 0 {
			t.Skip("no records")
		}
		last := lastSeq(recs)

		scratch, done := rapidStore(t, fs, "scratch")
		defer done()
		if _, err := scratch.Apply(context.Background(), projectionstest.Seq(recs), len(recs)); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		want := hash(t, scratch, last)
		checkRows(t, scratch, h)

		batched, done := rapidStore(t, fs, "batched")
		defer done()
		chunks(t, batched, recs, "batch")
		if got := hash(t, batched, last); got != want {
			t.Fatalf("random batches hash %s, scratch %s", got, want)
		}

		restarted, _ := rapidStore(t, fs, "restarted")
		k := rapid.IntRange(0, len(recs)).Draw(t, "restart")
		chunks(t, restarted, recs[:k], "before")
		if err := restarted.Close(); err != nil {
			t.Fatal(err)
		}
		restarted, done = rapidStore(t, fs, "restarted")
		defer done()
		if got := restarted.Checkpoint(); k > 0 && got != recs[k-1].Seq {
			t.Fatalf("checkpoint after restart = %d, want %d", got, recs[k-1].Seq)
		}
		chunks(t, restarted, recs, "after") // the whole log: the prefix is skipped
		if got := hash(t, restarted, last); got != want {
			t.Fatalf("restart at %d hash %s, scratch %s", k, got, want)
		}
	})
}

// TestStore_CrashAtomic: crash images taken at random moments while
// batches commit without sync always hold a projection that is exactly
// the fold of the records up to their checkpoint: rows and checkpoint
// never part.
func TestStore_CrashAtomic(t *testing.T) {
	t.Parallel()
	h := history(t, 9, 300, 4)
	recs := h.Records

	// Reference hashes of every prefix.
	ref, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want := map[uint64]string{0: hash(t, ref, 0)}
	for _, r := range recs {
		apply(t, ref, []events.Record{r}, 1)
		want[r.Seq] = hash(t, ref, r.Seq)
	}

	fs := vfs.NewCrashableMem()
	s, err := projections.Open("p", projections.Options{FS: fs, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var clones []*vfs.MemFS
	rng := rand.New(rand.NewPCG(9, 9))
	done := make(chan error)
	go func() {
		_, err := s.Apply(t.Context(), projectionstest.Seq(recs), 7)
		done <- err
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(time.Millisecond):
			clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
		}
	}
	if len(clones) > 40 {
		clones = clones[len(clones)-40:]
	}
	seen := map[uint64]bool{}
	for i, c := range clones {
		cs, err := projections.Open("p", projections.Options{FS: c})
		if err != nil {
			t.Fatalf("clone %d: Open: %v", i, err)
		}
		got, cp, err := cs.Hash()
		if err != nil {
			t.Fatal(err)
		}
		if got != want[cp] {
			t.Errorf("clone %d at checkpoint %d: hash %s, want %s", i, cp, got, want[cp])
		}
		seen[cp] = true
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d crash images at %d distinct checkpoints", len(clones), len(seen))
}
