package claude

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestReconcile_Stale: a tick before the abandon-after time appends
// nothing; one after it appends the tick and its marks in one batch.
// WouldReconcile, deciding on the state alone, agrees each time.
func TestReconcile_Stale(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000006"
	log := ingesttest.OpenLog(t)
	in := newTestIngester(t, log)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	transcript := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + sid + `","timestamp":"2026-11-25T09:00:00.000Z","message":{"role":"user","content":"run the tests"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"` + sid + `","timestamp":"2026-11-25T09:00:03.000Z","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}}
`
	agg, _ := importTranscript(t, in, path, sid, transcript)
	seen := time.Date(2026, 11, 25, 9, 0, 3, 0, time.UTC)
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	working := session.Fold(session.Init(agg), recs)
	if ok, err := in.WouldReconcile(working, seen.Add(29*time.Minute), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile before abandon-after = %v, %v; want false", ok, err)
	}
	ap, st, err := in.Reconcile(t.Context(), agg, seen.Add(29*time.Minute), 30*time.Minute, nil)
	if err != nil || ap.Last != 0 || st.Phase != events.PhaseWorking {
		t.Fatalf("early tick: appended %+v, phase %s, err %v; want nothing", ap, st.Phase, err)
	}
	// Within Quiet of the import's receipt, nothing is silent yet: the
	// import may be going on.
	if !working.ReceivedAt.After(seen) {
		t.Fatalf("received_at %s: the import's receipt not recorded", working.ReceivedAt)
	}
	if ok, err := in.WouldReconcile(working, working.ReceivedAt.Add(Quiet-time.Millisecond), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile within the quiet period = %v, %v; want false", ok, err)
	}
	// The import read the file to its end: its last line says so.
	if working.Importing {
		t.Errorf("importing after an import that read its file to the end")
	}
	// While an import is under way (its last line said it read on),
	// the quiet period is QuietImporting: it may pause between runs.
	importing := working
	importing.Importing = true
	if ok, err := in.WouldReconcile(importing, importing.ReceivedAt.Add(QuietImporting-time.Millisecond), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile within the importing quiet period = %v, %v; want false", ok, err)
	}
	if ok, err := in.WouldReconcile(importing, importing.ReceivedAt.Add(QuietImporting), 30*time.Minute, nil); !ok || err != nil {
		t.Errorf("WouldReconcile after the importing quiet period = %v, %v; want true", ok, err)
	}
	now := seen.Add(72 * time.Hour)
	if q := working.ReceivedAt.Add(Quiet); now.Before(q) {
		now = q.UTC()
	}
	if ok, err := in.WouldReconcile(working, now, 30*time.Minute, nil); !ok || err != nil {
		t.Errorf("WouldReconcile after abandon-after = %v, %v; want true", ok, err)
	}
	ap, st, err = in.Reconcile(t.Context(), agg, now, 30*time.Minute, nil)
	if err != nil || ap.Last == 0 {
		t.Fatalf("late tick: appended %+v, err %v", ap, err)
	}
	if st.Phase != events.PhaseReady || st.Abandoned != 1 || len(st.Entries) != 0 {
		t.Errorf("after: phase %s, %d abandoned, %d open", st.Phase, st.Abandoned, len(st.Entries))
	}
	if ok, err := in.WouldReconcile(st, now.Add(time.Hour), 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile once marked = %v, %v; want false", ok, err)
	}
	recs, _, err = log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	var tick *events.Record
	for i, r := range recs {
		if r.Type == "obs.reconciler.tick" {
			tick = &recs[i]
		}
	}
	if tick == nil {
		t.Fatal("no tick in the log")
	}
	o, _ := events.Observed(tick.Data)
	if o.Tick == nil || !o.Tick.Now.Equal(now) || !o.Tick.LastObserved.Equal(seen) || o.Tick.AbandonAfter != (30*time.Minute).Milliseconds() || tick.Actor != ActorReconciler {
		t.Errorf("tick = %+v (actor %s)", o.Tick, tick.Actor)
	}
	// The tick's decisions, decided again from the log, are the same.
	var before []events.Record
	var after []events.Envelope
	for _, r := range recs {
		switch {
		case r.Seq < tick.Seq:
			before = append(before, r)
		case r.Seq > tick.Seq:
			after = append(after, r.Envelope)
		}
	}
	again, err := session.Decide(session.Fold(session.Init(agg), before), session.Observe{Obs: tick.Envelope})
	if err != nil || len(again) != len(after) {
		t.Fatalf("decided again: %d events (err %v), recorded %d", len(again), err, len(after))
	}
	for i := range again {
		if again[i].Type != after[i].Type {
			t.Errorf("event %d: %s again, %s recorded", i, again[i].Type, after[i].Type)
		}
	}
}

// TestReconcile_AgentGone: a real process stands in for the agent; the
// session's hooks name it; while it lives ticks decide nothing, once it is
// killed the session ends with agent_gone.
func TestReconcile_AgentGone(t *testing.T) {
	t.Parallel()
	boot := BootID()
	if boot == "" {
		t.Skip("no boot id")
	}
	agent := exec.Command("sleep", "60")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	proc := procOf(t, agent.Process.Pid, "h", boot)

	log := ingesttest.OpenLog(t)
	in := newTestIngester(t, log)
	for _, p := range []string{
		`{"session_id":"g1","hook_event_name":"UserPromptSubmit","prompt":"go"}`,
		`{"session_id":"g1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"make"}}`,
	} {
		if _, err := in.Hook(t.Context(), Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: []byte(p), Process: proc}); err != nil {
			t.Fatal(err)
		}
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "g1"}
	check := func(p events.Process) events.ProcessCheck { return CheckProcess(p, "h", boot) }
	ap, s, err := in.Reconcile(t.Context(), agg, time.Now().Add(100*time.Hour), time.Minute, check)
	if err != nil || ap.Last != 0 || s.Phase != events.PhaseWorking {
		t.Fatalf("agent alive: appended %+v, phase %s, err %v; want nothing", ap, s.Phase, err)
	}
	agent.Process.Kill()
	agent.Wait()
	ap, s, err = in.Reconcile(t.Context(), agg, time.Now(), time.Minute, check)
	if err != nil || ap.Last == 0 {
		t.Fatalf("agent gone: appended %+v, err %v", ap, err)
	}
	if s.Phase != events.PhaseEnded || s.EndReason != session.ReasonAgentGone || s.Abandoned != 1 {
		t.Errorf("after: phase %s, end %q, %d abandoned", s.Phase, s.EndReason, s.Abandoned)
	}
	// Ended: later ticks decide nothing.
	if ap, _, err := in.Reconcile(t.Context(), agg, time.Now(), time.Minute, check); err != nil || ap.Last != 0 {
		t.Errorf("tick after the end: %+v, %v", ap, err)
	}
}

// procOf returns process pid as AgentProcess names one, read from
// /proc/<pid>/stat (proc(5): the command name in parentheses, then
// field 22 starttime).
func procOf(t *testing.T, pid int, host, boot string) *events.Process {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[j+1:]))
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return &events.Process{PID: pid, Start: start, Host: host, Boot: boot, Comm: string(b[i+1 : j])}
}
