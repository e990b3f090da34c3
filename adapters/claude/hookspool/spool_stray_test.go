package hookspool

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/oklog/ulid/v2"
)

// TestSpool_Strays: files named as entries that no hook writes (a FIFO, a
// symlink to a device, a directory) keep no hook spooling (HasPending
// ignores them), are never opened, and SetAsideStrays moves each, as it
// is, into rejected/ with why; a real entry behind them is still read,
// and an entry far over MaxHookRead is read no further than one byte past
// it.
func TestSpool_Strays(t *testing.T) {
	s := openSpool(t)
	name := func() string { return ulid.Make().String() + spoolExt }
	fifo, link, dir, big := name(), name(), name(), name()
	if err := syscall.Mkfifo(filepath.Join(s.Dir(), fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(s.Dir(), link)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.HasPending(); err != nil || pending {
		t.Fatalf("HasPending with strays only = %v, %v; want false", pending, err)
	}
	f, err := os.Create(filepath.Join(s.Dir(), big))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxHookRead + 1<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	id, err := s.Put([]byte(`{"session_id":"s1","hook_event_name":"Stop"}`))
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := s.HasPending(); err != nil || !pending {
		t.Fatalf("HasPending with an entry = %v, %v; want true", pending, err)
	}

	moved, err := s.SetAsideStrays()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fifo, link, dir}; !sameSet(moved, want) {
		t.Errorf("set aside %v, want %v", moved, want)
	}
	for _, n := range []string{fifo, link, dir} {
		st, err := os.Lstat(filepath.Join(s.Dir(), RejectedDir, n))
		if err != nil || st.Mode().IsRegular() {
			t.Errorf("rejected/%s: %v, %v; want the node itself", n, st, err)
		}
		why, err := os.ReadFile(filepath.Join(s.Dir(), RejectedDir, strings.TrimSuffix(n, spoolExt)+".why"))
		if err != nil || !strings.Contains(string(why), "not a regular file") {
			t.Errorf("rejected %s why: %q, %v", n, why, err)
		}
	}
	ents, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.ID)
		if e.ID+spoolExt == big && len(e.Payload) != MaxHookRead+1 {
			t.Errorf("oversized entry read as %d bytes, want %d", len(e.Payload), MaxHookRead+1)
		}
	}
	if want := []string{strings.TrimSuffix(big, spoolExt), id}; !sameSet(ids, want) {
		t.Errorf("pending %v, want %v", ids, want)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
