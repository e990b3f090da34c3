package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatchImportsAtOnce: the files Watch finds at its start are imported
// several at once (two imports wait for each other, which one file after
// another never lets happen), the files of one Group key one after
// another, and every file's lines land in its session once; Imported
// hears of each file.
func TestWatchImportsAtOnce(t *testing.T) {
	a := newToy(t)
	root := t.TempDir()
	const files = 40
	for i := range files {
		body := fmt.Sprintf(`{"at":"2026-05-01T10:00:01Z","who":"user","said":"go %d"}`+"\n"+`{"at":"2026-05-01T10:00:02Z","who":"agent","said":"done"}`+"\n", i)
		// Files g<k>-<n>: the key g<k> is one group of four files.
		name := fmt.Sprintf("g%d-%d.toy.jsonl", i/4, i%4)
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	group := func(path string) string { return strings.SplitN(filepath.Base(path), "-", 2)[0] }
	var (
		mu       sync.Mutex
		inGroup  = map[string]int{}
		overlap  []string
		imported = map[string]int{}
		met      = make(chan struct{})
		waiting  int
	)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		err := a.Watch(ctx, ingest.WatchConfig{
			Roots: []string{root}, Rescan: time.Hour,
			Accept: func(path string) (bool, string) { return strings.HasSuffix(path, ".toy.jsonl"), "not a toy transcript" },
			Group:  group,
			Import: func(ctx context.Context, path, _ string) ([]ingest.FileResult, error) {
				g := group(path)
				mu.Lock()
				if inGroup[g]++; inGroup[g] > 1 {
					overlap = append(overlap, g)
				}
				// The first two imports wait for each other.
				first := waiting < 2
				if first {
					if waiting++; waiting == 2 {
						close(met)
					}
				}
				mu.Unlock()
				if first {
					select {
					case <-met:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				r, err := a.importFile(ctx, path)
				mu.Lock()
				inGroup[g]--
				mu.Unlock()
				return []ingest.FileResult{r}, err
			},
			Imported: func(r ingest.FileResult) { mu.Lock(); imported[r.Path] += r.Appended; mu.Unlock() },
		})
		if err != nil {
			t.Error(err)
		}
	})
	// Wait for every file's import to be heard of.
	for {
		mu.Lock()
		n := len(imported)
		mu.Unlock()
		if n == files {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if len(overlap) > 0 {
		t.Errorf("files of one group imported at once: %q", overlap)
	}
	for p, n := range imported {
		if n != 2 {
			t.Errorf("%s: %d lines appended, want 2", p, n)
		}
		st, err := a.Sessions().State(t.Context(), a.session(p))
		if err != nil || st.Cursor(p) != 2 || st.Phase != events.PhaseReady {
			t.Errorf("%s: cursor %d, phase %q, %v; want 2, ready", p, st.Cursor(p), st.Phase, err)
		}
	}
}
