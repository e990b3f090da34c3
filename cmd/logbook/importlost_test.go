package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// An import whose server goes away mid-import says so, and that
// importing again resumes where it stopped; not that a line that does
// not parse must be fixed first. Importing again once serve is back
// succeeds.
func TestImport_ServeDies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	s := newSoak(t, soakBuild(t), 1)
	for _, tr := range s.ts {
		if err := tr.Grow(1500, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	srv, _ := s.startServe(ctx)
	ch, out, err := s.start(ctx, nil, "import", "claude", "--workers", "1", s.dir)
	if err != nil {
		t.Fatal(err)
	}
	// Kill serve once the import has appended some lines, well before it
	// has all of them.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := s.status(ctx)
		if err == nil && st.LastSeq > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the import appended nothing in 60 s: %v\n%s", err, out.String())
		}
	}
	killServe(t, srv, ch, 2*time.Minute, "import", out)
	got := out.String()
	if ch.err == nil {
		t.Fatalf("import finished before serve was killed (grow the transcripts):\n%s", got)
	}
	if strings.Contains(got, "must be fixed first") || !strings.Contains(got, "server went away") || !strings.Contains(got, "importing again finds them and resumes after them") {
		t.Errorf("import whose serve died does not say so:\n%s", got)
	}
	s.startServe(ctx)
	var last string
	ok := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		o, err := s.run(ctx, nil, "import", "claude", s.dir)
		if err == nil {
			ok = true
			break
		}
		last = fmt.Sprintf("%v\n%s", err, o)
	}
	if !ok {
		t.Fatalf("no import succeeded within 2m of serve's restart; the last said:\n%s", last)
	}
}
