package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
)

// countingLog is a real log that remembers the types of each batch
// appended.
type countingLog struct {
	*natslog.Log
	mu      sync.Mutex
	batches [][]string
}

func (l *countingLog) Append(ctx context.Context, b events.Batch) (events.Appended, error) {
	ap, err := l.Log.Append(ctx, b)
	if err == nil && !ap.Duplicate {
		var types []string
		for _, e := range b.Events {
			types = append(types, e.Type)
		}
		l.mu.Lock()
		l.batches = append(l.batches, types)
		l.mu.Unlock()
	}
	return ap, err
}

func (l *countingLog) take() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.batches
	l.batches = nil
	return b
}

// newService returns a Service whose gate reads policy (a policy file's
// text) from a folder of its own and whose hooks go to a Claude Code
// ingester appending to log; the ingester is returned too.
func newService(t *testing.T, log events.Log, policy string) (*Service, *claude.Ingester) {
	t.Helper()
	ing, err := claude.NewIngester(claude.IngestConfig{Log: log, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PolicyFile), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Gate{Sessions: ing.Sessions(), Log: log, Policies: &Policies{DataDir: dir}, Budget: time.Minute, Poll: 5 * time.Millisecond}
	svc := &Service{Gate: g, Ingest: func(ctx context.Context, data []byte, then ingest.Then) (session.State, error) {
		var req HookGateRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return session.State{}, err
		}
		id := ulid.MustParseStrict(req.ID)
		_, st, err := ing.HookThen(ctx, claude.Entry{ID: req.ID, Time: ulid.Time(id.Time()), Payload: []byte(req.Text)}, then)
		return st, err
	}}
	return svc, ing
}

// TestService_HookAndRuleInOneBatch: a gated hook whose verdict a rule
// gives costs one append, the observation with the review's request and
// verdict; a review sent to a person appends the observation with the
// request; a redelivered hook appends nothing and answers the same.
func TestService_HookAndRuleInOneBatch(t *testing.T) {
	nl, _ := natslogtest.Start(t, natslog.FsyncAlways)
	log := &countingLog{Log: nl}
	svc, ing := newService(t, log, "allow = [\"Bash(git status)\"]\ndeny = [\"Bash(rm -rf:*)\"]\nreview = [\"Bash(git push:*)\"]\n")
	g := svc.Gate
	sess := "9a7e0000-0000-4000-8000-0000000000bb"
	hook := func(id, useID, command string) (Verdict, error) {
		b, _ := json.Marshal(map[string]any{"session_id": sess, "transcript_path": "/nonexistent/b.jsonl", "cwd": "/tmp", "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": useID})
		req, _ := json.Marshal(HookGateRequest{ID: id, Text: string(b)})
		v, err := svc.hookGate(t.Context(), req)
		if err != nil {
			return Verdict{}, err
		}
		return v.(Verdict), nil
	}
	one := []string{"obs.claude.hook", "session.started", "session.entry_opened", "session.transitioned", "review.requested", "review.decided"}
	first := ulid.Make().String()
	v, err := hook(first, "toolu_1", "git status")
	if err != nil || v.Decision != DecideAllow {
		t.Fatalf("git status: %+v %v", v, err)
	}
	if got := log.take(); len(got) != 1 || !slices.Equal(got[0], one) {
		t.Errorf("appended %v, want one batch %v", got, one)
	}
	// Redelivered: nothing appended, the same verdict.
	v, err = hook(first, "toolu_1", "git status")
	if err != nil || v.Decision != DecideAllow {
		t.Fatalf("again: %+v %v", v, err)
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("a redelivered hook appended %v", got)
	}
	// A rule's deny: one batch, the denied call closed in it.
	v, err = hook(ulid.Make().String(), "toolu_2", "rm -rf /")
	if err != nil || v.Decision != DecideDeny {
		t.Fatalf("rm: %+v %v", v, err)
	}
	if got := log.take(); len(got) != 1 || got[0][0] != "obs.claude.hook" || !slices.Contains(got[0], "review.decided") || !slices.Contains(got[0], "session.entry_closed") {
		t.Errorf("appended %v, want one batch with the verdict and the call closed", got)
	}
	// No rule speaks: the observation alone.
	v, err = hook(ulid.Make().String(), "toolu_3", "ls")
	if err != nil || v.Decision != DecideNone {
		t.Fatalf("ls: %+v %v", v, err)
	}
	if got := log.take(); len(got) != 1 || slices.Contains(got[0], "review.requested") {
		t.Errorf("appended %v, want the observation alone", got)
	}
	// Sent to a person: the request in the hook's batch, the verdict in
	// the person's.
	done := make(chan Verdict, 1)
	go func() {
		v, err := hook(ulid.Make().String(), "toolu_4", "git push")
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	waitPending(t, g, sess, "toolu_4")
	if _, _, err := g.Answer(t.Context(), sess, "toolu_4", "allow", "ok", "person:a@h", ulid.Make().String()); err != nil {
		t.Fatal(err)
	}
	if v := <-done; v.Decision != DecideAllow {
		t.Errorf("push: %+v", v)
	}
	if got := log.take(); len(got) != 2 || got[0][0] != "obs.claude.hook" || !slices.Contains(got[0], "review.requested") || slices.Contains(got[0], "review.decided") || got[1][0] != "review.decided" {
		t.Errorf("appended %v, want the hook's batch with the request, then the person's verdict", got)
	}
	// The gate refuses (the session has ended): the hook is recorded all
	// the same, alone, and the refusal is returned (the hook answers deny).
	b, _ := json.Marshal(map[string]any{"session_id": sess, "transcript_path": "/nonexistent/b.jsonl", "cwd": "/tmp", "hook_event_name": "SessionEnd", "reason": "exit"})
	ing.Hook(t.Context(), claude.Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: b})
	log.take()
	if v, err := hook(ulid.Make().String(), "toolu_5", "git push"); !errors.Is(err, events.ErrRejected) {
		t.Errorf("after the end: %+v %v, want refused", v, err)
	}
	if got := log.take(); len(got) != 1 || !slices.Equal(got[0], []string{"obs.claude.hook"}) {
		t.Errorf("appended %v, want the observation alone", got)
	}
}

// A PermissionRequest, like a PreToolUse, is decided on its own call: its
// tool, its input and its tool_use_id when it has one. An allowed call
// of the session before it (open, recorded only, or sharing its id) never
// lends it a verdict, a deny rule wins, and each verdict answered is a
// review.decided in the log under the call's own review.
func TestService_EachHookDecidedOnItsOwnCall(t *testing.T) {
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	svc, ing := newService(t, log, "allow = [\"Bash(ls:*)\"]\ndeny = [\"Bash(rm:*)\"]\n")
	g := svc.Gate
	payload := func(sess, event, useID, command string) []byte {
		m := map[string]any{"session_id": sess, "transcript_path": "/nonexistent/c.jsonl", "cwd": "/tmp", "permission_mode": "default",
			"hook_event_name": event, "tool_name": "Bash", "tool_input": map[string]any{"command": command}}
		if useID != "" {
			m["tool_use_id"] = useID
		}
		b, _ := json.Marshal(m)
		return b
	}
	hook := func(sess, event, useID, command string) (Verdict, string) {
		t.Helper()
		ref := ulid.Make().String()
		req, _ := json.Marshal(HookGateRequest{ID: ref, Text: string(payload(sess, event, useID, command))})
		v, err := svc.hookGate(t.Context(), req)
		if err != nil {
			t.Fatalf("%s %s %q: %v", event, useID, command, err)
		}
		return v.(Verdict), ref
	}
	record := func(sess, event, useID, command string) {
		t.Helper()
		if _, err := ing.Hook(t.Context(), claude.Entry{ID: ulid.Make().String(), Time: time.Now(), Payload: payload(sess, event, useID, command)}); err != nil {
			t.Fatal(err)
		}
	}
	// The agent's own dialog under a reused id stays the agent's: only
	// the gate's review is closed there.
	const reused = "9a7e0000-0000-4000-8000-0000000000c4"
	// decided checks that review id of sess holds verdict by rule, and
	// that no other call's review was decided by the request.
	decided := func(sess, id, verdict, rule string) {
		t.Helper()
		st, err := g.Sessions.State(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sess})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := st.DecidedReview(id)
		if !ok || r.Verdict != verdict || r.DecidedBy.Kind != events.DecidedByRule || r.DecidedBy.Name != rule {
			t.Errorf("session %s review %s: %+v (found %v), want %s by rule %s", sess, id, r, ok, verdict, rule)
		}
		if len(st.Pending) != 0 || len(st.OpenReviews) != 0 && sess != reused {
			t.Errorf("session %s: left open %+v %v", sess, st.Pending, st.OpenReviews)
		}
	}
	// allowed sends a call the allow rule answers at once (a call no
	// rule answers would wait out the gate's budget for a person).
	allowed := func(sess, useID, command string) {
		t.Helper()
		if v, _ := hook(sess, EventPreToolUse, useID, command); v.Decision != DecideAllow || v.By.Name != "Bash(ls:*)" {
			t.Fatalf("%s %q: %+v, want allow by rule Bash(ls:*)", useID, command, v)
		}
	}
	cases := []struct {
		name   string
		before func(sess string)
		useID  string
	}{
		{"after an allowed call", func(s string) { allowed(s, "toolu_a1", "ls") }, "toolu_a2"},
		{"no tool_use_id", func(s string) { allowed(s, "toolu_b1", "ls") }, ""},
		{"calls still open", func(s string) {
			allowed(s, "toolu_c1", "ls")
			allowed(s, "toolu_c2", "ls -l")
		}, ""},
		{"a call recorded, not gated", func(s string) { record(s, EventPreToolUse, "toolu_d1", "ls") }, ""},
		{"the allowed call's own id", func(s string) { allowed(s, "toolu_e1", "ls") }, "toolu_e1"},
	}
	for i, c := range cases {
		sess := fmt.Sprintf("9a7e0000-0000-4000-8000-0000000000c%d", i)
		c.before(sess)
		for _, event := range []string{EventPermissionRequest, EventPreToolUse} {
			v, ref := hook(sess, event, c.useID, "rm -rf /")
			if v.Decision != DecideDeny || v.By.Name != "Bash(rm:*)" {
				t.Errorf("%s, %s: %+v, want deny by rule Bash(rm:*)", c.name, event, v)
			}
			id := v.ReviewID
			if id != c.useID && id != claude.PermissionID(ref) {
				t.Errorf("%s, %s: review %s, want %q or %s", c.name, event, id, c.useID, claude.PermissionID(ref))
			}
			decided(sess, id, events.VerdictDeny, "Bash(rm:*)")
		}
	}
}

// A person's verdict names its review by id or a prefix of one, in one
// session or in whichever holds it: the session named is read alone,
// and a review of another session, even one whose id sorts just before
// it, is not its.
func TestService_ReviewOf(t *testing.T) {
	nl, _ := natslogtest.Start(t, natslog.FsyncAlways)
	svc, _ := newService(t, nl, "allow = [\"Bash(git status)\"]\n")
	a, b := "9a7e0000-0000-4000-8000-0000000000ba", "9a7e0000-0000-4000-8000-0000000000bb"
	for _, c := range []struct{ sess, useID string }{
		{a, "toolu_1"}, {a, "toolu_ab1"}, {a, "toolu_only_a"},
		{b, "toolu_1"}, {b, "toolu_ab2"},
	} {
		p, _ := json.Marshal(map[string]any{"session_id": c.sess, "transcript_path": "/nonexistent/b.jsonl", "cwd": "/tmp", "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "git status"}, "tool_use_id": c.useID})
		req, _ := json.Marshal(HookGateRequest{ID: ulid.Make().String(), Text: string(p)})
		if v, err := svc.hookGate(t.Context(), req); err != nil || v.(Verdict).Decision != DecideAllow {
			t.Fatalf("hook %s %s: %+v %v", c.sess, c.useID, v, err)
		}
	}
	store, err := projections.OpenMem(projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.Apply(t.Context(), nl.Read(t.Context(), 0), 100); err != nil {
		t.Fatal(err)
	}
	svc.Store = store
	for _, c := range []struct {
		sess, id         string
		wantSess, wantID string
		wantErr          error
	}{
		{a, "toolu_1", a, "toolu_1", nil},
		{b, "toolu_1", b, "toolu_1", nil},
		{"", "toolu_1", "", "", events.ErrMalformed}, // held by both
		{"", "toolu_ab1", a, "toolu_ab1", nil},
		{"", "toolu_ab", "", "", events.ErrMalformed}, // a prefix of two
		{a, "toolu_ab", a, "toolu_ab1", nil},
		{"", "toolu_on", a, "toolu_only_a", nil},
		{b, "toolu_only_a", "", "", events.ErrNotFound},
		{b, "toolu_on", "", "", events.ErrNotFound},
		{"9a7e0000-0000-4000-8000-0000000000bc", "toolu_1", "", "", events.ErrNotFound},
		{"", "toolu_9", "", "", events.ErrNotFound},
	} {
		gotSess, gotID, err := svc.reviewOf(t.Context(), c.sess, c.id)
		if !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil || gotSess != c.wantSess || gotID != c.wantID {
			t.Errorf("reviewOf(%q, %q) = %q, %q, %v; want %q, %q, %v", c.sess, c.id, gotSess, gotID, err, c.wantSess, c.wantID, c.wantErr)
		}
	}
}
