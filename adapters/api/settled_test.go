package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHooksSettled: HooksSettled fails while a hook taken before it is
// queued in the intake (once its context ends) or waits in the spool
// (at once), and returns nil once they are in the log and the projection
// has applied them. An entry the drain set aside in rejected/ is not
// waited for.
func TestHooksSettled(t *testing.T) {
	e := newIntakeEnv(t)
	svc := e.service()
	in := e.open(svc)
	defer in.Close()
	ctx := t.Context()
	defer runProjector(svc)()
	settled := func() error {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return svc.HooksSettled(ctx)
	}
	if err := settled(); err != nil {
		t.Fatalf("nothing taken: %v", err)
	}

	if _, err := in.Accept(ctx, hookReq(t, "s", "pre", "toolu_1")); err != nil {
		t.Fatal(err)
	}
	if err := settled(); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "(1 left)") {
		t.Errorf("a hook queued in the intake: %v; want it waited for, then an error naming it", err)
	}
	if _, err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := settled(); err != nil {
		t.Errorf("the intake's hook in the log: %v", err)
	}

	post := `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"go test ./..."},"tool_response":{"stdout":"ok"}}`
	if _, err := svc.Spool.Put([]byte(post)); err != nil {
		t.Fatal(err)
	}
	if err := settled(); err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "spool") {
		t.Errorf("a hook in the spool: %v; want an error naming the spool, not a wait", err)
	}
	if n, err := svc.DrainSpool(ctx); err != nil || n != 1 {
		t.Fatalf("DrainSpool = %d, %v; want 1", n, err)
	}
	if err := settled(); err != nil {
		t.Errorf("the spool's hook in the log: %v", err)
	}

	id, err := svc.Spool.Put([]byte(`{"session_id":"s","hook_event_name":`))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	svc.Said = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	if n, err := svc.DrainSpool(ctx); err != nil || n != 0 {
		t.Fatalf("DrainSpool of a malformed payload = %d, %v; want it set aside", n, err)
	}
	// The hook that spooled it exited 0: serve says it was not recorded.
	if len(said) != 1 || !strings.Contains(said[0], "hook "+id+" refused, not recorded, set aside in ") || !strings.Contains(said[0], "malformed JSON") {
		t.Errorf("said %q; want the payload set aside named", said)
	}
	if err := settled(); err != nil {
		t.Errorf("a payload set aside in rejected/: %v; want it not waited for", err)
	}
}
