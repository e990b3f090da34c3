package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestHook_BudgetWithoutGate: --budget means nothing without --gate; the
// hook says so, naming both flags, with the exit a hook gives a usage
// mistake (1: an agent reads 2 as "block"), and records nothing.
func TestHook_BudgetWithoutGate(t *testing.T) {
	data := t.TempDir()
	var out, errb bytes.Buffer
	payload := `{"session_id":"s1","hook_event_name":"Stop"}`
	err := runCLI(t.Context(), []string{"--data", data, "hook", "claude", "--budget", "5s"}, strings.NewReader(payload), &out, &errb)
	if code := exitCode(err); code != codeError || err == nil || !strings.Contains(err.Error(), "--budget") || !strings.Contains(err.Error(), "--gate") {
		t.Fatalf("exit %d, %v; want 1 naming --budget and --gate", code, err)
	}
	if spooled, _ := filepath.Glob(filepath.Join(data, "spool", "*.json")); len(spooled) != 0 {
		t.Errorf("the payload was recorded: %q", spooled)
	}
}
