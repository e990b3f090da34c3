package hookspool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func openSpool(t *testing.T) *Spool {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// putN puts n payloads {"n":0} … {"n":n-1} into s in order and returns
// their ids.
func putN(t *testing.T, s *Spool, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, err := s.Put(fmt.Appendf(nil, `{"n":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// sweepsOneOrphan sweeps s with a one-hour age twice: now, which must
// remove nothing, and two hours on, which must remove one file (the
// orphan the caller left), and checks that entry live is still there.
func sweepsOneOrphan(t *testing.T, s *Spool, live string) {
	t.Helper()
	if n, err := s.Sweep(time.Now(), time.Hour); err != nil || n != 0 {
		t.Fatalf("young sweep: %d, %v", n, err)
	}
	if n, err := s.Sweep(time.Now().Add(2*time.Hour), time.Hour); err != nil || n != 1 {
		t.Fatalf("old sweep: %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), live+".json")); err != nil {
		t.Errorf("sweep removed a live entry: %v", err)
	}
}

func TestSpool_Order(t *testing.T) {
	s := openSpool(t)
	ids := putN(t, s, 50)
	got, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d pending, want 50", len(got))
	}
	for i, e := range got {
		if e.ID != ids[i] || string(e.Payload) != fmt.Sprintf(`{"n":%d}`, i) || e.Time.IsZero() {
			t.Errorf("entry %d = %s %s, want %s", i, e.ID, e.Payload, ids[i])
		}
	}
	if err := s.Remove(ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ids[0]); err != nil {
		t.Errorf("removing a removed entry: %v", err)
	}
	if err := s.Remove("../../etc/passwd"); err == nil {
		t.Error("Remove accepted a path")
	}
	got, _ = s.Pending()
	if len(got) != 49 || got[0].ID != ids[1] {
		t.Errorf("after remove: %d pending, first %s", len(got), got[0].ID)
	}
}

// TestSpool_Concurrent puts from many goroutines at once (each Put is
// what one hook process does) and keeps every payload.
func TestSpool_Concurrent(t *testing.T) {
	s := openSpool(t)
	const writers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Put(fmt.Appendf(nil, "%d-%d", w, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var payloads []string
	for _, e := range got {
		payloads = append(payloads, string(e.Payload))
	}
	var want []string
	for w := range writers {
		for i := range each {
			want = append(want, fmt.Sprintf("%d-%d", w, i))
		}
	}
	slices.Sort(payloads)
	slices.Sort(want)
	if !slices.Equal(payloads, want) {
		t.Errorf("got %d payloads, want %d", len(payloads), len(want))
	}
	// Per writer, arrival order holds.
	last := map[string]int{}
	for _, e := range got {
		var w, i int
		fmt.Sscanf(string(e.Payload), "%d-%d", &w, &i)
		k := fmt.Sprint(w)
		if prev, ok := last[k]; ok && i < prev {
			t.Errorf("writer %d: %d after %d", w, i, prev)
		}
		last[k] = i
	}
}

// TestSpool_TornTemp ignores the temporary file of a Put that crashed,
// and Sweep removes it once old.
func TestSpool_TornTemp(t *testing.T) {
	s := openSpool(t)
	id, err := s.Put([]byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(s.Dir(), tmpPrefix+"01JDQ00000000000000000000Z")
	if err := os.WriteFile(tmp, []byte(`{"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dir(), "README"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(s.Dir(), "not-a-ulid.json"), []byte("x"), 0o600)
	got, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id {
		t.Errorf("pending %v, want only %s", got, id)
	}
	if n, err := s.Sweep(time.Now(), time.Hour); err != nil || n != 0 {
		t.Errorf("Sweep of a fresh temp file = %d, %v", n, err)
	}
	if n, err := s.Sweep(time.Now().Add(2*time.Hour), time.Hour); err != nil || n != 1 {
		t.Errorf("Sweep of an old temp file = %d, %v", n, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file still there: %v", err)
	}
}

// TestSpool_Lock lets one holder drain at a time.
func TestSpool_Lock(t *testing.T) {
	s := openSpool(t)
	l, err := s.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Open(s.Dir()) // another process would open its own
	if _, err := other.TryLock(); !errors.Is(err, ErrLocked) {
		t.Errorf("second TryLock: %v, want ErrLocked", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := other.Lock()
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned while held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("Lock after release: %v", err)
	}
	if err := l.Unlock(); err == nil {
		t.Error("second Unlock succeeded")
	}
}

// plainRedactor redacts nothing.
type plainRedactor struct{}

func (plainRedactor) Redact(text string) string { return text }
func (plainRedactor) JSON(text string) string   { return text }

// A stream of refused payloads keeps at most MaxRejected of them aside,
// the newest.
func TestSpool_RejectedBounded(t *testing.T) {
	s := openSpool(t)
	var ids []string
	for i := range MaxRejected + 20 {
		id, err := s.KeepAside([]byte(fmt.Sprintf(`{"n":%d}`, i)), errors.New("bad"), plainRedactor{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, RejectedDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2*MaxRejected {
		t.Fatalf("%d files in rejected/, want %d (an entry and its reason each)", len(ents), 2*MaxRejected)
	}
	for _, id := range ids[:20] {
		if _, err := os.Stat(filepath.Join(s.dir, RejectedDir, id+spoolExt)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("oldest entry %s kept: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, RejectedDir, ids[len(ids)-1]+".why")); err != nil {
		t.Errorf("newest entry's reason: %v", err)
	}
}

// A refused payload over the 1 MiB a rejected entry keeps is kept cut,
// and its reason says so: the copy aside is not taken for the whole.
func TestSpool_RejectedCutSaysSo(t *testing.T) {
	s := openSpool(t)
	big := []byte(`{"x":"` + strings.Repeat("a", 1<<20+100) + `"}`)
	for _, tc := range []struct {
		payload []byte
		cut     bool
	}{{[]byte(`{"n":1}`), false}, {big, true}} {
		id, err := s.KeepAside(tc.payload, errors.New("too large"), plainRedactor{})
		if err != nil {
			t.Fatal(err)
		}
		why, err := os.ReadFile(filepath.Join(s.dir, RejectedDir, id+".why"))
		if err != nil {
			t.Fatal(err)
		}
		kept, err := os.ReadFile(filepath.Join(s.dir, RejectedDir, id+spoolExt))
		if err != nil {
			t.Fatal(err)
		}
		says := strings.Contains(string(why), fmt.Sprintf("its first %d of %d bytes", 1<<20, len(tc.payload)))
		if says != tc.cut || tc.cut != (len(kept) < len(tc.payload)) {
			t.Errorf("payload of %d bytes kept as %d bytes, reason %q; want the reason to say so exactly when it is cut", len(tc.payload), len(kept), why)
		}
	}
}
