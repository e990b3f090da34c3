package claude

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestHeldAtBadLine_NotStale: an import stops at a line that does not
// parse, in an open turn of an old transcript. The agent wrote on past
// that line: the session is held there (State.HeldPath), and no
// reconciler tick marks it stale however old its lines, so the import of
// the rest with --skip-invalid ends the same turn: one turn, no stale
// mark, as one import with --skip-invalid gives.
func TestHeldAtBadLine_NotStale(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000b1"
	line := func(typ, uuid, parent, at, msg string) string {
		return fmt.Sprintf(`{"type":%q,"uuid":%q,"parentUuid":%q,"sessionId":%q,"timestamp":%q,"message":%s}`+"\n", typ, uuid, parent, sid, at, msg)
	}
	head := line("user", "u1", "", "2026-04-24T19:19:00.000Z", `{"role":"user","content":"build it"}`) +
		line("assistant", "a1", "u1", "2026-04-24T19:19:01.000Z", `{"model":"m","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}`)
	bad := `{"type":"user","uuid":"u2","parentUuid":"a1","message":"\uZZZZ"}` + "\n"
	rest := line("user", "u3", "a1", "2026-04-24T19:19:03.000Z", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}`) +
		line("assistant", "a4", "u3", "2026-04-24T19:19:04.000Z", `{"model":"m","role":"assistant","content":[{"type":"text","text":"built"}],"stop_reason":"end_turn"}`)
	log := ingesttest.OpenLog(t)
	in := newTestIngester(t, log)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	ingesttest.AppendFile(t, path, []byte(head+bad+rest))
	agg, _ := SessionAggregate(sid, "")
	if _, err := in.ImportFile(t.Context(), path, agg, nil); err == nil {
		t.Fatal("the import read past a line that does not parse")
	}
	st := ingesttest.StateOf(t, log, sid)
	if st.Phase != events.PhaseWorking || st.HeldPath != path || st.HeldLine != 3 {
		t.Fatalf("phase %s, held at %q:%d; want working, held at %s:3", st.Phase, st.HeldPath, st.HeldLine, path)
	}
	// Long past the quiet periods, and months past the abandon-after time
	// by the lines' own clock.
	if ok, err := in.WouldReconcile(st, time.Now().Add(time.Hour), 30*time.Minute, nil); ok || err != nil {
		t.Fatalf("WouldReconcile on a session held at a bad line = %v, %v; want false", ok, err)
	}
	if _, _, err := in.Reconcile(t.Context(), agg, time.Now().Add(time.Hour), 30*time.Minute, nil); err != nil {
		t.Fatal(err)
	}

	skip, err := NewIngester(IngestConfig{Log: log, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skip.ImportFile(t.Context(), path, agg, nil); err != nil {
		t.Fatal(err)
	}
	st = ingesttest.StateOf(t, log, sid)
	if st.Turns != 1 || st.Phase == events.PhaseWorking || st.HeldPath != "" {
		t.Errorf("turns %d, phase %s, held at %q; want the one turn ended by its own line, nothing held", st.Turns, st.Phase, st.HeldPath)
	}
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == (events.SessionEntryAbandoned{}).EventType() {
			t.Errorf("an entry abandoned: %s", r.Data)
		}
	}
	// Held no more, the session is stale once its silence is the agent's.
	if ok, err := in.WouldReconcile(st, time.Now().Add(time.Hour), 30*time.Minute, nil); err != nil || ok != (st.Phase == events.PhaseWorking) {
		t.Errorf("WouldReconcile after the rest = %v, %v", ok, err)
	}
}

// TestHeldAtConflict_LinesImportedBefore: the lines before the one that
// stops the import were all imported by an earlier pass (the agent wrote
// on since), so the pass that stops takes in no line to carry Held; here
// the stop is a line that reuses an earlier line's uuid with other
// content. The stop is recorded all the same, once: the session is held
// there and not stale, and reading the file again appends nothing.
func TestHeldAtConflict_LinesImportedBefore(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-0000000000b2"
	line := func(typ, uuid, parent, at, msg string) string {
		return fmt.Sprintf(`{"type":%q,"uuid":%q,"parentUuid":%q,"sessionId":%q,"timestamp":%q,"message":%s}`+"\n", typ, uuid, parent, sid, at, msg)
	}
	head := line("user", "u1", "", "2026-04-24T19:19:00.000Z", `{"role":"user","content":"build it"}`) +
		line("assistant", "a1", "u1", "2026-04-24T19:19:01.000Z", `{"model":"m","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}`)
	clash := line("user", "u1", "", "2026-04-24T19:19:02.000Z", `{"role":"user","content":"something else"}`)
	log := ingesttest.OpenLog(t)
	in := newTestIngester(t, log)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	ingesttest.AppendFile(t, path, []byte(head))
	agg, _ := SessionAggregate(sid, "")
	if _, err := in.ImportFile(t.Context(), path, agg, nil); err != nil {
		t.Fatal(err)
	}
	ingesttest.AppendFile(t, path, []byte(clash))
	var stored int
	for i := range 2 {
		if _, err := in.ImportFile(t.Context(), path, agg, nil); !errors.Is(err, ingest.ErrUUIDConflict) {
			t.Fatalf("pass %d: %v; want it stopped at the uuid taken", i+1, err)
		}
		recs, _, err := log.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && len(recs) != stored {
			t.Errorf("reading the file again appended %d events", len(recs)-stored)
		}
		stored = len(recs)
	}
	st := ingesttest.StateOf(t, log, sid)
	if st.Phase != events.PhaseWorking || st.HeldPath != path || st.HeldLine != 3 || st.Cursor(path) != 2 {
		t.Fatalf("phase %s, held at %q:%d, cursor %d; want working, held at %s:3, cursor 2", st.Phase, st.HeldPath, st.HeldLine, st.Cursor(path), path)
	}
	if ok, err := in.WouldReconcile(st, time.Now().Add(time.Hour), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile on a session held at a line that stops its file = %v, %v; want false", ok, err)
	}
}
