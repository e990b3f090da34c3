package codex

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestImport_FutureTimestamp: a rollout line dated in the far future is
// recorded when it was read (the importing clock), its own
// timestamp kept as the observation's AgentTime, with a warning naming
// file and line; a second import appends nothing.
func TestImport_FutureTimestamp(t *testing.T) {
	l := ingesttest.OpenLog(t)
	now := time.Date(2026, 5, 23, 17, 0, 0, 0, time.UTC)
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	path := rolloutPath(t, tid)
	future := strings.Replace(userMsg(1, "make hello.txt"), "2026-05-23T16:54:01.000Z", "9999-12-31T23:59:59Z", 1)
	ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), future)
	r, err := in.ImportFile(t.Context(), path, nil)
	if err != nil || r.Appended != 3 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], path+":3: timestamp 9999-12-31T23:59:59Z") {
		t.Errorf("warnings = %q; want one naming %s:3", r.Warnings, path)
	}
	bound := now // read at now: no line was written later
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: tid})
	if err != nil {
		t.Fatal(err)
	}
	ingesttest.WithinBound(t, recs, bound, 3, "9999-12-31T23:59:59Z")
	if st := ingesttest.StateOf(t, l, tid); !st.ObservedAt.Equal(bound) {
		t.Errorf("observed at %v; want %v", st.ObservedAt, bound)
	}
	now = now.Add(time.Hour)
	if r, err := in.ImportFile(t.Context(), path, nil); err != nil || r.Appended != 0 {
		t.Fatalf("re-import: %+v, %v; want nothing appended", r, err)
	}
}
