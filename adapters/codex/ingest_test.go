package codex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

const (
	tid  = "019e55c2-1c15-7813-bbbe-9f699a6ccd3f"
	tid2 = "019e55eb-cdbc-78a1-84a6-c98c8e34a495"
)

// ev returns one envelope line of type typ with payload.
func ev(sec int, typ, payload string) string {
	return fmt.Sprintf(`{"timestamp":"2026-05-23T16:54:%02d.000Z","type":%q,"payload":%s}`+"\n", sec, typ, payload)
}

func meta(id, forkedFrom string) string {
	f := ""
	if forkedFrom != "" {
		f = fmt.Sprintf(`,"forked_from_id":%q`, forkedFrom)
	}
	return ev(0, "session_meta", fmt.Sprintf(`{"id":%q%s,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.130.0","source":"cli"}`, id, f))
}

func turnStart(sec int, turn string) string {
	return ev(sec, "event_msg", fmt.Sprintf(`{"type":"task_started","turn_id":%q}`, turn))
}

func userMsg(sec int, text string) string {
	return ev(sec, "event_msg", fmt.Sprintf(`{"type":"user_message","message":%q}`, text))
}

func turnDone(sec int, turn string) string {
	return ev(sec, "event_msg", fmt.Sprintf(`{"type":"task_complete","turn_id":%q}`, turn))
}

func call(sec int, id, name, args string) string {
	return ev(sec, "response_item", fmt.Sprintf(`{"type":"function_call","name":%q,"arguments":%q,"call_id":%q}`, name, args, id))
}

func output(sec int, id, out string) string {
	return ev(sec, "response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%q}`, id, out))
}

func rolloutPath(t *testing.T, id string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions", "2026", "05", "23")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "rollout-2026-05-23T18-54-05-"+id+".jsonl")
}

// rolloutRig opens a log and an ingester on it that skips nothing, and
// names the rollout file of session tid (rolloutPath).
func rolloutRig(t *testing.T) (*natslog.Log, *Ingester, string) {
	t.Helper()
	l := ingesttest.OpenLog(t)
	return l, newIngester(t, l, false), rolloutPath(t, tid)
}

func newIngester(t *testing.T, l events.Log, skip bool) *Ingester {
	t.Helper()
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", SkipInvalid: skip})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestImport_Turns(t *testing.T) {
	l, in, path := rolloutRig(t)
	ctx := t.Context()

	// A turn with an approval request waits; its output resumes it.
	ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "make hello.txt"),
		call(2, "c1", "exec_command", `{"cmd":"printf hi > hello.txt"}`),
		ev(3, "event_msg", `{"type":"exec_approval_request","call_id":"c1","turn_id":"t1","command":["bash","-lc","printf hi > hello.txt"],"cwd":"/home/user/p"}`))
	r, err := in.ImportFile(ctx, path, nil)
	if err != nil || r.Session != tid || r.Appended != 5 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	st := ingesttest.StateOf(t, l, tid)
	if st.Phase != events.PhaseWaiting || st.Turns != 1 || st.Agent != Agent || st.Version != "0.130.0" {
		t.Fatalf("after the approval request: phase %s turns %d agent %q version %q", st.Phase, st.Turns, st.Agent, st.Version)
	}
	ingesttest.AppendFile(t, path, output(4, "c1", "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n"))
	if _, err := in.ImportFile(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseWorking {
		t.Fatalf("after the approved call's output: %s", st.Phase)
	}
	// The user interrupts: the turn ends, the session is ready.
	ingesttest.AppendFile(t, path, ev(5, "event_msg", `{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}`))
	if _, err := in.ImportFile(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseReady || st.TurnOpen {
		t.Fatalf("after turn_aborted: %s, turn open %v", st.Phase, st.TurnOpen)
	}
	// A turn leaves a background terminal running: the session keeps
	// working after the turn, until a write_stdin reads its exit.
	ingesttest.AppendFile(t, path, turnStart(6, "t2"), userMsg(6, "start the server"),
		call(7, "c2", "exec_command", `{"cmd":"npm run dev","yield_time_ms":1000}`),
		output(8, "c2", "Chunk ID: b\nWall time: 1.0 seconds\nProcess running with session ID 42\nOutput:\nready\n"),
		turnDone(9, "t2"))
	if _, err := in.ImportFile(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	st = ingesttest.StateOf(t, l, tid)
	if st.Phase != events.PhaseWorking || st.Activity != "background" || st.TurnOpen || st.Turns != 2 {
		t.Fatalf("with a background terminal after the turn: %s/%s turn open %v turns %d", st.Phase, st.Activity, st.TurnOpen, st.Turns)
	}
	ingesttest.AppendFile(t, path, turnStart(10, "t3"), userMsg(10, "stop it"),
		call(11, "c3", "write_stdin", `{"session_id":42,"chars":"\u0003"}`),
		output(12, "c3", "Chunk ID: c\nWall time: 0.1 seconds\nProcess exited with code 130\nOutput:\n"),
		turnDone(13, "t3"))
	// A fresh ingester rebuilds the file's context from its lines.
	in2 := newIngester(t, l, false)
	if _, err := in2.ImportFile(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseReady || len(st.Entries) != 0 {
		t.Fatalf("after the terminal exited: %s, entries %+v", st.Phase, st.Entries)
	}
}

// A Codex turn that ends proposing a plan (plan mode's <proposed_plan>
// block; Codex then asks "Implement this plan?") or asking a question
// waits on the person, and the person's next prompt starts a turn.
func TestImport_TurnEndLeftToPerson(t *testing.T) {
	for _, tc := range []struct{ last, activity string }{
		{"Here is the plan.\n<proposed_plan>\n1. Add a test\n2. Fix it\n</proposed_plan>", "plan"},
		{"Which database should I use?", "question"},
		{"Done.", ""},
	} {
		l, in, path := rolloutRig(t)
		done := ev(3, "event_msg", fmt.Sprintf(`{"type":"task_complete","turn_id":"t1","last_agent_message":%q}`, tc.last))
		ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "plan the fix"), done)
		if _, err := in.ImportFile(t.Context(), path, nil); err != nil {
			t.Fatal(err)
		}
		st := ingesttest.StateOf(t, l, tid)
		want := events.PhaseWaiting
		if tc.activity == "" {
			want = events.PhaseReady
		}
		if st.Phase != want || tc.activity != "" && st.Activity != tc.activity {
			t.Errorf("%q: %s/%s, want %s/%s", tc.last, st.Phase, st.Activity, want, tc.activity)
			continue
		}
		if _, _, ok := st.PersonWait(); ok != (tc.activity != "") {
			t.Errorf("%q: PersonWait %v", tc.last, ok)
		}
		ingesttest.AppendFile(t, path, turnStart(9, "t2"), userMsg(9, "implement it"))
		if _, err := in.ImportFile(t.Context(), path, nil); err != nil {
			t.Fatal(err)
		}
		if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseWorking {
			t.Errorf("%q: after the next prompt %s", tc.last, st.Phase)
		}
	}
}

func TestImport_ForkIsItsOwnSession(t *testing.T) {
	l := ingesttest.OpenLog(t)
	in := newIngester(t, l, false)
	ctx := t.Context()
	origin := rolloutPath(t, tid)
	ingesttest.AppendFile(t, origin, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "one"), turnDone(2, "t1"))
	fork := filepath.Join(filepath.Dir(origin), "rollout-2026-05-23T18-55-00-"+tid2+".jsonl")
	// A fork writes its own session_meta, then the origin's history,
	// the origin's session_meta included.
	ingesttest.AppendFile(t, fork, meta(tid2, tid), meta(tid, ""), turnStart(1, "t1"), userMsg(1, "one"), turnDone(2, "t1"),
		turnStart(3, "t2"), userMsg(3, "two"), turnDone(4, "t2"))
	files, err := Discover(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(origin)))))
	if err != nil || len(files) != 2 {
		t.Fatalf("discover: %v, %v", files, err)
	}
	for _, f := range files {
		r, err := in.ImportFile(ctx, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range r.Warnings {
			t.Errorf("warning: %s", w)
		}
	}
	o, f := ingesttest.StateOf(t, l, tid), ingesttest.StateOf(t, l, tid2)
	if o.Turns != 1 || f.ForkedFrom != tid || f.Phase != events.PhaseReady || f.Turns != 2 || o.ForkedFrom != "" {
		t.Fatalf("origin %d turns; fork from %q, %s, %d turns", o.Turns, f.ForkedFrom, f.Phase, f.Turns)
	}
	recs, _, _ := l.Load(ctx, events.Aggregate{Kind: events.KindSession, ID: tid2})
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok && len(o.Problems) > 0 {
			t.Errorf("fork line %d: problems %v", o.Line, o.Problems)
		}
	}
}

func TestImport_BadInput(t *testing.T) {
	ctx := t.Context()
	t.Run("malformed line stops the file with path and line; nothing of it appended", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""), "{not json}\n", turnStart(2, "t1"))
		r, err := in.ImportFile(ctx, path, nil)
		var le *ingest.LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ingest.ErrSyntax) || !strings.Contains(err.Error(), filepath.Base(path)+":2") {
			t.Fatalf("err = %v, want a syntax error at line 2", err)
		}
		if r.Appended != 1 || r.Lines != 1 {
			t.Fatalf("result %+v", r)
		}
		// --skip-invalid records it and goes on.
		r, err = newIngester(t, l, true).ImportFile(ctx, path, nil)
		if err != nil || r.Appended != 2 || len(r.Warnings) != 1 {
			t.Fatalf("skip-invalid: %+v, %v", r, err)
		}
		if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseWorking {
			t.Fatalf("phase %s", st.Phase)
		}
	})
	t.Run("a member named twice stops the file naming it; nothing of it appended", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		dup := ev(2, "event_msg", `{"type":"task_started","type":"task_complete","turn_id":"t1"}`)
		ingesttest.AppendFile(t, path, meta(tid, ""), dup, turnStart(3, "t2"))
		r, err := in.ImportFile(ctx, path, nil)
		var le *ingest.LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ingest.ErrDuplicateKey) || !strings.Contains(err.Error(), filepath.Base(path)+`:2: duplicate key "payload.type"`) {
			t.Fatalf("err = %v, want a duplicate key at line 2", err)
		}
		if r.Appended != 1 || r.Lines != 1 {
			t.Fatalf("result %+v", r)
		}
		if st := ingesttest.StateOf(t, l, tid); st.Turns != 0 {
			t.Fatalf("%d turns after the refused line", st.Turns)
		}
	})
	t.Run("torn last line waits", func(t *testing.T) {
		_, in, path := rolloutRig(t)
		full := turnStart(1, "t1")
		ingesttest.AppendFile(t, path, meta(tid, ""), full[:20])
		r, err := in.ImportFile(ctx, path, nil)
		if err != nil || !r.Torn || r.Appended != 1 {
			t.Fatalf("torn: %+v, %v", r, err)
		}
		ingesttest.AppendFile(t, path, full[20:])
		r, err = in.ImportFile(ctx, path, nil)
		if err != nil || r.Torn || r.Appended != 1 || r.Skipped != 1 {
			t.Fatalf("completed: %+v, %v", r, err)
		}
	})
	t.Run("unknown payload type is recorded, flagged, and changes no phase", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""), ev(1, "event_msg", `{"type":"brand_new_event","x":1}`), ev(2, "future_item", `{"a":1}`))
		if _, err := in.ImportFile(ctx, path, nil); err != nil {
			t.Fatal(err)
		}
		obs := observations(t, l, tid)
		if len(obs) != 3 || len(obs[1].Problems) != 1 || len(obs[2].Problems) != 1 || len(obs[1].Signals)+len(obs[2].Signals) != 0 {
			t.Fatalf("observations %+v", obs)
		}
		if arc := ingesttest.ArcOf(t, l, tid); strings.Join(arc, ">") != "ready" {
			t.Fatalf("arc %v", arc)
		}
	})
	t.Run("missing session_meta names the session after the file", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, turnStart(1, "t1"), userMsg(1, "hi"))
		r, err := in.ImportFile(ctx, path, nil)
		if err != nil || r.Session != tid {
			t.Fatalf("%+v, %v", r, err)
		}
		if obs := observations(t, l, tid); len(obs[0].Problems) != 1 {
			t.Fatalf("line 1 problems %v", obs[0].Problems)
		}
	})
	t.Run("a second session_meta for another session is flagged", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""), meta(tid2, ""))
		if _, err := in.ImportFile(ctx, path, nil); err != nil {
			t.Fatal(err)
		}
		obs := observations(t, l, tid)
		if len(obs) != 2 || len(obs[1].Problems) != 1 || len(obs[1].Signals) != 0 || !strings.Contains(obs[1].Problems[0], tid2) {
			t.Fatalf("observations %+v", obs)
		}
		if st := ingesttest.StateOf(t, l, tid2); st.Exists() {
			t.Fatal("the second id started a session")
		}
	})
	t.Run("legacy and envelope lines mixed", func(t *testing.T) {
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""), `{"record_type":"state"}`+"\n", `{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`+"\n")
		if _, err := in.ImportFile(ctx, path, nil); err != nil {
			t.Fatal(err)
		}
		obs := observations(t, l, tid)
		for _, o := range obs[1:] {
			if o.Kind != "mixed" || len(o.Signals) != 0 || len(o.Problems) != 1 {
				t.Errorf("line %d: %+v", o.Line, o)
			}
		}
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		_, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""), "{\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"\xff\xfe\"}}\n")
		_, err := in.ImportFile(ctx, path, nil)
		var le *ingest.LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ingest.ErrInvalidUTF8) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a line over the raw cap keeps its signals and is cut", func(t *testing.T) {
		l := ingesttest.OpenLog(t)
		p, err := NewParser(Config{MaxRaw: 1024})
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewIngester(IngestConfig{Log: l, Parser: p, Host: "test"})
		if err != nil {
			t.Fatal(err)
		}
		path := rolloutPath(t, tid)
		ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(2, strings.Repeat("x", 100_000)))
		if _, err := in.ImportFile(ctx, path, nil); err != nil {
			t.Fatal(err)
		}
		obs := observations(t, l, tid)
		o := obs[2]
		if o.Cut == nil || len(o.Raw) > 1024 || o.Cut.Size < 100_000 || len(o.Signals) != 1 || len(o.Signals[0].Text) > MaxSigText {
			t.Fatalf("cut %+v raw %d signals %+v", o.Cut, len(o.Raw), o.Signals)
		}
	})
	t.Run("a line over the line cap is recorded cut, warned of, and the import goes on", func(t *testing.T) {
		if testing.Short() {
			t.Skip("writes 64 MiB")
		}
		l, in, path := rolloutRig(t)
		ingesttest.AppendFile(t, path, meta(tid, ""))
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		big := make([]byte, ingest.MaxLineBytes+2)
		for i := range big {
			big[i] = 'y'
		}
		big[len(big)-1] = '\n'
		if _, err := f.Write(big); err != nil {
			t.Fatal(err)
		}
		f.Close()
		ingesttest.AppendFile(t, path, turnStart(3, "t1"))
		r, err := in.ImportFile(ctx, path, nil)
		if err != nil || r.Lines != 3 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], ":2: line too long") {
			t.Fatalf("import: %+v, %v", r, err)
		}
		o := observations(t, l, tid)[1]
		if o.Line != 2 || o.Kind != "invalid" || o.Meta.Agent != Agent || o.Cut == nil || o.Cut.Size != ingest.MaxLineBytes+1 || o.Cut.SHA256 == "" || len(o.Signals) != 0 {
			t.Fatalf("line 2: line %d, kind %q, cut %+v, signals %v", o.Line, o.Kind, o.Cut, o.Signals)
		}
		// Another process reads the rollout's state up to its cursor past
		// the long line, and goes on after it.
		ingesttest.AppendFile(t, path, userMsg(4, "next"))
		r, err = newIngester(t, l, false).ImportFile(ctx, path, nil)
		if err != nil || r.Appended != 1 || r.Lines != 4 {
			t.Fatalf("import by another process: %+v, %v", r, err)
		}
		if o := observations(t, l, tid)[3]; o.Line != 4 || len(o.Signals) != 1 || o.Signals[0].Kind != events.SigPrompt {
			t.Fatalf("line 4: line %d, signals %+v", o.Line, o.Signals)
		}
	})
}

// TestImport_TwiceAndAtOnce imports one rollout from four goroutines at
// once, then again: every line is appended once.
func TestImport_TwiceAndAtOnce(t *testing.T) {
	l := ingesttest.OpenLog(t)
	ctx := t.Context()
	path := rolloutPath(t, tid)
	lines := []string{meta(tid, "")}
	for i := range 10 {
		turn := fmt.Sprintf("t%d", i)
		lines = append(lines, turnStart(i, turn), userMsg(i, "go"), call(i, "c"+turn, "exec_command", `{"cmd":"ls"}`), output(i, "c"+turn, "Process exited with code 0"), turnDone(i, turn))
	}
	ingesttest.AppendFile(t, path, lines...)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := newIngester(t, l, false)
			if _, err := in.ImportFile(ctx, path, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, err := newIngester(t, l, false).ImportFile(ctx, path, nil)
	if err != nil || r.Appended != 0 || r.Skipped != len(lines) {
		t.Fatalf("re-import: %+v, %v", r, err)
	}
	if obs := observations(t, l, tid); len(obs) != len(lines) {
		t.Fatalf("%d observations for %d lines", len(obs), len(lines))
	}
	if st := ingesttest.StateOf(t, l, tid); st.Turns != 10 || st.Phase != events.PhaseReady {
		t.Fatalf("turns %d phase %s", st.Turns, st.Phase)
	}
}

func TestNotify(t *testing.T) {
	l, in, path := rolloutRig(t)
	ctx := t.Context()
	ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "hi"))
	if _, err := in.ImportFile(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	payload := fmt.Sprintf(`{"type":"agent-turn-complete","thread-id":%q,"turn-id":"t1","cwd":"/home/user/p","input-messages":["hi"],"last-assistant-message":"done"}`, tid)
	if !IsNotify([]byte(payload)) {
		t.Fatal("IsNotify = false")
	}
	id := ulid.Make().String()
	e := ingest.Entry{ID: id, Time: time.Date(2026, 5, 23, 16, 55, 0, 0, time.UTC), Payload: []byte(payload)}
	ap, err := in.Notify(ctx, e)
	if err != nil || ap.Last == 0 {
		t.Fatalf("notify: %+v, %v", ap, err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseReady || st.TurnOpen {
		t.Fatalf("after notify: %s", st.Phase)
	}
	// Redelivery appends nothing.
	if ap, err := in.Notify(ctx, e); err != nil || ap.Last != 0 {
		t.Fatalf("redelivery: %+v, %v", ap, err)
	}
	p, _ := NewParser(Config{})
	for name, bad := range map[string]string{
		"no thread-id":      `{"type":"agent-turn-complete","turn-id":"t1"}`,
		"no type":           fmt.Sprintf(`{"thread-id":%q}`, tid),
		"thread-id number":  `{"type":"agent-turn-complete","thread-id":7}`,
		"thread-id bad id":  `{"type":"agent-turn-complete","thread-id":"a/b"}`,
		"not json":          `{"type":`,
		"not an object":     `[1,2]`,
		"invalid utf-8":     "{\"type\":\"agent-turn-complete\",\"thread-id\":\"\xff\"}",
		"empty thread-id":   `{"type":"agent-turn-complete","thread-id":""}`,
		"null thread-id":    `{"type":"agent-turn-complete","thread-id":null}`,
		"type wrong kind":   fmt.Sprintf(`{"type":1,"thread-id":%q}`, tid),
		"whitespace only":   `   `,
		"a claude hook too": `{"hook_event_name":"Stop","session_id":"s"}`,
	} {
		if _, err := p.Notify([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		} else if _, ok := errors.AsType[*NotifyError](err); !ok {
			t.Errorf("%s: %T %v", name, err, err)
		}
	}
	// An unknown notify type is recorded and flagged, with no signal.
	o, err := p.Notify(fmt.Appendf(nil, `{"type":"approval-needed","thread-id":%q}`, tid))
	if err != nil || len(o.Signals) != 0 || len(o.Problems) != 1 {
		t.Fatalf("unknown type: %+v, %v", o, err)
	}
}

// observations returns the observations stored on session id, in order.
func observations(t *testing.T, l events.Log, id string) []events.Observation {
	t.Helper()
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Observation
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok {
			out = append(out, *o)
		}
	}
	return out
}

func TestTokenCount(t *testing.T) {
	p, _ := NewParser(Config{})
	st := FileState{Format: FormatEnvelope, Model: "gpt-5.5", Line: 1}
	good := ev(9, "event_msg", `{"type":"token_count","info":{"total_token_usage":{"input_tokens":29692,"cached_input_tokens":3456,"output_tokens":17,"reasoning_output_tokens":10,"total_tokens":29709}},"rate_limits":{"limit_id":"codex","primary":{"used_percent":1.0,"window_minutes":300,"resets_at":1779573247},"secondary":{"used_percent":2.5,"window_minutes":10080,"resets_at":1780095379},"plan_type":"plus"}}`)
	o, err := p.Line(&st, "r.jsonl", 2, []byte(good))
	if err != nil || len(o.Problems) != 0 || len(o.Signals) != 3 {
		t.Fatalf("%+v, %v", o, err)
	}
	u := o.Signals[0].Usage
	if u == nil || u.RunningTotal == nil || *u.RunningTotal != (events.Usage{Input: 26236, CacheRead: 3456, Output: 17, Reasoning: 10}) {
		t.Fatalf("usage %+v", u)
	}
	c := *u
	c.RunningTotal = nil
	if c != (events.Usage{Model: "gpt-5.5", Input: 26236, CacheRead: 3456, Output: 17, Reasoning: 10}) || o.Signals[0].ID != "codex-total:29692/3456/0/17" {
		t.Fatalf("usage %+v %q", o.Signals[0].Usage, o.Signals[0].ID)
	}
	if l := o.Signals[2].Limit; l == nil || *l != (events.Limit{Account: "codex/plus", Window: "secondary", UsedPercent: 2.5, Minutes: 10080, ResetsAt: 1780095379}) {
		t.Fatalf("limit %+v", o.Signals[2].Limit)
	}
	for name, bad := range map[string]string{
		"negative":        `{"input_tokens":-1,"cached_input_tokens":0,"output_tokens":1}`,
		"non-numeric":     `{"input_tokens":"x","output_tokens":1}`,
		"absurd":          `{"input_tokens":1e300,"output_tokens":1}`,
		"cached over all": `{"input_tokens":5,"cached_input_tokens":9,"output_tokens":1}`,
		"output missing":  `{"input_tokens":5,"cached_input_tokens":1}`,
	} {
		line := ev(9, "event_msg", `{"type":"token_count","info":{"total_token_usage":`+bad+`},"rate_limits":{"primary":{"used_percent":3,"window_minutes":300}}}`)
		o, err := p.Line(&st, "r.jsonl", 3, []byte(line))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(o.Signals) != 1 || o.Signals[0].Kind != events.SigRateLimit || len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "usage refused") {
			t.Errorf("%s: signals %+v problems %v", name, o.Signals, o.Problems)
		}
	}
	// info null (before the first call): rate limits only.
	o, _ = p.Line(&st, "r.jsonl", 4, []byte(ev(9, "event_msg", `{"type":"token_count","info":null,"rate_limits":null}`)))
	if len(o.Signals) != 0 || len(o.Problems) != 0 {
		t.Errorf("null info: %+v", o)
	}
}

// total returns a token_count line with running totals in, cached, out,
// and a rate-limit reading of sec percent.
func total(sec int, in, cached, out int64) string {
	return ev(sec, "event_msg", fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}},"rate_limits":{"limit_id":"codex","primary":{"used_percent":%d,"window_minutes":300,"resets_at":1779573247}}}`, in, cached, out, in+out, sec))
}

func turnCtx(sec int, turn string) string {
	return ev(sec, "turn_context", fmt.Sprintf(`{"turn_id":%q,"cwd":"/home/user/p","model":"gpt-5.5","sandbox_policy":{"type":"workspace-write"}}`, turn))
}

// TestImport_ForkSpendIsItsOwn: a fork copies its origin's history,
// token_count totals included, then goes on with its own turns. The
// copied totals are the origin's spend and count nothing in the fork; the
// fork's own totals count their growth over the last copied one, or
// everything when the fork's counter starts again from zero.
func TestImport_ForkSpendIsItsOwn(t *testing.T) {
	// UUIDv7 turn ids: the origin's turn began before the fork (tid2), the
	// fork's own turn after it.
	const originTurn, forkTurn = "019e55c2-1c3d-7000-aa4e-8438fdf7df72", "019e55ec-1118-7d42-ae3d-2b0673e0053a"
	originLines := []string{meta(tid, ""), turnCtx(1, originTurn), turnStart(1, originTurn), userMsg(1, "one"),
		total(2, 1000, 200, 10), total(3, 3000, 1200, 30), turnDone(4, originTurn)}
	for name, own := range map[string][]string{
		// Codex carries the origin's total on: 3000/1200/30 → 3500/1500/45.
		"totals go on":        {total(6, 3200, 1300, 40), total(7, 3500, 1500, 45)},
		"counter starts anew": {total(6, 200, 100, 10), total(7, 500, 300, 15)},
	} {
		t.Run(name, func(t *testing.T) {
			l := ingesttest.OpenLog(t)
			in := newIngester(t, l, false)
			origin := rolloutPath(t, tid)
			ingesttest.AppendFile(t, origin, originLines...)
			fork := filepath.Join(filepath.Dir(origin), "rollout-2026-05-23T18-55-00-"+tid2+".jsonl")
			lines := append([]string{meta(tid2, tid)}, originLines...)
			lines = append(lines, turnCtx(5, forkTurn), turnStart(5, forkTurn), userMsg(5, "two"))
			lines = append(lines, own...)
			ingesttest.AppendFile(t, fork, append(lines, turnDone(8, forkTurn))...)
			for _, p := range []string{origin, fork} {
				if _, err := in.ImportFile(t.Context(), p, nil); err != nil {
					t.Fatal(err)
				}
			}
			sum := func(id string) (tok [4]int64) {
				for _, b := range ingesttest.StateOf(t, l, id).Usage {
					tok[0] += b.Input
					tok[1] += b.CacheRead
					tok[2] += b.Output
					tok[3] += b.Calls
				}
				return tok
			}
			if got := sum(tid); got != [4]int64{1800, 1200, 30, 2} {
				t.Errorf("origin: input, cache read, output, calls = %v, want [1800 1200 30 2]", got)
			}
			// Its own: 500 input (200 not cached), 300 cached, 15 output.
			if got := sum(tid2); got != [4]int64{200, 300, 15, 2} {
				t.Errorf("fork: input, cache read, output, calls = %v, want [200 300 15 2]", got)
			}
			// The copied rate limits are the origin's old readings.
			if lim := ingesttest.StateOf(t, l, tid2).Limits; len(lim) != 1 || lim[0].UsedPercent != 7 {
				t.Errorf("fork's limits %+v, want only its own last reading (7%%)", lim)
			}
		})
	}
}

func TestUUIDv7Millis(t *testing.T) {
	if ms, ok := uuidv7Millis(tid2); !ok || ms != 0x019e55ebcdbc {
		t.Errorf("%s: %x %v", tid2, ms, ok)
	}
	for _, bad := range []string{"t1", "", "031d3ab5-1e7f-4e55-8e54-10ebd73d1a8d", "019e55eb-cdbc-78a1-84a6"} {
		if _, ok := uuidv7Millis(bad); ok {
			t.Errorf("%q read as a UUIDv7", bad)
		}
	}
}

// TestImport_CompactAfterAnUnendedTurn: Codex runs a /compact typed at
// the prompt as a task of its own (task_started, compacted,
// context_compacted, task_complete), so a turn whose end was never
// written (a call's output, then nothing) is over once the compaction's
// task starts, and the session is ready after it; an automatic
// compaction inside a turn (no task_started of its own) keeps the turn.
func TestImport_CompactAfterAnUnendedTurn(t *testing.T) {
	l, in, path := rolloutRig(t)
	ingesttest.AppendFile(t, path, meta(tid, ""), turnStart(1, "t1"), userMsg(1, "run the tests"),
		call(2, "c1", "exec_command", `{"cmd":"go test ./..."}`),
		output(3, "c1", "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok\n"),
		ev(4, "compacted", `{"message":"","replacement_history":[]}`),
		ev(4, "event_msg", `{"type":"context_compacted"}`))
	if _, err := in.ImportFile(t.Context(), path, nil); err != nil {
		t.Fatal(err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseWorking || !st.TurnOpen {
		t.Fatalf("after an automatic compaction inside the turn: %s, turn open %v", st.Phase, st.TurnOpen)
	}
	ingesttest.AppendFile(t, path, turnStart(10, "t2"), ev(11, "compacted", `{"message":"","replacement_history":[]}`),
		ev(11, "event_msg", `{"type":"context_compacted"}`), turnDone(12, "t2"))
	if _, err := in.ImportFile(t.Context(), path, nil); err != nil {
		t.Fatal(err)
	}
	if st := ingesttest.StateOf(t, l, tid); st.Phase != events.PhaseReady || st.TurnOpen || st.Turns != 2 || len(st.Entries) != 0 {
		t.Fatalf("after the compaction's own task: %s, turn open %v, turns %d, entries %+v", st.Phase, st.TurnOpen, st.Turns, st.Entries)
	}
}

// TestImport_CopyAtAnotherPath: a rollout copied under another name (its
// lines carry no uuid: they are known by number and bytes) imports
// nothing again into its session.
func TestImport_CopyAtAnotherPath(t *testing.T) {
	l, in, path := rolloutRig(t)
	lines := []string{meta(tid, ""), turnStart(1, "t1"), userMsg(1, "run the tests"),
		call(2, "c1", "exec_command", `{"cmd":"go test ./..."}`),
		output(3, "c1", "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok\n"), turnDone(4, "t1")}
	ingesttest.AppendFile(t, path, lines...)
	if r, err := in.ImportFile(t.Context(), path, nil); err != nil || r.Appended != 6 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	before := ingesttest.StateOf(t, l, tid)
	copyPath := filepath.Join(t.TempDir(), "rollout-backup-"+tid+".jsonl")
	ingesttest.AppendFile(t, copyPath, lines...)
	r, err := in.ImportFile(t.Context(), copyPath, nil)
	if err != nil || r.Session != tid || r.Appended != 0 {
		t.Fatalf("the copy: %+v, %v; want nothing appended to %s", r, err, tid)
	}
	if after := ingesttest.StateOf(t, l, tid); after.Turns != before.Turns || after.Observations != before.Observations+1 || after.Phase != events.PhaseReady {
		t.Errorf("the copy: turns %d→%d, observations %d→%d, phase %s", before.Turns, after.Turns, before.Observations, after.Observations, after.Phase)
	}
}
