package api

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestSession_RowOnly: a request with RowOnly answers the session's own
// row as the whole answer has it, less the ids it remembers and its
// usage, with no children, cards or commands,
// and reads another user's session, to a peer limited to its own, as
// one that does not exist, as the whole answer does.
func TestSession_RowOnly(t *testing.T) {
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
	ask := func(ctx context.Context, req SessionRequest) (SessionReply, error) {
		t.Helper()
		body, _ := json.Marshal(req)
		out, err := svc.Session(ctx, body)
		if err != nil {
			return SessionReply{}, err
		}
		return out.(SessionReply), nil
	}
	whole, err := ask(t.Context(), SessionRequest{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	row, err := ask(t.Context(), SessionRequest{ID: "s1", RowOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// The row alone is the whole answer's, without what grows with the
	// session's life (projections.Store.SessionHead).
	if whole.Session.RecentKeys.Len() == 0 {
		t.Fatalf("the whole answer's session remembers no hook keys: the test would compare nothing dropped")
	}
	want := whole.Session
	want.RecentKeys, want.RecentClosed = session.Recent{}, session.Recent{}
	want.Calls, want.LineIDs, want.Unfinished, want.Inferred = session.IDSet{}, session.IDSet{}, session.IDSet{}, session.IDSet{}
	want.Usage = nil
	if diff := cmp.Diff(want, row.Session); diff != "" {
		t.Errorf("the row alone differs from the whole answer's, its remembered ids and usage dropped (-want +row):\n%s", diff)
	}
	if len(row.Children) != 0 || len(row.Cards) != 0 || len(row.Commands) != 0 || row.Subagents != nil {
		t.Errorf("row only answered %d children, %d cards, %d commands, subagents %v; want none", len(row.Children), len(row.Cards), len(row.Commands), row.Subagents)
	}
	if row.Checkpoint == 0 || row.Checkpoint < whole.Checkpoint {
		t.Errorf("row only at checkpoint %d, whole at %d: want the projection's, caught up", row.Checkpoint, whole.Checkpoint)
	}
	own := context.WithValue(alice, ownOnlyKey{}, uint32(64101))
	if _, err := ask(own, SessionRequest{ID: "s2", RowOnly: true}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("alice, limited to her own, read bob's session row: err %v, want not found", err)
	}
	if _, err := ask(own, SessionRequest{ID: "s1", RowOnly: true}); err != nil {
		t.Errorf("alice's own session row: %v", err)
	}
}
