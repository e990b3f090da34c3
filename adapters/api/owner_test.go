package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// subagentReq returns a hook request of subagent agent in session sid.
func subagentReq(t *testing.T, sid, agent string) []byte {
	t.Helper()
	payload := fmt.Sprintf(`{"session_id":%q,"agent_id":%q,"transcript_path":"/home/u/.claude/projects/p/%s.jsonl","cwd":"/home/u/p","hook_event_name":"UserPromptSubmit","prompt":"hi"}`, sid, agent, sid)
	b, err := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSystem_SessionOwnedByItsFirstSender: a session opened by a hook on
// the system socket is its sender's; another user's hook naming it is
// refused with an error naming the session and both users, before
// anything is taken: while the first hook still waits in the intake,
// after it is appended, and on a server started again (the owner folded
// from the log); a subagent's hook is held to its parent's owner; hooks
// that came any other way are not judged.
func TestSystem_SessionOwnedByItsFirstSender(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	alice := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64101, User: "alice"})
	bob := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64102, User: "bob"})
	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: taken, want it refused", what)
			return
		}
		if errCode(err) != "refused" || !strings.Contains(err.Error(), "session s1") || !strings.Contains(err.Error(), "alice (uid 64101)") || !strings.Contains(err.Error(), "bob (uid 64102)") {
			t.Errorf("%s: %v (code %q), want a refusal naming session s1, its owner and the sender", what, err, errCode(err))
		}
	}
	if _, err := in.Accept(alice, hookReq(t, "s1", "pre", "a1")); err != nil {
		t.Fatal(err)
	}
	// alice's hook is taken, not yet appended.
	_, err := in.Accept(bob, hookReq(t, "s1", "pre", "b1"))
	refused("bob's hook while alice's waits", err)
	if _, err := in.Accept(bob, hookReq(t, "s2", "pre", "b2")); err != nil {
		t.Errorf("bob's hook in a session of his own: %v", err)
	}
	run(t, in)
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = in.Accept(bob, hookReq(t, "s1", "pre", "b3"))
	refused("bob's hook after alice's is in", err)
	_, _, err = svc.HookThen(bob, hookReq(t, "s1", "pre", "b4"), nil)
	refused("bob's gated hook", err)
	if _, err := in.Accept(alice, hookReq(t, "s1", "pre", "a2")); err != nil {
		t.Errorf("alice's second hook: %v", err)
	}
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A server started again knows the owner from the log.
	svc2 := e.service()
	_, _, err = svc2.HookThen(bob, hookReq(t, "s1", "pre", "b5"), nil)
	refused("bob's hook to a server started again", err)
	_, _, err = svc2.HookThen(bob, subagentReq(t, "s1", "sub1"), nil)
	if err == nil || !strings.Contains(err.Error(), "session s1") {
		t.Errorf("bob's subagent hook under alice's session: %v, want it refused", err)
	}
	if _, _, err := svc2.HookThen(alice, hookReq(t, "s1", "pre", "a3"), nil); err != nil {
		t.Errorf("alice's hook to a server started again: %v", err)
	}
	// A hook that came another way (NATS, the data dir's socket) names
	// no sender and is not judged.
	if _, _, err := svc2.HookThen(t.Context(), hookReq(t, "s1", "pre", "n1"), nil); err != nil {
		t.Errorf("a hook with no sender: %v", err)
	}
	obs, _ := e.observed()
	want := "[PreToolUse a1 PreToolUse a2 PreToolUse a3 PreToolUse n1]"
	if got := fmt.Sprint(obs["s1"]); got != want {
		t.Errorf("session s1 observed %s, want %s", got, want)
	}
	if got := fmt.Sprint(obs["s2"]); got != "[PreToolUse b2]" {
		t.Errorf("session s2 observed %s", got)
	}
}

// notifyReq returns a hook request carrying a Codex CLI notify payload
// (agent-turn-complete) for thread tid.
func notifyReq(t *testing.T, tid, turn string) []byte {
	t.Helper()
	payload := fmt.Sprintf(`{"type":"agent-turn-complete","thread-id":%q,"turn-id":%q,"cwd":"/home/u/p","input-messages":["hi"],"last-assistant-message":"done"}`, tid, turn)
	b, err := json.Marshal(HookRequest{ID: ulid.Make().String(), Text: payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSystem_NotifyHeldToTheOwner: a Codex notify payload on the system
// socket is held to its thread's owner as a Claude Code hook is: another
// user's notify for a session alice opened is refused, nothing appended,
// through the intake and the gated path alike; the owner's own notify,
// and a notify opening a thread of the sender's own, are taken.
func TestSystem_NotifyHeldToTheOwner(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	runDrained(t, in, svc)
	alice := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64101, User: "alice"})
	bob := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64102, User: "bob"})
	if _, err := in.Accept(alice, hookReq(t, "s1", "pre", "a1")); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Accept(alice, notifyReq(t, "t1", "turn-a")); err != nil {
		t.Fatalf("alice's notify opening her thread: %v", err)
	}
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		call func() error
	}{
		{"bob's notify into alice's session", func() error { _, err := in.Accept(bob, notifyReq(t, "s1", "turn-b1")); return err }},
		{"bob's notify into alice's thread", func() error { _, err := in.Accept(bob, notifyReq(t, "t1", "turn-b2")); return err }},
		{"bob's notify into alice's thread, gated path", func() error { _, _, err := svc.HookThen(bob, notifyReq(t, "t1", "turn-b3"), nil); return err }},
	} {
		err := c.call()
		if err == nil || errCode(err) != "refused" || !strings.Contains(err.Error(), "alice (uid 64101)") {
			t.Errorf("%s: %v (code %q), want it refused naming alice", c.what, err, errCode(err))
		}
	}
	if _, err := in.Accept(alice, notifyReq(t, "t1", "turn-a2")); err != nil {
		t.Errorf("alice's second notify: %v", err)
	}
	if _, err := in.Accept(bob, notifyReq(t, "t2", "turn-b4")); err != nil {
		t.Errorf("bob's notify opening a thread of his own: %v", err)
	}
	if err := svc.WaitIntake(t.Context()); err != nil {
		t.Fatal(err)
	}
	obs, _ := e.observed()
	if got := fmt.Sprint(obs["s1"]); got != "[PreToolUse a1]" {
		t.Errorf("session s1 observed %s, want alice's hook alone", got)
	}
}
