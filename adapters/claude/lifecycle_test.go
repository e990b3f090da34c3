package claude

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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

// hookFeeder delivers hook payloads to an Ingester as the spool does: each
// payload is a spool entry of its own with a fresh ULID.
type hookFeeder struct {
	t  *testing.T
	in *Ingester
	at time.Time
}

// newHookFeeder opens a log and an ingester on it, and a feeder of hooks
// to the ingester whose clock starts at 2026-11-30 10:00 UTC.
func newHookFeeder(t *testing.T) (events.Log, *Ingester, *hookFeeder) {
	t.Helper()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	return l, in, &hookFeeder{t: t, in: in, at: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func (f *hookFeeder) send(payload string) events.Appended {
	f.t.Helper()
	f.at = f.at.Add(10 * time.Millisecond)
	id := ulid.MustNew(ulid.Timestamp(f.at), ulid.DefaultEntropy())
	ap, err := f.in.Hook(f.t.Context(), Entry{ID: id.String(), Time: f.at, Payload: []byte(payload)})
	if err != nil {
		f.t.Fatalf("hook %s: %v", payload, err)
	}
	return ap
}

func (f *hookFeeder) sendFile(path string) {
	f.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			f.send(sc.Text())
		}
	}
}

// stateOf folds session id from in's log.
func stateOf(t *testing.T, in *Ingester, id string) session.State {
	t.Helper()
	return ingesttest.StateOf(t, in.Sessions().Log, id)
}

// typesOf returns "type entry" of each decision of session id that names
// entry (all decisions when entry is "").
func typesOf(t *testing.T, l events.Log, id, entry string) []string {
	t.Helper()
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		e := ""
		switch d := r.Data.(type) {
		case events.SessionEntryOpened:
			e = d.EntryID
		case events.SessionEntryClosed:
			e = d.EntryID + " " + d.Outcome
		case events.SessionEntryAbandoned:
			e = d.EntryID + " " + d.Reason
		case events.SessionEntryLateResult:
			e = d.EntryID + " " + d.Outcome
		case events.SessionForked:
			e = strings.Join(d.Open, ",")
		}
		if entry == "" || strings.HasPrefix(e, entry) {
			out = append(out, strings.TrimSpace(r.Type+" "+e))
		}
	}
	return out
}

// TestHooks_TwoTerminals: two terminals resume one session id and
// interleave (T1 prompt, T1 Edit A, T2 prompt, T2 Edit B, A done, B done,
// Stop, Stop). Edit A ran, so it is closed ok, never abandoned, and the
// overlap is recorded as session.forked.
func TestHooks_TwoTerminals(t *testing.T) {
	t.Parallel()
	l, in, f := newHookFeeder(t)
	f.sendFile(filepath.Join("testdata", "lifecycle", "two-terminals.hooks.jsonl"))
	const id = "5e551011-0000-4000-8000-000000000018"
	s := stateOf(t, in, id)
	if s.Observations != 10 || s.Phase != events.PhaseReady || len(s.Entries) != 0 {
		t.Errorf("observations %d phase %s entries %v, want 10 ready none", s.Observations, s.Phase, s.Entries)
	}
	if s.Forks != 1 || s.Abandoned != 0 {
		t.Errorf("forks %d abandoned %d, want 1 and 0", s.Forks, s.Abandoned)
	}
	got := strings.Join(typesOf(t, l, id, "toolu_18"), "\n")
	want := strings.Join([]string{
		"session.entry_opened toolu_18a",
		"session.forked toolu_18a",
		"session.entry_opened toolu_18b",
		"session.entry_closed toolu_18a ok",
		"session.entry_closed toolu_18b ok",
	}, "\n")
	if got != want {
		t.Errorf("decisions about the two edits:\n%s\nwant:\n%s", got, want)
	}
}

// TestHooks_LateResultOfAbandonedCall: a call abandoned when its turn
// ended (Stop came before its PostToolUse) still ran; its result is
// recorded as a late result, and decides nothing else. The same result
// sent again appends nothing.
func TestHooks_LateResultOfAbandonedCall(t *testing.T) {
	t.Parallel()
	l, in, f := newHookFeeder(t)
	const id = "late-result-1"
	hook := func(event, extra string) string {
		return fmt.Sprintf(`{"session_id":%q,"cwd":"/w","hook_event_name":%q%s}`, id, event, extra)
	}
	f.send(hook("UserPromptSubmit", `,"prompt":"go"`))
	f.send(hook("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"toolu_L"`))
	f.send(hook("Stop", ``))
	post := hook("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"make"},"tool_response":{"stdout":"ok"},"tool_use_id":"toolu_L"`)
	if ap := f.send(post); ap.Last == 0 {
		t.Fatal("the late result was not recorded")
	}
	s := stateOf(t, in, id)
	if s.Phase != events.PhaseReady || s.LateResults != 1 {
		t.Errorf("phase %s late results %d, want ready and 1", s.Phase, s.LateResults)
	}
	got := strings.Join(typesOf(t, l, id, "toolu_L"), "\n")
	want := "session.entry_opened toolu_L\nsession.entry_abandoned toolu_L turn_ended\nsession.entry_late_result toolu_L ok"
	if got != want {
		t.Errorf("decisions:\n%s\nwant:\n%s", got, want)
	}
	obs := s.Observations
	if ap := f.send(post); ap.Last != 0 {
		t.Error("a second copy of the late result was appended")
	}
	if s := stateOf(t, in, id); s.Observations != obs {
		t.Errorf("observations %d, want %d", s.Observations, obs)
	}
}

// TestHooks_LateDuplicate: the same PreToolUse re-sent after its call
// closed and the turn ended appends nothing and leaves a ready session
// ready; so does a late copy of its PostToolUse. (The windows the session
// keeps are exceeded in reducers/session's TestDecide_LateDuplicateBeyondWindows.)
func TestHooks_LateDuplicate(t *testing.T) {
	t.Parallel()
	_, in, f := newHookFeeder(t)
	const id = "5e551011-0000-4000-8000-000000000021"
	hook := func(event, extra string) string {
		return fmt.Sprintf(`{"session_id":%q,"cwd":"/home/user/app","permission_mode":"default","hook_event_name":%q%s}`, id, event, extra)
	}
	pre := hook("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"cat config.yaml"},"tool_use_id":"toolu_21x"`)
	post := hook("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"cat config.yaml"},"tool_response":{"stdout":"port: 8080"},"tool_use_id":"toolu_21x"`)
	f.send(hook("SessionStart", `,"source":"startup"`))
	f.send(hook("UserPromptSubmit", `,"prompt":"check the config and read the sources"`))
	f.send(pre)
	f.send(post)
	for i := range 3 {
		f.send(hook("PreToolUse", fmt.Sprintf(`,"tool_name":"Read","tool_input":{"file_path":"/w/%d"},"tool_use_id":"toolu_r%d"`, i, i)))
		f.send(hook("PostToolUse", fmt.Sprintf(`,"tool_name":"Read","tool_input":{"file_path":"/w/%d"},"tool_response":{},"tool_use_id":"toolu_r%d"`, i, i)))
	}
	f.send(hook("Stop", ``))
	before := stateOf(t, in, id)
	if before.Phase != events.PhaseReady {
		t.Fatalf("phase %s before the re-send, want ready", before.Phase)
	}
	for _, p := range []string{pre, post} {
		if ap := f.send(p); ap.Last != 0 {
			t.Errorf("late copy appended at %d: %s", ap.Last, p)
		}
	}
	after := stateOf(t, in, id)
	if after.Phase != events.PhaseReady || after.Observations != before.Observations || len(after.Entries) != 0 || after.TurnOpen {
		t.Errorf("after the late copies: phase %s observations %d (was %d) entries %v turn open %v",
			after.Phase, after.Observations, before.Observations, after.Entries, after.TurnOpen)
	}
	// A fresh call is still a call.
	f.send(hook("UserPromptSubmit", `,"prompt":"again"`))
	f.send(hook("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_new"`))
	if s := stateOf(t, in, id); len(s.Entries) != 1 || s.Entries[0].EntryID != "toolu_new" {
		t.Errorf("a new call after the late copies: entries %v", s.Entries)
	}
}

// TestHooks_ResultBeforeUse: a call's PostToolUse that reaches the log
// before its PreToolUse (two hooks that raced) records the call opened
// and closed; the PreToolUse that follows is appended (every hook
// acknowledged leaves its observation) and opens nothing, so the turn's
// end abandons nothing. The same PreToolUse sent again appends nothing.
func TestHooks_ResultBeforeUse(t *testing.T) {
	t.Parallel()
	l, in, f := newHookFeeder(t)
	const id = "5e551011-0000-4000-8000-000000000022"
	hook := func(event, extra string) string {
		return fmt.Sprintf(`{"session_id":%q,"cwd":"/home/user/app","permission_mode":"default","hook_event_name":%q%s}`, id, event, extra)
	}
	pre := hook("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":"toolu_22x"`)
	f.send(hook("SessionStart", `,"source":"startup"`))
	f.send(hook("UserPromptSubmit", `,"prompt":"vet the module"`))
	f.send(hook("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_response":{"stdout":""},"tool_use_id":"toolu_22x"`))
	if ap := f.send(pre); ap.Last == 0 {
		t.Fatal("the PreToolUse after its PostToolUse appended nothing: an acknowledged hook is lost")
	}
	f.send(hook("Stop", ``))
	if ap := f.send(pre); ap.Last != 0 {
		t.Errorf("the PreToolUse sent again appended at %d", ap.Last)
	}
	s := stateOf(t, in, id)
	if s.Abandoned != 0 || s.Phase != events.PhaseReady || len(s.Entries) != 0 || s.ToolCalls != 1 {
		t.Errorf("abandoned %d phase %s entries %v tool calls %d, want 0, ready, none, 1", s.Abandoned, s.Phase, s.Entries, s.ToolCalls)
	}
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok {
			keys[o.Key]++
		}
	}
	if keys["hook:PreToolUse:toolu_22x"] != 1 || keys["hook:PostToolUse:toolu_22x"] != 1 {
		t.Errorf("observations by key %v, want the call's PreToolUse and PostToolUse once each", keys)
	}
}

// TestHooks_LateAfterTranscript: a PreToolUse hook that arrives after the
// transcript's lines closed its call (another source, another key) is a
// late copy too: it appends nothing and the session stays ready.
func TestHooks_LateAfterTranscript(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	const id = "5e551011-0000-4000-8000-000000000014"
	path := filepath.Join(t.TempDir(), id+".jsonl")
	b, err := os.ReadFile(filepath.Join("testdata", "lifecycle", "rewritten.full.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	if _, err := in.ImportFile(t.Context(), path, agg, nil); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, in, id)
	f := &hookFeeder{t: t, in: in, at: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	ap := f.send(fmt.Sprintf(`{"session_id":%q,"cwd":"/home/user/app","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_14a"}`, id))
	after := stateOf(t, in, id)
	if ap.Last != 0 || after.Phase != events.PhaseReady || after.Observations != before.Observations {
		t.Errorf("late hook: appended at %d, phase %s, observations %d (was %d)", ap.Last, after.Phase, after.Observations, before.Observations)
	}
}

// TestImportFile_DuplicatedToolUseLine: a transcript that repeats a tool
// call's line after the call closed (and the turn ended) decides nothing
// with the copy, which is recorded as a copy (the same uuid), not
// appended as a line of its own: the session stays ready.
func TestImportFile_DuplicatedToolUseLine(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	lines, err := os.ReadFile(filepath.Join("testdata", "lifecycle", "rewritten.full.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSpace(string(lines)), "\n")
	path := filepath.Join(t.TempDir(), "5e551011-0000-4000-8000-000000000014.jsonl")
	// prompt, tool_use, tool_result, end_turn, then the tool_use again.
	for _, l := range append(ls, ls[1]) {
		ingesttest.AppendFile(t, path, l+"\n")
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "dup-line"}
	res, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := stateOf(t, in, agg.ID)
	if res.Appended != 4 || res.Lines != 5 || s.Phase != events.PhaseReady || len(s.Entries) != 0 {
		t.Errorf("appended %d of %d, phase %s, entries %v; want 4 of 5, ready, none", res.Appended, res.Lines, s.Phase, s.Entries)
	}
}

// TestCheckFingerprint: a file that only grew still holds its imported
// line; one truncated or rewritten (in place, or with lines of other
// lengths before it) does not, and found says what is there now.
func TestCheckFingerprint(t *testing.T) {
	t.Parallel()
	l1, l2, l3 := `{"type":"user","n":1}`, `{"type":"assistant","n":2}`, `{"type":"user","n":3}`
	tests := []struct {
		name  string
		eol   string
		after string // the file's content when checked
		same  bool
		found int // found.Line
		sum   bool
	}{
		{"unchanged", "\n", l1 + "\n" + l2 + "\n", true, 2, true},
		{"grown", "\n", l1 + "\n" + l2 + "\n" + l3 + "\n", true, 2, true},
		{"grown with a torn line", "\n", l1 + "\n" + l2 + "\n" + `{"type":`, true, 2, true},
		{"crlf grown", "\r\n", l1 + "\r\n" + l2 + "\r\n" + l3 + "\r\n", true, 2, true},
		{"truncated", "\n", l1 + "\n", false, 1, false},
		{"emptied", "\n", "", false, 0, false},
		{"torn in its last line", "\n", l1 + "\n" + l2[:5], false, 1, false},
		{"rewritten in place", "\n", l1 + "\n" + strings.Replace(l2, "2", "9", 1) + "\n", false, 2, true},
		{"shifted by an earlier line", "\n", l1 + " \n" + l2 + "\n", false, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(l1+tc.eol+l2+tc.eol), 0o644); err != nil {
				t.Fatal(err)
			}
			var fp events.Fingerprint
			for l, err := range ingest.ReadLines(path, 0) {
				if err != nil {
					t.Fatal(err)
				}
				fp = ingest.LineFingerprint(l)
			}
			if err := os.WriteFile(path, []byte(tc.after), 0o644); err != nil {
				t.Fatal(err)
			}
			found, size, same, err := ingest.CheckFingerprint(path, fp)
			if err != nil {
				t.Fatal(err)
			}
			if same != tc.same || found.Line != tc.found || (found.SHA256 != "") != tc.sum || size != int64(len(tc.after)) {
				t.Errorf("same %v found %+v size %d; want same %v line %d sha %v size %d", same, found, size, tc.same, tc.found, tc.sum, len(tc.after))
			}
			if !same && tc.sum && found.SHA256 == fp.SHA256 && found.Offset == fp.Offset {
				t.Errorf("found %+v is what was imported", found)
			}
		})
	}
	if _, _, _, err := ingest.CheckFingerprint(filepath.Join(t.TempDir(), "gone.jsonl"), events.Fingerprint{Line: 1, End: 3}); err == nil {
		t.Error("a missing file is not an error")
	}
}

// TestImportFile_Rewritten: a transcript truncated and rewritten under
// Logbook stops with a *DivergedError naming the file and line, appends
// nothing and records the divergence once; AsNew imports it as a new
// session linked to the old one, and later lines go on there.
func TestImportFile_Rewritten(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	const id = "5e551011-0000-4000-8000-000000000014"
	dir := filepath.Join(t.TempDir(), "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".jsonl")
	put := func(name string) { t.Helper(); putRewritten(t, path, name) }
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	put("full")
	if res, err := in.ImportFile(t.Context(), path, agg, nil); err != nil || res.Appended != 4 {
		t.Fatalf("first import: %+v %v", res, err)
	}
	before, _ := l.LastSeq(t.Context())
	put("rewritten")
	for range 2 {
		_, err := in.ImportFile(t.Context(), path, agg, nil)
		de, ok := errors.AsType[*ingest.DivergedError](err)
		if !ok {
			t.Fatalf("rewritten file: %v, want a *ingest.DivergedError", err)
		}
		if de.Found.Line != 3 || de.Imported.Line != 4 || de.NewSession != id+"-r1" || !strings.HasPrefix(err.Error(), path+":3: ") {
			t.Errorf("divergence %+v: %v", de, err)
		}
	}
	after, _ := l.LastSeq(t.Context())
	if after != before+1 {
		t.Errorf("the divergence appended %d events, want 1 (recorded once)", after-before)
	}
	if s := stateOf(t, in, id); s.Observations != 4 || s.DivergedTo(path) != id+"-r1" {
		t.Errorf("old session: observations %d diverged to %q", s.Observations, s.DivergedTo(path))
	}
	asNew, err := NewIngester(IngestConfig{Log: l, Host: "test", AsNew: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := asNew.ImportFile(t.Context(), path, agg, nil)
	if err != nil || res.Appended != 3 || res.Session != id+"-r1" {
		t.Fatalf("--as-new: %+v %v", res, err)
	}
	ns := stateOf(t, in, id+"-r1")
	if ns.RewrittenFrom != id || ns.Observations != 3 || ns.Phase != events.PhaseWorking {
		t.Errorf("new session: from %q observations %d phase %s", ns.RewrittenFrom, ns.Observations, ns.Phase)
	}
	// Appended after the rewrite: a plain import goes on in the new session.
	ingesttest.AppendFile(t, path, fxAssistant("e6", "e5", "Done.")+"")
	res, err = in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || res.Appended != 1 || res.Session != id+"-r1" || len(res.Warnings) != 1 {
		t.Errorf("after an append: %+v %v", res, err)
	}
}

// putRewritten writes testdata/lifecycle/rewritten.<name>.jsonl to path.
func putRewritten(t *testing.T, path, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "lifecycle", "rewritten."+name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportFile_RewrittenConcurrent: imports racing on a rewritten file
// each report it, and the divergence is recorded once.
func TestImportFile_RewrittenConcurrent(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	const id = "5e551011-0000-4000-8000-000000000014"
	path := filepath.Join(t.TempDir(), id+".jsonl")
	copyFile := func(name string) { t.Helper(); putRewritten(t, path, name) }
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	copyFile("full")
	if _, err := newTestIngester(t, l).ImportFile(t.Context(), path, agg, nil); err != nil {
		t.Fatal(err)
	}
	copyFile("truncated")
	before, _ := l.LastSeq(t.Context())
	errs := make(chan error, 4)
	for range 4 {
		in := newTestIngester(t, l) // each its own process, as it were
		go func() {
			_, err := in.ImportFile(t.Context(), path, agg, nil)
			errs <- err
		}()
	}
	for range 4 {
		if _, ok := errors.AsType[*ingest.DivergedError](<-errs); !ok {
			t.Error("an import did not report the divergence")
		}
	}
	if after, _ := l.LastSeq(t.Context()); after != before+1 {
		t.Errorf("%d events appended, want 1", after-before)
	}
}
