package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/journal"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// intakeEnv is a real embedded log and a data dir's spool, views and
// journal path, for Services that come and go over them as servers do.
type intakeEnv struct {
	t       *testing.T
	dir     string
	reg     *events.Registry
	log     *natslog.Log
	journal string
}

func newIntakeEnv(t *testing.T) *intakeEnv {
	t.Helper()
	return newIntakeEnvDup(t, 0)
}

// newIntakeEnvDup is newIntakeEnv with the stream's Nats-Msg-Id
// duplicate window dup (0: natslog's default).
func newIntakeEnvDup(t *testing.T, dup time.Duration) *intakeEnv {
	t.Helper()
	dir := t.TempDir()
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream"), Fsync: natslog.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: reg, Duplicates: dup})
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		srv.Shutdown()
	})
	return &intakeEnv{t: t, dir: dir, reg: reg, log: l, journal: filepath.Join(dir, "hooks.journal")}
}

// service returns a new Service over the env's log, as a server starting
// on the data dir makes one.
func (e *intakeEnv) service() *Service {
	e.t.Helper()
	store, err := projections.OpenMem(projections.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { store.Close() })
	parser, err := claude.NewParser(claude.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	svc, err := NewService(Config{Log: e.log, Reg: e.reg, Store: store, Parser: parser, Host: "test", SpoolDir: filepath.Join(e.dir, "spool"), PartSize: 1 << 20})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// runProjector runs svc's projector (svc.Runner) and returns the function
// that stops it and waits until it has returned.
func runProjector(svc *Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	projected := make(chan error, 1)
	go func() { projected <- svc.Runner.Run(ctx) }()
	return func() {
		cancel()
		<-projected
	}
}

func (e *intakeEnv) open(svc *Service) *Intake {
	e.t.Helper()
	in, err := OpenIntake(svc, e.journal, e.t.Logf)
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

// run runs in until the test ends.
func run(t *testing.T, in *Intake) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		in.Close()
	})
}

// flushAll has in decide every record its journal holds, waiting at most
// within, and fails the test unless none is left.
func flushAll(t *testing.T, in *Intake, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	if left, err := in.Flush(ctx); left != 0 || err != nil {
		t.Fatalf("Flush: %d left, %v", left, err)
	}
}

// runDrained runs in as run does and waits until svc has decided every
// record the journal held; a failure to wait fails the test.
func runDrained(t *testing.T, in *Intake, svc *Service) {
	t.Helper()
	run(t, in)
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// hookReq returns a hook request for a PreToolUse (event "pre") or
// PostToolUse ("post") of call in session sid.
func hookReq(t *testing.T, sid, event, call string) []byte {
	t.Helper()
	name := map[string]string{"pre": "PreToolUse", "post": "PostToolUse"}[event]
	payload := fmt.Sprintf(`{"session_id":%q,"transcript_path":"/home/u/.claude/projects/p/%s.jsonl","cwd":"/home/u/p","permission_mode":"default","hook_event_name":%q,"tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":%q}`, sid, sid, name, call)
	if event == "post" {
		payload = strings.TrimSuffix(payload, "}") + `,"tool_response":{"stdout":"ok","stderr":"","interrupted":false}}`
	}
	b, err := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// observed returns, per session, the hook kind and tool call id of every
// hook observation in the log, in log order, and the count of each event
// type.
func (e *intakeEnv) observed() (map[string][]string, map[string]int) {
	e.t.Helper()
	obs, types := map[string][]string{}, map[string]int{}
	last, err := e.log.LastSeq(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	if last == 0 {
		return obs, types
	}
	for r, err := range e.log.Read(e.t.Context(), 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		types[r.Type]++
		if p, ok := r.Data.(events.ClaudeHookObserved); ok {
			call := ""
			for _, s := range p.Signals {
				call = s.ID
			}
			obs[r.Agg.ID] = append(obs[r.Agg.ID], p.Kind+" "+call)
		}
		if r.Seq == last {
			break
		}
	}
	return obs, types
}

// TestIntake_AcceptThenAppend: each hook taken is answered with its place
// in the journal, nothing yet appended; Run appends each one once, with
// its decisions, and marks it done; Wait returns once they are in.
func TestIntake_AcceptThenAppend(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	for i := range 6 {
		v, err := in.Accept(t.Context(), hookReq(t, fmt.Sprintf("s%d", i%2), "pre", fmt.Sprintf("toolu_%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := v.(HookReply); !ok || r.Queued != uint64(i+1) || r.Seq != 0 {
			t.Fatalf("hook %d: answer %#v, want its place in the journal", i, v)
		}
	}
	if obs, _ := e.observed(); len(obs) != 0 {
		t.Fatalf("appended before Run: %v", obs)
	}
	if in.Pending() != 6 {
		t.Fatalf("Pending %d, want 6", in.Pending())
	}
	runDrained(t, in, svc)
	obs, types := e.observed()
	want := map[string][]string{
		"s0": {"PreToolUse toolu_0", "PreToolUse toolu_2", "PreToolUse toolu_4"},
		"s1": {"PreToolUse toolu_1", "PreToolUse toolu_3", "PreToolUse toolu_5"},
	}
	if fmt.Sprint(obs) != fmt.Sprint(want) {
		t.Errorf("observed %v, want %v", obs, want)
	}
	if types["session.entry_opened"] != 6 {
		t.Errorf("event types %v: want 6 entries opened", types)
	}
	if in.Pending() != 0 || in.j.Pending() != 0 {
		t.Errorf("left: %d queued, %d in the journal", in.Pending(), in.j.Pending())
	}
}

// TestIntake_Refused: a request or payload the hook verb refuses is
// refused the same, with its code, and nothing is taken.
func TestIntake_Refused(t *testing.T) {
	e := newIntakeEnv(t)
	in := e.open(e.service())
	defer in.Close()
	bad := func(text string) []byte {
		b, _ := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: text})
		return b
	}
	for name, req := range map[string][]byte{
		"not json":          []byte("{"),
		"bad id":            []byte(`{"id":"x","text":"{}"}`),
		"payload not json":  bad("not json"),
		"no session":        bad(`{"hook_event_name":"Stop"}`),
		"bad session id":    bad(`{"session_id":"../x","hook_event_name":"Stop"}`),
		"unknown hook kind": bad(`{"session_id":"s","hook_event_name":42}`),
	} {
		_, err := in.Accept(t.Context(), req)
		if err == nil || errCode(err) != "malformed" {
			t.Errorf("%s: %v (code %q), want malformed", name, err, errCode(err))
		}
	}
	if in.Pending() != 0 || in.j.Pending() != 0 {
		t.Errorf("taken: %d queued, %d in the journal", in.Pending(), in.j.Pending())
	}
}

// TestIntake_Restart: hooks taken by a server that stopped before
// appending them (its journal closed, as by SIGKILL) go into the log
// when the next one opens the journal; one appended before the stop but
// not yet marked done goes in once.
func TestIntake_Restart(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	var reqs [][]byte
	for i := range 4 {
		req := hookReq(t, "s", "pre", fmt.Sprintf("toolu_%d", i))
		if _, err := in.Accept(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	// The first two made it into the log; the server died before it
	// marked them done.
	for _, req := range reqs[:2] {
		ent, err := hookEntry(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Ing.HookThen(t.Context(), ent, nil); err != nil {
			t.Fatal(err)
		}
	}
	in.j.Close()

	svc2 := e.service()
	in2 := e.open(svc2)
	if in2.Pending() != 4 {
		t.Fatalf("reopened: %d pending, want 4", in2.Pending())
	}
	runDrained(t, in2, svc2)
	obs, types := e.observed()
	if want := []string{"PreToolUse toolu_0", "PreToolUse toolu_1", "PreToolUse toolu_2", "PreToolUse toolu_3"}; fmt.Sprint(obs["s"]) != fmt.Sprint(want) {
		t.Errorf("observed %v, want each once: %v", obs["s"], want)
	}
	if types["session.entry_opened"] != 4 {
		t.Errorf("event types %v: want 4 entries opened", types)
	}
}

// TestIntake_RecordRefusedOnRestart: a record in the journal that the
// server now refuses (written by another version, say) is set aside,
// redacted, in the spool's rejected/ folder with why, and does not hold
// up the records after it.
func TestIntake_RecordRefusedOnRestart(t *testing.T) {
	e := newIntakeEnv(t)
	j, _, err := journal.Open(e.journal, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	bad, _ := json.Marshal(HookRequest{ID: id, Text: `{"session_id":"s","hook_event_name":"Stop","x":"sk-ant-api03-` + strings.Repeat("a", 90) + `"`})
	for _, rec := range [][]byte{bad, hookReq(t, "s", "pre", "toolu_after")} {
		if _, err := j.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	svc := e.service()
	in := e.open(svc)
	runDrained(t, in, svc)
	if obs, _ := e.observed(); fmt.Sprint(obs["s"]) != "[PreToolUse toolu_after]" {
		t.Errorf("observed %v", obs)
	}
	why, err := os.ReadFile(filepath.Join(e.dir, "spool", "rejected", id+".why"))
	if err != nil {
		t.Fatalf("not set aside: %v", err)
	}
	kept, _ := os.ReadFile(filepath.Join(e.dir, "spool", "rejected", id+".json"))
	if strings.Contains(string(kept), "sk-ant-api03-aaaa") {
		t.Errorf("set aside unredacted: %s", kept)
	}
	t.Logf("why: %s", why)
}

// TestIntake_OthersWait: a hook on the NATS verb (and a query) waits for
// the hooks the socket took before it, so each session's order is the
// order its hooks came in, whichever way they came.
func TestIntake_OthersWait(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	if _, err := in.Accept(t.Context(), hookReq(t, "s", "pre", "toolu_1")); err != nil {
		t.Fatal(err)
	}
	verb := make(chan error, 1)
	go func() {
		_, err := svc.Hook(t.Context(), hookReq(t, "s", "post", "toolu_1"))
		verb <- err
	}()
	select {
	case err := <-verb:
		t.Fatalf("the verb did not wait for the hook taken before it: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	run(t, in)
	if err := <-verb; err != nil {
		t.Fatal(err)
	}
	if obs, _ := e.observed(); fmt.Sprint(obs["s"]) != "[PreToolUse toolu_1 PostToolUse toolu_1]" {
		t.Errorf("observed %v", obs)
	}
}

// TestIntake_WaitTimesOut: with nothing running the intake, Wait gives
// up after IntakeWait (or its context) with an error naming what is left.
func TestIntake_WaitTimesOut(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	defer in.Close()
	if _, err := in.Accept(t.Context(), hookReq(t, "s", "pre", "toolu_1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := svc.CaughtUp(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not all in the log yet (1 left)") {
		t.Fatalf("CaughtUp: %v", err)
	}

	// While serve's appends are paused for a full disk, the error says so.
	svc.Paused = func() string {
		return "appends paused: disk full since 2026-12-05T07:00:00Z (/d/jetstream: 0 bytes free)"
	}
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err = svc.CaughtUp(ctx)
	if err == nil || !strings.Contains(err.Error(), "not all in the log yet (1 left): serve's appends paused: disk full since 2026-12-05T07:00:00Z (/d/jetstream: 0 bytes free): free space there") {
		t.Fatalf("CaughtUp while paused: %v", err)
	}
}

// TestIntake_Concurrent: hooks of several sessions taken at once while
// Run appends go in once each, each session's in the order they were
// taken, and Flush leaves nothing behind.
func TestIntake_Concurrent(t *testing.T) {
	t.Parallel() // its own server and log
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.Run(ctx)
	}()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		order = map[string][]string{}
	)
	for s := range 5 {
		wg.Go(func() {
			sid := fmt.Sprintf("s%d", s)
			for i := range 12 {
				call := fmt.Sprintf("toolu_%d", i)
				mu.Lock() // taken in this order for the session
				_, err := in.Accept(t.Context(), hookReq(t, sid, "pre", call))
				order[sid] = append(order[sid], "PreToolUse "+call)
				mu.Unlock()
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	cancel()
	<-done
	flushAll(t, in, 30*time.Second)
	in.Close()
	obs, types := e.observed()
	if fmt.Sprint(obs) != fmt.Sprint(order) {
		t.Errorf("observed\n%v\nwant\n%v", obs, order)
	}
	if types["session.entry_opened"] != 60 {
		t.Errorf("event types %v: want 60 entries opened", types)
	}
}

// TestIntake_KilledMidBacklog: a server killed while it appends a long
// backlog of one session (hooks with no tool call, which only their
// entry id tells apart) appends, at its next start, each hook once, even
// with the log's own duplicate window long past: what it marked done is
// not read again, and what it had in flight is within the session's
// recent keys.
func TestIntake_KilledMidBacklog(t *testing.T) {
	t.Parallel() // its own server, journal and log; it mostly waits on fsyncs
	e := newIntakeEnvDup(t, 100*time.Millisecond)
	svc := e.service()
	in := e.open(svc)
	const n = 600
	for range n {
		b, _ := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: `{"session_id":"s","hook_event_name":"Notification","message":"waiting"}`})
		if _, err := in.Accept(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.Run(ctx)
	}()
	for in.j.Pending() > n-300 {
		time.Sleep(time.Millisecond)
	}
	cancel() // killed: no Flush, the journal as it is
	<-done
	in.j.Close()
	time.Sleep(200 * time.Millisecond) // past the duplicate window

	svc2 := e.service()
	in2 := e.open(svc2)
	if p := in2.Pending(); p == 0 || p > n-300+maxSessionsAtOnce {
		t.Errorf("reopened with %d pending, want what was not done", p)
	}
	// A backlog of hundreds takes its time on a loaded machine: Flush
	// waits for it whole, where Wait gives up after IntakeWait.
	flushAll(t, in2, 2*time.Minute)
	in2.Close()
	obs, _ := e.observed()
	if len(obs["s"]) != n {
		t.Errorf("%d observations, want %d, each once", len(obs["s"]), n)
	}
}

// TestIntake_SubagentsApart: a subagent's own hooks go to the subagent's
// session, its parent's to the parent's, each in the order taken, each
// once, however they interleave.
func TestIntake_SubagentsApart(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	want := map[string][]string{}
	for i := range 12 {
		agent := []string{"", "a1", "a2"}[i%3]
		call := fmt.Sprintf("toolu_%d", i)
		payload := fmt.Sprintf(`{"session_id":"s","transcript_path":"/home/u/.claude/projects/p/s.jsonl","cwd":"/home/u/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":%q`, call)
		agg, _ := claude.SessionAggregate("s", agent)
		if agent != "" {
			payload += fmt.Sprintf(`,"agent_id":%q,"agent_type":"Explore"`, agent)
		}
		b, _ := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: payload + "}"})
		if _, err := in.Accept(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		want[agg.ID] = append(want[agg.ID], "PreToolUse "+call)
	}
	runDrained(t, in, svc)
	if obs, _ := e.observed(); fmt.Sprint(obs) != fmt.Sprint(want) {
		t.Errorf("observed\n%v\nwant\n%v", obs, want)
	}
}

// TestIntake_JournalDropsPayloads: a hook's payload is in the journal
// only until its batch is in the log: once a record is done its bytes
// are gone from hooks.journal, after a clean run and after a server
// killed mid-backlog and started again, and the records not yet done
// are the only payloads the file holds meanwhile.
func TestIntake_JournalDropsPayloads(t *testing.T) {
	t.Parallel() // its own server, journal and log; it mostly waits on fsyncs
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	const n = 300
	secret := func(i int) string { return fmt.Sprintf("gl"+"pat-%s%08d", "Zq3Xv9Lm4Tn7", i) }
	for i := range n {
		payload := fmt.Sprintf(`{"session_id":"s%d","hook_event_name":"UserPromptSubmit","prompt_id":"p-%d","prompt":"deploy with %s please"}`, i%3, i, secret(i))
		b, _ := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: payload})
		if _, err := in.Accept(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	inFile := func() []int {
		t.Helper()
		b, err := os.ReadFile(e.journal)
		if err != nil {
			t.Fatal(err)
		}
		var found []int
		text := string(b)
		for i := range n {
			if strings.Contains(text, secret(i)) {
				found = append(found, i)
			}
		}
		return found
	}
	if got := len(inFile()); got != n {
		t.Fatalf("%d payloads in the journal before Run, want %d", got, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.Run(ctx)
	}()
	for in.j.Pending() > n/2 {
		time.Sleep(time.Millisecond)
	}
	cancel() // killed: no Flush, the journal as it is
	<-done
	left := in.j.Pending()
	in.j.Close()
	if got := inFile(); uint64(len(got)) > left {
		t.Errorf("killed with %d records not done, but %d payloads in the journal (first %d)", left, len(got), got[0])
	}

	svc2 := e.service()
	in2 := e.open(svc2)
	flushAll(t, in2, 2*time.Minute)
	if got := inFile(); len(got) != 0 {
		t.Errorf("every record done, yet %d payloads still in the journal (first %d)", len(got), got[0])
	}
	in2.Close()
	if got := inFile(); len(got) != 0 {
		t.Errorf("after Close: %d payloads in the journal", len(got))
	}
	obs, _ := e.observed()
	if total := len(obs["s0"]) + len(obs["s1"]) + len(obs["s2"]); total != n {
		t.Errorf("%d observations, want %d", total, n)
	}
}

// TestIntake_RefusedByReducer: a hook the reducer would refuse as its
// session stands (a Claude Code hook for a session that is Codex's) is
// refused by Accept, code "rejected", before the answer: nothing is
// taken, and nothing is set aside later, after the hook was told its
// payload was had. A hook of another session is taken as ever.
func TestIntake_RefusedByReducer(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	runDrained(t, in, svc)
	notify, err := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: `{"type":"agent-turn-complete","thread-id":"thr-1","turn-id":"t1","input-messages":["hi"],"last-assistant-message":"ok"}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Hook(t.Context(), notify); err != nil {
		t.Fatalf("codex notify: %v", err)
	}
	_, err = in.Accept(t.Context(), hookReq(t, "thr-1", "pre", "call-1"))
	if err == nil || errCode(err) != "rejected" || !strings.Contains(err.Error(), "the session is codex's") {
		t.Fatalf("Accept of a Claude Code hook for a Codex session: %v (code %q), want rejected", err, errCode(err))
	}
	if in.Pending() != 0 || in.j.Pending() != 0 {
		t.Errorf("taken: %d queued, %d in the journal", in.Pending(), in.j.Pending())
	}
	if _, err := in.Accept(t.Context(), hookReq(t, "s-claude", "pre", "call-2")); err != nil {
		t.Fatalf("Accept of another session's hook: %v", err)
	}
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "spool", claude.RejectedDir)); len(ents) != 0 {
		t.Errorf("set aside %d files after the answer", len(ents))
	}
}
