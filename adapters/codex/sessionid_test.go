package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
	"github.com/oklog/ulid/v2"
)

// A session_meta whose id is no session id (a control character, a
// megabyte) is read, and its id is not recorded as the session's own: a
// problem says so, with its length but none of its bytes.
func TestSessionMetaIDChecked(t *testing.T) {
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1\x1b[31m", strings.Repeat("s", 1<<20)} {
		q, _ := json.Marshal(id)
		line := ev(0, "session_meta", `{"id":`+string(q)+`,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.130.0","source":"cli"}`)
		o, err := p.Line(&FileState{}, "r.jsonl", 1, []byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatal(err)
		}
		probs := strings.Join(o.Problems, "; ")
		if o.Meta.SessionID != "" || !strings.Contains(probs, "session_meta id") || !strings.Contains(probs, "not recorded") || strings.Contains(probs, "\x1b") || len(probs) > 200 {
			t.Errorf("id of %d bytes: session id %.20q, problems %.300q; want none recorded, a short problem", len(id), o.Meta.SessionID, probs)
		}
	}
	o, err := p.Line(&FileState{}, "r.jsonl", 1, []byte(strings.TrimSpace(meta("019a-ok", ""))))
	if err != nil || o.Meta.SessionID != "019a-ok" || len(o.Problems) != 0 {
		t.Errorf("a valid id: %q, problems %q, %v", o.Meta.SessionID, o.Problems, err)
	}
}

// A rollout whose session_meta id has a subagent's shape ("agent-<id>",
// the session Logbook files a Claude Code subagent's reports under) is
// imported into the thread its file name ends with, as one whose id is
// no session id, and the id is not recorded; a rollout that names no
// other session than such an id, in its first line or its file name, is
// refused naming the file, and nothing is appended. A notify payload's
// thread-id of that shape is refused.
func TestImport_SubagentSessionID(t *testing.T) {
	t.Parallel()
	l, in, path := rolloutRig(t)
	ctx := t.Context()
	ingesttest.AppendFile(t, path, meta("agent-x1", ""), turnStart(1, "t1"), userMsg(1, "hi"))
	r, err := in.ImportFile(ctx, path, nil)
	if err != nil || r.Session != tid || r.Appended != 3 {
		t.Fatalf("a rollout named after its thread: %+v, %v; want its 3 lines in %s", r, err, tid)
	}
	if st := ingesttest.StateOf(t, l, tid); st.AgentSessionID != "" {
		t.Errorf("agent session id %q recorded", st.AgentSessionID)
	}
	named := filepath.Join(t.TempDir(), "agent-x1.jsonl")
	ingesttest.AppendFile(t, named, meta("agent-x1", ""), turnStart(1, "t1"))
	r, err = in.ImportFile(ctx, named, nil)
	if want := named + `: session id: events: malformed event: id "agent-x1" begins with "agent-", which names a subagent's session`; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, events.ErrSubagentID) || r.Appended != 0 {
		t.Errorf("a rollout named agent-x1.jsonl: %+v, %v; want %s", r, err, want)
	}
	if st := ingesttest.StateOf(t, l, "agent-x1"); st.Exists() {
		t.Errorf("session agent-x1 exists: %+v", st)
	}
	p, _ := NewParser(Config{})
	_, err = p.Notify([]byte(`{"type":"agent-turn-complete","thread-id":"agent-x1","turn-id":"t1"}`))
	if want := `codex notify: field "thread-id": events: malformed event: id "agent-x1" begins with "agent-"`; err == nil || !strings.HasPrefix(err.Error(), want) || CheckNotify([]byte(`{"type":"agent-turn-complete","thread-id":"agent-x1"}`)) == nil {
		t.Errorf("notify: %v; want %s, from CheckNotify too", err, want)
	}
}

// A subagent thread's parent_thread_id is checked as every session id
// is (events.ValidOwnSessionID): a subagent's "agent-<id>", bytes
// outside [A-Za-z0-9_-] or more than events.MaxIDLen of them refuse the
// rollout at its session_meta line, naming the file and the line, and
// nothing of it is appended. A parent thread whose session is another
// agent's (a Claude Code session) is refused too, and that session
// takes in no subagent; a Codex parent is linked, as before.
func TestImport_SubagentParentChecked(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newIngester(t, l, false)
	ctx := t.Context()
	spawned := func(id, parent string) string {
		p, _ := json.Marshal(parent)
		return ev(0, "session_meta", fmt.Sprintf(`{"id":%q,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.147.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%s,"depth":1}}},"thread_source":"subagent"}`, id, p))
	}
	const claude = "5e551011-0000-4000-8000-0000000000e1"
	o := events.Observation{Key: "line:1", Parser: "test/1", Path: "/c.jsonl", Line: 1, Kind: "user", Meta: events.Meta{SessionID: claude},
		Signals: []events.Sig{{Kind: events.SigPrompt}}}
	if _, _, err := in.base.Observe(ctx, events.Aggregate{Kind: events.KindSession, ID: claude}, ulid.Make(), time.Now(), events.ClaudeLineObserved{Observation: o}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ parent, want string }{
		{"agent-parent1", `:1: session_meta: the parent thread id (source.subagent.thread_spawn.parent_thread_id, 13 bytes) can name no session: events: malformed event: id "agent-parent1" begins with "agent-"`},
		{"../../etc pass\nwd", `:1: session_meta: the parent thread id (source.subagent.thread_spawn.parent_thread_id, 17 bytes) can name no session: events: malformed event: id "../../etc pass\nwd": byte`},
		{strings.Repeat("p", 300), `:1: session_meta: the parent thread id (source.subagent.thread_spawn.parent_thread_id, 300 bytes) can name no session: events: malformed event: id "ppp`},
		{claude, `:1: session_meta: source.subagent.thread_spawn.parent_thread_id: parent of {id}: events: command rejected: session ` + claude + ` is claude-code's, the subagent codex's`},
	} {
		id := fmt.Sprintf("019e7000-0000-7000-8000-00000000000%d", i)
		path := rolloutPath(t, id)
		ingesttest.AppendFile(t, path, spawned(id, c.parent), turnStart(1, "t1"), userMsg(1, "hi"))
		r, err := in.ImportFile(ctx, path, nil)
		want := path + strings.ReplaceAll(c.want, "{id}", id)
		if err == nil || !strings.HasPrefix(err.Error(), want) || r.Appended != 0 {
			t.Errorf("parent %.20q: %+v, %v; want %s", c.parent, r, err, want)
		}
		if st := ingesttest.StateOf(t, l, id); st.Exists() {
			t.Errorf("session %s: %+v", id, st)
		}
	}
	const codexParent = "019e6f00-0000-7000-8000-0000000000e2"
	for _, f := range []struct{ id, first string }{{codexParent, meta(codexParent, "")}, {"019e7000-0000-7000-8000-0000000000e3", spawned("019e7000-0000-7000-8000-0000000000e3", codexParent)}} {
		path := rolloutPath(t, f.id)
		ingesttest.AppendFile(t, path, f.first, turnStart(1, "t1"), userMsg(1, "hi"))
		if _, err := in.ImportFile(ctx, path, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := ingesttest.StateOf(t, l, "019e7000-0000-7000-8000-0000000000e3"); st.Parent != codexParent {
		t.Errorf("a Codex parent: parent %q, want %s", st.Parent, codexParent)
	}
	// A loop of parents: c1's parent is c2 (not in the log yet: taken),
	// then c2's is c1, which descends from c2: refused, nothing of it
	// appended. So is a longer loop, c3 → c4 → c5 → c3.
	loop := []struct{ id, parent string }{
		{"019e7000-0000-7000-8000-0000000000c1", "019e7000-0000-7000-8000-0000000000c2"},
		{"019e7000-0000-7000-8000-0000000000c2", "019e7000-0000-7000-8000-0000000000c1"},
		{"019e7000-0000-7000-8000-0000000000c3", "019e7000-0000-7000-8000-0000000000c5"},
		{"019e7000-0000-7000-8000-0000000000c4", "019e7000-0000-7000-8000-0000000000c3"},
		{"019e7000-0000-7000-8000-0000000000c5", "019e7000-0000-7000-8000-0000000000c4"},
	}
	for i, f := range loop {
		path := rolloutPath(t, f.id)
		ingesttest.AppendFile(t, path, spawned(f.id, f.parent), turnStart(1, "t1"), userMsg(1, "hi"))
		r, err := in.ImportFile(ctx, path, nil)
		closes := i == 1 || i == 4
		if !closes && err != nil {
			t.Fatalf("%s, parent %s: %v", f.id, f.parent, err)
		}
		if closes && (err == nil || !strings.Contains(err.Error(), "descends from this one ("+f.id+"), which would make a loop of parents") || r.Appended != 0) {
			t.Errorf("%s, parent %s, closing a loop: %+v, %v; want it refused", f.id, f.parent, r, err)
		}
		if st := ingesttest.StateOf(t, l, f.id); closes && st.Exists() {
			t.Errorf("session %s, closing a loop, was started: %+v", f.id, st)
		}
	}
}
