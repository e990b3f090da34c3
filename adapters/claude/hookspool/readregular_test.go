package hookspool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
)

// TestReadRegular: a small regular file is read whole; a FIFO with no
// writer, /dev/zero and a directory are refused with ErrNotRegular
// without blocking; a file over the limit (or one at the limit plus a
// byte) is refused with ErrFileTooLarge naming the limit.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"user":"a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	specialtest.Make(t, fifo, "")
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 65), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadRegular(small, 64)
	if err != nil || string(b) != `{"user":"a"}` {
		t.Fatalf("ReadRegular(small) = %q, %v", b, err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(p, 64); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadRegular(%s): %v, want ErrNotRegular naming it", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadRegular(%s) still blocked after 10 s", p)
		}
	}
	if _, err := ReadRegular(big, 64); !errors.Is(err, ErrFileTooLarge) || !strings.Contains(err.Error(), "64") {
		t.Errorf("ReadRegular(big): %v, want ErrFileTooLarge naming the limit", err)
	}
	if _, err := ReadRegular(big, 65); err != nil {
		t.Errorf("ReadRegular(big, 65): %v", err)
	}
}
