package claude

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// reports collects what a watcher reports.
type reports struct {
	mu   sync.Mutex
	msgs []string
}

func (r *reports) add(m string) { r.mu.Lock(); r.msgs = append(r.msgs, m); r.mu.Unlock() }

// all returns the messages reported so far.
func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

func (r *reports) has(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// startWatch runs in.Watch over root until the test ends.
func startWatch(t *testing.T, in *Ingester, rescan time.Duration, root string) *reports {
	t.Helper()
	rep := &reports{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- in.Watch(ctx, ingest.WatchConfig{Roots: []string{root}, Rescan: rescan, Report: rep.add})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	return rep
}

// readFixture returns testdata's recorded transcript of session sid.
func readFixture(t *testing.T, sid string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude", "projects", "-home-user-project", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureLines returns the lines of testdata's transcript of session
// sid, each with its newline.
func fixtureLines(t *testing.T, sid string) [][]byte {
	t.Helper()
	fixture := readFixture(t, sid)
	lines := bytes.SplitAfter(fixture, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// watchRig opens a log and an ingester on it, and returns them with an
// empty temporary directory to watch as a root of projects.
func watchRig(t *testing.T) (*natslog.Log, *Ingester, string) {
	t.Helper()
	log := ingesttest.OpenLog(t)
	return log, newTestIngester(t, log), t.TempDir()
}

// projectDir makes the project directory name under root and returns
// its path.
func projectDir(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWatch_FollowsTranscript writes a recorded transcript line by line
// (a torn last line among them) into a new project directory under a
// running watcher, then a subagent's transcript: the session follows each
// line, and ends as an import of the whole file leaves it.
func TestWatch_FollowsTranscript(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000001"
	lines := fixtureLines(t, sid)
	log, in, root := watchRig(t)
	// Events only: a rescan an hour away proves inotify drives it.
	rep := startWatch(t, in, time.Hour, root)

	dir := projectDir(t, root, "-home-user-project")
	path := filepath.Join(dir, sid+".jsonl")
	sawWorking := false
	for i, l := range lines {
		if i == 5 {
			// A torn line: half now, waiting; the rest later.
			half := len(l) / 2
			ingesttest.AppendFile(t, path, l[:half])
			time.Sleep(50 * time.Millisecond)
			if got := ingesttest.StateOf(t, log, sid).Lines; got != i {
				t.Fatalf("a torn line was imported: %d lines, want %d", got, i)
			}
			ingesttest.AppendFile(t, path, l[half:])
		} else {
			ingesttest.AppendFile(t, path, l)
		}
		ingesttest.Eventually(t, fmt.Sprintf("line %d", i+1), func() bool { return ingesttest.StateOf(t, log, sid).Lines == i+1 })
		if ingesttest.StateOf(t, log, sid).Phase == events.PhaseWorking {
			sawWorking = true
		}
	}
	if !sawWorking {
		t.Errorf("the session never read as working while its lines came in")
	}

	// The same file imported in one go leaves the same session.
	ref := ingesttest.OpenLog(t)
	if _, err := newTestIngester(t, ref).ImportFile(t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: sid}, nil); err != nil {
		t.Fatal(err)
	}
	got, want := ingesttest.StateOf(t, log, sid), ingesttest.StateOf(t, ref, sid)
	if got.Phase != want.Phase || got.Activity != want.Activity || got.Lines != want.Lines || got.Turns != want.Turns || got.ToolCalls != want.ToolCalls {
		t.Errorf("watched: %s/%s %d lines %d turns %d calls; imported: %s/%s %d lines %d turns %d calls",
			got.Phase, got.Activity, got.Lines, got.Turns, got.ToolCalls, want.Phase, want.Activity, want.Lines, want.Turns, want.ToolCalls)
	}

	// A subagent in a new subagents/ directory becomes its own session.
	sub := filepath.Join(dir, sid, "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	agentLine := `{"type":"user","uuid":"a1","parentUuid":null,"isSidechain":true,"agentId":"w1","sessionId":"` + sid + `","timestamp":"2026-05-01T10:05:00.000Z","message":{"role":"user","content":"look around"}}` + "\n"
	ingesttest.AppendFile(t, filepath.Join(sub, "agent-w1.jsonl"), []byte(agentLine))
	ingesttest.Eventually(t, "the subagent's session", func() bool { return ingesttest.StateOf(t, log, "agent-w1").Lines == 1 })
	if p := ingesttest.StateOf(t, log, "agent-w1").Parent; p != sid {
		t.Errorf("subagent's parent = %q, want %s", p, sid)
	}

	// Truncated: reported, and what is written after is not imported.
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	ingesttest.Eventually(t, "a truncation report", func() bool { return rep.has("was truncated") })
	ingesttest.AppendFile(t, path, bytes.Join(lines[:3], nil))
	time.Sleep(100 * time.Millisecond)
	st := ingesttest.StateOf(t, log, sid)
	if st.Lines != len(lines) {
		t.Errorf("after truncation: %d lines, want %d (nothing imported again)", st.Lines, len(lines))
	}
	if len(st.Diverged) == 0 {
		t.Errorf("the truncation is not recorded on the session (session.transcript_diverged)")
	}

	// Replaced by another file under the same name, with other lines:
	// reported, not imported.
	other := filepath.Join(t.TempDir(), "x.jsonl")
	otherLine := strings.Replace(agentLine, "look around", "something else", 1)
	if err := os.WriteFile(other, []byte(otherLine+otherLine), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, filepath.Join(sub, "agent-w1.jsonl")); err != nil {
		t.Fatal(err)
	}
	ingesttest.Eventually(t, "a replacement report", func() bool { return rep.has("was replaced") })
	if got := ingesttest.StateOf(t, log, "agent-w1").Lines; got != 1 {
		t.Errorf("after replacement: %d lines, want 1", got)
	}
}

// TestWatch_ImportBeside: lines written before the watcher started and
// after it, with a rescan every 20 ms beside the events, all arrive, and
// an import running beside the watcher never doubles or loses a line.
func TestWatch_ImportBeside(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000001"
	fixture := readFixture(t, sid)
	log, in, root := watchRig(t)
	dir := projectDir(t, root, "p")
	path := filepath.Join(dir, sid+".jsonl")
	lines := bytes.SplitAfter(fixture, []byte("\n"))
	ingesttest.AppendFile(t, path, bytes.Join(lines[:10], nil))
	startWatch(t, in, 20*time.Millisecond, root)
	other := newTestIngester(t, log) // an `import` of its own
	for i := 10; i < len(lines); i++ {
		ingesttest.AppendFile(t, path, lines[i])
		if i%7 == 0 {
			if _, err := other.ImportTranscript(t.Context(), Transcript{Path: path, SessionID: sid}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := bytes.Count(fixture, []byte("\n"))
	ingesttest.Eventually(t, "every line", func() bool { return ingesttest.StateOf(t, log, sid).Lines == want })
	recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if _, ok := r.Data.(events.ClaudeLineObserved); ok {
			n++
		}
	}
	if n != want {
		t.Errorf("%d line observations in the log, want %d: a line was doubled or lost", n, want)
	}
}

// TestWatch_LiveLinesDatedByReceipt: what a file held when Watch started
// is history (Live unset); a line appended while Watch follows the file,
// and every line of a file that appeared while it ran, is live and
// carries its receipt on this host's clock. An agent whose clock lags by
// 40 minutes is then heard from now, its offset learned, and a
// reconciler tick finds nothing stale (issue case claude-phase/75).
func TestWatch_LiveLinesDatedByReceipt(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000075"
	const lag = 40 * time.Minute
	line := func(n int, at time.Time, body string) []byte {
		parent := "null"
		if n > 1 {
			parent = fmt.Sprintf(`"u%d"`, n-1)
		}
		return fmt.Appendf(nil, `{"type":%s,"uuid":"u%d","parentUuid":%s,"sessionId":"%s","timestamp":"%s",%s}`+"\n",
			map[bool]string{true: `"user"`, false: `"assistant"`}[n == 1], n, parent, sid, at.UTC().Format("2006-01-02T15:04:05.000Z"), body)
	}
	prompt := `"message":{"role":"user","content":"build it"}`
	use := func(id string) string {
		return `"message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"` + id + `","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}`
	}
	log, in, root := watchRig(t)
	dir := projectDir(t, root, "-home-user-shop")
	path := filepath.Join(dir, sid+".jsonl")
	ingesttest.AppendFile(t, path, line(1, time.Now().Add(-lag), prompt)) // there before Watch starts
	startWatch(t, in, 20*time.Millisecond, root)
	ingesttest.Eventually(t, "the first line", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 1 })
	ingesttest.AppendFile(t, path, line(2, time.Now().Add(-lag), use("toolu_1")))
	ingesttest.Eventually(t, "the appended line", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 2 })
	after := time.Now()

	recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	var live []bool
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok && o.Line > 0 {
			live = append(live, o.Live)
			if o.Received.IsZero() || o.Received.After(after) {
				t.Errorf("line %d received %s", o.Line, o.Received)
			}
		}
	}
	if fmt.Sprint(live) != "[false true]" {
		t.Errorf("live per line = %v, want [false true]: history first, then live", live)
	}
	st := ingesttest.StateOf(t, log, sid)
	if off := time.Duration(st.ClockOffsetMS) * time.Millisecond; off < lag-time.Minute || off > lag+time.Minute {
		t.Errorf("clock offset %s, want about %s", off, lag)
	}
	if !strings.Contains(st.ClockOffset(), "behind the server's") {
		t.Errorf("clock offset shown as %q", st.ClockOffset())
	}
	if idle := time.Since(st.ObservedAt); idle > time.Minute {
		t.Errorf("observed_at %s: %s ago, want the receipt of the last line", st.ObservedAt, idle)
	}
	now := time.Now().Add(Quiet)
	if ok, err := in.WouldReconcile(st, now, 30*time.Minute, nil); ok || err != nil {
		t.Errorf("WouldReconcile on a live session with a lagging clock = %v, %v; want false", ok, err)
	}

	// A file that appears while Watch runs is followed live from its
	// first line.
	const sid2 = "5e551011-0000-4000-8000-000000000076"
	path2 := filepath.Join(dir, sid2+".jsonl")
	ingesttest.AppendFile(t, path2, bytes.ReplaceAll(line(1, time.Now().Add(-lag), prompt), []byte(sid), []byte(sid2)))
	ingesttest.Eventually(t, "the new file's line", func() bool { return ingesttest.StateOf(t, log, sid2).Lines == 1 })
	if st2 := ingesttest.StateOf(t, log, sid2); st2.ClockOffsetAt.IsZero() {
		t.Errorf("a file that appeared while watched: no offset learned, its line not taken as live")
	}
}

// TestWatch_AppearedOldLinesAreHistory: a transcript that appears in a
// watched folder holding lines dated long before their receipt (a copy or
// a restore of an old session) is history, as an import reads it: its
// lines are dated by their own timestamps (usage counts on their days), no
// agent clock offset is learned from them, and the same bytes imported
// without a watcher give the same times. A line appended to it later is
// live.
func TestWatch_AppearedOldLinesAreHistory(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000077"
	old := time.Now().Add(-200 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
	line := func(n int, at time.Time) []byte {
		parent, body := "null", `"type":"user","message":{"role":"user","content":"build it"}`
		if n > 1 {
			parent = fmt.Sprintf(`"u%d"`, n-1)
			body = `"type":"assistant","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":4}}`
		}
		return fmt.Appendf(nil, `{%s,"uuid":"u%d","parentUuid":%s,"sessionId":%q,"timestamp":%q}`+"\n", body, n, parent, sid, at.Format("2006-01-02T15:04:05.000Z"))
	}
	log, in, root := watchRig(t)
	startWatch(t, in, 20*time.Millisecond, root)
	// Once the watcher has taken in a file that appeared, its first walk
	// is done: a file that appears after is new to it.
	const probe = "5e551011-0000-4000-8000-000000000078"
	dir := projectDir(t, root, "-home-user-shop")
	ingesttest.AppendFile(t, filepath.Join(dir, probe+".jsonl"), bytes.ReplaceAll(line(1, time.Now()), []byte(sid), []byte(probe)))
	ingesttest.Eventually(t, "the probe", func() bool { return ingesttest.StateOf(t, log, probe).Lines == 1 })

	path := filepath.Join(dir, sid+".jsonl")
	ingesttest.AppendFile(t, path, append(line(1, old), line(2, old.Add(3*time.Second))...))
	ingesttest.Eventually(t, "the copied lines", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 2 })
	st := ingesttest.StateOf(t, log, sid)
	if !st.ClockOffsetAt.IsZero() {
		t.Errorf("an agent clock offset of %s learned from a copy of old lines", st.ClockOffset())
	}
	if !st.ObservedAt.Equal(old.Add(3 * time.Second)) {
		t.Errorf("observed_at %s, want the last line's own time %s", st.ObservedAt, old.Add(3*time.Second))
	}
	recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if o, ok := events.Observed(r.Data); ok && o.Line > 0 {
			if o.Live || !r.At.Equal(old.Add(time.Duration(o.Line-1)*3*time.Second)) {
				t.Errorf("line %d: live %v, at %s; want history at its own time", o.Line, o.Live, r.At)
			}
		}
	}

	// The agent writes on in the copy: that line is live.
	ingesttest.AppendFile(t, path, line(3, old.Add(time.Minute)))
	ingesttest.Eventually(t, "the appended line", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 3 })
	if st := ingesttest.StateOf(t, log, sid); st.ClockOffsetAt.IsZero() {
		t.Errorf("a line appended to the copy: no offset learned, it was not taken as live")
	}

	// A copy that is created empty, then written (as cp does), and whose
	// first write ends in a torn line: its old lines are history too.
	const sid2 = "5e551011-0000-4000-8000-000000000079"
	path2 := filepath.Join(dir, sid2+".jsonl")
	ingesttest.AppendFile[[]byte](t, path2)
	const probe2 = "5e551011-0000-4000-8000-00000000007a"
	ingesttest.AppendFile(t, filepath.Join(dir, probe2+".jsonl"), bytes.ReplaceAll(line(1, time.Now()), []byte(sid), []byte(probe2)))
	ingesttest.Eventually(t, "the second probe", func() bool { return ingesttest.StateOf(t, log, probe2).Lines == 1 })
	copied := bytes.ReplaceAll(append(line(1, old), line(2, old.Add(3*time.Second))...), []byte(sid), []byte(sid2))
	cut := len(copied) - 10
	ingesttest.AppendFile(t, path2, copied[:cut])
	ingesttest.Eventually(t, "the copy's first line", func() bool { return ingesttest.StateOf(t, log, sid2).Lines == 1 })
	ingesttest.AppendFile(t, path2, copied[cut:])
	ingesttest.Eventually(t, "the copy's last line", func() bool { return ingesttest.StateOf(t, log, sid2).Lines == 2 })
	if st := ingesttest.StateOf(t, log, sid2); !st.ClockOffsetAt.IsZero() || !st.ObservedAt.Equal(old.Add(3*time.Second)) {
		t.Errorf("a copy written in two parts: offset %q, observed_at %s; want none, the last line's own time %s", st.ClockOffset(), st.ObservedAt, old.Add(3*time.Second))
	}
}

// A transcript copied into a watched folder under a name that is not its
// session's, read while the copy is under way (its first complete line
// carries no sessionId yet): every line goes to the session its first
// import chose, one file being one session.
func TestWatch_CopyIsOneSession(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000001"
	lines := fixtureLines(t, sid)
	log, in, root := watchRig(t)
	startWatch(t, in, time.Hour, root)
	path := filepath.Join(root, "transcript.jsonl")
	ingesttest.AppendFile(t, path, lines[1]) // file-history-snapshot: no sessionId
	ingesttest.Eventually(t, "the first line", func() bool { return ingesttest.StateOf(t, log, "transcript").Lines == 1 })
	for _, l := range append([][]byte{lines[0]}, lines[2:]...) {
		ingesttest.AppendFile(t, path, l)
	}
	ingesttest.Eventually(t, "every line", func() bool { return ingesttest.StateOf(t, log, "transcript").Lines == len(lines) })
	if n := ingesttest.StateOf(t, log, sid).Lines; n != 0 {
		t.Errorf("%d lines went to a second session, %s", n, sid)
	}
}

// TestWatch_CopyBeingWritten: a transcript copied under its own name into
// another folder after its import, seen while the copy is empty and then
// while it holds a beginning of the transcript, is a copy, not a
// truncation: no divergence is recorded, the copy is followed on, nothing
// of it is appended twice, and the lines it gains past what was imported
// go to the session.
func TestWatch_CopyBeingWritten(t *testing.T) {
	t.Parallel()
	const sid = "5e551011-0000-4000-8000-000000000001"
	lines := fixtureLines(t, sid)
	k := len(lines) - 2
	log, in, root := watchRig(t)
	app := filepath.Join(projectDir(t, root, "-home-user-app"), sid+".jsonl")
	ingesttest.WriteFile(t, app, string(bytes.Join(lines[:k], nil)))
	if _, err := in.ImportFile(t.Context(), app, ingesttest.Session(sid), nil); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(projectDir(t, root, "-home-user-other"), sid+".jsonl")
	ingesttest.WriteFile(t, cp, "")

	// Each import of the copy tells the size it found and its error; the
	// copy is written on only after an import read it as it is.
	type read struct {
		size int64
		err  error
	}
	seen := make(chan read, 64)
	rep := &reports{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- in.Watch(ctx, ingest.WatchConfig{Roots: []string{root}, Rescan: time.Hour, Report: rep.add,
			Import: func(ctx context.Context, path, session string) ([]ingest.FileResult, error) {
				rs, err := in.importWatched(ctx, path, session)
				if path == cp {
					if st, serr := os.Stat(cp); serr == nil {
						seen <- read{st.Size(), err}
					}
				}
				return rs, err
			}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	var size int64
	readAt := func(what string) {
		t.Helper()
		hang := time.After(20 * time.Second)
		for {
			select {
			case r := <-seen:
				if r.err != nil {
					t.Fatalf("the copy %s: %v", what, r.err)
				}
				if r.size == size {
					return
				}
			case <-hang:
				t.Fatalf("waited 20s for an import of the copy %s", what)
			}
		}
	}
	readAt("while empty")
	for i, part := range [][][]byte{lines[:k-1], lines[k-1 : k]} {
		chunk := bytes.Join(part, nil)
		ingesttest.AppendFile(t, cp, chunk)
		size += int64(len(chunk))
		readAt(fmt.Sprintf("holding %d of the %d lines imported", len(lines[:k-1])+i, k))
	}
	ingesttest.AppendFile(t, cp, bytes.Join(lines[k:], nil))
	ingesttest.Eventually(t, "the copy's new lines", func() bool { return ingesttest.StateOf(t, log, sid).Lines == len(lines) })
	st := ingesttest.StateOf(t, log, sid)
	if len(st.Diverged) > 0 || rep.has("followed no more") {
		t.Errorf("the copy is taken for a changed transcript: diverged %v, reports %q", st.Diverged, rep.all())
	}
	if st.Observations != len(lines) {
		t.Errorf("%d observations, want %d (each line once)", st.Observations, len(lines))
	}
}
