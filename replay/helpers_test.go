package replay_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// history returns a fixed random history.
func history(t testing.TB, seed uint64, steps, sessions int) *projectionstest.History {
	t.Helper()
	return projectionstest.Seeded(t, seed, 3, steps, sessions)
}

// newLog starts an embedded JetStream server in a temporary directory and
// opens the log on it; both stop at the end of the test. The server
// flushes on an interval rather than on every append: these tests do not
// depend on the log's durability, and it saves time.
func newLog(t testing.TB) *natslog.Log {
	t.Helper()
	log, _ := natslogtest.Start(t, natslog.FsyncInterval)
	return log
}

// logWith returns a fresh log holding h's batches appended in order, so
// its records equal h.Records.
func logWith(t testing.TB, h *projectionstest.History) *natslog.Log {
	t.Helper()
	log := newLog(t)
	if _, err := h.AppendTo(context.Background(), log); err != nil {
		t.Fatal(err)
	}
	return log
}

// openStore opens the store in dir with default options; the caller
// closes it. A failure to open fails the test.
func openStore(t testing.TB, dir string) *projections.Store {
	t.Helper()
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// memStore returns an in-memory store holding recs, closed at test end.
func memStore(t testing.TB, recs []events.Record) *projections.Store {
	t.Helper()
	s, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Apply(context.Background(), projectionstest.Seq(recs), 0); err != nil {
		t.Fatal(err)
	}
	return s
}

// storeHash returns s's hash and checkpoint.
func storeHash(t testing.TB, s *projections.Store) (string, uint64) {
	t.Helper()
	h, cp, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h, cp
}

// filter returns the records of recs that keep selects.
func filter(recs []events.Record, keep func(events.Record) bool) []events.Record {
	var out []events.Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
