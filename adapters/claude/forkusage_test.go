package claude

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestUsage_ForkCopiesCountInTheOrigin: a fork of a session (Claude
// Code's /branch, --fork-session) copies the origin's lines into its own
// transcript, each stamped forkedFrom, with the origin's message ids and
// usage. The copied calls count in the origin only: the fork's own spend
// is its own calls, and it keeps the copied ones apart (Copied, by
// origin and model), so a total over both sessions counts each message
// id once.
func TestUsage_ForkCopiesCountInTheOrigin(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	dir := t.TempDir()
	const origin, fork = "5e551011-0000-4000-8000-00000000f0a1", "5e551011-0000-4000-8000-00000000f0b2"
	user := func(sid, uuid, parent, stamp string) string {
		return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,"sessionId":%q,%s"timestamp":"2026-04-24T19:19:00.393Z","message":{"role":"user","content":"go"}}`+"\n", uuid, parent, sid, stamp)
	}
	assistant := func(sid, uuid, parent, stamp, msg string, in, out int) string {
		return fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"sessionId":%q,%s"requestId":"req_%s","timestamp":"2026-04-24T19:19:02.584Z","message":{"id":%q,"model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d}}}`+"\n", uuid, parent, sid, stamp, msg, msg, in, out)
	}
	stamp := func(uuid string) string {
		return fmt.Sprintf(`"forkedFrom":{"sessionId":%q,"messageUuid":%q},`, origin, uuid)
	}
	op := filepath.Join(dir, origin+".jsonl")
	ingesttest.AppendFile(t, op, user(origin, "u1", "null", ""), assistant(origin, "a2", "u1", "", "msg_1", 100, 10))
	fp := filepath.Join(dir, fork+".jsonl")
	ingesttest.AppendFile(t, fp, user(fork, "u1", "null", stamp("u1")), assistant(fork, "a2", "u1", stamp("a2"), "msg_1", 100, 10),
		user(fork, "u3", `"a2"`, ""), assistant(fork, "a4", "u3", "", "msg_2", 200, 20))
	for _, p := range []string{op, fp} {
		if _, err := in.ImportTranscript(t.Context(), Transcript{Path: p, SessionID: filepath.Base(p[:len(p)-len(".jsonl")])}, nil); err != nil {
			t.Fatal(err)
		}
	}
	own := func(s session.State) (tokens, calls int64) {
		for _, b := range s.Usage {
			tokens += b.Tokens()
			calls += b.Calls
		}
		return tokens, calls
	}
	o, f := ingesttest.StateOf(t, l, origin), ingesttest.StateOf(t, l, fork)
	if tok, calls := own(o); tok != 110 || calls != 1 {
		t.Errorf("origin: %d tokens in %d calls; want 110 in 1", tok, calls)
	}
	if tok, calls := own(f); tok != 220 || calls != 1 {
		t.Errorf("fork's own: %d tokens in %d calls; want 220 in 1 (its copy of msg_1 is the origin's)", tok, calls)
	}
	want := []session.CopiedSpend{{From: origin, Model: "claude-opus-4-7", Input: 100, Output: 10, Calls: 1}}
	if len(f.Copied) != 1 || f.Copied[0] != want[0] || len(o.Copied) != 0 {
		t.Errorf("copied: fork %+v, origin %+v; want the fork's %+v", f.Copied, o.Copied, want)
	}
}
