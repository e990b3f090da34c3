package hookspool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// TestSpool_Verdict: a verdict put beside an entry comes back with it,
// leaves the payload's bytes alone, goes with the entry on Remove, and
// one whose payload never landed is swept once old.
func TestSpool_Verdict(t *testing.T) {
	s := openSpool(t)
	v := LocalVerdict{Verdict: events.VerdictDeny, Outcome: events.ReviewUnavailable, Reason: "no server",
		By: events.DecidedBy{Kind: events.DecidedByHook, Name: "local policy: fail closed"}, At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Budget: 90000}
	id := ulid.Make().String()
	if err := s.PutVerdict(id, v); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Pending(); err != nil || len(got) != 0 {
		t.Fatalf("a verdict without its payload is pending: %+v %v", got, err)
	}
	if err := s.PutAs(id, []byte(`{"a":1}`), nil); err != nil {
		t.Fatal(err)
	}
	plain, err := s.Put([]byte(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Pending()
	if err != nil || len(got) != 2 || got[0].ID != id || got[1].ID != plain {
		t.Fatalf("pending = %+v, %v", got, err)
	}
	if diff := cmp.Diff(&v, got[0].Verdict); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if string(got[0].Payload) != `{"a":1}` || got[1].Verdict != nil {
		t.Errorf("payload %q, second entry's verdict %+v", got[0].Payload, got[1].Verdict)
	}
	if err := s.Remove(id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), id+verdictExt)); !os.IsNotExist(err) {
		t.Errorf("verdict file outlives its entry: %v", err)
	}
	if err := s.PutVerdict("not-a-ulid", v); err == nil {
		t.Error("a verdict under a bad id was kept")
	}

	orphan := ulid.Make().String()
	if err := s.PutVerdict(orphan, v); err != nil {
		t.Fatal(err)
	}
	sweepsOneOrphan(t, s, plain)
}
