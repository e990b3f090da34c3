package hookspool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
)

func TestSpool_Process(t *testing.T) {
	s := openSpool(t)
	p := &events.Process{PID: 42, Start: 7, Host: "h", Boot: "b", Comm: "claude"}
	withID, err := s.PutFrom([]byte(`{"a":1}`), p)
	if err != nil {
		t.Fatal(err)
	}
	withoutID, err := s.Put([]byte(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != withID || got[1].ID != withoutID {
		t.Fatalf("pending = %+v", got)
	}
	if diff := cmp.Diff(p, got[0].Process); diff != "" {
		t.Errorf("process (-want +got):\n%s", diff)
	}
	if string(got[0].Payload) != `{"a":1}` {
		t.Errorf("payload = %q: the process must not touch the payload's bytes", got[0].Payload)
	}
	if got[1].Process != nil {
		t.Errorf("entry put without a process has %+v", got[1].Process)
	}
	if err := s.Remove(withID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), withID+processExt)); !os.IsNotExist(err) {
		t.Errorf("process file outlives its entry: %v", err)
	}

	// A process file whose payload never landed is swept once old.
	orphan := filepath.Join(s.Dir(), "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8"+processExt)
	if err := os.WriteFile(orphan, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sweepsOneOrphan(t, s, withoutID)
}

// A payload that cannot be written (here a directory holds its name, as
// a full disk refuses it) leaves neither its process nor its verdict
// file behind.
func TestSpool_PutFailedLeavesNothing(t *testing.T) {
	s := openSpool(t)
	id := "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z9"
	if err := os.Mkdir(filepath.Join(s.Dir(), id+spoolExt), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), id+spoolExt, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVerdict(id, LocalVerdict{}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAs(id, []byte(`{"a":1}`), &events.Process{PID: 42, Start: 7}); err == nil {
		t.Fatal("PutAs over a directory succeeded")
	}
	for _, ext := range []string{processExt, verdictExt} {
		if _, err := os.Stat(filepath.Join(s.Dir(), id+ext)); !os.IsNotExist(err) {
			t.Errorf("%s left behind a failed put: %v", ext, err)
		}
	}
}
