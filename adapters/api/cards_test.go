package api

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/reducers/task"
)

// TestSession_TaskCardOfAnotherUser: a session's card of a task it
// delegated shows the numbers of the session working on the task, but a
// peer of the system socket limited to its own sessions does not read
// another user's session through it: the card keeps the task's facts
// only. Every other reader sees the card whole.
func TestSession_TaskCardOfAnotherUser(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	defer runProjector(svc)()
	alice := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64101, User: "alice"})
	bob := context.WithValue(t.Context(), peerKey{}, Peer{UID: 64102, User: "bob"})
	if _, _, err := svc.HookThen(alice, hookReq(t, "s1", "pre", "a1"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.HookThen(bob, hookReq(t, "s2", "pre", "b1"), nil); err != nil {
		t.Fatal(err)
	}
	tasks := &events.Executor[task.State]{Log: e.log, Reg: e.reg, Init: task.Init,
		Evolve: func(s task.State, ev events.Envelope) task.State { return task.Evolve(s, ev) }, IDs: ulid.Make, Host: "test", Actor: "test"}
	agg := events.Aggregate{Kind: events.KindTask, ID: "t1"}
	at := time.Now().UTC()
	cause := events.Cause{Kind: "cli", Event: "task delegate", Detail: "t1", Ref: "test"}
	for _, cmd := range []task.Command{
		task.Delegate{Workspace: "w1", Parent: "s1", Title: "Fix the login", At: at, Cause: cause},
		task.Observe{Session: "s2", At: at.Add(time.Second), Cause: cause},
	} {
		if _, _, err := tasks.Execute(t.Context(), agg, func(s task.State) (events.Decision, error) { return task.Decide(s, cmd) }); err != nil {
			t.Fatal(err)
		}
	}
	card := func(ctx context.Context) (session.Card, *Subagents) {
		t.Helper()
		req, _ := json.Marshal(SessionRequest{ID: "s1"})
		out, err := svc.Session(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := out.(SessionReply)
		if len(r.Cards) != 1 {
			t.Fatalf("cards %+v, want the task's", r.Cards)
		}
		return r.Cards[0], r.Subagents
	}
	whole, n := card(t.Context())
	if whole.Kind != session.CardTask || whole.Task != "t1" || whole.Session != "s2" || whole.ToolCalls != 1 || whole.Type != "Fix the login" || whole.Workspace != "w1" || whole.Depth != 1 || !whole.Background {
		t.Errorf("card %+v, want task t1 worked on by s2 with its 1 tool call", whole)
	}
	if n == nil || n.Total != 1 {
		t.Errorf("subagents %+v, want a total of 1", n)
	}
	own := context.WithValue(alice, ownOnlyKey{}, uint32(64101))
	hidden, _ := card(own)
	want := session.Card{Task: "t1", Kind: session.CardTask, Type: "Fix the login", Depth: 1, Background: true, Status: whole.Status, Workspace: "w1"}
	if !cmp.Equal(hidden, want) {
		t.Errorf("alice reads bob's session through the card: %+v, want %+v", hidden, want)
	}
}
