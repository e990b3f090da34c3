package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatchHeldAtBadLine: the watcher follows a toy transcript as the
// agent writes it, in an open turn, and the agent writes a line that does
// not parse after lines already in the log, so the pass that meets it
// takes in no line to carry Held. The stop is recorded all the same: the
// session is held at that line, with nothing marked stale however long
// the reconciler waits; a pass that stops there again (the next poll)
// appends nothing. The file cut back to the lines imported and written
// on with a line that parses in its place reads on: held no more, the
// turn ended by the agent's own line.
func TestWatchHeldAtBadLine(t *testing.T) {
	a := newToy(t)
	root := t.TempDir()
	path := filepath.Join(root, "h1.toy.jsonl")
	write := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	agg := a.session(path)
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the watcher did not %s", what)
			}
		}
	}
	cursor := func(n int) func() bool {
		return func() bool {
			st, err := a.Sessions().State(ctx, agg)
			return err == nil && st.Cursor(path) == n
		}
	}
	stored := func() int {
		t.Helper()
		recs, _, err := a.Sessions().Log.Load(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}

	write(`{"at":"2026-05-01T10:00:01Z","who":"user","said":"build it"}` + "\n")
	wctx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		reports []string
	)
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		if err := a.watch(wctx, root, func(m string) { mu.Lock(); reports = append(reports, m); mu.Unlock() }); err != nil {
			t.Error(err)
		}
	})
	reported := func(part string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range reports {
				if strings.Contains(r, part) {
					return true
				}
			}
			return false
		}
	}
	wait("import line 1", cursor(1))
	write(`{"at":"2026-05-01T10:00:02Z","who":"tool","said":"make"}` + "\n")
	wait("import line 2", cursor(2))
	write(`{"at":"2026-05-01T10:00:03Z","who":` + "\n")
	wait("report line 3", reported(path+":3:"))

	st, err := a.Sessions().State(ctx, agg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != events.PhaseWorking || st.Cursor(path) != 2 || st.HeldPath != path || st.HeldLine != 3 {
		t.Fatalf("after the bad line: phase %s, cursor %d, held at %q:%d; want working at line 2, held at %s:3", st.Phase, st.Cursor(path), st.HeldPath, st.HeldLine, path)
	}
	// Long past the quiet periods and the abandon-after time.
	later := time.Now().Add(time.Hour)
	if ok, err := a.WouldReconcile(st, later, 30*time.Minute, nil); ok || err != nil {
		t.Fatalf("WouldReconcile on a session held at a bad line = %v, %v; want false", ok, err)
	}
	n := stored()
	if _, _, err := a.Reconcile(ctx, agg, later, 30*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	// The next poll stops at the same line, and records nothing again.
	r, err := a.importFile(ctx, path)
	if le, ok := errors.AsType[*ingest.LineError](err); !ok || le.Line != 3 || r.Appended != 0 {
		t.Fatalf("import again: %+v, %v; want it stopped at line 3, nothing appended", r, err)
	}
	if m := stored(); m != n {
		t.Errorf("%d events after a reconciler tick and a pass stopped at the held line again, want %d", m, n)
	}

	// The bad line replaced: the file cut back to the lines imported,
	// and written on.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good := len(b) - len(`{"at":"2026-05-01T10:00:03Z","who":`+"\n")
	if err := os.Truncate(path, int64(good)); err != nil {
		t.Fatal(err)
	}
	write(`{"at":"2026-05-01T10:00:03Z","who":"agent","said":"built"}` + "\n")
	wait("import the line written in its place", cursor(3))
	st, err = a.Sessions().State(ctx, agg)
	if err != nil {
		t.Fatal(err)
	}
	if st.HeldPath != "" || st.Phase != events.PhaseReady || st.Turns != 1 || st.Abandoned != 0 {
		t.Errorf("after the line in its place: held at %q:%d, phase %s, %d turns, %d abandoned; want nothing held, ready, one turn, none abandoned", st.HeldPath, st.HeldLine, st.Phase, st.Turns, st.Abandoned)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reports {
		if strings.Contains(r, "followed no more") {
			t.Errorf("report %q: the file holds what was imported", r)
		}
	}
}
