package claude

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func newTestIngester(t *testing.T, l events.Log) *Ingester {
	t.Helper()
	in, err := NewIngester(IngestConfig{Log: l, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestIngest_Corpus imports every recorded Claude Code session and
// compares each session's phase arc with the peer's golden arc.
func TestIngest_Corpus(t *testing.T) {
	t.Parallel()
	dir := ingesttest.Corpus(t, "claude")
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	ts, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) == 0 {
		t.Fatal("no transcripts in corpus")
	}
	ts = slices.DeleteFunc(ts, func(tr Transcript) bool { return filepath.Base(tr.Path) != "transcript.jsonl" })
	for _, tr := range ts {
		rs, err := in.ImportTranscript(t.Context(), tr, nil)
		if err != nil {
			t.Fatalf("import %s: %v", tr.Path, err)
		}
		ours := ingesttest.ArcOf(t, l, rs[0].Session)
		peer, _ := ingesttest.PeerGolden(t, tr.Path+".replay.json.golden")
		scenario := filepath.Base(filepath.Dir(tr.Path))
		final := "agree"
		if ours[len(ours)-1] != peer[len(peer)-1] {
			final = "DIFFER"
		}
		seq := "agree"
		if strings.Join(ours, ">") != strings.Join(peer, ">") {
			seq = "DIFFER"
		}
		t.Logf("%-32s final %-6s seq %-6s ours %s | peer %s", scenario, final, seq, strings.Join(ours, ">"), strings.Join(peer, ">"))
		if final != "agree" || seq != "agree" {
			t.Errorf("%s: phase arc differs from the peer's", scenario)
		}
		for _, r := range rs[1:] {
			t.Logf("%-32s   subagent %s: %s", "", r.Session, strings.Join(ingesttest.ArcOf(t, l, r.Session), ">"))
		}
	}
	// A second import appends nothing.
	before, _ := l.LastSeq(t.Context())
	for _, tr := range ts {
		rs, err := in.ImportTranscript(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Appended != 0 {
				t.Errorf("re-import of %s appended %d lines", r.Path, r.Appended)
			}
		}
	}
	if after, _ := l.LastSeq(t.Context()); after != before {
		t.Errorf("re-import moved the log from %d to %d", before, after)
	}
}

func fxUser(uuid, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,"sessionId":"s-1","cwd":"/home/user/p","timestamp":"2026-04-24T19:19:00.393Z","message":{"role":"user","content":%q}}`+"\n", uuid, p, text)
}

func fxAssistant(uuid, parent, text string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"sessionId":"s-1","timestamp":"2026-04-24T19:19:02.584Z","message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}}`+"\n", uuid, parent, text)
}

// fxChain returns n lines of session s-1 taking turns, a prompt "go"
// first and then a reply "ok", each the parent of the next; their uuids
// are prefix+"u0", prefix+"u1", ….
func fxChain(prefix string, n int) []string {
	var lines []string
	prev := ""
	for i := range n {
		u := fmt.Sprintf("%su%d", prefix, i)
		if i%2 == 0 {
			lines = append(lines, fxUser(u, prev, "go"))
		} else {
			lines = append(lines, fxAssistant(u, prev, "ok"))
		}
		prev = u
	}
	return lines
}

func TestImportFile_GrowsTornAndBad(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	agg, _ := SessionAggregate("s-1", "")
	ctx := t.Context()

	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"), `{"type":"assistant","uuid":"a1"`) // torn last line
	r, err := in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 1 || !r.Torn {
		t.Fatalf("first import: %+v, %v; want 1 line and a torn one", r, err)
	}
	// The writer finishes the line (rewrite the file whole) and adds one.
	os.WriteFile(path, []byte(fxUser("u1", "", "hi")+fxAssistant("a1", "u1", "ok")), 0o644)
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 1 || r.Skipped != 1 || r.Torn {
		t.Fatalf("grown import: %+v, %v", r, err)
	}
	// A malformed line stops the file with its position; nothing of it is
	// appended, but the stop (every line before it was in the log): the
	// session is held there, once however often the file is read again.
	before, _ := l.LastSeq(ctx)
	ingesttest.AppendFile(t, path, "{not json}\n", fxUser("u3", "a1", "later"))
	var le *LineError
	for range 2 {
		r, err = in.ImportFile(ctx, path, agg, nil)
		if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "s-1.jsonl:3") {
			t.Fatalf("bad line: err = %v, want a LineError at line 3", err)
		}
	}
	if after, _ := l.LastSeq(ctx); after != before+1 {
		t.Errorf("a bad line appended %d messages, want 1 (the stop)", after-before)
	}
	if st := ingesttest.StateOf(t, l, "s-1"); st.HeldPath != path || st.HeldLine != 3 || st.Cursor(path) != 2 {
		t.Errorf("after the bad line: held at %q:%d, cursor %d; want held at line 3, cursor 2", st.HeldPath, st.HeldLine, st.Cursor(path))
	}
	// Invalid UTF-8 is refused the same way.
	p2 := filepath.Join(t.TempDir(), "s-2.jsonl")
	ingesttest.AppendFile(t, p2, "{\"type\":\"user\",\"message\":\"\xff\xfe\"}\n")
	agg2, _ := SessionAggregate("s-2", "")
	if _, err := in.ImportFile(ctx, p2, agg2, nil); !errors.As(err, &le) {
		t.Errorf("invalid UTF-8: err = %v", err)
	}
	// A parentUuid that points nowhere is recorded and warned about, not fatal.
	p3 := filepath.Join(t.TempDir(), "s-3.jsonl")
	ingesttest.AppendFile(t, p3, fxUser("u1", "ghost", "hi"))
	agg3, _ := SessionAggregate("s-3", "")
	r, err = in.ImportFile(ctx, p3, agg3, nil)
	if err != nil || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "ghost") {
		t.Errorf("dangling parent: %+v, %v", r, err)
	}
}

func TestImportFile_Concurrent(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	ingesttest.AppendFile(t, path, fxChain("", 40)...)
	agg, _ := SessionAggregate("s-1", "")
	// Two importers, as two processes would be: separate state caches.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		in := newTestIngester(t, l)
		wg.Go(func() { _, errs[i] = in.ImportFile(context.Background(), path, agg, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok {
			seen[o.Line]++
		}
	}
	for n := 1; n <= 40; n++ {
		if seen[n] != 1 {
			t.Errorf("line %d appended %d times", n, seen[n])
		}
	}
}

// TestImportTranscript_SharedSession imports two files whose lines name
// one session, and a subagent file that names no agent: every line of
// each lands once, in its own file's order.
func TestImportTranscript_SharedSession(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "copy-a.jsonl"), filepath.Join(dir, "copy-b.jsonl")
	ingesttest.AppendFile(t, a, fxUser("u1", "", "one"), fxUser("u2", "u1", "two"), fxUser("u3", "u2", "three"))
	ingesttest.AppendFile(t, b, fxUser("v1", "", "uno"), fxUser("v2", "v1", "dos"), fxUser("v3", "v2", "tres"), fxUser("v4", "v3", "cuatro"))
	os.MkdirAll(filepath.Join(dir, "copy-a", "subagents"), 0o755)
	weird := filepath.Join(dir, "copy-a", "subagents", "weird.jsonl")
	ingesttest.AppendFile(t, weird, fxUser("w1", "", "sub"))
	ts, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, tr := range ts {
		wg.Go(func() {
			if _, err := in.ImportTranscript(context.Background(), tr, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	count := func(id string) map[string][]int {
		recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]int{}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok {
				out[filepath.Base(o.Path)] = append(out[filepath.Base(o.Path)], o.Line)
			}
		}
		return out
	}
	got := count("s-1")
	if fmt.Sprint(got["copy-a.jsonl"]) != "[1 2 3]" || fmt.Sprint(got["copy-b.jsonl"]) != "[1 2 3 4]" {
		t.Errorf("session s-1 lines per file: %v", got)
	}
	if sub := count("agent-weird"); fmt.Sprint(sub["weird.jsonl"]) != "[1]" {
		t.Errorf("subagent without an agent id: %v", sub)
	}
}

// TestImportTranscript_SubagentSessionID: a transcript whose lines name
// a session of a subagent's shape ("agent-abc") is imported as one whose
// sessionId is no session id: into the session its file name gives,
// the id not recorded; one named agent-abc.jsonl whose lines name no
// other session is refused naming the file, nothing appended. A
// sidechain file named agent-<id>.jsonl whose lines name their session
// goes to that session, as before.
func TestImportTranscript_SubagentSessionID(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	dir := t.TempDir()
	lines := func(sid string) []string {
		return []string{strings.ReplaceAll(fxUser("u1", "", "one"), `"s-1"`, `"`+sid+`"`), strings.ReplaceAll(fxAssistant("a1", "u1", "two"), `"s-1"`, `"`+sid+`"`)}
	}
	ingesttest.AppendFile(t, filepath.Join(dir, "copy.jsonl"), lines("agent-abc")...)
	ingesttest.AppendFile(t, filepath.Join(dir, "agent-abc.jsonl"), lines("agent-abc")...)
	ingesttest.AppendFile(t, filepath.Join(dir, "agent-side1.jsonl"), lines("s-2")...)
	ts, err := Discover(dir)
	if err != nil || len(ts) != 3 {
		t.Fatalf("discover: %+v, %v", ts, err)
	}
	for _, tr := range ts {
		_, err := in.ImportTranscript(t.Context(), tr, nil)
		name := filepath.Base(tr.Path)
		if want := tr.Path + `: session id: events: malformed event: id "agent-abc" begins with "agent-", which names a subagent's session`; name == "agent-abc.jsonl" && (err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, events.ErrSubagentID)) {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
		if name != "agent-abc.jsonl" && err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if st := ingesttest.StateOf(t, l, "copy"); st.Lines != 2 || st.AgentSessionID != "" {
		t.Errorf("session copy: %d lines, agent session id %q; want 2 lines, none", st.Lines, st.AgentSessionID)
	}
	if st := ingesttest.StateOf(t, l, "agent-abc"); st.Exists() || st.Lines != 0 {
		t.Errorf("session agent-abc: %+v", st)
	}
	if st := ingesttest.StateOf(t, l, "s-2"); st.Lines != 2 {
		t.Errorf("the sidechain file's session s-2: %d lines, want 2", st.Lines)
	}
}

func TestDiscover_SymlinkedRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.MkdirAll(real, 0o755)
	ingesttest.AppendFile(t, filepath.Join(real, "s-1.jsonl"), fxUser("u1", "", "hi"))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(real, "s-1.jsonl"), filepath.Join(real, "s-2.jsonl"))
	for _, root := range []string{link, link + "/"} {
		ts, err := Discover(root)
		if err != nil || len(ts) != 2 {
			t.Errorf("Discover(%s) = %d transcripts, %v; want 2", root, len(ts), err)
		}
	}
}

func TestImportFile_BOMAndBlankLines(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	ingesttest.AppendFile(t, path, "\xef\xbb\xbf"+fxUser("u1", "", "hi"), "\n", "   \n", fxAssistant("a1", "u1", "ok"))
	agg, _ := SessionAggregate("s-1", "")
	r, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || r.Appended != 4 || r.Lines != 4 {
		t.Fatalf("import: %+v, %v; want 4 lines", r, err)
	}
}

// A file of blank lines only starts no session, appends nothing and warns
// of nothing; once a line that is not blank follows, every line is
// imported with its number, the blank ones too.
func TestImportFile_BlankOnly(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	ingesttest.AppendFile(t, path, "\n", "   \n", "\t\r\n")
	agg, _ := SessionAggregate("s-1", "")
	r, err := in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 0 || r.Lines != 0 || len(r.Warnings) != 0 {
		t.Fatalf("blank import: %+v, %v; want nothing", r, err)
	}
	if last, _ := l.LastSeq(ctx); last != 0 {
		t.Fatalf("blank import appended %d messages", last)
	}
	if blank, err := ingest.BlankOnly(ctx, path); !blank || err != nil {
		t.Errorf("ingest.BlankOnly = %v, %v; want true", blank, err)
	}
	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"))
	if blank, err := ingest.BlankOnly(ctx, path); blank || err != nil {
		t.Errorf("ingest.BlankOnly with a line = %v, %v; want false", blank, err)
	}
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 4 || r.Lines != 4 {
		t.Fatalf("grown import: %+v, %v; want 4 lines", r, err)
	}
	empty := filepath.Join(t.TempDir(), "e.jsonl")
	ingesttest.AppendFile[string](t, empty)
	if blank, err := ingest.BlankOnly(ctx, empty); blank || err != nil {
		t.Errorf("ingest.BlankOnly of an empty file = %v, %v; want false", blank, err)
	}
}

// countingLog is the real log, counting the batches appended through it.
type countingLog struct {
	*natslog.Log
	mu      sync.Mutex
	batches []events.Batch
}

func (c *countingLog) Append(ctx context.Context, b events.Batch) (events.Appended, error) {
	ap, err := c.Log.Append(ctx, b)
	if err == nil {
		c.mu.Lock()
		c.batches = append(c.batches, b)
		c.mu.Unlock()
	}
	return ap, err
}

// TestImportFile_Runs imports a transcript of 1,500 lines: its lines go
// out as a few atomic batches of at most events.MaxBatch events, each
// starting with a line's observation (a line's decisions never leave its
// batch), every line once and in order; importing again appends nothing.
func TestImportFile_Runs(t *testing.T) {
	t.Parallel()
	l := &countingLog{Log: ingesttest.OpenLog(t)}
	in := newTestIngester(t, l)
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	ingesttest.AppendFile(t, path, fxChain("", 1500)...)
	agg, _ := SessionAggregate("s-1", "")
	r, err := in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || r.Appended != 1500 || r.Lines != 1500 {
		t.Fatalf("import: %+v, %v", r, err)
	}
	total := 0
	for i, b := range l.batches {
		total += len(b.Events)
		if len(b.Events) > events.MaxBatch {
			t.Errorf("batch %d holds %d events, more than %d", i, len(b.Events), events.MaxBatch)
		}
		if _, ok := events.Observed(b.Events[0].Data); !ok {
			t.Errorf("batch %d starts with %s, not a line's observation", i, b.Events[0].Type)
		}
	}
	if want := (total + events.MaxBatch - 1) / events.MaxBatch; len(l.batches) > want+1 {
		t.Errorf("%d events in %d batches, want at most %d", total, len(l.batches), want+1)
	}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	next := 1
	for _, rec := range recs {
		if o, ok := events.Observed(rec.Data); ok {
			if o.Line != next {
				t.Fatalf("observation of line %d where line %d belongs", o.Line, next)
			}
			next++
		}
	}
	if next != 1501 || len(recs) != total {
		t.Fatalf("log holds lines up to %d and %d events, want 1500 lines and %d events", next-1, len(recs), total)
	}
	n := len(l.batches)
	r, err = in.ImportFile(t.Context(), path, agg, nil)
	if err != nil || r.Appended != 0 || r.Skipped != 1500 || len(l.batches) != n {
		t.Fatalf("import again: %+v, %v, %d more batches", r, err, len(l.batches)-n)
	}
}

// TestImportFile_RunRefused imports a transcript whose fourth line makes
// an event larger than the server takes: the run is refused whole, then
// appended line by line, so the three lines before it are imported and
// the error names line 4; nothing of line 4 or after is appended.
func TestImportFile_RunRefused(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	p, err := NewParser(Config{MaxRaw: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Parser: p})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s-1.jsonl")
	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"), fxAssistant("a1", "u1", "ok"), fxUser("u2", "a1", "more"),
		fxAssistant("a2", "u2", strings.Repeat("x", 2<<20)), fxUser("u3", "a2", "after"))
	agg, _ := SessionAggregate("s-1", "")
	r, err := in.ImportFile(t.Context(), path, agg, nil)
	if err == nil || !strings.Contains(err.Error(), "s-1.jsonl:4:") {
		t.Fatalf("err = %v, want one naming line 4", err)
	}
	if r.Appended != 3 || r.Lines != 3 {
		t.Fatalf("result %+v, want lines 1-3 appended", r)
	}
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if o, ok := events.Observed(rec.Data); ok && o.Line > 3 {
			t.Fatalf("line %d appended", o.Line)
		}
	}
}

// TestImportFile_ParsersBound imports 14 transcripts at once, two of them
// long enough for several runs, with IngestConfig.Parsers 2: no more than
// two calls parse lines at any moment (a call waiting for its run to be
// appended lets another parse), every line lands once and in order, and
// nothing waits forever.
func TestImportFile_ParsersBound(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", Parsers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var active, most atomic.Int64
	src := in.Lines()
	parse := src.Parse
	src.Parse = func(path string, n int, b []byte) (events.Observation, error) {
		now := active.Add(1)
		defer active.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		return parse(path, n, b)
	}
	dir := t.TempDir()
	type file struct {
		path  string
		agg   events.Aggregate
		lines int
	}
	var files []file
	for i := range 14 {
		n := 30
		if i < 2 {
			n = 1100
		}
		f := file{path: filepath.Join(dir, fmt.Sprintf("s-%d.jsonl", i)), lines: n}
		ingesttest.AppendFile(t, f.path, fxChain(fmt.Sprintf("f%d-", i), n)...)
		f.agg, _ = SessionAggregate(fmt.Sprintf("s-%d", i), "")
		files = append(files, f)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	for i, f := range files {
		wg.Go(func() {
			r, err := in.Ingester.ImportFile(ctx, f.path, f.agg, src, nil)
			if err == nil && r.Appended != f.lines {
				err = fmt.Errorf("%s: appended %d lines, want %d", f.path, r.Appended, f.lines)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d calls parsed at once, want 1 or 2", m)
	}
	for _, f := range files {
		recs, _, err := l.Load(t.Context(), f.agg)
		if err != nil {
			t.Fatal(err)
		}
		next := 1
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok {
				if o.Line != next {
					t.Fatalf("%s: line %d where line %d belongs", f.path, o.Line, next)
				}
				next++
			}
		}
		if next != f.lines+1 {
			t.Errorf("%s: log holds %d lines, want %d", f.path, next-1, f.lines)
		}
	}
}

// TestImportFile_DanglingParentWhateverTheCut: a line whose parentUuid
// names no line of the session is warned of and recorded with that
// problem alike whether the file is imported in one go or in parts
// (lines 1–2, then 1–4; line 1, then 1–4); a parent imported by an
// earlier part is found. The same holds for a second file of the session.
func TestImportFile_DanglingParentWhateverTheCut(t *testing.T) {
	t.Parallel()
	lines := []string{fxUser("u1", "", "hi"), fxAssistant("a2", "u1", "hello"), fxUser("u3", "gone", "again"), fxAssistant("a4", "u1", "done")}
	type got struct{ warnings, problems []string }
	run := func(t *testing.T, cuts ...int) got {
		l := ingesttest.OpenLog(t)
		in := newTestIngester(t, l)
		path := filepath.Join(t.TempDir(), "s-1.jsonl")
		agg, _ := SessionAggregate("s-1", "")
		var g got
		from := 0
		for _, to := range cuts {
			ingesttest.AppendFile(t, path, lines[from:to]...)
			from = to
			r, err := in.ImportFile(t.Context(), path, agg, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range r.Warnings {
				g.warnings = append(g.warnings, strings.TrimPrefix(w, path))
			}
		}
		recs, _, err := l.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok {
				for _, p := range o.Problems {
					g.problems = append(g.problems, fmt.Sprintf("line %d: %s", o.Line, p))
				}
			}
		}
		return g
	}
	want := got{warnings: []string{":3: parentUuid gone points to no earlier line"}, problems: []string{"line 3: parentUuid gone points to no earlier line"}}
	for _, cuts := range [][]int{{4}, {2, 4}, {1, 4}, {3, 4}, {1, 2, 3, 4}} {
		t.Run(fmt.Sprint(cuts), func(t *testing.T) {
			if g := run(t, cuts...); !slices.Equal(g.warnings, want.warnings) || !slices.Equal(g.problems, want.problems) {
				t.Errorf("warnings %q, problems %q; want %q, %q", g.warnings, g.problems, want.warnings, want.problems)
			}
		})
	}
	t.Run("a parent in another file of the session", func(t *testing.T) {
		l := ingesttest.OpenLog(t)
		in := newTestIngester(t, l)
		dir := t.TempDir()
		agg, _ := SessionAggregate("s-1", "")
		first, second := filepath.Join(dir, "s-1.jsonl"), filepath.Join(dir, "s-1-continued.jsonl")
		ingesttest.AppendFile(t, first, lines[:2]...)
		ingesttest.AppendFile(t, second, fxUser("u5", "a2", "go on"))
		for _, p := range []string{first, second} {
			r, err := in.ImportFile(t.Context(), p, agg, nil)
			if err != nil || len(r.Warnings) > 0 {
				t.Errorf("%s: %+v, %v", p, r.Warnings, err)
			}
		}
	})
}

// TestImportFile_CopyAtAnotherPath: the same transcript copied to a
// second path (a backup, a synced folder) and imported into the same
// session adds no line again: its lines, the session's already by their
// uuids (or, for lines without one, by number and bytes), are recorded as
// one copy observation that decides nothing. Lines new to the session
// are imported from whichever file has them first; the other file's
// copies of them then add nothing either.
func TestImportFile_CopyAtAnotherPath(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	agg, _ := SessionAggregate("s-1", "")
	orig := filepath.Join(t.TempDir(), "s-1.jsonl")
	backup := filepath.Join(t.TempDir(), "s-1.backup.jsonl")
	first := []string{`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-04-24T19:18:59.000Z","sessionId":"s-1"}` + "\n",
		fxUser("u1", "", "hi"), fxAssistant("a2", "u1", "hello"), fxUser("u3", "a2", "again"), fxAssistant("a4", "u3", "done")}
	ingesttest.AppendFile(t, orig, first...)
	ingesttest.AppendFile(t, backup, first...)
	imp := func(path string) ingest.FileResult {
		t.Helper()
		r, err := in.ImportFile(t.Context(), path, agg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	count := func() (obs, decisions int) {
		recs, _, err := l.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if _, ok := events.Observed(r.Data); ok {
				obs++
			} else {
				decisions++
			}
		}
		return obs, decisions
	}
	if r := imp(orig); r.Appended != 5 {
		t.Fatalf("original: %+v", r)
	}
	obs, decs := count()
	before := stateOf(t, in, agg.ID)
	if r := imp(backup); r.Appended != 0 || r.Lines != 5 {
		t.Errorf("copy: appended %d, cursor %d; want 0, 5", r.Appended, r.Lines)
	}
	obs2, decs2 := count()
	if obs2 != obs+1 || decs2 != decs {
		t.Errorf("the copy added %d observations and %d decisions; want 1 and 0", obs2-obs, decs2-decs)
	}
	after := stateOf(t, in, agg.ID)
	if after.Turns != before.Turns || after.Phase != before.Phase || after.ToolCalls != before.ToolCalls {
		t.Errorf("the copy changed the session: turns %d→%d, phase %s→%s", before.Turns, after.Turns, before.Phase, after.Phase)
	}
	if r := imp(backup); r.Appended != 0 {
		t.Errorf("the copy again: %+v", r)
	}

	// The backup gets the next lines first, then the original.
	next := []string{fxUser("u5", "a4", "one more"), fxAssistant("a6", "u5", "sure")}
	ingesttest.AppendFile(t, backup, next...)
	if r := imp(backup); r.Appended != 2 {
		t.Errorf("new lines in the copy: appended %d, want 2", r.Appended)
	}
	ingesttest.AppendFile(t, orig, next...)
	if r := imp(orig); r.Appended != 0 || r.Lines != 7 {
		t.Errorf("the original's copies of them: appended %d, cursor %d; want 0, 7", r.Appended, r.Lines)
	}
	if s := stateOf(t, in, agg.ID); s.Turns != 3 || s.Phase != events.PhaseReady {
		t.Errorf("turns %d, phase %s; want 3, ready", s.Turns, s.Phase)
	}
}

// TestImportFile_MoreUntilTheLast: every history line an import pass
// appends says the pass read on past it (More), but the last one it read
// (at the end of the file, or before a line that stops it), across runs:
// a session is Importing only while an import is under way.
func TestImportFile_MoreUntilTheLast(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-00000000a0e1"
	log := ingesttest.OpenLog(t)
	in := newTestIngester(t, log)
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	var b strings.Builder
	n := events.MaxBatch + 3 // two runs
	for i := 1; i <= n; i++ {
		parent := "null"
		if i > 1 {
			parent = fmt.Sprintf(`"u%d"`, i-1)
		}
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","parentUuid":%s,"sessionId":"%s","timestamp":"2026-11-25T09:00:00.000Z","message":{"role":"user","content":"line %d"}}`+"\n", i, parent, sid, i)
	}
	b.WriteString("{not json\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	if _, err := in.ImportFile(t.Context(), path, agg, nil); err == nil {
		t.Fatal("import past a bad line: no error")
	}
	recs, _, err := log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, r := range recs {
		o, ok := events.Observed(r.Data)
		if !ok || o.Line == 0 {
			continue
		}
		lines++
		if want := o.Line < n; o.More != want {
			t.Errorf("line %d: more %v, want %v", o.Line, o.More, want)
		}
	}
	if lines != n {
		t.Fatalf("%d lines imported, want %d", lines, n)
	}
	if st := session.Fold(session.Init(agg), recs); st.Importing {
		t.Errorf("importing after the pass ended")
	}
	// Folded up to a line in the middle, the session is being imported.
	var mid []events.Record
	for _, r := range recs {
		mid = append(mid, r)
		if o, ok := events.Observed(r.Data); ok && o.Line == n/2 {
			break
		}
	}
	if st := session.Fold(session.Init(agg), mid); !st.Importing {
		t.Errorf("not importing halfway through the pass")
	}
}

// TestImportTranscript_SubagentParent: a subagent's transcript always
// goes to its session, agent-<agent id>, with its parent: the session
// its lines name, else its directory's. agent-agent-q.jsonl is agent
// agent-q's (session agent-agent-q, where its hooks go), its prefix
// taken off once; a file whose lines name no session takes its
// directory's. One with no agent id (agent-.jsonl) or no parent that
// can name a session (a directory agent-zzz or "a b", lines naming none
// that can) is refused naming the file, and nothing of its transcript
// is appended.
func TestImportTranscript_SubagentParent(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	dir := t.TempDir()
	lines := func(sid, agentID string) []string {
		var out []string
		for _, s := range []string{fxUser("u1", "", "one"), fxAssistant("a1", "u1", "two")} {
			s = strings.ReplaceAll(s, `"sessionId":"s-1",`, sid)
			if agentID != "" {
				s = `{"agentId":"` + agentID + `",` + s[1:]
			}
			out = append(out, s)
		}
		return out
	}
	add := func(path string, lines ...string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		ingesttest.AppendFile(t, path, lines...)
	}
	const p = "5e551011-0000-4000-8000-0000000000d1"
	named := `"sessionId":"` + p + `",`
	add(filepath.Join(dir, "ok", p+".jsonl"), lines(named, "")...)
	add(filepath.Join(dir, "ok", p, "subagents", "agent-agent-q.jsonl"), lines(named, "agent-q")...)
	add(filepath.Join(dir, "ok", p, "subagents", "agent-r1.jsonl"), lines("", "")...)
	imp := func(sub string) ([]ingest.FileResult, error) {
		ts, err := Discover(filepath.Join(dir, sub))
		if err != nil || len(ts) != 1 {
			t.Fatalf("discover %s: %+v, %v", sub, ts, err)
		}
		return in.ImportTranscript(t.Context(), ts[0], nil)
	}
	if rs, err := imp("ok"); err != nil || len(rs) != 3 {
		t.Fatalf("import: %+v, %v", rs, err)
	}
	for id, want := range map[string]string{"agent-agent-q": "agent-q", "agent-r1": "r1"} {
		if st := ingesttest.StateOf(t, l, id); st.Lines != 2 || st.Parent != p || st.AgentID != want {
			t.Errorf("session %s: %d lines, parent %q, agent id %q; want 2, %s, %s", id, st.Lines, st.Parent, st.AgentID, p, want)
		}
	}
	if st := ingesttest.StateOf(t, l, "agent-q"); st.Exists() {
		t.Errorf("session agent-q: %+v", st)
	}

	for _, c := range []struct{ sub, file, sid, want string }{
		{"empty", filepath.Join(p, "subagents", "agent-.jsonl"), named, `: subagent transcript: no agent id: the file is named agent-.jsonl, with nothing after "agent-", and no line of it names an agentId`},
		{"t1", filepath.Join("agent-zzz", "subagents", "agent-abc.jsonl"), `"sessionId":"agent-zzz",`, `: subagent transcript: no parent session: no line of it names a sessionId that can name one, and the session of the directory it lies under cannot: events: malformed event: id "agent-zzz" begins with "agent-"`},
		{"t2", filepath.Join("a b", "subagents", "agent-abd.jsonl"), `"sessionId":"a b",`, `: subagent transcript: no parent session: no line of it names a sessionId that can name one, and the session of the directory it lies under cannot: events: malformed event: id "a b": byte`},
	} {
		path := filepath.Join(dir, c.sub, c.file)
		add(path, lines(c.sid, "")...)
		if c.sub == "empty" {
			add(filepath.Join(dir, c.sub, p+".jsonl"), lines(named, "")...)
		}
		rs, err := imp(c.sub)
		if err == nil || !strings.HasPrefix(err.Error(), path+c.want) || len(rs) != 0 {
			t.Errorf("%s: %+v, %v; want %s%s", c.file, rs, err, path, c.want)
		}
	}
	for _, id := range []string{"agent-agent-", "agent-abc", "agent-abd", "agent-zzz"} {
		if st := ingesttest.StateOf(t, l, id); st.Exists() {
			t.Errorf("session %s: %+v", id, st)
		}
	}
	if st := ingesttest.StateOf(t, l, p); st.Lines != 2 {
		t.Errorf("session %s: %d lines, want the 2 of its first import only", p, st.Lines)
	}
}
