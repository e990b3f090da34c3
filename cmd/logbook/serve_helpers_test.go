package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// serveInProcess runs `logbook --data data serve ARGS...` in this process
// until the test ends and returns once it answers (waitServer). serve's
// output goes to the returned buffer; an exit other than by the test's
// end fails the test.
func serveInProcess(t *testing.T, data string, args ...string) *syncBuffer {
	t.Helper()
	logs, _ := serveStoppable(t, data, args...)
	return logs
}

// promptSession starts Claude Code session sid in cwd on data's server
// with a UserPromptSubmit hook, so commands may be requested for it.
func promptSession(t *testing.T, ctx context.Context, data, sid, cwd string) {
	t.Helper()
	p, _ := json.Marshal(map[string]any{"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt_id": "p-1", "prompt": "go on", "cwd": cwd})
	var out syncBuffer
	if err := runCLI(ctx, []string{"--data", data, "hook", "claude"}, strings.NewReader(string(p)), &out, &out); err != nil {
		t.Fatalf("hook: %v\n%s", err, out.String())
	}
}
