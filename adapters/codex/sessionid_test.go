package codex

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
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
