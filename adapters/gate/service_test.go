package gate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
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

// TestService_HookAndRuleInOneBatch: a gated hook whose verdict a rule
// gives costs one append, the observation with the review's request and
// verdict; a review sent to a person appends the observation with the
// request; a redelivered hook appends nothing and answers the same.
func TestService_HookAndRuleInOneBatch(t *testing.T) {
	nl, _ := natslogtest.Start(t, natslog.FsyncAlways)
	log := &countingLog{Log: nl}
	ing, err := claude.NewIngester(claude.IngestConfig{Log: log, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	policy := "allow = [\"Bash(git status)\"]\ndeny = [\"Bash(rm -rf:*)\"]\nreview = [\"Bash(git push:*)\"]\n"
	if err := os.WriteFile(filepath.Join(dir, PolicyFile), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Gate{Sessions: ing.Sessions(), Log: log, Policies: &Policies{DataDir: dir}, Budget: time.Minute, Poll: 5 * time.Millisecond}
	svc := &Service{Gate: g, Ingest: func(ctx context.Context, data []byte, then claude.Then) (session.State, error) {
		var req HookGateRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return session.State{}, err
		}
		id := ulid.MustParseStrict(req.ID)
		_, st, err := ing.HookThen(ctx, claude.Entry{ID: req.ID, Time: ulid.Time(id.Time()), Payload: []byte(req.Text)}, then)
		return st, err
	}}
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
	agg := events.Aggregate{Kind: events.KindSession, ID: sess}
	for {
		st, err := g.Sessions.State(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.PendingReview("toolu_4"); ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := g.Answer(t.Context(), sess, "toolu_4", "allow", "ok", "person:a@h", ulid.Make().String()); err != nil {
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
