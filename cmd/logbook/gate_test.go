package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestHookGate_CrashAnswersDeny: a failure inside the hook itself (here a
// nil stdin that panics on read) is answered deny, never a silent allow.
func TestHookGate_CrashAnswersDeny(t *testing.T) {
	var out, errOut bytes.Buffer
	g := &globals{data: t.TempDir(), stdin: nil, stdout: &out, stderr: &errOut}
	if err := hookClaudeGate(t.Context(), g, 0); err != nil {
		t.Fatalf("err %v: the hook must answer, not fail", err)
	}
	var ans struct {
		HSO struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		t.Fatalf("answer %q: %v", out.String(), err)
	}
	if ans.HSO.Decision != "deny" || !strings.Contains(ans.HSO.Reason, "the gate hook failed") {
		t.Errorf("answer %s", out.String())
	}
}
