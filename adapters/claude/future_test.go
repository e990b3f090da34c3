package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// clockedIngester returns an Ingester on log whose clock reads *now, so
// that the test moves time by setting it.
func clockedIngester(t *testing.T, log events.Log, now *time.Time) *Ingester {
	t.Helper()
	in, err := NewIngester(IngestConfig{Log: log, Host: "test", Clock: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// importTranscript writes transcript to path and imports it with in into
// session sid's aggregate, which it returns with the import's result; a
// failure to write or import fails the test.
func importTranscript(t *testing.T, in *Ingester, path, sid, transcript string) (events.Aggregate, ingest.FileResult) {
	t.Helper()
	if err := os.WriteFile(path, []byte(transcript), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	res, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return agg, res
}

// TestImportFile_FutureTimestamp: a transcript line dated in the far
// future is imported when it was read (the importing clock), not at its
// own time, so the session does not sort above every other one and goes
// stale abandon-after past its reading. The line keeps its
// timestamp as AgentTime, the import warns naming file and line, and a
// second import, later, appends nothing.
func TestImportFile_FutureTimestamp(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000f0"
	log := ingesttest.OpenLog(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in := clockedIngester(t, log, &now)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	transcript := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + sid + `","timestamp":"2026-11-25T09:00:00.000Z","message":{"role":"user","content":"run the tests"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"` + sid + `","timestamp":"9999-12-31T23:59:59Z","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"` + sid + `","message":{"role":"user","content":"and again"}}
`
	agg, res := importTranscript(t, in, path, sid, transcript)
	if res.Appended != 3 {
		t.Errorf("appended %d lines, want 3", res.Appended)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], path+":2: timestamp 9999-12-31T23:59:59Z") {
		t.Errorf("warnings = %q; want one naming %s:2 and its timestamp", res.Warnings, path)
	}
	bound := now // read at now: no line was written later
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	ingesttest.WithinBound(t, recs, bound, 2, "9999-12-31T23:59:59Z")
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

	// Stale on schedule: abandon-after past the reading, not in year 9999.
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

// TestImportFile_UnusableTimestamp: a line whose timestamp does not
// parse, or dates it in year 1 (a zero time written out), is dated as the
// line before it, with a problem on the line and a warning naming file
// and line, never at the importing host's clock. A resumed import dates
// its undated lines by when the agent was last heard from, not by the
// session's last event: a stale mark made now does not date history now.
func TestImportFile_UnusableTimestamp(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000f2"
	log := ingesttest.OpenLog(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	in := clockedIngester(t, log, &now)
	line := func(uuid, parent, ts, text string) string {
		tsField := ""
		if ts != "" {
			tsField = `"timestamp":"` + ts + `",`
		}
		return `{"type":"user","uuid":"` + uuid + `","parentUuid":` + parent + `,"sessionId":"` + sid + `",` + tsField + `"message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	first := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	last := first.Add(5 * time.Minute)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	transcript := line("u1", "null", "2026-11-25T09:00:00Z", "one") +
		line("u2", `"u1"`, "yesterday", "two") +
		line("u3", `"u2"`, "0001-01-01T00:00:00Z", "three") +
		`{"type":"assistant","uuid":"u4","parentUuid":"u3","sessionId":"` + sid + `","timestamp":"2026-11-25T09:05:00Z","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}}` + "\n"
	agg, res := importTranscript(t, in, path, sid, transcript)
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], path+`:2: timestamp "yesterday" is not a time`) || !strings.Contains(res.Warnings[1], path+`:3: timestamp "0001-01-01T00:00:00Z"`) {
		t.Errorf("warnings = %q; want lines 2 and 3 named", res.Warnings)
	}
	dated := func(recs []events.Record) map[int]time.Time {
		at := map[int]time.Time{}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok && o.Line > 0 {
				at[o.Line] = r.At
				if (o.Line == 2 || o.Line == 3) && len(o.Problems) == 0 {
					t.Errorf("line %d has no problem recorded", o.Line)
				}
			}
		}
		return at
	}
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	for n, at := range dated(recs) {
		want := first
		if n == 4 {
			want = last
		}
		if !at.Equal(want) {
			t.Errorf("line %d dated %v, want %v", n, at, want)
		}
	}

	// Silent past abandon-after: the reconciler marks it stale now.
	const after = 30 * time.Minute
	if ap, _, err := in.Reconcile(t.Context(), agg, now.Add(time.Minute), after, nil); err != nil || ap.Last == 0 {
		t.Fatalf("tick: appended %+v, err %v; want a stale mark", ap, err)
	}
	// The transcript goes on, undated and then dated badly: both lines
	// are dated as line 4, when the agent was last heard from.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line("u5", `"u4"`, "", "five") + line("u6", `"u5"`, "not a time", "six")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	now = now.Add(time.Hour)
	if _, err := in.ImportFile(t.Context(), path, agg, nil); err != nil {
		t.Fatal(err)
	}
	recs, _, err = log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	at := dated(recs)
	for _, n := range []int{5, 6} {
		if !at[n].Equal(last) {
			t.Errorf("resumed: line %d dated %v, want line 4's %v, not the stale mark's", n, at[n], last)
		}
	}
	if st := session.Fold(session.Init(agg), recs); !st.ObservedAt.Equal(last) {
		t.Errorf("observed at %v, want %v", st.ObservedAt, last)
	}
}

// TestHook_FutureTime: a spool entry whose time lies in the far future
// (its ULID names it) is observed at its receipt, the clock.
func TestHook_FutureTime(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000f1"
	log := ingesttest.OpenLog(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in := clockedIngester(t, log, &now)
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
	bound := now // received then: nothing it reports happened later
	for _, r := range recs {
		if !r.At.Equal(bound) {
			t.Errorf("%s at %v; want its receipt %v", r.Type, r.At, bound)
		}
		// The hook is live, received at the clock too: a far-future
		// receipt would keep the session from ever looking silent.
		if o, ok := events.Observed(r.Data); ok && (!o.Live || !o.Received.Equal(bound)) {
			t.Errorf("%s: live %v, received %v; want live, received at the clock %v", r.Type, o.Live, o.Received, bound)
		}
	}
}
