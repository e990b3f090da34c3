package projections

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

// sessionsV is the session view under another schema version.
type sessionsV struct {
	SessionView
	v int
}

func (s sessionsV) Version() int { return s.v }

func views(v int) Options { return Options{Views: []View{sessionsV{v: v}}} }

func genRecords(t *testing.T) []events.Record {
	t.Helper()
	h, err := projectionstest.Generate(rand.New(rand.NewPCG(11, 1)), 250, 4)
	if err != nil {
		t.Fatal(err)
	}
	return h.Records
}

// rebuilding opens the store in dir with opts, closed at test end, and
// returns it with its rebuild target; a failure fails the test.
func rebuilding(t *testing.T, dir string, opts Options) (s, sh *Store) {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sh, err = s.rebuildTarget()
	if err != nil {
		t.Fatal(err)
	}
	return s, sh
}

// swapIn applies recs to s's rebuild target sh in batches of size and
// swaps it in for s; a failure fails the test.
func swapIn(t *testing.T, s, sh *Store, recs []events.Record, size int) {
	t.Helper()
	if _, err := sh.Apply(t.Context(), projectionstest.Seq(recs), size); err != nil {
		t.Fatal(err)
	}
	if err := s.swap(); err != nil {
		t.Fatal(err)
	}
}

// build makes a store in dir with opts holding recs and closes it.
func build(t *testing.T, dir string, opts Options, recs []events.Record) {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), projectionstest.Seq(recs), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// freshHash is the hash of a clean projection of recs with opts.
func freshHash(t *testing.T, opts Options, recs []events.Record) string {
	t.Helper()
	s, err := OpenMem(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Apply(t.Context(), projectionstest.Seq(recs), 0); err != nil {
		t.Fatal(err)
	}
	h, _, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustNotExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: want it gone, stat = %v", p, err)
		}
	}
}

// TestStore_SchemaChange: a store built by view version 1 opens stale
// under version 2, keeps answering from its old rows, and after a rebuild
// and swap equals a fresh version-2 projection.
func TestStore_SchemaChange(t *testing.T) {
	t.Parallel()
	recs := genRecords(t)
	dir := filepath.Join(t.TempDir(), "p")
	build(t, dir, views(1), recs[:len(recs)/2])

	s, err := Open(dir, views(2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Stale() {
		t.Fatal("store built by version 1 is not stale under version 2")
	}
	if _, err := s.Session(recs[0].Agg.ID); err != nil {
		t.Errorf("stale store does not answer: %v", err)
	}
	if _, err := s.Apply(t.Context(), projectionstest.Seq(recs), 7); !errors.Is(err, ErrStale) {
		t.Errorf("Apply on a stale store = %v, want ErrStale", err)
	}
	sh, err := s.rebuildTarget()
	if err != nil {
		t.Fatal(err)
	}
	if sh.Dir() != dir+".rebuild" || sh.Checkpoint() != 0 {
		t.Fatalf("rebuild in %s at %d, want %s at 0", sh.Dir(), sh.Checkpoint(), dir+".rebuild")
	}
	swapIn(t, s, sh, recs, 7)
	if s.Stale() {
		t.Error("stale after swap")
	}
	got, cp, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if want := freshHash(t, views(2), recs); got != want || cp != recs[len(recs)-1].Seq {
		t.Errorf("after swap: hash %s at %d, want %s at %d", got, cp, want, recs[len(recs)-1].Seq)
	}
	if v, _, _ := s.get(KeyViews); string(v) != `{"sessions":2}` {
		t.Errorf("%s = %s", KeyViews, v)
	}
	mustNotExist(t, dir+".rebuild", dir+".old")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, views(2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Stale() {
		t.Error("swapped store reopens stale")
	}
}

// TestOpen_RecoversSwap builds the directory states a crash can leave
// during a swap and checks that Open repairs each.
func TestOpen_RecoversSwap(t *testing.T) {
	t.Parallel()
	recs := genRecords(t)
	half := recs[:len(recs)/2]
	last := recs[len(recs)-1].Seq
	full := freshHash(t, views(2), recs)
	old := freshHash(t, views(1), half)

	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, dir string)
		wantHash string
		wantCP   uint64
		stale    bool
	}{
		{
			name: "after rename aside",
			setup: func(t *testing.T, dir string) {
				build(t, dir+".old", views(1), half)
				build(t, dir+".rebuild", views(2), recs)
			},
			wantHash: full, wantCP: last,
		},
		{
			name: "after rename into place",
			setup: func(t *testing.T, dir string) {
				build(t, dir, views(2), recs)
				build(t, dir+".old", views(1), half)
			},
			wantHash: full, wantCP: last,
		},
		{
			name: "rebuild missing",
			setup: func(t *testing.T, dir string) {
				build(t, dir+".old", views(1), half)
			},
			wantHash: old, wantCP: half[len(half)-1].Seq, stale: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			tc.setup(t, dir)
			s, err := Open(dir, views(2))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, cp, err := s.Hash()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantHash || cp != tc.wantCP || s.Stale() != tc.stale {
				t.Errorf("hash %s at %d stale %v, want %s at %d stale %v", got, cp, s.Stale(), tc.wantHash, tc.wantCP, tc.stale)
			}
			mustNotExist(t, dir+".old")
		})
	}
}

// TestStore_RebuildResumes: a rebuild directory left by a run of the same
// code is resumed from its checkpoint; one left by other view versions is
// started over.
func TestStore_RebuildResumes(t *testing.T) {
	t.Parallel()
	recs := genRecords(t)
	half := recs[:len(recs)/2]
	for _, tc := range []struct {
		name   string
		left   int // view version of the leftover rebuild
		wantCP uint64
	}{
		{"same versions", 3, half[len(half)-1].Seq},
		{"other versions", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			build(t, dir, views(1), half)
			build(t, dir+".rebuild", views(tc.left), half)
			s, sh := rebuilding(t, dir, views(3))
			if sh.Checkpoint() != tc.wantCP || sh.Stale() {
				t.Fatalf("rebuild at %d stale %v, want %d and not stale", sh.Checkpoint(), sh.Stale(), tc.wantCP)
			}
			n, err := sh.Apply(t.Context(), projectionstest.Seq(recs), 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(recs) - int(tc.wantCP); n != want {
				t.Errorf("rebuild applied %d, want %d", n, want)
			}
			if err := s.swap(); err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Hash()
			if err != nil {
				t.Fatal(err)
			}
			if want := freshHash(t, views(3), recs); got != want {
				t.Errorf("hash %s, want %s", got, want)
			}
		})
	}
}

// TestStore_SchemaChangeMem: the rebuild and swap work the same in an
// in-memory file system.
func TestStore_SchemaChangeMem(t *testing.T) {
	t.Parallel()
	recs := genRecords(t)
	fs := vfs.NewMem()
	v1, v2 := views(1), views(2)
	v1.FS, v2.FS = fs, fs
	build(t, "p", v1, recs)
	s, sh := rebuilding(t, "p", v2)
	swapIn(t, s, sh, recs, 0)
	got, _, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if want := freshHash(t, views(2), recs); got != want || s.Stale() {
		t.Errorf("hash %s stale %v, want %s and not stale", got, s.Stale(), want)
	}
}
