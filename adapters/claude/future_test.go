package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestImportFile_FutureTimestamp: a transcript line dated in the far
// future is imported at the importing clock's bound (events.BoundTime),
// not at its own time, so the session does not sort above every other
// one and goes stale abandon-after past the bound. The line keeps its
// timestamp as AgentTime, the import warns naming file and line, and a
// second import, later, appends nothing.
func TestImportFile_FutureTimestamp(t *testing.T) {
	const sid = "5e551011-0000-4000-8000-0000000000f0"
	log := openLog(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in, err := NewIngester(IngestConfig{Log: log, Host: "test", Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	transcript := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + sid + `","timestamp":"2026-11-25T09:00:00.000Z","message":{"role":"user","content":"run the tests"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"` + sid + `","timestamp":"9999-12-31T23:59:59Z","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"` + sid + `","message":{"role":"user","content":"and again"}}
`
	if err := os.WriteFile(path, []byte(transcript), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	res, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended != 3 {
		t.Errorf("appended %d lines, want 3", res.Appended)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], path+":2: timestamp 9999-12-31T23:59:59Z") {
		t.Errorf("warnings = %q; want one naming %s:2 and its timestamp", res.Warnings, path)
	}
	bound := now.Add(events.MaxClockSkew)
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.At.After(bound) {
			t.Errorf("%s at %v, past the bound %v", r.Type, r.At, bound)
		}
		if o, ok := events.Observed(r.Data); ok && o.Line == 2 && o.AgentTime != "9999-12-31T23:59:59Z" {
			t.Errorf("line 2 agent_time = %q; want the line's own timestamp", o.AgentTime)
		}
	}
	st := session.Fold(session.Init(agg), recs)
	if !st.ObservedAt.Equal(bound) || !st.UpdatedAt.Equal(bound) {
		t.Errorf("observed at %v, updated at %v; want both %v", st.ObservedAt, st.UpdatedAt, bound)
	}

	// Imported again, later: nothing appended, nothing moved.
	now = now.Add(time.Hour)
	res, err = in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || res.Appended != 0 {
		t.Fatalf("re-import: appended %d, err %v; want 0, nil", res.Appended, err)
	}
	recs2, _, err := log.Load(t.Context(), agg)
	if err != nil || len(recs2) != len(recs) {
		t.Fatalf("re-import: %d events, err %v; want %d", len(recs2), err, len(recs))
	}

	// Stale on schedule: abandon-after past the bound, not in year 9999.
	const after = 30 * time.Minute
	ap, _, err := in.Reconcile(t.Context(), agg, bound.Add(after-time.Second), after, nil)
	if err != nil || ap.Last != 0 {
		t.Fatalf("early tick: appended %+v, err %v; want nothing", ap, err)
	}
	ap, st, err = in.Reconcile(t.Context(), agg, bound.Add(after), after, nil)
	if err != nil || ap.Last == 0 || st.Phase != events.PhaseReady || st.Abandoned != 1 {
		t.Fatalf("tick on schedule: appended %+v, phase %s, %d abandoned, err %v", ap, st.Phase, st.Abandoned, err)
	}
}

// TestHook_FutureTime: a spool entry whose time lies in the far future
// (its ULID names it) is observed at the clock's bound.
func TestHook_FutureTime(t *testing.T) {
	const sid = "5e551011-0000-4000-8000-0000000000f1"
	log := openLog(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in, err := NewIngester(IngestConfig{Log: log, Host: "test", Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	id := ulid.MustNew(ulid.Timestamp(at), strings.NewReader(strings.Repeat("\x01", 16)))
	p := `{"session_id":"` + sid + `","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
	if _, err := in.Hook(t.Context(), Entry{ID: id.String(), Time: at, Payload: []byte(p)}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
	if err != nil || len(recs) == 0 {
		t.Fatalf("load: %d records, %v", len(recs), err)
	}
	bound := now.Add(events.MaxClockSkew)
	for _, r := range recs {
		if !r.At.Equal(bound) {
			t.Errorf("%s at %v; want the bound %v", r.Type, r.At, bound)
		}
		// The hook is live, received at the bound too: a far-future
		// receipt would keep the session from ever looking silent.
		if o, ok := events.Observed(r.Data); ok && (!o.Live || !o.Received.Equal(bound)) {
			t.Errorf("%s: live %v, received %v; want live, received at the bound %v", r.Type, o.Live, o.Received, bound)
		}
	}
}
