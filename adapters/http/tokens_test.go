package httpapi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
)

// TestLoadTokens_NotRegular: a tokens file that is a FIFO with no writer
// or a symlink to /dev/zero is refused at once, naming it, never blocked
// on nor read without end; one over 64 KiB is refused naming the limit;
// a missing one is written and then read back.
func TestLoadTokens_NotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := filepath.Join(dir, "fifo.json"), filepath.Join(dir, "zero.json")
	specialtest.Make(t, fifo, zero)
	for _, p := range []string{fifo, zero} {
		done := make(chan error, 1)
		go func() { _, err := LoadTokens(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, claude.ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("LoadTokens(%s): %v, want ErrNotRegular naming it", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadTokens(%s) still blocked after 10 s", p)
		}
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 65<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(big); !errors.Is(err, claude.ErrFileTooLarge) || !strings.Contains(err.Error(), "65536") {
		t.Errorf("LoadTokens(big): %v, want ErrFileTooLarge naming the limit", err)
	}
	fresh := filepath.Join(dir, "tokens.json")
	a, err := LoadTokens(fresh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadTokens(fresh)
	if err != nil || *a != *b {
		t.Fatalf("LoadTokens again: %+v, %v; want %+v", b, err, a)
	}
}
